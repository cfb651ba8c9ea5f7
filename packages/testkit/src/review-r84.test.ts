/**
 * Review r84c: a scripted reply's fields were read through `Object.prototype`, so code in the
 * test's process that polluted it changed what the server sent: `Object.prototype.content = "x"`
 * made a tool-call reply stream content "x" too, `Object.prototype.id = "forged"` gave every tool
 * call that id. A reply's fields are read where the script wrote them (the object, or a class of
 * its own), as packages/loop's own.ts reads a host's settings.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Reply } from "./replies.js";
import { validateReply } from "./replies.js";
import { startServer, type TestServer } from "./server.js";
import { polluted } from "./test-support/polluted.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Posts a chat request and answers the body as text (the SSE stream, or the JSON). */
async function post(stream: boolean): Promise<string> {
  const response = await fetch(`${server?.baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }], stream }),
  });
  return response.text();
}

const lookup: Reply = { toolCalls: [{ name: "lookup", arguments: '{"q":"x"}' }] };

describe("a scripted reply under a polluted Object.prototype", () => {
  it("streams no content and the default tool-call id, not the polluted ones", async () => {
    server = await startServer({ replies: () => lookup });
    const text = await polluted({ content: "x", id: "forged" }, () => post(true));
    const deltas = text
      .split("\n")
      .filter((line) => line.startsWith("data: {"))
      .map((line) => JSON.parse(line.slice(6)).choices?.[0]?.delta ?? {});
    expect(deltas.map((d) => d.content ?? "").join("")).toBe("");
    const ids = deltas.flatMap((d) => (d.tool_calls ?? []).map((c: { id?: string }) => c.id)).filter(Boolean);
    expect(ids).toEqual(["call_sim1_0"]);
  });

  it("answers the same not streamed", async () => {
    server = await startServer({ replies: [lookup] });
    const body = JSON.parse(await polluted({ content: "x", id: "forged" }, () => post(false)));
    const message = body.choices[0].message;
    expect(message.content ?? null).toBeNull();
    expect(message.tool_calls.map((c: { id: string }) => c.id)).toEqual(["call_sim1_0"]);
  });

  it("a polluted type or finishReason changes nothing either", async () => {
    server = await startServer({ replies: () => ({ content: "noon" }) });
    const body = JSON.parse(await polluted({ type: "error", finishReason: "length" }, () => post(false)));
    expect(body.choices[0].message.content).toBe("noon");
    expect(body.choices[0].finish_reason).toBe("stop");
  });

  it("a field a class of the script's own defines is still read", async () => {
    class Turn {
      get content(): string {
        return "from a getter";
      }
    }
    server = await startServer({ replies: () => new Turn() as Reply });
    expect(JSON.parse(await post(false)).choices[0].message.content).toBe("from a getter");
  });

  it("validateReply still answers the reply it was given", () => {
    const reply: Reply = { content: "a" };
    expect(validateReply(reply)).toBe(reply);
  });
});
