// A long run, timed per window of steps, run by `pnpm bench`: the loop answering `steps` tool steps
// against a loopback testkit server that sends no tool-call ids (every step's call is `call_0` until
// the loop makes it distinct), beside a baseline in the same process: a bare client sending the same
// requests — the same growing transcript, the same tools, streamed and read — to a server with the
// same script. Every request carries the whole transcript, so both grow with it; what the loop adds
// per step (its time less the baseline's) is what must not grow faster than that. Numbers are
// printed, never asserted. LONG_RUN_STEPS sets the length (default 2000).
import { startServer } from "@loopwright/testkit";
import OpenAI from "openai";
import type { ChatMessage, ToolDefinition } from "../src/config.js";
import { createRuntime } from "../src/runtime.js";

const steps = Number(process.env.LONG_RUN_STEPS ?? 2000);
const window = Math.max(1, Math.floor(steps / 8));
const tools: ToolDefinition[] = [
  {
    type: "function",
    function: {
      name: "add",
      description: "Add two numbers",
      parameters: {
        type: "object",
        properties: { a: { type: "number" }, b: { type: "number" } },
        required: ["a", "b"],
        additionalProperties: false,
      },
    },
  },
];
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

/** The loop's run, stamped as each request goes out; the server is dropped after, so its records are freed. */
async function loopRun(): Promise<{ stamps: number[]; messages: ChatMessage[] }> {
  const server = await script();
  const stamps: number[] = [];
  const result = await createRuntime().runAgentLoop({
    config: { baseUrl: server.baseUrl, model: "sim", maxToolIterations: steps + 1 },
    messages: [{ role: "user", content: "Add one, many times." }],
    tools,
    dispatch: ({ args }) => Number(args.a) + Number(args.b),
    onRequest: () => stamps.push(performance.now()),
  });
  await server.close();
  return { stamps, messages: result.messages };
}

/** The baseline: the same requests from a bare client, each stream read to its end. */
async function bareRun(messages: readonly ChatMessage[]): Promise<number[]> {
  const server = await script();
  const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "none", maxRetries: 0 });
  const stamps: number[] = [];
  for (let step = 1; step <= steps + 1; step++) {
    stamps.push(performance.now());
    const stream = await client.chat.completions.create({
      model: "sim",
      stream: true,
      stream_options: { include_usage: true },
      messages: messages.slice(0, 1 + (step - 1) * 2),
      tools,
    });
    for await (const _chunk of stream) {
      // read to the end, as the loop does
    }
  }
  await server.close();
  return stamps;
}

const loop = await loopRun();
const loopStamps = loop.stamps;
const baseStamps = await bareRun(loop.messages);

const perStep = (t: number[], from: number, to: number) => ((t[to] ?? 0) - (t[from] ?? 0)) / (to - from);
const windows = [
  ["first", 0, window],
  ["last", steps - window, steps],
] as const;
const rows = windows.map(([name, from, to]) => {
  const loop = perStep(loopStamps, from, to);
  const base = perStep(baseStamps, from, to);
  return { name, loop, base, added: loop - base };
});
for (const row of rows) {
  console.log(
    `long run, ${steps} steps, ${row.name} ${window}: loop ${row.loop.toFixed(2)} ms/step, bare client ${row.base.toFixed(2)} ms/step, ` +
      `the loop's own ${row.added.toFixed(2)} ms/step (${(row.loop / row.base).toFixed(2)}x the bare client)`,
  );
}
