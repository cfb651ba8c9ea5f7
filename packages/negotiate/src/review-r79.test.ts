import { startServer, type TestServer } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientFor } from "../test/wire.js";
import { createCapabilityStore } from "./capabilities.js";
import { buildBody } from "./request-body.js";

// Review r79: a message no endpoint reads is refused by buildBody, before anything is sent.

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

describe("buildBody and the messages it is given", () => {
  const build = (messages: unknown[]) => {
    const store = createCapabilityStore();
    const supports = store.capabilitiesFor(server.baseUrl, "");
    return buildBody({ model: "m" }, supports, store.modelCapabilitiesFor(supports, "m"), messages);
  };

  it.each([
    [[null], /messages\[0\] must be a chat message .*; got null/],
    [[{ role: "user", content: "hi" }, "hello"], /messages\[1\] must be a chat message .*; got string/],
    [
      [{ role: "user", content: "hi" }, [{ role: "user" }]],
      /messages\[1\] must be a chat message .*; got an array/,
    ],
    [[{ content: "x" }], /messages\[0\]\.role must be the message's role .*; got no role/],
    [[{ role: "", content: "x" }], /messages\[0\]\.role .*; got ""/],
    [[{ role: 1, content: "x" }], /messages\[0\]\.role .*; got number/],
  ])("refuses %j by its index", (messages, message) => {
    expect(() => build(messages)).toThrow(TypeError);
    expect(() => build(messages)).toThrow(message);
  });

  it("sends nothing for a role-less message where it was sent before (llama.cpp's 500 'Missing role')", async () => {
    const before = server.chatRequests.length;
    const client = clientFor(server.baseUrl);
    const send = async () =>
      client.chat.completions.create(build([{ role: "user", content: "hi" }, { content: "x" }]) as never);
    await expect(send()).rejects.toThrow(/messages\[1\]\.role/);
    expect(server.chatRequests.length).toBe(before);
  });

  it("still sends every role as written, a message of the caller's own shape included", () => {
    const messages = [
      { role: "system", content: "s" },
      { role: "developer", content: "d" },
      { role: "user", content: [{ type: "text", text: "u" }] },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "a", type: "function", function: { name: "f", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "a", content: "r" },
    ];
    expect(build(messages).messages).toEqual(messages);
  });
});
