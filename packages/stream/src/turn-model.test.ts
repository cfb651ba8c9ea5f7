import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import { StreamError } from "./errors.js";
import { streamTurn } from "./stream-turn.js";
import { body, harness } from "./test-support/http.js";
import { random } from "./test-support/rechunk.js";
import type { Turn } from "./turn.js";

// A model of one turn, written out the way each server writes it, cut anywhere and read back over
// loopback HTTP through the openai client: what comes back must be the turn that was generated. The
// dialects follow the testkit's recordings (recordings/wire/*) and personalities: OpenAI's closing
// usage chunk with no choices, vLLM, llama.cpp's role-only opener and `timings` on every chunk,
// Ollama's role on every delta and whole calls, LM Studio, OpenRouter's processing comments,
// `reasoning_details` mirror and usage on a chunk of its own with an empty delta, Mistral's calls
// without an index and usage on the finish chunk.
//
// R90_STREAM_RUNS / R90_STREAM_SEED widen or replay a run.

const RUNS = Number(process.env.R90_STREAM_RUNS ?? 100);
const SEED = process.env.R90_STREAM_SEED === undefined ? undefined : Number(process.env.R90_STREAM_SEED);
// Shrinking a failure over HTTP can outlast the test's timeout: stop it in time to print the
// counterexample found so far, rather than a bare timeout. The limit grows with the property scale as
// the test's timeout does: a fixed one ended a 10x run early, with no failure found, and it passed
// having run a fraction of its runs.
const settings = (runs: number) =>
  propertyRuns(runs, {
    interruptAfterTimeLimit: propertyTimeout(45_000 + RUNS * 50),
    ...(SEED === undefined ? {} : { seed: SEED }),
  });

type Dialect = "openai" | "vllm" | "llamacpp" | "ollama" | "lmstudio" | "openrouter" | "mistral";
type ReasoningAs = "reasoning_content" | "reasoning" | "think";

interface Call {
  name: string;
  args: string;
  id: string;
}

interface Model {
  content: string;
  reasoning: string;
  reasoningAs: ReasoningAs;
  calls: Call[];
  finish: string;
  usage: { prompt: number; completion: number; cached?: number; reasoningTokens?: number } | undefined;
}

/** How the dialect writes reasoning. */
const REASONING: Record<Dialect, ReasoningAs[]> = {
  openai: ["think"],
  vllm: ["reasoning_content", "reasoning", "think"],
  llamacpp: ["reasoning_content", "think"],
  ollama: ["reasoning", "think"],
  lmstudio: ["reasoning_content", "reasoning", "think"],
  openrouter: ["reasoning"],
  mistral: ["think"],
};

/** Text of any code points (astral ones, combining marks, ZWJ sequences), never a lone surrogate. */
const text = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: "binary", maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: "grapheme", maxLength: 20 }) },
  {
    weight: 1,
    arbitrary: fc
      .array(
        fc.constantFrom(
          "e\u0301",
          "👩‍👩‍👧",
          "🇫🇷",
          "𝄞",
          "\r\n",
          "\n\n",
          "data: ",
          ": ping",
          "[DONE]",
          "\\",
          '"',
          "é",
          "日本",
          " ",
          "\u0000",
          "\u2028",
          "\ufeff",
        ),
        { maxLength: 8 },
      )
      .map((parts) => parts.join("")),
  },
);

/** A string value in a tool's arguments: anything, also the fence markers, which are not fences there. */
const argString = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: "binary", maxLength: 12 }) },
  { weight: 1, arbitrary: fc.constantFrom("</think>", "<think>x</think>", "◁/think▷", "<|end|>") },
);

const argValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    argString,
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 3 }),
    fc.dictionary(argString, tie("value"), { maxKeys: 3 }),
  ),
})).value;

/** Arguments of any shape: mostly an object, sometimes any JSON value, compact or indented, or none (""). */
const args = fc.oneof(
  { weight: 1, arbitrary: fc.constant("") },
  {
    weight: 12,
    arbitrary: fc
      .tuple(
        fc.oneof({ weight: 4, arbitrary: fc.dictionary(argString, argValue, { maxKeys: 4 }) }, argValue),
        fc.constantFrom(0, 0, 2),
      )
      .map(([value, indent]) => JSON.stringify(value, null, indent)),
  },
);

const name = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_-]{0,15}$/);

const usage = fc.option(
  fc
    .record({
      prompt: fc.nat(100_000),
      completion: fc.nat(10_000),
      cachedShare: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: undefined }),
      reasoningTokens: fc.option(fc.nat(1000), { nil: undefined }),
    })
    .map(({ prompt, completion, cachedShare, reasoningTokens }) => ({
      prompt,
      completion,
      ...(cachedShare === undefined ? {} : { cached: Math.floor(prompt * cachedShare) }),
      ...(reasoningTokens === undefined ? {} : { reasoningTokens: Math.min(reasoningTokens, completion) }),
    })),
  { nil: undefined },
);

const isBlank = (c: string) => c === " " || c === "\t" || c === "\r" || c === "\n";
const trimStart = (s: string) => {
  let i = 0;
  while (i < s.length && isBlank(s[i]!)) i++;
  return s.slice(i);
};
const trimEnd = (s: string) => {
  let i = s.length;
  while (i > 0 && isBlank(s[i - 1]!)) i--;
  return s.slice(0, i);
};

const dialect = fc.constantFrom<Dialect>(
  "openai",
  "vllm",
  "llamacpp",
  "ollama",
  "lmstudio",
  "openrouter",
  "mistral",
);

const model = (d: Dialect): fc.Arbitrary<Model> =>
  fc
    .record({
      content: text,
      reasoning: fc.oneof(fc.constant(""), text),
      reasoningAs: fc.constantFrom(...REASONING[d]),
      calls: fc.array(fc.record({ name, args }), { maxLength: 4 }),
      finish: fc.constantFrom("stop", "length", "tool_calls", "content_filter"),
      usage,
      ids: fc.uniqueArray(fc.stringMatching(/^[A-Za-z0-9]{9}$/), { minLength: 4, maxLength: 4 }),
    })
    .map(({ ids, calls, ...rest }) => ({
      ...rest,
      calls: calls.map((c, i) => ({ ...c, id: d === "mistral" ? ids[i]! : `call_${ids[i]}` })),
    }));

/** What a turn reads back as: text inside `<think>` loses the blank space at its edges, as the fences say. */
function expected(m: Model): { content: string; reasoning: string } {
  if (m.reasoningAs !== "think" || m.reasoning === "") return { content: m.content, reasoning: m.reasoning };
  return { content: trimStart(m.content), reasoning: trimEnd(trimStart(m.reasoning)) };
}

/** `s` cut into pieces at code-point boundaries (as a tokenizer's pieces are: never half a surrogate pair). */
function pieces(s: string, rand: () => number, max: number): string[] {
  const points = [...s];
  if (points.length === 0) return [];
  const out: string[] = [];
  let at = 0;
  while (at < points.length) {
    const n = 1 + Math.floor(rand() * Math.max(1, Math.min(max, points.length - at)));
    out.push(points.slice(at, at + n).join(""));
    at += n;
  }
  return out;
}

interface Rendering {
  text: string;
  /** Offset (in characters of `text`) where the finish chunk's event ends: cut before it, the turn is unfinished. */
  finishEnd: number;
  /** Offset where an OpenRouter error chunk may be put in: after the content and calls, before the finish. */
  beforeFinish: number;
  /** Offsets where each event up to the finish chunk starts: where an error chunk may come instead. */
  starts: number[];
}

/** The turn as `d` writes it: a list of chunk objects, then framed as server-sent events. */
function render(m: Model, d: Dialect, rand: () => number): Rendering {
  const chunks: Record<string, unknown>[] = [];
  let created = 1_760_000_000;
  let predicted = 0;
  const continuous = rand() < 0.3;
  const base = (): Record<string, unknown> => {
    const c: Record<string, unknown> = {
      id: d === "openrouter" ? "gen-1-abc" : "chatcmpl-1",
      object: "chat.completion.chunk",
      created: created++,
      model: "m",
    };
    if (d === "openai") {
      c.service_tier = "default";
      c.system_fingerprint = "fp_1";
      c.usage = null;
      c.obfuscation = "3Y6yaTIPlXV".slice(0, 1 + Math.floor(rand() * 10));
    }
    // vLLM's `continuous_usage_stats`: a running count on every chunk, the last one whole.
    if (d === "vllm" && continuous && m.usage)
      c.usage = {
        prompt_tokens: m.usage.prompt,
        completion_tokens: chunks.length,
        total_tokens: m.usage.prompt + chunks.length,
      };
    if (d === "ollama") c.system_fingerprint = "fp_ollama";
    if (d === "openrouter") c.provider = "P";
    return c;
  };
  const choice = (delta: Record<string, unknown>, finish: string | null = null) => {
    const ch: Record<string, unknown> = { index: 0, delta, finish_reason: finish };
    if (d === "openai" || d === "openrouter" || d === "mistral" || d === "vllm") ch.logprobs = null;
    if (d === "openrouter") ch.native_finish_reason = finish;
    return ch;
  };
  const push = (delta: Record<string, unknown>, finish: string | null = null, extra = {}) => {
    const c: Record<string, unknown> = { ...base(), choices: [choice(delta, finish)], ...extra };
    if (d === "llamacpp") {
      predicted += 1 + Math.floor(rand() * 20);
      c.timings = { prompt_n: 10, prompt_ms: 251.5, predicted_n: chunks.length, predicted_ms: predicted };
    }
    chunks.push(c);
  };
  const roleOnEvery = d === "ollama" || d === "openrouter";
  const withRole = (delta: Record<string, unknown>) =>
    roleOnEvery ? { role: "assistant", ...delta } : delta;

  // The opener.
  if (d === "llamacpp") push({ role: "assistant", content: null });
  else if (d === "openai") push({ role: "assistant", content: "", refusal: null });
  else if (d === "mistral" || d === "vllm" || d === "lmstudio") push({ role: "assistant", content: "" });

  // Reasoning, then the answer.
  if (m.reasoningAs === "think") {
    const written = m.reasoning === "" ? m.content : `<think>${m.reasoning}</think>${m.content}`;
    for (const p of pieces(written, rand, 6)) push(withRole({ content: p }));
  } else {
    for (const p of pieces(m.reasoning, rand, 6)) {
      const delta: Record<string, unknown> = { [m.reasoningAs]: p };
      if (d === "openrouter") {
        delta.content = "";
        delta.reasoning_details = [{ type: "reasoning.text", text: p, index: 0, format: null }];
      }
      push(withRole(delta));
    }
    // OpenRouter's answer deltas say `reasoning: null` beside the text; vLLM and LM Studio (as Azure's
    // DeepSeek recording does) may name the other field as null on every delta.
    const nulls =
      d === "openrouter"
        ? { reasoning: null, reasoning_details: [] }
        : rand() < 0.3
          ? { [m.reasoningAs]: null }
          : {};
    for (const p of pieces(m.content, rand, 6))
      push(
        withRole(
          d === "openrouter" || d === "vllm" || d === "lmstudio" ? { content: p, ...nulls } : { content: p },
        ),
      );
  }

  // Tool calls: whole in one delta (Ollama, Mistral), or the name first and the arguments in pieces.
  const whole = d === "mistral" || d === "ollama";
  const repeatIds = !whole && rand() < 0.3;
  const noIndex = d === "mistral" || (d === "ollama" && rand() < 0.5);
  m.calls.forEach((call, index) => {
    if (whole) {
      const piece: Record<string, unknown> = {
        id: call.id,
        function: { name: call.name, arguments: call.args },
      };
      if (!noIndex) piece.index = index;
      if (d === "ollama") piece.type = "function";
      push(withRole(d === "mistral" ? { content: null, tool_calls: [piece] } : { tool_calls: [piece] }));
      return;
    }
    const argPieces = pieces(call.args, rand, 8);
    // OpenAI, vLLM and llama.cpp name the call in a piece of its own with empty arguments; others put
    // the first arguments beside the name.
    const nameAlone =
      d === "openai" || d === "vllm" || d === "llamacpp" || argPieces.length === 0 || rand() < 0.5;
    // vLLM's naming piece may carry no `arguments` at all.
    const named = d === "vllm" && rand() < 0.5 ? { name: call.name } : { name: call.name, arguments: "" };
    const deltas: { name?: string; arguments?: string }[] = nameAlone
      ? [named, ...argPieces.map((a) => ({ arguments: a }))]
      : [{ name: call.name, arguments: argPieces[0]! }, ...argPieces.slice(1).map((a) => ({ arguments: a }))];
    deltas.forEach((fn, i) => {
      const piece: Record<string, unknown> = { index };
      if (i === 0 || repeatIds) piece.id = call.id;
      if (i === 0) piece.type = "function";
      piece.function = fn;
      push(withRole({ tool_calls: [piece] }));
    });
  });
  // Mistral may finish on the chunk holding the last call, usage beside it (recordings/wire/mistral).
  const onLastCall = d === "mistral" && m.calls.length > 0 && rand() < 0.5;
  const beforeFinishChunk = onLastCall ? chunks.length - 1 : chunks.length;

  // The finish, and the usage where the dialect puts it.
  const wire = m.usage && {
    prompt_tokens: m.usage.prompt,
    completion_tokens: m.usage.completion,
    total_tokens: m.usage.prompt + m.usage.completion,
    ...(m.usage.cached === undefined ? {} : { prompt_tokens_details: { cached_tokens: m.usage.cached } }),
    ...(m.usage.reasoningTokens === undefined
      ? {}
      : { completion_tokens_details: { reasoning_tokens: m.usage.reasoningTokens } }),
  };
  if (onLastCall) {
    const last = chunks[chunks.length - 1]!;
    (last.choices as Record<string, unknown>[])[0]!.finish_reason = m.finish;
    if (wire) last.usage = wire;
  } else if (d === "mistral") push({ content: "" }, m.finish, wire ? { usage: wire } : {});
  else push(withRole(d === "ollama" ? { content: "" } : {}), m.finish);
  const finishChunk = chunks.length - 1;
  if (wire && d !== "mistral") {
    if (d === "openrouter")
      chunks.push({ ...base(), choices: [choice({ role: "assistant", content: "" })], usage: wire });
    else {
      const c: Record<string, unknown> = { ...base(), choices: [], usage: wire };
      if (d === "llamacpp")
        c.timings = { prompt_n: 10, prompt_ms: 251.5, predicted_n: chunks.length, predicted_ms: predicted };
      chunks.push(c);
    }
  }

  // Framing: line ends, `data:` with or without its space, comments and blank lines between events.
  const eol = rand() < 0.5 ? "\n" : "\r\n";
  const data = rand() < 0.7 ? "data: " : "data:";
  const comment = d === "openrouter" ? ": OPENROUTER PROCESSING" : rand() < 0.5 ? ": keep-alive" : ":";
  let out = "";
  let finishEnd = 0;
  let beforeFinish = 0;
  if (d === "openrouter") out += `${comment}${eol}${eol}`.repeat(1 + Math.floor(rand() * 3));
  const starts: number[] = [];
  chunks.forEach((c, i) => {
    if (i === beforeFinishChunk) beforeFinish = out.length;
    if (i <= beforeFinishChunk) starts.push(out.length);
    if (rand() < 0.15) out += `${comment}${eol}${eol}`;
    if (rand() < 0.1) out += eol;
    out += `${data}${JSON.stringify(c)}`;
    if (i === finishChunk) finishEnd = out.length;
    out += `${eol}${eol}`;
  });
  // Most servers end with [DONE]; several recordings end after the finish (and usage) chunk.
  if (rand() < 0.85) out += `${data}[DONE]${eol}${eol}`;
  return { text: out, finishEnd, beforeFinish, starts };
}

/**
 * `bytes` cut at `places` (any byte), and also at a few of the places a reader is most easily caught
 * out by: inside a UTF-8 sequence and between `\r` and `\n` (each place is taken modulo those).
 */
function cut(bytes: Uint8Array, places: number[]): Uint8Array[] {
  const tricky: number[] = [];
  for (let i = 1; i < bytes.length; i++) {
    const b = bytes[i]!;
    if ((b & 0xc0) === 0x80 || (b === 0x0a && bytes[i - 1] === 0x0d)) tricky.push(i);
  }
  const aimed =
    tricky.length === 0 ? [] : places.slice(0, places.length >> 1).map((p) => tricky[p % tricky.length]! - 1);
  const all = [...places.map((p) => p % Math.max(1, bytes.length - 1)), ...aimed];
  const sorted = [...new Set(all.map((p) => 1 + p))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let last = 0;
  for (const p of sorted) {
    if (p <= last || p >= bytes.length) continue;
    out.push(bytes.slice(last, p));
    last = p;
  }
  out.push(bytes.slice(last));
  return out;
}

const encoder = new TextEncoder();

/** `text` cut after `chars` characters, as bytes. */
const upTo = (text: string, chars: number): Uint8Array => encoder.encode(text.slice(0, chars));

/** A place from `from` up to (not including) `to`, `millionths` of the way. */
const between = (millionths: number, from: number, to: number): number =>
  from + Math.floor((millionths / 1_000_000) * (to - from));

const NO_USAGE = { prompt: 0, completion: 0, total: 0, cached: 0 };

/** The usage a turn of `m` reads as. */
function usageOf(m: Model): Turn["usage"] {
  const u = m.usage;
  if (u === undefined) return NO_USAGE;
  return {
    prompt: u.prompt,
    completion: u.completion,
    total: u.prompt + u.completion,
    cached: u.cached ?? 0,
    ...(u.cached === undefined ? {} : { uncached: u.prompt - u.cached }),
    ...(u.reasoningTokens === undefined ? {} : { reasoningTokens: u.reasoningTokens }),
  };
}

/** The last `predicted_ms` a llama.cpp stream wrote. */
function lastPredicted(wire: string): number | undefined {
  const all = [...wire.matchAll(/"predicted_ms":(\d+)/g)];
  return all.length === 0 ? undefined : Number(all[all.length - 1]![1]);
}

/** One server for the whole property: each request is answered with the next queued body. */
async function server() {
  const queue: Uint8Array[][] = [];
  // A millisecond between pieces, so each reaches the client as a read of its own (written back to
  // back, the socket hands them over as one).
  const { client } = await harness(() => ({ type: "raw", chunks: queue.shift() ?? [], chunkDelayMs: 1 }));
  return {
    read(parts: Uint8Array[]): Promise<Turn> {
      queue.push(parts);
      return streamTurn(client, body({ stream_options: { include_usage: true } }));
    },
  };
}

const turnAndDialect = dialect.chain((d) =>
  fc.record({
    d: fc.constant(d),
    m: model(d).filter((m) => {
      // Inside a scratchpad, a closer with a backtick on each side is reasoning written about the tag
      // (README, fences): a reasoning ending in "`" before an answer opening with "`" is that.
      if (m.reasoningAs !== "think" || m.reasoning === "") return true;
      return !(trimEnd(m.reasoning).endsWith("`") && m.content.startsWith("`"));
    }),
    seed: fc.integer(),
    places: fc.array(fc.nat(), { maxLength: 16 }),
  }),
);

describe("a random turn, written in each server's dialect and cut anywhere, reads back exactly", () => {
  it("text, reasoning, tool calls, finish reason and usage", {
    timeout: propertyTimeout(60_000 + RUNS * 60),
  }, async () => {
    const s = await server();
    await fc.assert(
      fc.asyncProperty(turnAndDialect, async ({ d, m, seed, places }) => {
        const { text: wireText } = render(m, d, random(seed));
        const turn = await s.read(cut(encoder.encode(wireText), places));
        const want = expected(m);
        expect(turn.content).toBe(want.content);
        expect(turn.reasoning).toBe(want.reasoning);
        expect(
          turn.toolCalls.map((c) => ({ id: c.id, name: c.function.name, args: c.function.arguments })),
        ).toEqual(m.calls.map((c) => ({ id: c.id, name: c.name, args: c.args })));
        expect(turn.finishReason).toBe(m.finish);
        expect(turn.usage).toEqual(usageOf(m));
        // llama.cpp's cumulative timings: the last chunk's count.
        if (d === "llamacpp")
          expect(turn.timings).toMatchObject({ prefillMs: 251.5, decodeMs: lastPredicted(wireText) });
      }),
      settings(RUNS),
    );
  });

  /**
   * A property over a turn read cut short after a place `where` gives a range for (from up to, not
   * including, to, in characters of the stream's text).
   */
  const cutShort = (
    title: string,
    runs: number,
    where: (r: Rendering) => [number, number],
    check: (read: () => Promise<Turn>, d: Dialect, m: Model) => Promise<void>,
  ) =>
    it(title, { timeout: propertyTimeout(60_000 + RUNS * 60) }, async () => {
      const s = await server();
      await fc.assert(
        fc.asyncProperty(turnAndDialect, fc.nat(999_999), async ({ d, m, seed, places }, millionths) => {
          const r = render(m, d, random(seed));
          const [from, to] = where(r);
          await check(() => s.read(cut(upTo(r.text, between(millionths, from, to)), places)), d, m);
        }),
        settings(runs),
      );
    });

  // Cut anywhere before the finish chunk's JSON is whole.
  cutShort(
    "cut before the finish: the typed error with the partial turn, never a finished one",
    RUNS,
    (r) => [0, r.finishEnd],
    async (read, _d, m) => {
      const failure = await read().then(
        () => undefined,
        (error: unknown) => error,
      );
      // Never a turn: not even one with `finishReason: ""` (a loop would end the run on it).
      expect(StreamError.isInstance(failure)).toBe(true);
      const { code, partial: turn } = failure as StreamError;
      // No chunk whole yet is no stream; anything after that is a connection lost.
      expect(["connection-lost", "not-a-stream"]).toContain(code);
      expect(turn?.finishReason).toBe("");
      const want = expected(m);
      // The answer so far, but for a held half marker (`<th`) the snapshot releases as it stands.
      const content = turn?.content ?? "";
      const held = /<\/?t?h?i?n?k?$/.exec(content);
      expect(
        want.content.startsWith(content) ||
          (m.reasoningAs === "think" &&
            held !== null &&
            want.content.startsWith(content.slice(0, held.index))),
      ).toBe(true);
      for (const [i, call] of (turn?.toolCalls ?? []).entries()) {
        expect(call.function.name).toBe(m.calls[i]?.name);
        expect(m.calls[i]?.args.startsWith(call.function.arguments)).toBe(true);
      }
    },
  );

  // Anywhere from the end of the finish chunk's JSON on (its line end, the usage chunk, [DONE]).
  cutShort(
    "cut after the finish: the whole turn, its usage exact or, where the cut took it, zero",
    Math.max(10, Math.floor(RUNS / 2)),
    (r) => [r.finishEnd, r.text.length + 1],
    async (read, d, m) => {
      const turn = await read();
      const want = expected(m);
      expect(turn.content).toBe(want.content);
      expect(turn.reasoning).toBe(want.reasoning);
      expect(turn.toolCalls.map((c) => c.function.arguments)).toEqual(m.calls.map((c) => c.args));
      expect(turn.finishReason).toBe(m.finish);
      // The usage chunk whole, or lost to the cut (zero, as documented; vLLM's running count where
      // it sent one): never a count half read.
      const running = d === "vllm" && m.usage !== undefined && turn.usage.prompt === m.usage.prompt;
      expect(running ? turn.usage.total : turn.usage).toEqual(
        running ? m.usage!.prompt + turn.usage.completion : expect.toBeOneOf([usageOf(m), NO_USAGE]),
      );
    },
  );

  it("OpenRouter's error in a 200 mid-stream: server-error with the turn so far", {
    timeout: propertyTimeout(60_000 + RUNS * 60),
  }, async () => {
    const s = await server();
    const orTurn = model("openrouter").map((m) => ({ m, d: "openrouter" as const }));
    await fc.assert(
      fc.asyncProperty(
        orTurn,
        fc.integer(),
        fc.array(fc.nat(), { maxLength: 8 }),
        async ({ m, d }, seed, places) => {
          const rand = random(seed);
          const { text: wireText, beforeFinish, starts } = render(m, d, rand);
          // Mostly after everything but the finish; otherwise in front of any earlier event.
          const at = rand() < 0.5 ? beforeFinish : starts[Math.floor(rand() * starts.length)]!;
          const error = JSON.stringify({
            id: "gen-1-abc",
            provider: "P",
            error: { code: 502, message: "Upstream error: provider returned 500" },
            object: "chat.completion.chunk",
            created: 1,
            model: "m",
            choices: [
              {
                index: 0,
                delta: { role: "assistant", content: "" },
                finish_reason: "error",
                native_finish_reason: "error",
              },
            ],
          });
          const spliced = `${wireText.slice(0, at)}data: ${error}\n\n${wireText.slice(at)}`;
          let failure: unknown;
          try {
            await s.read(cut(encoder.encode(spliced), places));
          } catch (e) {
            failure = e;
          }
          expect(StreamError.isInstance(failure)).toBe(true);
          const f = failure as StreamError;
          expect(f.code).toBe("server-error");
          expect(f.message).toContain("Upstream error: provider returned 500");
          const want = expected(m);
          expect(f.partial?.finishReason).toBe("");
          const partial = f.partial!;
          if (at === beforeFinish) {
            expect(partial.content).toBe(want.content);
            expect(partial.reasoning).toBe(want.reasoning);
            expect(partial.toolCalls.map((c) => c.function.arguments)).toEqual(m.calls.map((c) => c.args));
          } else {
            expect(want.content.startsWith(partial.content)).toBe(true);
            expect(want.reasoning.startsWith(partial.reasoning)).toBe(true);
            for (const [i, call] of partial.toolCalls.entries())
              expect(m.calls[i]?.args.startsWith(call.function.arguments)).toBe(true);
          }
        },
      ),
      settings(Math.max(10, Math.floor(RUNS / 4))),
    );
  });
});
