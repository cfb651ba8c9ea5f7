import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { ToolCallsError } from "./errors.js";
import { recoverToolCalls } from "./recover-tool-calls.js";

// Review r94h: a loop of its own recovers calls from every reply, and each reply's were numbered
// from call_recovered_0 — two steps put one id into the transcript twice.

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

interface WireMessage {
  role: string;
  content?: string | null;
  tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

const ADD = {
  type: "function" as const,
  function: {
    name: "add",
    parameters: { type: "object", properties: { a: { type: "number" } }, required: ["a"] },
  },
};

/** One request as a host sends it (not streamed), and the reply's text. */
async function ask(baseUrl: string, messages: WireMessage[]): Promise<string> {
  const response = await fetch(`${baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "qwen", messages, tools: [ADD] }),
  });
  const body = (await response.json()) as { choices: { message: { content: string | null } }[] };
  return body.choices[0]?.message.content ?? "";
}

/** A small loop of its own: recover, answer every call, ask again, until a reply has none. */
async function run(baseUrl: string, prefixFor?: (step: number) => string): Promise<WireMessage[]> {
  const messages: WireMessage[] = [{ role: "user", content: "Add 2, then 5." }];
  for (let step = 1; step <= 5; step++) {
    const reply = await ask(baseUrl, messages);
    const options = prefixFor ? { idPrefix: prefixFor(step) } : {};
    const { calls, text } = recoverToolCalls(reply, [ADD], options);
    if (calls.length === 0) return messages;
    messages.push({
      role: "assistant",
      content: text,
      tool_calls: calls.map((call) => ({
        id: call.id,
        type: "function",
        function: { name: call.name, arguments: call.raw ?? JSON.stringify(call.args) },
      })),
    });
    for (const call of calls) {
      messages.push({ role: "tool", tool_call_id: call.id, content: String((call.args as { a: number }).a) });
    }
  }
  throw new Error("the loop did not end");
}

const replies = [
  { content: '<tool_call>{"name": "add", "arguments": {"a": 2}}</tool_call>' },
  { content: '<tool_call>{"name": "add", "arguments": {"a": 5}}</tool_call>' },
  { content: "7." },
];

describe("R94h-1: idPrefix keeps the ids of calls recovered at different steps apart", () => {
  it("over HTTP (vllm): the last request's transcript holds two ids, each answered by its own result", async () => {
    server = await startServer({ personality: "vllm", replies });
    await run(server.baseUrl, (step) => `call_recovered_${step}_`);
    const last = server.chatRequests.at(-1)?.body as { messages: WireMessage[] };
    const callIds = last.messages.flatMap((m) => (m.tool_calls ?? []).map((c) => c.id));
    const answered = last.messages.flatMap((m) => (m.tool_call_id ? [m.tool_call_id] : []));
    expect(callIds).toEqual(["call_recovered_1_0", "call_recovered_2_0"]);
    expect(new Set(callIds).size).toBe(2);
    expect(answered).toEqual(callIds);
    // Each result sits after its own call and says its own argument.
    const results = last.messages.filter((m) => m.role === "tool").map((m) => [m.tool_call_id, m.content]);
    expect(results).toEqual([
      ["call_recovered_1_0", "2"],
      ["call_recovered_2_0", "5"],
    ]);
  });

  it("the default is unchanged: call_recovered_0 onward, also for a null idPrefix", () => {
    const reply =
      '<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call><tool_call>{"name": "add", "arguments": {"a": 2}}</tool_call>';
    for (const options of [undefined, {}, { idPrefix: null }, { idPrefix: undefined }]) {
      expect(recoverToolCalls(reply, ["add"], options).calls.map((call) => call.id)).toEqual([
        "call_recovered_0",
        "call_recovered_1",
      ]);
    }
    expect(recoverToolCalls(reply, ["add"], { idPrefix: "s3_" }).calls.map((call) => call.id)).toEqual([
      "s3_0",
      "s3_1",
    ]);
    // The prefix holds for that reading only.
    expect(recoverToolCalls(reply, ["add"]).calls[0]?.id).toBe("call_recovered_0");
  });

  it("an idPrefix that is not a string is refused by name", () => {
    expect(() => recoverToolCalls("x", ["add"], { idPrefix: 3 as unknown as string })).toThrow(
      ToolCallsError,
    );
    expect(() => recoverToolCalls("x", ["add"], { idPrefix: 3 as unknown as string })).toThrow(
      /its idPrefix was/,
    );
  });
});
