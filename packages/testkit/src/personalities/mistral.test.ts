import { afterEach, describe, expect, it } from "vitest";
import { readFixture } from "../fixtures.js";
import { startServer, type TestServer } from "../server.js";
import { mistralPersonality } from "./mistral.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const post = (body: unknown) =>
  fetch(`${server?.baseUrl}/chat/completions`, { method: "POST", body: JSON.stringify(body) });

/** A transcript whose one call and its result carry `id`. */
const withId = (id: string) => ({
  model: "mistral-small-latest",
  stream: true,
  messages: [
    { role: "user", content: "2 + 3?" },
    {
      role: "assistant",
      content: null,
      tool_calls: [{ id, type: "function", function: { name: "add", arguments: "{}" } }],
    },
    { role: "tool", tool_call_id: id, content: "5" },
  ],
});

describe("mistral personality", () => {
  it("refuses stream_options with the recorded 422 (message an object)", async () => {
    server = await startServer({ personality: "mistral", replies: () => ({ content: "x" }) });
    const res = await post({ ...withId("gSIMJiOkT"), stream_options: { include_usage: true } });
    expect(res.status).toBe(422);
    expect(await res.text()).toBe(
      readFixture("errors/mistral/422-stream-options-extra-forbidden-message-is-object.json"),
    );
  });

  it("refuses a tool-call id that is not nine letters and digits, naming it as Mistral does", async () => {
    server = await startServer({ personality: "mistral", replies: () => ({ content: "x" }) });
    const res = await post(withId("call_recovered_0"));
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      ...JSON.parse(readFixture("errors/mistral/400-tool-call-id-must-be-nine-alphanumerics.json")),
      message: "Tool call id was call_recovered_0 but must be a-z, A-Z, 0-9, with a length of 9.",
    });
    // A tool result whose id is wrong is refused too, though its call's is right.
    const orphan = withId("gSIMJiOkT");
    (orphan.messages[2] as { tool_call_id: string }).tool_call_id = "call_0";
    expect((await post(orphan).then((r) => r.json())) as { message: string }).toMatchObject({
      message: expect.stringMatching(/^Tool call id was call_0 but/),
    });
  });

  it("streams a tool call whole in the finish chunk with the usage, as the recorded stream does", async () => {
    server = await startServer({
      personality: "mistral",
      replies: [
        { toolCalls: [{ id: "gSIMJiOkT", name: "weather", arguments: '{"location": "San Francisco"}' }] },
      ],
    });
    const res = await post(withId("gSIMJiOkT"));
    const chunks = (await res.text())
      .split("\n\n")
      .filter((frame) => frame.startsWith("data: {"))
      .map((frame) => JSON.parse(frame.slice(6)));
    const recorded = readFixture("wire/mistral/mistral-small-tool-call-no-index.sse")
      .split("\n\n")
      .filter((frame) => frame.startsWith("data: {"))
      .map((frame) => JSON.parse(frame.slice(6)));
    const shape = (chunk: { choices: unknown[]; usage?: unknown }) => ({
      choices: chunk.choices,
      usage: chunk.usage === undefined ? "none" : Object.keys(chunk.usage as object).sort(),
    });
    expect(chunks.length).toBe(recorded.length);
    expect(shape(chunks[1])).toEqual(shape(recorded[1]));
  });

  it("answers a transcript of nine-character ids, and mints nine-character ids for its own calls", async () => {
    server = await startServer({
      personality: mistralPersonality({ refuseStreamOptions: false }),
      replies: [
        {
          toolCalls: [
            { name: "add", arguments: "{}" },
            { name: "add", arguments: "{}" },
          ],
        },
      ],
    });
    const res = await post({ ...withId("gSIMJiOkT"), stream_options: { include_usage: true } });
    expect(res.status).toBe(200);
    const ids = [...(await res.text()).matchAll(/"id":"([^"]+)","function"/g)].map((m) => m[1]);
    expect(ids.length).toBe(2);
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9]{9}$/);
    expect(new Set(ids).size).toBe(2);
  });
});
