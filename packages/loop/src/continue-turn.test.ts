import { fold, type RunEvent } from "@loopwright/events";
import { createCapabilityStore, modelCapabilitiesFor } from "@loopwright/negotiate";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage } from "./config.js";
import { createRuntime } from "./index.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const question: ChatMessage[] = [{ role: "user", content: "What is the answer?" }];
const cut = (content: string, prompt: number, completion: number) => ({
  content,
  finishReason: "length",
  usage: { prompt_tokens: prompt, completion_tokens: completion, cached_tokens: 0 },
});

describe("continuing an answer cut off at the ceiling", () => {
  it("carries the answer on with the answer so far as a prefill, and joins the pieces into one turn", async () => {
    server = await startServer({
      replies: [
        cut("The answer is", 10, 5),
        { content: " forty-two.", usage: { prompt_tokens: 16, completion_tokens: 3, cached_tokens: 12 } },
      ],
    });
    const runtime = createRuntime();
    const events: RunEvent[] = [];
    const result = await runtime.runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "llama", maxTokens: 5, maxContinuations: 1 },
      messages: question,
      dispatch: () => "",
      onEvent: (e) => events.push(e),
    });
    expect(result.turn.content).toBe("The answer is forty-two.");
    expect(result.turn.finishReason).toBe("stop");
    expect(result.turn.usage).toEqual({ prompt: 26, completion: 8, total: 34, cached: 12, uncached: 14 });
    expect(result.messages.at(-1)).toEqual({ role: "assistant", content: "The answer is forty-two." });
    const second = server.chatRequests[1]!.body as { messages: ChatMessage[] };
    expect(second.messages.at(-1)).toEqual({ role: "assistant", content: "The answer is" });
    // One usage event for the whole turn, and no "cut off" notice left once it was carried on.
    expect(events.filter((e) => e.kind === "usage")).toHaveLength(1);
    expect(events.some((e) => e.kind === "notice" && /carrying it on/.test(e.text))).toBe(true);
    expect(
      events.some((e) => e.kind === "notice" && /cut off at the token ceiling \(maxTokens\)\.$/.test(e.text)),
    ).toBe(false);
  });

  /** The loop's run, with its events, over the testkit server. */
  async function continued(
    replies: NonNullable<Parameters<typeof startServer>[0]>["replies"],
    maxTokens = 8,
    personality?: "llamacpp" | "vllm" | "openai",
    maxContinuations = 1,
  ) {
    server = await startServer({ replies, ...(personality ? { personality } : {}) });
    const events: RunEvent[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "llama", maxTokens, maxContinuations },
      messages: question,
      dispatch: () => "",
      onEvent: (e) => events.push(e),
    });
    const notice = events.findIndex((e) => e.kind === "notice" && /carrying it on/.test(e.text));
    const at = events.findIndex((e) => e.kind === "retract");
    const outputs = (from: number, to: number) =>
      events
        .slice(from, to)
        .flatMap((e) => (e.kind === "output" ? [e.text] : []))
        .join("");
    const thinking = events.flatMap((e) => (e.kind === "thinking" ? [e.text] : [])).join("");
    const drawn = fold(events);
    const notices = events.flatMap((e) => (e.kind === "notice" ? [e.text] : []));
    return { result, events, notice, at, outputs, thinking, drawn, notices };
  }

  it("makes the whole answer so far reasoning when a lone </think> in the continuation closes a scratchpad the template opened: turn, stored message, events and fold agree", async () => {
    // Qwen3/R1 template, no reasoning parser: the scratchpad streams as content and is cut off
    // before its </think>, which arrives in the continuation.
    const soFar = "The user greets me, I should";
    const { result, events, notice, at, outputs, thinking, drawn } = await continued([
      cut(soFar, 10, 8),
      { content: " greet back.</think>Hello!", chunkChars: 4 },
    ]);
    expect(result.turn.content).toBe("Hello!");
    expect(result.turn.reasoning).toBe(`${soFar} greet back.`);
    expect(result.turn.scratchpadClosed).toBe(true);
    expect(result.messages.at(-1)).toEqual({ role: "assistant", content: "Hello!" });
    // One retract takes back the answer so far and what of the continuation was drawn, across the notice.
    expect(outputs(0, notice)).toBe(soFar);
    const piece = outputs(notice, at);
    expect(piece.length).toBeGreaterThan(0);
    expect(events.filter((e) => e.kind === "retract")).toEqual([
      { kind: "retract", chars: soFar.length + piece.length },
    ]);
    expect(thinking).toBe(result.turn.reasoning);
    expect(outputs(at, events.length)).toBe("Hello!");
    expect(drawn).toEqual([
      { kind: "notice", text: "The reply was cut off at the token ceiling (maxTokens); carrying it on." },
      { kind: "reasoning", text: result.turn.reasoning },
      { kind: "text", text: "Hello!" },
    ]);
    // What the next turn sends back is the answer alone.
    const second = server!.chatRequests[1]!.body as { messages: ChatMessage[] };
    expect(second.messages.at(-1)).toEqual({ role: "assistant", content: soFar });
  });

  it("takes the answer so far back when the continuation opens with the lone </think>, so nothing of the piece was drawn before it", async () => {
    // Cut off right before the marker: the stream has nothing of the piece to take back, the loop
    // still must take back the answer so far before the real answer is drawn.
    const soFar = "The user greets me, I should greet back.";
    const { result, events, at, thinking, drawn } = await continued([
      cut(soFar, 10, 8),
      { content: "</think>Hello!", chunkChars: 4 },
    ]);
    expect(result.turn.content).toBe("Hello!");
    expect(result.turn.reasoning).toBe(soFar);
    expect(result.messages.at(-1)).toEqual({ role: "assistant", content: "Hello!" });
    expect(events.filter((e) => e.kind === "retract")).toEqual([{ kind: "retract", chars: soFar.length }]);
    // Before any of the new answer: a retract takes from the end of what is drawn.
    expect(at).toBeLessThan(events.findIndex((e) => e.kind === "output" && e.text.startsWith("Hell")));
    expect(thinking).toBe(soFar);
    expect(drawn.filter((b) => b.kind !== "notice")).toEqual([
      { kind: "reasoning", text: soFar },
      { kind: "text", text: "Hello!" },
    ]);
  });

  it("takes back the answer so far, and nothing of the continuation it held back and never drew, when a lone </think> turns it into reasoning", async () => {
    // The piece opens as the answer so far did, so its opening is held back (it may be a restart);
    // the marker then makes it reasoning, with the answer so far before it.
    const soFar = "The answer to the question is";
    const { result, events, thinking, drawn } = await continued([
      cut(soFar, 10, 8),
      { content: "The answer</think> forty-two.", chunkChars: 3 },
    ]);
    expect(events.filter((e) => e.kind === "retract")).toEqual([{ kind: "retract", chars: soFar.length }]);
    expect(result.turn.content).toBe("forty-two.");
    expect(result.turn.reasoning).toBe(`${soFar}The answer`);
    expect(thinking).toBe(result.turn.reasoning);
    expect(drawn.flatMap((b) => (b.kind === "text" ? [b.text] : []))).toEqual([result.turn.content]);
    expect(result.messages.at(-1)).toEqual({ role: "assistant", content: "forty-two." });
  });

  it("keeps the scratchpad once when a continuation that started it over closes it: the restart's own reasoning repeats the answer so far", async () => {
    const soFar = "The user greets me and I should";
    const restart = "The user greets me and so I greet back.";
    const { result, events, thinking, drawn } = await continued([
      cut(soFar, 10, 8),
      { content: `${restart}</think>Hello!`, chunkChars: 4 },
    ]);
    expect(result.turn.content).toBe("Hello!");
    expect(result.turn.reasoning).toBe(restart);
    expect(thinking).toBe(result.turn.reasoning);
    // The restart was never drawn: only the answer so far is taken back.
    expect(events.filter((e) => e.kind === "retract")).toEqual([{ kind: "retract", chars: soFar.length }]);
    expect(drawn.filter((b) => b.kind !== "notice")).toEqual([
      { kind: "reasoning", text: restart },
      { kind: "text", text: "Hello!" },
    ]);
    expect(result.messages.at(-1)).toEqual({ role: "assistant", content: "Hello!" });
  });

  it("keeps the scratchpad once when a server that echoes the prefill closes it: the echo is the answer so far, not a restart", async () => {
    const soFar = "The user greets me and I should";
    const { result, events, thinking, drawn, notices } = await continued(
      [cut(soFar, 10, 8), { content: " greet back.</think>Hello!", chunkChars: 4 }],
      64,
      "llamacpp",
    );
    expect(result.turn.content).toBe("Hello!");
    expect(result.turn.reasoning).toBe(`${soFar} greet back.`);
    expect(thinking).toBe(result.turn.reasoning);
    // The echo was swallowed; the new text drawn before the marker is taken back with the answer so far.
    expect(events.filter((e) => e.kind === "retract")).toEqual([
      { kind: "retract", chars: `${soFar} greet back.`.length },
    ]);
    expect(drawn.filter((b) => b.kind !== "notice")).toEqual([
      { kind: "reasoning", text: `${soFar} greet back.` },
      { kind: "text", text: "Hello!" },
    ]);
    expect(notices.join("\n")).not.toMatch(/started the answer over/);
  });

  it("keeps the scratchpad once when the echo and the lone </think> come in one delta", async () => {
    const soFar = "The user greets me and I should";
    const { result, events, thinking, drawn } = await continued(
      [cut(soFar, 10, 8), { content: " greet back.</think>Hello!", chunkChars: 200 }],
      64,
      "llamacpp",
    );
    expect(result.turn.content).toBe("Hello!");
    expect(result.turn.reasoning).toBe(`${soFar} greet back.`);
    expect(thinking).toBe(result.turn.reasoning);
    // Nothing of the piece was drawn: only the answer so far is taken back.
    expect(events.filter((e) => e.kind === "retract")).toEqual([{ kind: "retract", chars: soFar.length }]);
    expect(drawn.filter((b) => b.kind !== "notice")).toEqual([
      { kind: "reasoning", text: `${soFar} greet back.` },
      { kind: "text", text: "Hello!" },
    ]);
  });

  it("latches assistantPrefill off for a model that starts the answer over, and never asks it again", async () => {
    server = await startServer({
      replies: [
        cut("The answer is, I think,", 10, 5),
        // Begun again: the opening repeated, then a different answer.
        { content: "The answer is forty-two." },
        cut("Again it is", 10, 5),
      ],
    });
    const runtime = createRuntime();
    const config = { baseUrl: server.baseUrl, model: "gpt-4o", maxTokens: 5, maxContinuations: 2 };
    const first = await runtime.runAgentLoop({ config, messages: question, dispatch: () => "" });
    expect(first.turn.content).toBe("The answer is, I think,");
    expect(first.turn.finishReason).toBe("length");
    const caps = modelCapabilitiesFor(runtime.capabilities.capabilitiesFor(server.baseUrl), "gpt-4o");
    expect(caps.assistantPrefill).toBe(false);
    const second = await runtime.runAgentLoop({ config, messages: question, dispatch: () => "" });
    expect(second.turn.content).toBe("Again it is");
    expect(server.chatRequests).toHaveLength(3);
    // The latch rides in the snapshot, so a restart does not find out again.
    const restored = createCapabilityStore();
    restored.importCapabilities(runtime.capabilities.exportCapabilities());
    expect(modelCapabilitiesFor(restored.capabilitiesFor(server.baseUrl), "gpt-4o").assistantPrefill).toBe(
      false,
    );
  });

  it("joins a continuation of a short answer that begins partly as it did, latching nothing (too short to show a restart)", async () => {
    server = await startServer({
      replies: [
        cut("1, 1", 10, 1),
        { content: "1 and 12 are the values.", chunkChars: 1 },
        cut("A long answer that the ceiling cut off in the mid", 10, 5),
        { content: "dle of a word." },
      ],
    });
    const runtime = createRuntime();
    const config = { baseUrl: server.baseUrl, model: "gpt-4o", maxTokens: 5, maxContinuations: 2 };
    const output: string[] = [];
    const notices: string[] = [];
    const first = await runtime.runAgentLoop({
      config,
      messages: question,
      dispatch: () => "",
      onEvent: (e) => {
        if (e.kind === "output") output.push(e.text);
        if (e.kind === "notice") notices.push(e.text);
      },
    });
    expect(first.turn.content).toBe("1, 11 and 12 are the values.");
    expect(first.turn.finishReason).toBe("stop");
    expect(output.join("")).toBe("1, 11 and 12 are the values.");
    expect(notices.join("\n")).not.toMatch(/started the answer over/);
    const caps = modelCapabilitiesFor(runtime.capabilities.capabilitiesFor(server.baseUrl), "gpt-4o");
    expect(caps.assistantPrefill).not.toBe(false);
    // The next run on the same runtime is still carried on.
    const second = await runtime.runAgentLoop({ config, messages: question, dispatch: () => "" });
    expect(second.turn.content).toBe("A long answer that the ceiling cut off in the middle of a word.");
    expect(server.chatRequests).toHaveLength(4);
  });

  describe("on a server that echoes the prefill before the new text (llama.cpp b9749)", () => {
    it("joins only what follows the echo of a long answer so far, shows it once, and latches nothing", async () => {
      const soFar = "The answer to the question you asked is";
      const { result, outputs, events, notices } = await continued(
        [cut(soFar, 10, 8), { content: " forty-two.", chunkChars: 3 }],
        64,
        "llamacpp",
      );
      // The server did send the answer so far again.
      const second = server!.chatRequests[1]!.body as { messages: ChatMessage[] };
      expect(second.messages.at(-1)).toEqual({ role: "assistant", content: soFar });
      expect(result.turn.content).toBe(`${soFar} forty-two.`);
      expect(result.turn.finishReason).toBe("stop");
      expect(outputs(0, events.length)).toBe(result.turn.content);
      expect(result.messages.at(-1)).toEqual({ role: "assistant", content: `${soFar} forty-two.` });
      expect(notices.join("\n")).not.toMatch(/started the answer over/);
      expect(events.filter((e) => e.kind === "retract")).toEqual([]);
    });

    it("does not duplicate a short answer so far (F1: ' we sure' came back ' we sure we sure test')", async () => {
      const { result, outputs, events } = await continued(
        [cut(" we sure", 10, 2), { content: " test" }],
        64,
        "llamacpp",
      );
      expect(result.turn.content).toBe(" we sure test");
      expect(outputs(0, events.length)).toBe(" we sure test");
    });

    it("carries a short answer on whose new text begins as it did: the echo goes, the repeat stays", async () => {
      const { result, outputs, events } = await continued(
        [cut("1", 10, 1), { content: "1, 12 and 13 are the three values.", chunkChars: 2 }],
        64,
        "llamacpp",
      );
      expect(result.turn.content).toBe("11, 12 and 13 are the three values.");
      expect(outputs(0, events.length)).toBe(result.turn.content);
    });

    it("swallows the echo on every continuation, and keeps the answer when nothing new follows it", async () => {
      const soFar = "Counting up from one we get";
      const { result, outputs, events, notices } = await continued(
        [
          cut(soFar, 10, 8),
          cut(" one, two,", 10, 3),
          { content: "", usage: { prompt_tokens: 12, completion_tokens: 1, cached_tokens: 11 } },
        ],
        64,
        "llamacpp",
        2,
      );
      const bodies = server!.chatRequests.map((r) => r.body as { messages: ChatMessage[] });
      expect(bodies[2]!.messages.at(-1)).toEqual({ role: "assistant", content: `${soFar} one, two,` });
      expect(result.turn.content).toBe(`${soFar} one, two,`);
      expect(result.turn.finishReason).toBe("stop");
      expect(outputs(0, events.length)).toBe(result.turn.content);
      expect(notices.join("\n")).not.toMatch(/started the answer over/);
    });
  });

  describe("on a server that does not echo the prefill: prefillEcho, latched per (endpoint, model)", () => {
    /** Runs on one runtime (one capability store) over the testkit server, with their events. */
    async function runs(
      personality: "llamacpp" | "vllm" | "openai",
      replies: NonNullable<Parameters<typeof startServer>[0]>["replies"],
      count: number,
      runtime = createRuntime(),
    ) {
      server = await startServer({ replies, personality });
      const config = { baseUrl: server.baseUrl, model: "qwen", maxTokens: 64, maxContinuations: 1 };
      const out: { content: string; output: string; notices: string[]; events: RunEvent[] }[] = [];
      for (let i = 0; i < count; i++) {
        const events: RunEvent[] = [];
        const result = await runtime.runAgentLoop({
          config,
          messages: question,
          dispatch: () => "",
          onEvent: (e) => events.push(e),
        });
        out.push({
          content: result.turn.content,
          output: events.flatMap((e) => (e.kind === "output" ? [e.text] : [])).join(""),
          notices: events.flatMap((e) => (e.kind === "notice" ? [e.text] : [])),
          events,
        });
      }
      const caps = () => modelCapabilitiesFor(runtime.capabilities.capabilitiesFor(server!.baseUrl), "qwen");
      return { out, caps, runtime };
    }

    for (const personality of ["vllm", "openai"] as const) {
      it(`${personality}: the first plain continuation latches it off, and a later one that begins with a short answer so far keeps the repeat`, async () => {
        const { out, caps } = await runs(
          personality,
          [
            cut("The answer is", 10, 3),
            { content: " forty-two.", chunkChars: 3 },
            cut("1", 10, 1),
            { content: "1, 12 and 13 are the three values.", chunkChars: 2 },
          ],
          2,
        );
        expect(out[0]!.content).toBe("The answer is forty-two.");
        expect(caps().prefillEcho).toBe(false);
        expect(caps().assistantPrefill).toBe(true);
        // Not an echo: the model wrote "1" again after the "1" it had written.
        expect(out[1]!.content).toBe("11, 12 and 13 are the three values.");
        expect(out[1]!.output).toBe(out[1]!.content);
        expect(out[1]!.notices.join("\n")).not.toMatch(/started the answer over/);
        expect(server!.chatRequests).toHaveLength(4);
      });
    }

    it("is learned in one run and used in the next by another runtime sharing the capability store, or given its snapshot", async () => {
      const shared = createCapabilityStore();
      const first = await runs(
        "vllm",
        [
          cut("Counting: one", 10, 3),
          { content: ", two, three." },
          cut("Yes", 10, 1),
          { content: "Yes, yes: it is.", chunkChars: 1 },
          cut("No", 10, 1),
          { content: "No, no.", chunkChars: 1 },
        ],
        1,
        createRuntime({ stores: { capabilities: shared } }),
      );
      expect(first.caps().prefillEcho).toBe(false);
      const other = await runOn(createRuntime({ stores: { capabilities: shared } }));
      expect(other.content).toBe("YesYes, yes: it is.");
      expect(other.output).toBe(other.content);
      // A restart of the host that kept the snapshot knows it too.
      const restored = createCapabilityStore();
      restored.importCapabilities(JSON.stringify(shared.exportCapabilities()));
      const later = await runOn(createRuntime({ stores: { capabilities: restored } }));
      expect(later.content).toBe("NoNo, no.");
      expect(later.output).toBe(later.content);

      async function runOn(runtime: ReturnType<typeof createRuntime>) {
        const events: RunEvent[] = [];
        const result = await runtime.runAgentLoop({
          config: { baseUrl: server!.baseUrl, model: "qwen", maxTokens: 64, maxContinuations: 1 },
          messages: question,
          dispatch: () => "",
          onEvent: (e) => events.push(e),
        });
        const output = events.flatMap((e) => (e.kind === "output" ? [e.text] : [])).join("");
        return { content: result.turn.content, output };
      }
    });

    it("two cut-off turns in one run: the first continuation latches it, the second keeps the repeat", async () => {
      server = await startServer({
        personality: "vllm",
        replies: [
          cut("Let me c", 10, 3),
          { content: "heck.", toolCalls: [{ id: "c1", name: "noop", arguments: "{}" }] },
          cut("1", 10, 1),
          { content: "1 more step.", chunkChars: 2 },
        ],
      });
      const runtime = createRuntime();
      const tools = [
        { type: "function" as const, function: { name: "noop", parameters: { type: "object" } } },
      ];
      const outputs: string[] = [];
      const result = await runtime.runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "qwen", maxTokens: 64, maxContinuations: 1 },
        messages: question,
        tools,
        dispatch: () => "ran",
        onEvent: (e) => e.kind === "output" && outputs.push(e.text),
      });
      const assistants = result.messages.filter((m) => m.role === "assistant").map((m) => m.content);
      expect(assistants[0]).toBe("Let me check.");
      expect(result.turn.content).toBe("11 more step.");
      expect(outputs.join("")).toBe("Let me check.11 more step.");
      expect(server.chatRequests).toHaveLength(4);
    });

    it("llamacpp: echoes keep it open, so the echo of a short answer so far is still taken off", async () => {
      const { out, caps } = await runs(
        "llamacpp",
        [
          cut("The answer to the question you asked is", 10, 8),
          { content: " forty-two.", chunkChars: 3 },
          cut("1", 10, 1),
          { content: "1, 12 and 13 are the three values.", chunkChars: 2 },
        ],
        2,
      );
      expect(out[0]!.content).toBe("The answer to the question you asked is forty-two.");
      expect(caps().prefillEcho).toBe(true);
      expect(out[1]!.content).toBe("11, 12 and 13 are the three values.");
      expect(out[1]!.output).toBe(out[1]!.content);
      expect(caps().prefillEcho).toBe(true);
    });

    it("an empty or blank piece leaves it open: it shows nothing either way", async () => {
      const { out, caps } = await runs(
        "vllm",
        [cut("Well", 10, 1), { content: "" }, cut("Then", 10, 1), { content: " \n" }],
        2,
      );
      expect(out.map((o) => o.content)).toEqual(["Well", "Then \n"]);
      expect(caps().prefillEcho).toBe(true);
    });

    it("once it is closed, a piece that repeats the whole of a long answer so far is the answer started over, not an echo", async () => {
      const soFar = "The answer to the question is";
      const { out, caps } = await runs(
        "vllm",
        [
          cut("Counting: one", 10, 3),
          { content: ", two, three." },
          cut(soFar, 10, 6),
          { content: `${soFar} forty-two.`, chunkChars: 4 },
        ],
        2,
      );
      expect(caps().prefillEcho).toBe(false);
      expect(out[1]!.content).toBe(soFar);
      expect(out[1]!.output).toBe(soFar);
      expect(out[1]!.notices.join("\n")).toMatch(/started the answer over/);
      expect(caps().assistantPrefill).toBe(false);
    });

    it("once it is closed, a lone </think> after a piece that begins with a short answer so far makes both reasoning", async () => {
      const { out, caps } = await runs(
        "vllm",
        [
          cut("Counting: one", 10, 3),
          { content: ", two, three." },
          cut("I", 10, 1),
          { content: "I think so.</think>Yes.", chunkChars: 3 },
        ],
        2,
      );
      expect(caps().prefillEcho).toBe(false);
      const { events } = out[1]!;
      const thinking = events.flatMap((e) => (e.kind === "thinking" ? [e.text] : [])).join("");
      expect(out[1]!.content).toBe("Yes.");
      expect(thinking).toBe("II think so.");
      expect(fold(events).filter((b) => b.kind !== "notice")).toEqual([
        { kind: "reasoning", text: "II think so." },
        { kind: "text", text: "Yes." },
      ]);
    });
  });

  it("keeps the cut-off answer when llama.cpp refuses a prefill with thinking on (recorded 400), latched", async () => {
    server = await startServer({
      personality: { name: "llamacpp", thinking: true },
      replies: [cut("Step one is", 10, 5)],
    });
    const runtime = createRuntime();
    const notices: string[] = [];
    const result = await runtime.runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "qwen3", maxTokens: 5, maxContinuations: 1 },
      messages: question,
      dispatch: () => "",
      onEvent: (e) => e.kind === "notice" && notices.push(e.text),
    });
    expect(result.turn.content).toBe("Step one is");
    expect(server.chatRequests).toHaveLength(2);
    expect(notices.join("\n")).toMatch(/refused a trailing assistant message/);
    const caps = modelCapabilitiesFor(runtime.capabilities.capabilitiesFor(server.baseUrl), "qwen3");
    expect(caps.assistantPrefill).toBe(false);
  });

  it("leaves a turn cut off in its scratchpad or in a tool call alone", async () => {
    server = await startServer({
      replies: [
        { reasoning: "Let me think about", content: "", finishReason: "length" },
        { toolCalls: [{ id: "c1", name: "noop", arguments: '{"a": 1' }], finishReason: "length" },
        { content: "done" },
      ],
    });
    const runtime = createRuntime();
    const config = { baseUrl: server.baseUrl, model: "m", maxTokens: 5, maxContinuations: 3 };
    const thinking = await runtime.runAgentLoop({ config, messages: question, dispatch: () => "" });
    expect(thinking.turn.content).toBe("");
    expect(server.chatRequests).toHaveLength(1);
    const tools = [{ type: "function" as const, function: { name: "noop", parameters: { type: "object" } } }];
    const calling = await runtime.runAgentLoop({ config, messages: question, tools, dispatch: () => "ran" });
    // The truncated call is answered as truncated (not run), then the model answers.
    expect(calling.messages.find((m) => m.role === "tool")?.content).toMatch(
      /cut off|truncat|ceiling|token limit/i,
    );
    expect(server.chatRequests).toHaveLength(3);
  });
});
