// What the loop pays each step to size what it sent, run by `pnpm bench`: a 2,000-step tool run
// (LONG_RUN_STEPS to change it) where every step, as the loop does, takes a calibration reading of
// the body it sent and cuts it with contextTokens against the reported prompt. Both read every
// message, so a run pays for its transcript once per step; the baseline is the least any exact count
// can do, the same walk summing the content's length inline, timed in the same run. Numbers are
// printed, never asserted.
import { calibrate, contextTokens } from "../src/index.js";
import type { MessageLike } from "../src/messages.js";

const steps = Number(process.env.LONG_RUN_STEPS ?? 2000);
const tools = [
  {
    type: "function",
    function: {
      name: "add",
      description: "Add two numbers",
      parameters: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } } },
    },
  },
];

function run(measure: (body: { messages: MessageLike[]; tools: unknown[] }) => void): number {
  const messages: MessageLike[] = [
    { role: "system", content: "You add numbers." },
    { role: "user", content: "Add one, many times." },
  ];
  let spent = 0;
  for (let step = 0; step < steps; step++) {
    const id = `call_0_${step}`;
    messages.push({
      role: "assistant",
      content: "",
      tool_calls: [{ id, type: "function", function: { name: "add", arguments: `{"a":${step},"b":1}` } }],
    });
    messages.push({ role: "tool", tool_call_id: id, content: String(step + 1) });
    const body = { messages: [...messages], tools };
    const at = performance.now();
    measure(body);
    spent += performance.now() - at;
  }
  return spent;
}

let sink = 0;
const baseline = (body: { messages: MessageLike[] }) => {
  for (const message of body.messages) {
    sink += typeof message.content === "string" ? message.content.length : 0;
    for (const call of message.tool_calls ?? []) sink += call.function?.arguments?.length ?? 0;
  }
};
const loop = (body: { messages: MessageLike[]; tools: unknown[] }) => {
  calibrate("http://bench.invalid/v1", "sim", body, 4 * body.messages.length);
  sink += contextTokens(body, { promptTokens: 4 * body.messages.length }).total;
};

for (let round = 0; round < 2; round++) run(loop); // warm up
const rounds = 5;
const base: number[] = [];
const measured: number[] = [];
for (let round = 0; round < rounds; round++) {
  base.push(run(baseline));
  measured.push(run(loop));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
console.log(
  `calibrate + contextTokens over a ${steps}-step run: ${median(measured).toFixed(0)} ms; ` +
    `baseline walk ${median(base).toFixed(1)} ms; ratio ${(median(measured) / median(base)).toFixed(1)}x (sink ${sink > 0})`,
);
