/**
 * The fault matrix (issue 18): every way an endpoint or a tool has been seen to fail, each run
 * through `runAgentLoop` with one tool against a real loopback server (`@loopwright/testkit`), on
 * default options and on tight ones (3-second allowances). Prints one table per set of options —
 * outcome, time to outcome, requests sent, whether the transcript returned (or carried on the error)
 * could be sent again (every tool call answered) — and exits 1 unless every row is GOOD.
 *
 *   pnpm faults      the whole matrix (the default-option silences wait minutes, as documented)
 *   pnpm faults:ci   tight options in full, and the default-option rows that end within seconds
 */
import { createServer } from "node:net";
import { type Reply, startServer, type TestServer } from "@loopwright/testkit";
import { type ChatMessage, createRuntime, type LoopConfig, type ToolDefinition } from "../src/index.js";

const CI = process.argv.includes("--ci");
const ONLY = process.argv.find((a) => a.startsWith("--only="))?.slice("--only=".length);

/** The documented defaults (packages/loop/README.md, "Every wait and its default"), in seconds. */
const DEFAULTS = { firstToken: 120, request: 120, tool: 300, loading: 120, backoff: 1 };

const TIGHT: Partial<LoopConfig> = { requestTimeoutSeconds: 3, firstTokenSeconds: 3, toolTimeoutSeconds: 3 };

const ADD: ToolDefinition = {
  type: "function",
  function: {
    name: "add",
    description: "Adds two numbers.",
    parameters: {
      type: "object",
      properties: { a: { type: "number" }, b: { type: "number" } },
      required: ["a", "b"],
    },
  },
};

const QUESTION: ChatMessage[] = [{ role: "user", content: "What is 2 + 3?" }];
const ANSWER: Reply = { content: "2 + 3 = 5." };
const CALL: Reply = { toolCalls: [{ name: "add", arguments: '{"a": 2, "b": 3}' }] };
const NEVER = 10 * 60_000;

/** A 429 whose `retry-after` asks for `seconds`. */
function rateLimited(message: string, seconds: number): Reply {
  return {
    type: "error",
    status: 429,
    body: { error: { message } },
    headers: { "retry-after": String(seconds) },
  };
}

type Expect =
  | { kind: "answer" }
  | { kind: "silent"; code: "first-chunk" | "idle" }
  | { kind: "error"; name: RegExp }
  | { kind: "abort" };

interface Env {
  tight: boolean;
  config: Partial<LoopConfig>;
}

interface Row {
  fault: string;
  expect: Expect;
  /** The most this row may take, in seconds, for the options given. */
  within: (env: Env) => number;
  /** Whether it takes minutes on default options (left out of `faults:ci`). */
  slowOnDefaults?: boolean;
  run: (env: Env) => Promise<Trial>;
}

interface Trial {
  server: TestServer | undefined;
  outcome: unknown;
  ok: boolean;
  abortReason?: unknown;
  ms: number;
  requests: () => number;
}

// ---- the wire ---------------------------------------------------------------------------------

function chunk(delta: Record<string, unknown>, finish: string | null = null): string {
  const body = {
    id: "chatcmpl-faults",
    object: "chat.completion.chunk",
    created: 0,
    model: "m",
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
  return `data: ${JSON.stringify(body)}\n\n`;
}

const SSE = { "content-type": "text/event-stream", "cache-control": "no-cache" };

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const port = (probe.address() as { port: number }).port;
      probe.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---- one trial ----------------------------------------------------------------------------------

interface TrialOptions {
  server?: Parameters<typeof startServer>[0];
  dispatch?: (signal: AbortSignal | undefined) => unknown;
  /** Abort the run 300 ms after this moment: the server has the request, text streamed, the tool started, a retry notice. */
  abortAt?: "request" | "output" | "dispatch" | "notice";
  /** Start the server this long after the run began, on a port nobody listens on until then. */
  lateByMs?: number;
  config?: Partial<LoopConfig>;
}

async function trial(env: Env, options: TrialOptions): Promise<Trial> {
  let server: TestServer | undefined;
  let baseUrl: string;
  let late: Promise<void> | undefined;
  if (options.lateByMs !== undefined) {
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}/v1`;
    late = sleep(options.lateByMs).then(async () => {
      server = await startServer({ ...options.server, port });
    });
  } else {
    server = await startServer(options.server);
    baseUrl = server.baseUrl;
  }
  const controller = new AbortController();
  const reason = new Error("stopped by the host");
  let timer: ReturnType<typeof setTimeout> | undefined;
  const trigger = (at: TrialOptions["abortAt"]) => {
    if (at === options.abortAt && timer === undefined)
      timer = setTimeout(() => controller.abort(reason), 300);
  };
  const watch =
    options.abortAt === "request"
      ? setInterval(() => {
          if ((server?.chatRequests.length ?? 0) > 0) trigger("request");
        }, 10)
      : undefined;
  const started = performance.now();
  let outcome: unknown;
  let ok = false;
  try {
    outcome = await createRuntime().runAgentLoop({
      config: { baseUrl, model: "m", ...env.config, ...options.config },
      messages: QUESTION,
      tools: [ADD],
      signal: controller.signal,
      onEvent: (event) => {
        if (event.kind === "output") trigger("output");
        if (event.kind === "notice") trigger("notice");
      },
      dispatch: (_request, signal) => {
        trigger("dispatch");
        return options.dispatch ? options.dispatch(signal) : "5";
      },
    });
    ok = true;
  } catch (error) {
    outcome = error;
  }
  if (watch) clearInterval(watch);
  const ms = performance.now() - started;
  if (timer) clearTimeout(timer);
  await late;
  return {
    server,
    outcome,
    ok,
    ms,
    ...(options.abortAt !== undefined ? { abortReason: reason } : {}),
    requests: () => server?.chatRequests.length ?? 0,
  };
}

// ---- the rows -----------------------------------------------------------------------------------

const quick = () => 30;
const silentFirst = ({ tight, config }: Env) =>
  tight ? 10 : 1.5 * (2 * (config.firstTokenSeconds ?? DEFAULTS.firstToken) + DEFAULTS.backoff);

const ROWS: Row[] = [
  // The twelve of the issue.
  {
    fault: "silent before the first byte",
    expect: { kind: "silent", code: "first-chunk" },
    within: silentFirst,
    slowOnDefaults: true,
    run: (env) =>
      trial(env, { server: { replies: [1, 2, 3].map(() => ({ content: "x", firstByteDelayMs: NEVER })) } }),
  },
  {
    fault: "silent mid-stream",
    expect: { kind: "silent", code: "idle" },
    within: ({ tight }) => (tight ? 10 : 1.5 * DEFAULTS.request),
    slowOnDefaults: true,
    run: (env) =>
      trial(env, {
        server: { replies: [{ content: "Two plus three is", chunkChars: 4, silentAfterChunk: 3 }] },
      }),
  },
  {
    fault: "dropped mid-stream",
    expect: { kind: "error", name: /StreamError \[connection-lost\]/ },
    within: quick,
    run: (env) =>
      trial(env, {
        server: { replies: [{ content: "Two plus three is", chunkChars: 4, dropAfterChunk: 3 }] },
      }),
  },
  {
    fault: "503 loading for 8 s",
    expect: { kind: "answer" },
    within: () => 20,
    run: (env) =>
      trial(env, { server: { personality: { name: "llamacpp", loadingMs: 8000 }, replies: [CALL, ANSWER] } }),
  },
  {
    fault: "429 with retry-after",
    expect: { kind: "answer" },
    within: quick,
    run: (env) =>
      trial(env, {
        server: {
          replies: [rateLimited("Rate limit reached", 2), CALL, ANSWER],
        },
      }),
  },
  {
    fault: "500 twice",
    expect: { kind: "answer" },
    within: quick,
    run: (env) => {
      const boom: Reply = { type: "error", status: 500, body: { error: { message: "Internal error" } } };
      return trial(env, { server: { replies: [boom, boom, CALL, ANSWER] } });
    },
  },
  {
    fault: "error event inside a 200 stream",
    expect: { kind: "error", name: /StreamError \[server-error\]/ },
    within: quick,
    run: (env) =>
      trial(env, {
        server: {
          replies: [
            {
              content: "Two plus",
              chunkChars: 4,
              errorMidStream: { afterChunk: 2, error: { message: "CUDA error: out of memory" } },
            },
          ],
        },
      }),
  },
  {
    fault: "tool call cut off at the ceiling",
    expect: { kind: "answer" },
    within: quick,
    run: (env) =>
      trial(env, {
        server: {
          replies: [
            { toolCalls: [{ name: "add", arguments: '{"a": 2, "b' }], finishReason: "length" },
            ANSWER,
          ],
        },
      }),
  },
  {
    fault: "almost-JSON arguments",
    expect: { kind: "answer" },
    within: quick,
    run: (env) =>
      trial(env, {
        server: { replies: [{ toolCalls: [{ name: "add", arguments: "{'a': 2, 'b': 3,}" }] }, ANSWER] },
      }),
  },
  {
    fault: "a tool that throws",
    expect: { kind: "answer" },
    within: quick,
    run: (env) =>
      trial(env, {
        server: { replies: [CALL, ANSWER] },
        dispatch: () => {
          throw new Error("disk full");
        },
      }),
  },
  {
    fault: "abort mid-stream",
    expect: { kind: "abort" },
    within: () => 5,
    run: (env) =>
      trial(env, {
        server: { replies: [{ content: "word ".repeat(200), chunkChars: 5, chunkDelayMs: 100 }] },
        abortAt: "output",
      }),
  },
  {
    fault: "context overflow",
    expect: { kind: "error", name: /AgentLoopOverflow/ },
    within: quick,
    run: (env) => trial(env, { server: { personality: { name: "llamacpp", nCtx: 16 }, replies: [ANSWER] } }),
  },
  // And the rest.
  {
    fault: "503 loading for 60 s",
    expect: { kind: "answer" },
    within: () => 75,
    slowOnDefaults: true,
    run: (env) =>
      trial(env, {
        server: { personality: { name: "llamacpp", loadingMs: 60_000 }, replies: [CALL, ANSWER] },
      }),
  },
  {
    fault: "a burst of 429s",
    expect: { kind: "answer" },
    within: quick,
    run: (env) => {
      const limited = rateLimited("Too many requests", 1);
      return trial(env, { server: { replies: [limited, limited, limited, limited, limited, CALL, ANSWER] } });
    },
  },
  {
    fault: "a proxy's HTML 502",
    expect: { kind: "answer" },
    within: quick,
    run: (env) =>
      trial(env, {
        server: {
          replies: [
            {
              type: "error",
              status: 502,
              headers: { "content-type": "text/html" },
              body: "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>",
            },
            CALL,
            ANSWER,
          ],
        },
      }),
  },
  {
    fault: "connection refused, then the server comes up",
    expect: { kind: "answer" },
    within: quick,
    run: (env) => trial(env, { lateByMs: 1200, server: { replies: [CALL, ANSWER] } }),
  },
  {
    fault: "headers, then silence",
    expect: { kind: "silent", code: "first-chunk" },
    within: silentFirst,
    slowOnDefaults: true,
    run: (env) =>
      trial(env, { server: { replies: [1, 2, 3].map(() => ({ content: "x", silentAfterChunk: 0 })) } }),
  },
  {
    fault: "[DONE] without a finish_reason",
    expect: { kind: "answer" },
    within: quick,
    run: (env) => trial(env, { server: { replies: [CALL, { content: "2 + 3 = 5.", finishReason: null }] } }),
  },
  {
    fault: "two [DONE]s",
    expect: { kind: "answer" },
    within: quick,
    run: (env) =>
      trial(env, {
        server: {
          replies: [
            CALL,
            {
              type: "raw",
              headers: SSE,
              chunks: [
                chunk({ role: "assistant", content: "" }),
                chunk({ content: "2 + 3 = 5." }),
                chunk({}, "stop"),
                "data: [DONE]\n\n",
                "data: [DONE]\n\n",
              ],
            },
          ],
        },
      }),
  },
  {
    fault: "invalid UTF-8 in a delta",
    expect: { kind: "answer" },
    within: quick,
    run: (env) => {
      const [head, tail] = chunk({ content: "2 + 3 = 5 \u0000 ok" }).split("\\u0000");
      return trial(env, {
        server: {
          replies: [
            CALL,
            {
              type: "raw",
              headers: SSE,
              chunks: [
                chunk({ role: "assistant", content: "" }),
                Buffer.concat([
                  Buffer.from(head ?? ""),
                  Buffer.from([0xff, 0xfe, 0xc3]),
                  Buffer.from(tail ?? ""),
                ]),
                chunk({}, "stop"),
                "data: [DONE]\n\n",
              ],
            },
          ],
        },
      });
    },
  },
  {
    fault: "a tool that hangs",
    expect: { kind: "answer" },
    within: ({ tight }) => (tight ? 15 : 1.5 * DEFAULTS.tool),
    slowOnDefaults: true,
    run: (env) =>
      trial(env, { server: { replies: [CALL, ANSWER] }, dispatch: () => new Promise(() => undefined) }),
  },
  {
    fault: "abort before the headers",
    expect: { kind: "abort" },
    within: () => 5,
    run: (env) =>
      trial(env, { server: { replies: [{ content: "x", firstByteDelayMs: NEVER }] }, abortAt: "request" }),
  },
  {
    fault: "abort during prefill",
    expect: { kind: "abort" },
    within: () => 5,
    run: (env) =>
      trial(env, {
        server: { replies: [{ content: "x", pause: { afterChunk: 1, ms: NEVER } }] },
        abortAt: "request",
      }),
  },
  {
    fault: "abort during a tool call",
    expect: { kind: "abort" },
    within: () => 5,
    run: (env) =>
      trial(env, {
        server: { replies: [CALL, ANSWER] },
        abortAt: "dispatch",
        dispatch: (signal) =>
          new Promise((_resolve, reject) => signal?.addEventListener("abort", () => reject(signal.reason))),
      }),
  },
  {
    fault: "abort during a retry wait",
    expect: { kind: "abort" },
    within: () => 5,
    run: (env) =>
      trial(env, {
        server: {
          replies: [rateLimited("Slow down", 30)],
        },
        abortAt: "notice",
      }),
  },
  {
    fault: "closes the socket after every request",
    expect: { kind: "answer" },
    within: quick,
    run: (env) => {
      const close = { ...SSE, connection: "close" };
      const call = chunk({
        tool_calls: [
          { index: 0, id: "call_1", type: "function", function: { name: "add", arguments: '{"a":2,"b":3}' } },
        ],
      });
      return trial(env, {
        server: {
          replies: [
            {
              type: "raw",
              headers: close,
              chunks: [
                chunk({ role: "assistant", content: null }),
                call,
                chunk({}, "tool_calls"),
                "data: [DONE]\n\n",
              ],
            },
            {
              type: "raw",
              headers: close,
              chunks: [
                chunk({ role: "assistant", content: "" }),
                chunk({ content: "2 + 3 = 5." }),
                chunk({}, "stop"),
                "data: [DONE]\n\n",
              ],
            },
          ],
        },
      });
    },
  },
];

// ---- judging ------------------------------------------------------------------------------------

/** Every assistant tool call answered by a tool message, and no tool message answering nothing. */
function sendable(messages: readonly ChatMessage[] | undefined): boolean {
  if (!Array.isArray(messages)) return false;
  const open = new Set<string>();
  for (const m of messages) {
    if (m.role === "assistant") {
      if (open.size > 0) return false;
      for (const c of m.tool_calls ?? []) open.add(c.id);
    } else if (m.role === "tool") {
      if (!m.tool_call_id || !open.delete(m.tool_call_id)) return false;
    } else if (open.size > 0) return false;
  }
  return open.size === 0;
}

function describeOutcome(t: Trial): string {
  if (t.ok) return "answered";
  const e = t.outcome as { name?: string; cause?: unknown; code?: unknown } | undefined;
  if (t.abortReason !== undefined && (e === t.abortReason || e?.cause === t.abortReason)) return "aborted";
  const parts: string[] = [];
  let cur: unknown = e;
  for (let depth = 0; cur && depth < 4; depth++) {
    const c = cur as { name?: string; code?: unknown; cause?: unknown; status?: unknown };
    const name = c.name === "Error" ? (c.constructor?.name ?? "Error") : (c.name ?? String(cur));
    parts.push(
      `${name}${typeof c.code === "string" ? ` [${c.code}]` : ""}${typeof c.status === "number" ? ` ${c.status}` : ""}`,
    );
    cur = c.cause;
  }
  return parts.join(" ← ");
}

function transcriptOf(t: Trial): readonly ChatMessage[] | undefined {
  const o = t.outcome as { messages?: ChatMessage[]; run?: { messages?: ChatMessage[] } } | undefined;
  return t.ok ? o?.messages : o?.run?.messages;
}

function judge(
  row: Row,
  env: Env,
  t: Trial,
): { outcome: string; good: boolean; sendable: boolean; why: string } {
  const outcome = describeOutcome(t);
  const okTranscript = sendable(transcriptOf(t));
  const limit = row.within(env);
  let expected = false;
  switch (row.expect.kind) {
    case "answer":
      expected = t.ok;
      break;
    case "abort":
      expected = outcome === "aborted";
      break;
    case "silent":
      expected = new RegExp(`EndpointSilent \\[${row.expect.code}\\]`).test(outcome);
      break;
    case "error":
      expected = row.expect.name.test(outcome);
      break;
  }
  const inTime = t.ms <= limit * 1000;
  const why = !expected
    ? `expected ${row.expect.kind === "error" ? row.expect.name.source : row.expect.kind}`
    : !inTime
      ? `took longer than ${limit} s`
      : !okTranscript
        ? "transcript not sendable"
        : "";
  return { outcome, good: expected && inTime && okTranscript, sendable: okTranscript, why };
}

// ---- running ------------------------------------------------------------------------------------

async function runSet(name: string, env: Env, rows: Row[]): Promise<boolean> {
  const started = performance.now();
  // Rows wait far more than they compute: run them together, a few at a time.
  const results: string[][] = new Array(rows.length);
  let allGood = true;
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      const row = rows[i];
      if (!row) return;
      const t = await row.run(env);
      const j = judge(row, env, t);
      allGood &&= j.good;
      results[i] = [
        row.fault,
        j.outcome,
        `${(t.ms / 1000).toFixed(1)} s`,
        String(t.requests()),
        j.sendable ? "yes" : "NO",
        j.good ? "GOOD" : `BAD: ${j.why}`,
      ];
      await t.server?.close();
    }
  };
  await Promise.all(Array.from({ length: Math.min(8, rows.length) }, worker));
  const head = ["fault", "outcome", "time", "requests", "sendable", "verdict"];
  const widths = head.map((h, c) => Math.max(h.length, ...results.map((r) => (r[c] ?? "").length)));
  const line = (cells: string[]) => `| ${cells.map((cell, c) => cell.padEnd(widths[c] ?? 0)).join(" | ")} |`;
  console.log(`\n## ${name} (${((performance.now() - started) / 1000).toFixed(1)} s)\n`);
  console.log(line(head));
  console.log(line(widths.map((w) => "-".repeat(w))));
  for (const r of results) console.log(line(r));
  return allGood;
}

async function main(): Promise<void> {
  const pick = (rows: Row[]) => (ONLY ? rows.filter((r) => r.fault.includes(ONLY)) : rows);
  const tightRows = pick(ROWS);
  const defaultRows = pick(CI ? ROWS.filter((r) => !r.slowOnDefaults) : ROWS);
  const [tight, defaults] = await Promise.all([
    runSet(
      "tight options (requestTimeoutSeconds 3, firstTokenSeconds 3, toolTimeoutSeconds 3)",
      { tight: true, config: TIGHT },
      tightRows,
    ),
    runSet(
      CI ? "default options (rows that end within seconds; `pnpm faults` runs them all)" : "default options",
      { tight: false, config: {} },
      defaultRows,
    ),
  ]);
  if (CI) {
    const skipped = ROWS.filter((r) => r.slowOnDefaults).map((r) => r.fault);
    console.log(`\nLeft out on default options here (minutes each, by design): ${skipped.join("; ")}.`);
  }
  const good = tight && defaults;
  console.log(good ? "\nEvery fault GOOD." : "\nSome faults are not GOOD (see above).");
  process.exit(good ? 0 : 1);
}

await main();
