// A long run, timed per window of steps, run by `pnpm bench`: the loop answering `steps` tool steps
// against a loopback testkit server that sends no tool-call ids (every step's call is `call_0` until
// the loop makes it distinct). The baseline is measured in the same run, step by step: before each
// of the loop's requests, `beforeStep` sends the same transcript from a bare client (the SDK, the
// same tools, the stream read to its end) to a second server with the same script, so both meet the
// machine's load of that moment. Every request carries the whole transcript, so both grow with it;
// the loop's step (less the baseline's request) over the baseline's request, window by window, is
// what must not grow. Numbers are printed, never asserted. LONG_RUN_STEPS sets the length (default 2000).
import { startServer } from "@loopwright/testkit";
import OpenAI from "openai";
import type { ToolDefinition } from "../src/config.js";
import { createRuntime } from "../src/runtime.js";
import { ADD_TOOL } from "../src/test-support/transcript.js";

const steps = Number(process.env.LONG_RUN_STEPS ?? 2000);
const window = Math.max(1, Math.floor(steps / 8));
const tools: ToolDefinition[] = [ADD_TOOL];
const script = () =>
  startServer({
    replies: (_request, index) =>
      index < steps
        ? {
            toolCalls: [{ id: "", name: "add", arguments: `{"a":${index},"b":1}` }],
            usage: { prompt_tokens: 10 },
          }
        : { content: "done", usage: { prompt_tokens: 10 } },
  });

const server = await script();
const bare = await script();
const client = new OpenAI({ baseURL: bare.baseUrl, apiKey: "none", maxRetries: 0 });
/** When each of the loop's steps began (its `beforeStep`), and how long the baseline's request took in it. */
const began: number[] = [];
const baseline: number[] = [];
const finished = await createRuntime().runAgentLoop({
  config: { baseUrl: server.baseUrl, model: "sim", maxToolIterations: steps + 1 },
  messages: [{ role: "user", content: "Add one, many times." }],
  tools,
  dispatch: ({ args }) => Number(args.a) + Number(args.b),
  beforeStep: async (messages) => {
    const at = performance.now();
    began.push(at);
    const stream = await client.chat.completions.create({
      model: "sim",
      stream: true,
      stream_options: { include_usage: true },
      messages: [...messages],
      tools,
    });
    for await (const _chunk of stream) {
      // read to the end, as the loop does
    }
    baseline.push(performance.now() - at);
    return undefined;
  },
});
began.push(performance.now());
await Promise.all([server.close(), bare.close()]);

function windowOf(from: number, to: number): { loop: number; base: number } {
  let loop = 0;
  let base = 0;
  for (let k = from; k < to; k++) {
    loop += (began[k + 1] ?? 0) - (began[k] ?? 0) - (baseline[k] ?? 0);
    base += baseline[k] ?? 0;
  }
  return { loop: loop / (to - from), base: base / (to - from) };
}
const first = windowOf(window, 2 * window); // the window after the first: past the warm-up
const last = windowOf(steps - window, steps);
for (const [name, w] of [
  ["second", first],
  ["last", last],
] as const) {
  console.log(
    `long run, ${finished.steps} steps, ${name} ${window}: the loop's step ${w.loop.toFixed(2)} ms, ` +
      `a bare client's request of the same transcript ${w.base.toFixed(2)} ms (${(w.loop / w.base).toFixed(2)}x)`,
  );
}
console.log(
  `growth from the second window to the last: loop ${(last.loop / first.loop).toFixed(1)}x, bare client ${(last.base / first.base).toFixed(1)}x`,
);
