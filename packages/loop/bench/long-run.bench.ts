// A long run, timed per window of steps, run by `pnpm bench`: the loop answering `steps` tool steps
// against a loopback testkit server (a server that sends no tool-call ids, so every step's call is
// `call_0` until the loop makes it distinct), beside a baseline in the same process: the same
// requests' transcripts built and serialised as a bare client would send them. The loop's own
// per-step work should grow like the baseline's (linearly in the transcript); the ratio of the last
// window to the first, against the baseline's, is what would show a step doing more than that.
// Numbers are printed, never asserted.
import { startServer } from "@loopwright/testkit";
import type { ChatMessage } from "../src/config.js";
import { createRuntime } from "../src/runtime.js";

const steps = Number(process.env.LONG_RUN_STEPS ?? 2000);
const window = Math.max(1, Math.floor(steps / 8));

const server = await startServer({
  replies: (_request, index) =>
    index < steps
      ? {
          toolCalls: [{ id: "", name: "add", arguments: `{"a":${index},"b":1}` }],
          usage: { prompt_tokens: 10 },
        }
      : { content: "done", usage: { prompt_tokens: 10 } },
});

const question: ChatMessage[] = [{ role: "user", content: "Add one, many times." }];
const stamps: number[] = [];
const started = performance.now();
const result = await createRuntime().runAgentLoop({
  config: { baseUrl: server.baseUrl, model: "sim", maxToolIterations: steps + 1 },
  messages: question,
  tools: [
    {
      type: "function",
      function: {
        name: "add",
        description: "Add two numbers",
        parameters: {
          type: "object",
          properties: { a: { type: "number" }, b: { type: "number" } },
          required: ["a", "b"],
        },
      },
    },
  ],
  dispatch: ({ args }) => Number(args.a) + Number(args.b),
  onRequest: () => stamps.push(performance.now()),
});
const total = performance.now() - started;
await server.close();

// The baseline: the transcript of each step, as the run built it, serialised as a request body.
const transcript = result.messages;
const base: number[] = [];
const t0 = performance.now();
for (let step = 1; step <= steps; step++) {
  const messages = transcript.slice(0, 1 + (step - 1) * 2);
  JSON.parse(JSON.stringify({ model: "sim", stream: true, messages }));
  base.push(performance.now());
}
const baseTotal = performance.now() - t0;

function perStep(times: number[], from: number, to: number): number {
  return ((times[to - 1] ?? 0) - (times[from - 1] ?? 0)) / (to - from);
}
const first = [1, 1 + window] as const;
const last = [steps - window, steps] as const;
const loopGrowth = perStep(stamps, ...last) / perStep(stamps, ...first);
const baseGrowth = perStep(base, ...last) / perStep(base, ...first);
console.log(
  `long run, ${steps} steps: ${(total / 1000).toFixed(1)} s in all; loop ${perStep(stamps, ...first).toFixed(2)} ms/step in the first ${window}, ` +
    `${perStep(stamps, ...last).toFixed(2)} ms/step in the last (${loopGrowth.toFixed(1)}x); baseline serialisation ` +
    `${(baseTotal / 1000).toFixed(1)} s, ${baseGrowth.toFixed(1)}x; loop growth over baseline growth ${(loopGrowth / baseGrowth).toFixed(2)}`,
);
