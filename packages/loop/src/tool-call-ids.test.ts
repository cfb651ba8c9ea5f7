// A Mistral-family server takes only tool-call ids of nine letters and digits; the loop mints others
// (a call recovered from the reply's text is call_recovered_0). Pinned over HTTP against the testkit's
// mistral personality: the run finishes, the transcript keeps its ids, and the wire ids hold still.
import type { RunEvent } from "@loopwright/events";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { createRuntime } from "./index.js";
import { ADD_TOOL, QUESTION, transcriptFaults, unanswered } from "./test-support/transcript.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

type Wire = { role: string; tool_calls?: { id: string }[]; tool_call_id?: string };
const idsOf = (messages: readonly Wire[]): string[] =>
  messages.flatMap((m) => [
    ...(m.tool_calls ?? []).map((c) => c.id),
    ...(m.tool_call_id ? [m.tool_call_id] : []),
  ]);

describe("a run against Mistral's API with calls the model wrote as text", () => {
  it("finishes: the refused ids go as nine characters, the same on every request, and the transcript keeps its own", async () => {
    server = await startServer({
      personality: "mistral",
      replies: [
        // Mistral's own spelling, left in the text by a server whose parser missed it.
        { content: '[TOOL_CALLS] [{"name": "add", "arguments": {"a": 2, "b": 3}}]' },
        { content: '[TOOL_CALLS] [{"name": "add", "arguments": {"a": 5, "b": 1}}]' },
        { content: "It is 6." },
      ],
    });
    const events: RunEvent[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "mistral-small-latest" },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: ({ args }) => (args as { a: number; b: number }).a + (args as { a: number; b: number }).b,
      onEvent: (event) => events.push(event),
    });
    expect(result.turn.content).toBe("It is 6.");
    // The transcript the host keeps: the loop's own ids, every call answered.
    const kept = idsOf(result.messages as Wire[]);
    expect(kept[0]).toBe("call_recovered_0");
    expect(kept.some((id) => /^[A-Za-z0-9]{9}$/.test(id))).toBe(false);
    expect(unanswered(result.messages)).toEqual([]);
    expect(transcriptFaults(result.messages)).toEqual([]);
    // On the wire: the 422 for stream_options, then the 400 for call_recovered_0, then two requests
    // with nine-character ids, the first call's the same in both.
    const sent = server.chatRequests.map((r) => (r.body as { messages: Wire[] }).messages);
    const withCalls = sent.filter((messages) => idsOf(messages).length > 0);
    expect(withCalls.length).toBe(3);
    const [refused, second, third] = withCalls.map(idsOf);
    expect(refused).toEqual(["call_recovered_0", "call_recovered_0"]);
    expect(second?.every((id) => /^[A-Za-z0-9]{9}$/.test(id))).toBe(true);
    expect(third?.every((id) => /^[A-Za-z0-9]{9}$/.test(id))).toBe(true);
    expect(third?.slice(0, 2)).toEqual(second);
    expect(third?.[2]).toBe(third?.[3]);
    expect(new Set(third).size).toBe(2);
    const notices = events.filter((e) => e.kind === "notice").map((e) => (e as { text: string }).text);
    expect(notices.some((text) => /refused a tool-call id/.test(text))).toBe(true);
  });

  it("keeps the ids Mistral minted for its own calls as they are, beside the derived ones", async () => {
    server = await startServer({
      personality: "mistral",
      replies: [
        { content: '[TOOL_CALLS] [{"name": "add", "arguments": {"a": 2, "b": 3}}]' },
        // A call Mistral's parser read: streamed whole in the finish chunk, with its own id.
        { toolCalls: [{ name: "add", arguments: '{"a": 5, "b": 1}' }] },
        { content: "It is 6." },
      ],
    });
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "mistral-small-latest" },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: ({ args }) => (args as { a: number; b: number }).a + (args as { a: number; b: number }).b,
    });
    expect(result.turn.content).toBe("It is 6.");
    const kept = idsOf(result.messages as Wire[]);
    const minted = kept[2] as string;
    expect(kept).toEqual(["call_recovered_0", "call_recovered_0", minted, minted]);
    expect(minted).toMatch(/^[A-Za-z0-9]{9}$/);
    expect(result.toolCalls.map((call) => [call.id, call.ok])).toEqual([
      ["call_recovered_0", true],
      [minted, true],
    ]);
    const last = idsOf(
      (server.chatRequests.at(-1)?.body as { messages?: Wire[] } | undefined)?.messages ?? [],
    );
    expect(last.slice(2)).toEqual([minted, minted]);
    expect(last[0]).toMatch(/^[A-Za-z0-9]{9}$/);
    expect(last[0]).not.toBe(minted);
  });
});
