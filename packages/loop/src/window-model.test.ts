import { SUMMARY_LEAD } from "@loopwright/ledger";
import {
  countTokens,
  createPrefixCache,
  renderPrompt,
  startServer,
  type TestServer,
} from "@loopwright/testkit";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import type { ChatMessage, ToolDefinition } from "./config.js";
import { AgentLoopOverflow, createRuntime, failedRun, type LedgerEntry } from "./index.js";

// A model of a long run against a llama.cpp-like server with a small window (the testkit's
// personality refuses a prompt of n_ctx tokens or more with the recorded 400) and the testkit's
// prefix-cache model: random questions, each with a few tool steps whose results are of random
// sizes, the transcript and ledger carried from one run to the next as a host stores them; with
// `compact` and without. What must hold:
// - no summary request reaches the server's window, and no step's request goes past it by more than
//   the size guard's estimate can err (`ESTIMATE_ERROR`); one that does is refused by the server and
//   is never sent again past it: with compact it is folded for and sent once more within the window,
//   without compact the run ends there. Any run that ends early ends with `AgentLoopOverflow`;
// - every call is answered, in the transcript a run hands back or its error carries;
// - between two requests with no fold, the later one's cached prefix is the whole earlier prompt;
// - after a fold, the summary is the only new prefix: the rest is what was sent before, byte for byte.
// R90_WINDOW_RUNS / R90_WINDOW_SEED replay or widen it.

const RUNS = Number(process.env.R90_WINDOW_RUNS ?? 12);
const SEED = process.env.R90_WINDOW_SEED === undefined ? undefined : Number(process.env.R90_WINDOW_SEED);

const PAGE: ToolDefinition = {
  type: "function",
  function: {
    name: "page",
    description: "Reads a page of the given length",
    parameters: { type: "object", properties: { n: { type: "number" } } },
  },
};

const WORDS = ["alpha", "be", "gamma", "delta", "epsilonic", "zeta", "eta", "theta", "io", "kappa"];
/** A tool result of about `n` characters of prose (two tokens a word and its space, by the testkit's rule). */
const page = (n: number, salt: number): string => {
  let out = "";
  for (let i = salt; out.length < n; i++) out += `${WORDS[i % WORDS.length]} `;
  return out.slice(0, n);
};

interface Question {
  steps: number[][]; // each step: the sizes of its calls' results
}
/** A tool result's characters: mostly a few hundred, sometimes empty, sometimes thousands. */
const sizeArb = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 600 }) },
  { weight: 2, arbitrary: fc.integer({ min: 600, max: 3000 }) },
  { weight: 1, arbitrary: fc.integer({ min: 3000, max: 12_000 }) },
);
const planArb = fc.record({
  window: fc.integer({ min: 1500, max: 8000 }),
  questions: fc
    .array(
      fc.record({
        steps: fc.array(fc.array(sizeArb, { minLength: 1, maxLength: 3 }), {
          maxLength: 4,
        }),
      }),
      { minLength: 2, maxLength: 8 },
    )
    .filter((qs) => {
      const steps = qs.reduce((n, q) => n + q.steps.length + 1, 0);
      return steps >= 5 && steps <= 25;
    }),
  summaryChars: fc.integer({ min: 10, max: 400 }),
});

type Plan = typeof planArb extends fc.Arbitrary<infer T> ? T : never;
type Body = { messages: ChatMessage[]; tools?: unknown[]; stream?: boolean };
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Why an endpoint would refuse the transcript: a tool message first, an answer to no open call, a call left open. */
function refusal(messages: readonly ChatMessage[]): string | undefined {
  let i = 0;
  while (i < messages.length && messages[i]?.role === "system") i++;
  if (messages[i]?.role === "tool") return `message ${i} is a tool result with nothing before it`;
  const open = new Set<string>();
  for (; i < messages.length; i++) {
    const m = messages[i] as ChatMessage & { tool_call_id?: string; tool_calls?: { id: string }[] };
    if (m.role === "tool") {
      if (!open.delete(m.tool_call_id as string)) return `message ${i} answers a call that is not open`;
      continue;
    }
    if (open.size > 0) return `a call before message ${i} was never answered`;
    for (const call of m.tool_calls ?? []) open.add(call.id);
  }
  return open.size > 0 ? "the last calls were never answered" : undefined;
}

const text = (m: ChatMessage | undefined) => (typeof m?.content === "string" ? m.content : "");
const isSummary = (m: ChatMessage | undefined) => m?.role === "system" && text(m).startsWith(SUMMARY_LEAD);
const json = (m: unknown) => JSON.stringify(m);

/**
 * How far past the window a step's request may be sent: the size guard weighs a request at the
 * calibrated divisor (the highest of the last readings), an estimate that near the window errs either
 * way by a percent or so (measured here without compact: 2 requests of 200 runs sent 0.2 % and 0.3 %
 * past it; a guard on the last reported prompt plus the appended estimate refused those two unsent,
 * and of 300 runs one request 0.9 % inside it). Such a request is the endpoint's to refuse, and the
 * loop's to fold for (compact) or end the run on.
 */
const ESTIMATE_ERROR = 0.02;

interface Outcome {
  /** What broke the window rule: a summary past it, a request far past it, one sent again past it. */
  oversize: string[];
  overflows: number;
  folds: number;
  cacheChecked: number;
}

async function runModel({ window, questions, summaryChars }: Plan, compact: boolean): Promise<Outcome> {
  let current = 0;
  server = await startServer({
    personality: { name: "llamacpp", nCtx: window },
    prefixCache: true,
    replies: (request) => {
      const body = request.body as Body;
      if (body.stream !== true) return { content: `Summary: ${page(summaryChars, 3)}` };
      const messages = body.messages;
      let lastUser = messages.length - 1;
      while (lastUser >= 0 && messages[lastUser]?.role !== "user") lastUser--;
      const done = messages.slice(lastUser).filter((m) => m.role === "assistant").length;
      const q = questions[current] as Question;
      const step = q.steps[done];
      if (step === undefined) return { content: `Answer ${current}.` };
      return {
        toolCalls: step.map((n, k) => ({
          id: `q${current}s${done}c${k}`,
          name: "page",
          arguments: JSON.stringify({ n, salt: k + done }),
        })),
      };
    },
  });
  const runtime = createRuntime();
  let messages: ChatMessage[] = [];
  let ledger: LedgerEntry[] = [];
  const outcome: Outcome = { oversize: [], overflows: 0, folds: 0, cacheChecked: 0 };
  for (current = 0; current < questions.length; current++) {
    messages = [...messages, { role: "user", content: `Question ${current}: read the pages.` }];
    const ended = await runtime
      .runAgentLoop({
        config: {
          baseUrl: server.baseUrl,
          model: "sim",
          maxRetries: 0,
          maxTokens: 64,
          contextLength: window,
          ...(compact ? { compact: true, tasks: { compaction: { model: "sim", maxTokens: 512 } } } : {}),
        },
        messages,
        ledger,
        tools: [PAGE],
        dispatch: ({ args }) => page(Number(args.n), Number(args.salt)),
      })
      .then(
        (result) => ({ result, error: undefined }),
        (error: unknown) => ({ result: undefined, error }),
      );
    // A run that ends early ends with the typed overflow, carrying its transcript.
    const handed = ended.result?.messages ?? failedRun(ended.error)?.messages;
    if (ended.error !== undefined) {
      expect(ended.error, String(ended.error)).toBeInstanceOf(AgentLoopOverflow);
      outcome.overflows++;
    }
    expect(handed, `the run ended with ${String(ended.error)}`).toBeDefined();
    // Every call answered, in what the run hands back or its error carries.
    expect(refusal(handed as ChatMessage[])).toBeUndefined();
    if (ended.result === undefined) break;
    ledger = [...(ended.result.ledger ?? [])];
    messages = [...(handed as ChatMessage[])];
  }
  // Every request, the summaries' included, against the window the server holds (n_ctx).
  const cache = createPrefixCache();
  let previous: Body | undefined;
  let previousTokens = 0;
  let refused = false; // the last step request was past the window
  const requests = server.chatRequests;
  for (const [index, recorded] of requests.entries()) {
    const body = recorded.body as Body;
    const tokens = countTokens(renderPrompt(body));
    const over = tokens >= window;
    if (body.stream !== true) {
      // A summary: sized to the run's window by the summariser, never sent past it.
      if (over) outcome.oversize.push(`summary request #${index}: ${tokens} tokens`);
      continue;
    }
    if (over && tokens > window * (1 + ESTIMATE_ERROR)) {
      outcome.oversize.push(`request #${index}: ${tokens} tokens, past the estimate's error`);
    }
    if (over && refused)
      outcome.oversize.push(`request #${index}: ${tokens} tokens, sent again past the window`);
    if (over && !compact && index !== requests.length - 1) {
      outcome.oversize.push(`request #${index}: ${tokens} tokens, and the run went on`);
    }
    refused = over;
    if (over) continue; // refused: nothing entered the cache
    const counted = cache.process(body);
    if (previous) {
      const before = previous.messages;
      const now = body.messages;
      const appended = before.length <= now.length && before.every((m, i) => json(m) === json(now[i]));
      if (appended && json(previous.tools) === json(body.tools)) {
        // No fold between them: the whole earlier prompt is cached (but its generation prompt's
        // newline, which the next message's own opening may take into a longer whitespace token).
        outcome.cacheChecked++;
        expect(counted.cachedTokens ?? 0).toBeGreaterThanOrEqual(previousTokens - 1);
      } else if (now.some(isSummary)) {
        // A fold: the summary is the only new prefix. What follows it was sent before, in order and
        // byte for byte (then what this step appended).
        outcome.folds++;
        const at = now.findIndex(isSummary);
        const lead = now.slice(0, at);
        expect(lead.map(json)).toEqual(before.slice(0, at).map(json));
        const kept = now.slice(at + 1).map(json);
        const old = before.map(json);
        // The cut is a user message; one at or past the end of the earlier request keeps only new ones.
        expect(now[at + 1]?.role).toBe("user");
        const start = old.indexOf(kept[0] as string);
        if (start === -1) {
          previous = body;
          previousTokens = tokens;
          continue;
        }
        expect(start).toBeGreaterThan(at - 1);
        const overlap = Math.min(kept.length, old.length - start);
        expect(kept.slice(0, overlap)).toEqual(old.slice(start, start + overlap));
      }
    }
    previous = body;
    previousTokens = tokens;
  }
  return outcome;
}

describe("a long run stays inside its window and its cache", () => {
  for (const compact of [true, false]) {
    it(
      `${compact ? "with" : "without"} compact: no summary past the window, no request past it beyond the estimate nor sent again past it, every call answered, the cached prefix kept`,
      async () => {
        const seen: Outcome[] = [];
        await fc.assert(
          fc.asyncProperty(planArb, async (plan) => {
            const outcome = await runModel(plan, compact);
            await server?.close();
            server = undefined;
            seen.push(outcome);
            expect(outcome.oversize, `window ${plan.window}`).toEqual([]);
          }),
          propertyRuns(RUNS, { ...(SEED !== undefined ? { seed: SEED } : {}), endOnFailure: true }),
        );
        // About half the drawn plans never fill their window, so a random seed's runs may all end
        // without a fold (one CI run in many: twelve runs, none folded). Plans of a fixed draw are
        // run then, until one folds, so every run of this test checks a fold's bytes and cache.
        if (compact && seen.every((o) => o.folds === 0)) {
          for (const plan of fc.sample(planArb, { seed: 4, numRuns: 40 })) {
            const outcome = await runModel(plan, compact);
            await server?.close();
            server = undefined;
            seen.push(outcome);
            expect(outcome.oversize, `window ${plan.window}`).toEqual([]);
            if (outcome.folds > 0) break;
          }
        }
        expect(seen.reduce((n, o) => n + o.cacheChecked, 0)).toBeGreaterThan(0);
        if (compact) expect(seen.reduce((n, o) => n + o.folds, 0)).toBeGreaterThan(0);
      },
      propertyTimeout(60_000),
    );
  }
});
