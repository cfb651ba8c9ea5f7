import { readFixtureJson } from "@loopwright/testkit";
import OpenAI, { APIConnectionTimeoutError, APIError } from "openai";
import { afterAll, describe, expect, it, vi } from "vitest";
import { listenForAbort } from "./abort-listeners.js";
import { EndpointSilent, StreamError } from "./errors.js";
import {
  type ChatClientLike,
  FINISH_GRACE_MS,
  type ProducedBox,
  type StreamTurnOptions,
  streamTurn,
} from "./stream-turn.js";
import { body, harness, harness as startHarness } from "./test-support/http.js";
import type { ToolCallProgress } from "./tool-call-assembler.js";

// The real SDK client is what streamTurn is written against: it must fit the structural shape.
const fits: ChatClientLike = new OpenAI({ apiKey: "unused", baseURL: "http://127.0.0.1:9/v1" });
void fits;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected the promise to reject");
}

describe("streamTurn reads a streamed turn over HTTP", () => {
  it("reads a plain answer with usage and the finish reason, telling onOutput as it streams", async () => {
    const { client, server, relay } = await harness([
      {
        content: "Hello there, friend.",
        usage: { prompt_tokens: 12, completion_tokens: 5, cached_tokens: 4 },
      },
    ]);
    const seen: string[] = [];
    const turn = await streamTurn(client, body({ temperature: 0.2 }), { onOutput: (t) => seen.push(t) });
    expect(turn).toEqual({
      content: "Hello there, friend.",
      toolCalls: [],
      usage: { prompt: 12, completion: 5, total: 17, cached: 4, uncached: 8 },
      finishReason: "stop",
      reasoning: "",
    });
    expect(seen.length).toBeGreaterThan(1);
    expect(seen.join("")).toBe("Hello there, friend.");
    expect(server.chatRequests[0]?.body).toMatchObject({ model: "sim", stream: true, temperature: 0.2 });
    // A finished stream leaves its connection pooled for the next request; only abandoned ones close.
    expect(relay.open).toBe(1);
  });

  it("reassembles parallel tool calls interleaved across many deltas and reports each call's progress", async () => {
    const { client } = await harness([
      {
        toolCalls: [
          { id: "call_a", name: "get_weather", arguments: '{"city":"Paris","unit":"celsius"}' },
          { id: "call_b", name: "get_time", arguments: '{"zone":"Europe/Paris"}' },
        ],
        chunkChars: 3,
        interleave: true,
      },
    ]);
    const progress: ToolCallProgress[] = [];
    const turn = await streamTurn(client, body(), { onToolCallDelta: (p) => progress.push(p) });
    expect(turn.finishReason).toBe("tool_calls");
    expect(turn.toolCalls).toEqual([
      {
        id: "call_a",
        type: "function",
        function: { name: "get_weather", arguments: '{"city":"Paris","unit":"celsius"}' },
      },
      {
        id: "call_b",
        type: "function",
        function: { name: "get_time", arguments: '{"zone":"Europe/Paris"}' },
      },
    ]);
    const last = (i: number) => progress.filter((p) => p.index === i).at(-1);
    expect(last(0)?.arguments).toBe('{"city":"Paris","unit":"celsius"}');
    expect(last(1)?.arguments).toBe('{"zone":"Europe/Paris"}');
    expect(new Set(progress.map((p) => p.index))).toEqual(new Set([0, 1]));
  });

  for (const reasoningAs of ["reasoning_content", "reasoning", "fence"] as const) {
    it(`separates reasoning sent as ${reasoningAs} from the answer`, async () => {
      const { client } = await harness([
        {
          reasoning: "The user greets me. I greet back.",
          reasoningAs,
          content: "Hi! How can I help?",
          chunkChars: 5,
        },
      ]);
      const output: string[] = [];
      const thinking: string[] = [];
      const turn = await streamTurn(client, body(), {
        onOutput: (t) => output.push(t),
        onThinking: (t) => thinking.push(t),
      });
      expect(turn.content).toBe("Hi! How can I help?");
      expect(turn.reasoning).toBe("The user greets me. I greet back.");
      expect(output.join("")).toBe(turn.content);
      expect(thinking.join("")).toBe(turn.reasoning);
    });
  }

  it("accepts a body typed with the SDK's own request type, and one without stream set", async () => {
    const { client, server } = await harness([{ content: "typed" }, { content: "untyped" }]);
    const typed: OpenAI.Chat.ChatCompletionCreateParamsStreaming = {
      model: "sim",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
      stream_options: { include_usage: true },
    };
    await expect(streamTurn(client, typed)).resolves.toMatchObject({ content: "typed" });
    await expect(streamTurn(client, { model: "sim", messages: [] })).resolves.toMatchObject({
      content: "untyped",
    });
    expect(server.chatRequests[1]?.body).toMatchObject({ stream: true });
  });

  it("takes gpt-oss harmony served raw out of the answer, whatever the pieces", async () => {
    const raw =
      "<|channel|>analysis<|message|>User wants the time. Answer plainly.<|end|><|start|>assistant<|channel|>final<|message|>It is noon.";
    const { client } = await harness([{ content: raw, chunkChars: 3 }]);
    const output: string[] = [];
    const turn = await streamTurn(client, body(), { onOutput: (t) => output.push(t) });
    expect(turn).toMatchObject({ content: "It is noon.", reasoning: "User wants the time. Answer plainly." });
    expect(output.join("")).toBe("It is noon.");
    expect(output.some((t) => t.includes("<|"))).toBe(false);
  });

  it("moves the scratchpad of a template that opened <think> to reasoning when only </think> arrives", async () => {
    const content = "The user says hello. Keep it short.\n</think>\n\nHello!";
    const { client } = await harness([
      { content, chunkChars: 4 },
      { content, chunkChars: 4 },
    ]);
    const shown: string[] = [];
    const turn = await streamTurn(client, body(), { onOutput: (t) => shown.push(t) });
    expect(turn).toMatchObject({ content: "Hello!", reasoning: "The user says hello. Keep it short." });
    const told: string[] = [];
    const declared = await streamTurn(client, body(), {
      startInReasoning: true,
      onOutput: (t) => told.push(t),
    });
    expect(declared).toEqual(turn);
    expect(told.join("")).toBe("Hello!");
    expect(shown.join("").startsWith("The user")).toBe(true);
  });

  it("takes back through onRetract the answer text a late lone </think> turns into reasoning, before onThinking gets it", async () => {
    const content = "plan</think>Answer";
    const { client } = await harness([
      { content, chunkChars: 2 },
      { content, chunkChars: 64 },
    ]);
    const log: (["out" | "think", string] | ["retract", number])[] = [];
    const options: StreamTurnOptions = {
      onOutput: (t) => log.push(["out", t]),
      onRetract: (chars) => log.push(["retract", chars]),
      onThinking: (t) => log.push(["think", t]),
    };
    const turn = await streamTurn(client, body(), options);
    expect(turn).toMatchObject({ content: "Answer", reasoning: "plan" });
    const at = log.findIndex(([kind]) => kind === "retract");
    expect(at).toBeGreaterThan(0);
    const shownBefore = log.slice(0, at).map(([, t]) => (typeof t === "string" ? t : ""));
    expect(log.slice(0, at).every(([kind]) => kind === "out")).toBe(true);
    expect(shownBefore.join("")).toBe("plan");
    expect(log[at]).toEqual(["retract", 4]);
    expect(log[at + 1]).toEqual(["think", "plan"]);
    // A display that applies what it was told ends with what the turn says.
    let shown = "";
    for (const [kind, value] of log) {
      if (kind === "out") shown += value;
      else if (kind === "retract") shown = shown.slice(0, shown.length - value);
    }
    expect(shown).toBe(turn.content);
    // The marker in the same piece as the text before it: nothing was shown, so nothing is taken back.
    log.length = 0;
    await expect(streamTurn(client, body(), options)).resolves.toMatchObject({ content: "Answer" });
    expect(log).toEqual([
      ["think", "plan"],
      ["out", "Answer"],
    ]);
  });

  it("tells onScratchpadClosed and says scratchpadClosed on the turn when a lone </think> ends a template-opened scratchpad, also when nothing is taken back", async () => {
    const { client } = await harness([
      { content: "plan</think>Answer", chunkChars: 2 },
      { content: "</think>Answer", chunkChars: 64 },
      { content: "plan<think>x</think>Answer", chunkChars: 3 },
    ]);
    const log: string[] = [];
    const options: StreamTurnOptions = {
      onOutput: (t) => log.push(`out ${t}`),
      onRetract: (chars) => log.push(`retract ${chars}`),
      onScratchpadClosed: () => log.push("closed"),
      onThinking: (t) => log.push(`think ${t}`),
    };
    const cut = await streamTurn(client, body(), options);
    expect(cut).toMatchObject({ content: "Answer", reasoning: "plan", scratchpadClosed: true });
    // Once, before the retract and the reasoning it moved.
    expect(log.filter((e) => e === "closed")).toHaveLength(1);
    expect(log.slice(log.indexOf("closed"), log.indexOf("closed") + 3)).toEqual([
      "closed",
      "retract 4",
      "think plan",
    ]);
    // The marker first: nothing to take back, and the caller is told all the same, before the answer.
    log.length = 0;
    const first = await streamTurn(client, body(), options);
    expect(first).toMatchObject({ content: "Answer", reasoning: "", scratchpadClosed: true });
    expect(log).toEqual(["closed", "out Answer"]);
    // An opened and closed fence is no template-opened scratchpad.
    log.length = 0;
    const fenced = await streamTurn(client, body(), options);
    expect(fenced).toMatchObject({ content: "planAnswer", reasoning: "x" });
    expect(fenced.scratchpadClosed).toBeUndefined();
    expect(log).not.toContain("closed");
  });

  it("with startInReasoning, reads the answer of a server that parsed the scratchpad into reasoning_content", async () => {
    // deepseek-reasoner's template opens <think> in the prompt; the server's parser takes the
    // scratchpad out, so the content is the answer and never holds </think>.
    const fixture = "wire/deepseek/deepseek-reasoner-reasoning-content.sse";
    const { client } = await harness([
      { type: "replay", fixture },
      { type: "replay", fixture },
    ]);
    const plain = await streamTurn(client, body());
    expect(plain.content.length).toBeGreaterThan(0);
    const told: string[] = [];
    const declared = await streamTurn(client, body(), {
      startInReasoning: true,
      onOutput: (t) => told.push(t),
    });
    expect(declared.content).toBe(plain.content);
    expect(declared.reasoning).toBe(plain.reasoning);
    expect(told.join("")).toBe(plain.content);
  });

  it("reads a stream that ends without [DONE]", async () => {
    const { client } = await harness([{ content: "No terminator here.", noDone: true }]);
    await expect(streamTurn(client, body())).resolves.toMatchObject({
      content: "No terminator here.",
      finishReason: "stop",
    });
  });

  it("reports finishReason length for a reply cut off at the token ceiling", async () => {
    const { client } = await harness([
      { toolCalls: [{ name: "write", arguments: '{"text":"abc' }], finishReason: "length" },
    ]);
    const turn = await streamTurn(client, body());
    expect(turn.finishReason).toBe("length");
    expect(turn.toolCalls[0]?.function.arguments).toBe('{"text":"abc');
  });
});

describe("the produced box", () => {
  it("stays false while the server has sent only its content-free opening chunk", async () => {
    const { client } = await harness([{ content: "never sent", silentAfterChunk: 1 }]);
    const produced: ProducedBox = { value: false };
    const error = await rejection(streamTurn(client, body(), { produced, firstChunkMs: 150 }));
    expect(EndpointSilent.isInstance(error)).toBe(true);
    expect(produced.value).toBe(false);
  });

  it("is set once text has arrived, even if the stream then fails", async () => {
    const { client } = await harness([{ content: "partial answer", chunkChars: 4, silentAfterChunk: 2 }]);
    const produced: ProducedBox = { value: false };
    const error = await rejection(streamTurn(client, body(), { produced, idleMs: 150 }));
    expect(error).toMatchObject({ name: "EndpointSilent", code: "idle", produced: true });
    expect(produced.value).toBe(true);
  });
});

// Most of these wait out an allowance on purpose; each has its own server and client, so they wait
// side by side. Their servers are closed when the suite ends, not after each test, which would
// close another test's server mid-run.
describe.concurrent("the watchdog", () => {
  const open: (() => Promise<void>)[] = [];
  afterAll(async () => {
    await Promise.all(open.splice(0).map((close) => close()));
  });
  const harness = (replies?: Parameters<typeof startHarness>[0], options?: { timeout?: number }) =>
    startHarness(replies, options, (close) => open.push(close));

  it("raises EndpointSilent and closes the connection when the server goes silent mid-reply", async () => {
    const { client, relay } = await harness([
      { content: "partial answer here", chunkChars: 4, silentAfterChunk: 3 },
    ]);
    const started = performance.now();
    // Prefill gets an allowance of its own, so a machine under load slow to the first chunk is not
    // reported as `first-chunk`: what this checks is the silence after text arrived. It is far longer
    // than the bound below, which is 15 times the idle allowance (a loaded machine's timers run late).
    const error = await rejection(streamTurn(client, body(), { idleMs: 200, firstChunkMs: 30_000 }));
    const elapsed = performance.now() - started;
    expect(EndpointSilent.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: "idle", limitMs: 200, partial: { content: "partial " } });
    expect((error as EndpointSilent).waitedMs).toBeGreaterThanOrEqual(200);
    expect(elapsed).toBeGreaterThanOrEqual(190);
    expect(elapsed).toBeLessThan(3000);
    await relay.drained();
  });

  it("gives prefill its own allowance: a content-free opening chunk does not start the idle clock", async () => {
    const { client, relay } = await harness([{ content: "late", silentAfterChunk: 1 }]);
    const started = performance.now();
    const error = await rejection(streamTurn(client, body(), { idleMs: 100, firstChunkMs: 500 }));
    expect(error).toMatchObject({ name: "EndpointSilent", code: "first-chunk", limitMs: 500 });
    expect(performance.now() - started).toBeGreaterThanOrEqual(480);
    await relay.drained();
  });

  it("once text arrived, the idle allowance governs: a server silent after five chunks is reported at the idle number, not the prefill one", async () => {
    // Role chunk and five content chunks at once, then silence (issue 18: reported after 15 s, not 3).
    const { client, relay } = await harness([{ content: "abcdefghij", chunkChars: 2, silentAfterChunk: 6 }]);
    const seen: string[] = [];
    const started = performance.now();
    const error = await rejection(
      streamTurn(client, body(), { idleMs: 300, firstChunkMs: 30_000, onOutput: (t) => seen.push(t) }),
    );
    const elapsed = performance.now() - started;
    expect(seen.join("")).toBe("abcdefghij");
    expect(error).toMatchObject({ name: "EndpointSilent", code: "idle", limitMs: 300, produced: true });
    expect(elapsed).toBeGreaterThanOrEqual(290);
    // Ten times the idle allowance, and a tenth of the prefill one it is told from (a bound of 2 s
    // against a 3 s prefill allowance left a loaded machine little room either side).
    expect(elapsed).toBeLessThan(3000);
    await relay.drained();
  });

  it("lets a server slow to prefill (before headers and after its opening chunk) answer, then reads it fast", async () => {
    const { client } = await harness([
      { content: "prefilled answer", firstByteDelayMs: 800, chunkChars: 2 },
      { content: "second answer", pause: { afterChunk: 1, ms: 800 }, chunkChars: 2 },
    ]);
    const options = { idleMs: 300, firstChunkMs: 5000 };
    await expect(streamTurn(client, body(), options)).resolves.toMatchObject({ content: "prefilled answer" });
    await expect(streamTurn(client, body(), options)).resolves.toMatchObject({ content: "second answer" });
  });

  it("never cuts off a server that keeps trickling, however long it takes", { timeout: 15_000 }, async () => {
    const text = "word ".repeat(400);
    const { client, relay } = await harness([{ content: text, chunkChars: 1, chunkDelayMs: 30 }]);
    const controller = new AbortController();
    const pieces: string[] = [];
    // A chunk every 30 ms against 600 ms allowances: twenty chunks an allowance, so a loaded CI
    // machine that stalls this process for a few hundred milliseconds is not read as a silence.
    const run = streamTurn(client, body(), {
      idleMs: 600,
      firstChunkMs: 600,
      signal: controller.signal,
      onOutput: (t) => pieces.push(t),
    });
    await sleep(3000); // five idle allowances
    controller.abort(new Error("enough"));
    const error = await rejection(run);
    expect(error).toMatchObject({ message: "enough" });
    expect(EndpointSilent.isInstance(error)).toBe(false);
    expect(pieces.length).toBeGreaterThan(30);
    await relay.drained();
  });

  it("returns the turn when the server finished and sent [DONE] but left the connection open", async () => {
    // Frames: role, "Done.", finish, usage, [DONE]; then the server says nothing more.
    const { client, relay } = await harness([{ content: "Done.", silentAfterChunk: 5 }]);
    // Waiting for the connection to close would end in EndpointSilent once the idle allowance ran
    // out; the allowances are loose so a loaded machine's slow first chunk is not mistaken for that.
    await expect(streamTurn(client, body(), { idleMs: 2000, firstChunkMs: 10_000 })).resolves.toMatchObject({
      content: "Done.",
      finishReason: "stop",
    });
    await relay.drained();
  });

  it("with no watchdog at all, returns the turn when the server sent its finish reason (and usage) and then kept the connection open without [DONE]", {
    timeout: FINISH_GRACE_MS * 4,
  }, async () => {
    // Frames: role, "Done.", finish, usage. The first server stops after the finish, the second
    // after the usage: neither sends [DONE] nor closes. No idleMs, as the loop runs without a
    // request timeout: the turn is whole, and waiting for the close would be waiting forever.
    const finishOnly = await harness([{ content: "Done.", silentAfterChunk: 3 }]);
    const withUsage = await harness([{ content: "Done.", silentAfterChunk: 4 }]);
    const [bare, counted] = await Promise.all([
      streamTurn(finishOnly.client, body()),
      streamTurn(withUsage.client, body()),
    ]);
    expect(bare).toMatchObject({ content: "Done.", finishReason: "stop", usage: { total: 0 } });
    expect(counted).toMatchObject({ content: "Done.", finishReason: "stop" });
    expect(counted.usage.total).toBeGreaterThan(0);
    // The connection left open was closed for it.
    await finishOnly.relay.drained();
    await withUsage.relay.drained();
  });

  it("keeps a usage chunk that arrives a moment after the finish reason", {
    timeout: FINISH_GRACE_MS * 4,
  }, async () => {
    // Frames: role, "Done.", finish, (a pause well inside the grace), usage, then silence.
    const { client, relay } = await harness([
      {
        content: "Done.",
        pause: { afterChunk: 3, ms: Math.floor(FINISH_GRACE_MS / 5) },
        silentAfterChunk: 4,
      },
    ]);
    const turn = await streamTurn(client, body());
    expect(turn).toMatchObject({ content: "Done.", finishReason: "stop" });
    expect(turn.usage.total).toBeGreaterThan(0);
    await relay.drained();
  });

  it("with only firstChunkMs, bounds the prefill and then lets the reply take its time", async () => {
    const { client } = await harness([
      { content: "abcdefgh", chunkChars: 2, pause: { afterChunk: 2, ms: 500 } },
      { content: "never", silentAfterChunk: 0 },
    ]);
    await expect(streamTurn(client, body(), { firstChunkMs: 200 })).resolves.toMatchObject({
      content: "abcdefgh",
    });
    await expect(streamTurn(client, body(), { firstChunkMs: 200 })).rejects.toMatchObject({
      name: "EndpointSilent",
      code: "first-chunk",
    });
  });

  it("switches the client's own request timeout off while a watchdog is armed", async () => {
    const replies = [{ content: "slow but fine", firstByteDelayMs: 700 }];
    const armed = await harness(replies, { timeout: 250 });
    await expect(streamTurn(armed.client, body(), { firstChunkMs: 5000 })).resolves.toMatchObject({
      content: "slow but fine",
    });
    const unarmed = await harness(replies, { timeout: 250 });
    const error = await rejection(streamTurn(unarmed.client, body()));
    expect(error).toBeInstanceOf(APIConnectionTimeoutError);
  });

  it("rejects allowances that are not a number of milliseconds", async () => {
    const { client } = await harness();
    for (const bad of [-1, Number.NaN, "100"]) {
      const error = await rejection(streamTurn(client, body(), { idleMs: bad as number }));
      expect(error).toMatchObject({ name: "StreamError", code: "invalid-argument" });
    }
  });
});

describe("abort by signal", () => {
  it("rejects at once, sending nothing, when the signal is already aborted", async () => {
    const { client, server } = await harness([{ content: "unused" }]);
    const controller = new AbortController();
    controller.abort();
    const error = await rejection(streamTurn(client, body(), { signal: controller.signal }));
    expect(error).toMatchObject({ name: "AbortError" });
    expect(server.chatRequests).toHaveLength(0);
  });

  it("ends the read and closes the connection when aborted before the headers arrive", async () => {
    // The server would answer after 30 s (it stops waiting when the connection closes).
    const { client, relay, server } = await harness([{ content: "late", firstByteDelayMs: 30_000 }]);
    const controller = new AbortController();
    const run = streamTurn(client, body(), { signal: controller.signal, idleMs: 60_000 });
    // Once the server has the request (a fixed 150 ms sleep could end first on a loaded machine).
    await vi.waitFor(() => expect(server.chatRequests).toHaveLength(1), { timeout: 4000, interval: 10 });
    expect(relay.open).toBe(1);
    const started = performance.now();
    controller.abort(new Error("stop before headers"));
    await expect(run).rejects.toThrow("stop before headers");
    expect(performance.now() - started).toBeLessThan(2500); // settles in milliseconds; the server takes 30 s
    await relay.drained();
  });

  it("ends the read and closes the connection when aborted during prefill, after the opening chunk", async () => {
    const { client, relay } = await harness([{ content: "late", silentAfterChunk: 1 }]);
    const controller = new AbortController();
    const run = streamTurn(client, body(), { signal: controller.signal });
    await sleep(150);
    controller.abort();
    expect(await rejection(run)).toMatchObject({ name: "AbortError" });
    await relay.drained();
  });

  it("ends the read and closes the connection when aborted mid-stream", async () => {
    const { client, relay } = await harness([
      { content: "a long answer that keeps coming", chunkChars: 2, chunkDelayMs: 20 },
    ]);
    const controller = new AbortController();
    const seen: string[] = [];
    const run = streamTurn(client, body(), {
      signal: controller.signal,
      onOutput: (t) => {
        seen.push(t);
        if (seen.length === 2) controller.abort(new Error("user stopped"));
      },
    });
    await expect(run).rejects.toThrow("user stopped");
    expect(seen).toHaveLength(2);
    await relay.drained();
  });
});

describe("streams that go wrong", () => {
  it("rejects with a StreamError carrying the server's error when one arrives mid-stream", async () => {
    const serverError = { message: "Upstream model crashed", code: 502 };
    const { client } = await harness([
      { content: "Half an answ", chunkChars: 4, errorMidStream: { afterChunk: 3, error: serverError } },
    ]);
    const error = await rejection(streamTurn(client, body()));
    expect(StreamError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({
      code: "server-error",
      serverError,
      produced: true,
      partial: { content: "Half an " },
    });
    expect((error as Error).message).toContain("Upstream model crashed");
    expect((error as Error).cause).toBeInstanceOf(APIError);
  });

  it("rejects with a malformed-chunk StreamError for a line that is not JSON", async () => {
    const { client } = await harness([
      {
        type: "raw",
        chunks: [
          'data: {"choices":[{"index":0,"delta":{"content":"ok so far"}}]}\n\n',
          'data: {"choices":[{"index":0,"delta":{"content":\n\n',
          "data: [DONE]\n\n",
        ],
      },
    ]);
    const error = await rejection(streamTurn(client, body()));
    expect(error).toMatchObject({
      name: "StreamError",
      code: "malformed-chunk",
      partial: { content: "ok so far" },
    });
  });

  it("rejects with a connection-lost StreamError when the server drops the connection", async () => {
    const { client } = await harness([{ content: "cut short by a reset", chunkChars: 5, dropAfterChunk: 2 }]);
    const error = await rejection(streamTurn(client, body()));
    expect(error).toMatchObject({
      name: "StreamError",
      code: "connection-lost",
      partial: { content: "cut s" },
    });
  });

  it("passes an HTTP refusal before the stream through unchanged, so the caller can read the server's body", async () => {
    const refusal = readFixtureJson("errors/openai/max-tokens-unsupported-use-max-completion-tokens.json");
    const { client } = await harness([{ type: "error", status: 400, body: refusal }]);
    const error = await rejection(streamTurn(client, body({ max_tokens: 10 })));
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).status).toBe(400);
    expect((error as APIError).error).toEqual((refusal as { error: unknown }).error);
  });

  it("passes an exception from the caller's own callback through and closes the connection", async () => {
    const { client, relay } = await harness([
      { content: "one two three four", chunkChars: 3, chunkDelayMs: 10 },
    ]);
    const bug = new Error("callback bug");
    await expect(
      streamTurn(client, body(), {
        onOutput: () => {
          throw bug;
        },
      }),
    ).rejects.toBe(bug);
    await relay.drained();
  });

  it("names a client or body it cannot use instead of failing deep inside", async () => {
    const missing = await rejection(streamTurn({} as ChatClientLike, body()));
    expect(missing).toMatchObject({ name: "StreamError", code: "invalid-argument" });
    const { client } = await harness();
    const noBody = await rejection(streamTurn(client, null as never));
    expect(noBody).toMatchObject({ name: "StreamError", code: "invalid-argument" });
    const notStreaming: ChatClientLike = { chat: { completions: { create: async () => ({}) as never } } };
    expect(await rejection(streamTurn(notStreaming, body()))).toMatchObject({ code: "not-a-stream" });
  });

  it("names an option of the wrong type before sending anything", async () => {
    const { client, server } = await harness();
    const wrong: [string, Record<string, unknown>][] = [
      ["signal", { signal: {} }],
      ["signal", { signal: "stop" }],
      ["onOutput", { onOutput: "print" }],
      ["onThinking", { onThinking: 1 }],
      ["onRetract", { onRetract: "erase" }],
      ["onScratchpadClosed", { onScratchpadClosed: true }],
      ["onToolCallDelta", { onToolCallDelta: {} }],
      ["produced", { produced: "yes" }],
    ];
    for (const [name, options] of wrong) {
      const error = await rejection(streamTurn(client, body(), options as StreamTurnOptions));
      expect(error).toMatchObject({ name: "StreamError", code: "invalid-argument" });
      expect((error as Error).message).toContain(`streamTurn: ${name} must`);
    }
    expect(server.chatRequests).toHaveLength(0);
    expect(() => listenForAbort({} as AbortSignal, () => {})).toThrow(/listenForAbort: signal must/);
  });

  it("refuses an option key it does not read, naming it and the one meant, before sending anything", async () => {
    // A misspelt idleMs must not silently leave the turn with no watchdog against a silent server.
    const { client, server } = await harness([{ content: "hello world", silentAfterChunk: 2 }]);
    const misspelt = await rejection(streamTurn(client, body(), { idleMS: 300 } as StreamTurnOptions));
    expect(misspelt).toMatchObject({ name: "StreamError", code: "invalid-argument" });
    expect((misspelt as Error).message).toContain('unknown option "idleMS" (did you mean "idleMs"?)');
    const unknown = await rejection(streamTurn(client, body(), { onToken: () => {} } as StreamTurnOptions));
    expect(unknown).toMatchObject({ name: "StreamError", code: "invalid-argument" });
    expect((unknown as Error).message).toContain('unknown option "onToken"');
    expect((unknown as Error).message).not.toContain("did you mean");
    const notAnObject = await rejection(streamTurn(client, body(), "x" as StreamTurnOptions));
    expect(notAnObject).toMatchObject({ name: "StreamError", code: "invalid-argument" });
    expect((notAnObject as Error).message).toContain("streamTurn: options must be an object");
    expect(server.chatRequests).toHaveLength(0);
  });

  it("names a malformed fence table and a startInReasoning that is not a boolean as invalid-argument", async () => {
    const { client, server } = await harness();
    for (const fences of ["x", [{ open: "<t>" }]]) {
      const error = await rejection(streamTurn(client, body(), { fences } as unknown as StreamTurnOptions));
      expect(StreamError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ code: "invalid-argument" });
      expect((error as Error).message).toMatch(/^streamTurn: .*fence/);
      expect((error as Error).cause).toBeInstanceOf(TypeError);
    }
    for (const startInReasoning of ["yes", 1, {}]) {
      const error = await rejection(
        streamTurn(client, body(), { startInReasoning } as unknown as StreamTurnOptions),
      );
      expect(error).toMatchObject({ name: "StreamError", code: "invalid-argument" });
      expect((error as Error).message).toContain("streamTurn: startInReasoning must be true or false");
    }
    expect(server.chatRequests).toHaveLength(0);
  });

  it("reads null options, allowances included, as absent", async () => {
    const content = "plan</think>Answer";
    const { client } = await harness([{ content, chunkChars: 3 }]);
    const nulls = {
      signal: null,
      idleMs: null,
      firstChunkMs: null,
      produced: null,
      onOutput: null,
      onThinking: null,
      onToolCallDelta: null,
      fences: null,
      startInReasoning: null,
    } as unknown as StreamTurnOptions;
    await expect(streamTurn(client, body(), nulls)).resolves.toMatchObject({
      content: "Answer",
      reasoning: "plan",
    });
  });
});

describe("streamTurn keeps what a tool call and a scratchpad need to be sent back", () => {
  it("reads a tool name streamed in two equal halves as both halves (run + run → runrun)", async () => {
    const { client } = await harness([
      { toolCalls: [{ id: "c1", name: "runrun", arguments: "{}" }], chunkChars: 3 },
    ]);
    const turn = await streamTurn(client, body());
    expect(turn.toolCalls.map((c) => c.function.name)).toEqual(["runrun"]);
  });

  it("says which field the server streamed the scratchpad in, so it can be sent back in the same one", async () => {
    const { client } = await harness([
      { reasoning: "Think first.", reasoningAs: "reasoning", content: "Done." },
      { reasoning: "Think first.", content: "Done." },
      { reasoning: "Think first.", reasoningAs: "fence", content: "Done." },
    ]);
    expect((await streamTurn(client, body())).reasoningField).toBe("reasoning");
    expect((await streamTurn(client, body())).reasoningField).toBe("reasoning_content");
    expect((await streamTurn(client, body())).reasoningField).toBeUndefined();
  });
});
