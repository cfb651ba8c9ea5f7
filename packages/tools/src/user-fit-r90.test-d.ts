// Type test (compiled by `pnpm type-check`, never run): an agent loop with two typed tools, written
// as a strict user writes it — no `as`, no `!`, no `any`, no deep import.
import {
  AgentLoopError,
  type AgentLoopResult,
  failedRun,
  type RunState,
  runAgentLoop,
  type ToolCallOutcome,
} from "@loopwright/loop";
import { z } from "zod";
import {
  createToolset,
  defineTool,
  type Tool,
  type ToolCall,
  ToolInputError,
  type ToolInputErrorCode,
} from "./index.js";

const weather = defineTool({
  name: "weather",
  description: "Today's weather in a city.",
  input: z.object({ city: z.string(), unit: z.enum(["c", "f"]).default("c") }),
  execute: async ({ city, unit }) => {
    const u: "c" | "f" = unit;
    return `${city}: 21°${u}`;
  },
});

const add = defineTool({
  name: "add",
  description: "Adds numbers.",
  input: z.object({ values: z.array(z.number()).readonly() }),
  execute: ({ values }, { id, signal }) => {
    const s: AbortSignal | undefined = signal;
    return `${id}${s ? "" : ""}:${values.reduce((a, b) => a + b, 0)}`;
  },
});

// A readonly tuple of tools, as `as const` writes it.
const tools = [weather, add] as const;
const toolset = createToolset(tools);

export async function run(): Promise<string> {
  try {
    const result: AgentLoopResult = await runAgentLoop({
      config: { baseUrl: "http://127.0.0.1:8080/v1", model: "m" },
      messages: [{ role: "user", content: "Weather in Oslo, and 1 + 2?" }],
      tools: toolset.tools,
      dispatch: toolset.dispatch,
    });
    const calls: readonly ToolCallOutcome[] = result.toolCalls;
    const first = calls[0];
    const names: string[] = calls.map((call) => `${call.name}:${call.source}:${call.ok}`);
    return `${result.turn.content}${first?.name ?? ""}${names.join()}`;
  } catch (e) {
    const run: RunState | undefined = failedRun(e);
    if (AgentLoopError.isInstance(e)) return e.run.messages.length.toString();
    if (ToolInputError.isInstance(e)) {
      const code: ToolInputErrorCode = e.code;
      switch (code) {
        case "invalid-tool":
        case "unknown-tool":
        case "invalid-arguments":
        case "invalid-call":
          return code;
        default: {
          const never: never = code;
          return never;
        }
      }
    }
    return String(run?.toolCalls.length);
  }
}

// The one typed tool read back from the set: its parse is typed by its schema when kept as the variable.
export const parsed: { city: string; unit: "c" | "f" } = weather.parse({ city: "Oslo" });
export const again: Tool | undefined = toolset.get("weather");

// A typed tool run by a host's own loop or handed to another agent (its context carries an optional
// signal): the signal forwarded as it is, the call's raw text forwarded as it is. Before r90, under
// `exactOptionalPropertyTypes`, both were refused (TS2379 "Type 'AbortSignal | undefined' is not
// assignable to type 'AbortSignal'"; TS2375 for `raw: undefined`).
interface OtherContext {
  toolCallId: string;
  signal?: AbortSignal;
}
export function adapt(tool: Tool) {
  return {
    name: tool.name,
    description: tool.description,
    parameters: tool.declaration.function.parameters,
    execute: (args: Record<string, unknown>, context: OtherContext) =>
      tool.execute(tool.parse(args), { id: context.toolCallId, signal: context.signal }),
  };
}
export function forward(
  call: { id: string; name: string; args: Record<string, unknown>; raw?: string },
  signal?: AbortSignal,
) {
  const request: ToolCall = { id: call.id, name: call.name, args: call.args, raw: call.raw };
  return toolset.dispatch(request, signal);
}
