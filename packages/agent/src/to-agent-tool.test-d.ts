// Type test (compiled by `pnpm type-check`, never run): a typed tool of `@loopwright/tools` handed to
// an `Agent`. Without the adapter it does not compile — the two packages' tools are two shapes (a
// `declaration` and `execute(args, { id })` against `name`, `parameters` and `execute(args, {
// toolCallId })`), so before r91 a host had to rewrite every such tool by hand. With `toAgentTool`
// it compiles, and the adapted tool keeps the schema's input side as its argument type.
import { defineTool as defineTypedTool } from "@loopwright/tools";
import { z } from "zod";
import { Agent, type AgentTool, toAgentTool } from "./index.js";

const weather = defineTypedTool({
  name: "weather",
  description: "Weather for a city",
  input: z.object({ city: z.string(), days: z.number().default(1), zone: z.string().nullable().optional() }),
  execute: ({ city, days }) => `${city}: ${days} days`,
});

const count = defineTypedTool({
  name: "count",
  description: "Counts words",
  input: z.object({ text: z.string() }),
  execute: ({ text }) => text.split(" ").length,
});

const config = { baseUrl: "http://127.0.0.1:8080/v1", model: "m" };

// Before: the tools tool is not an AgentTool (TS2739/TS2741: no `parameters`…).
// @ts-expect-error a @loopwright/tools tool is not an agent tool without the adapter
export const without = new Agent({ config, tools: [weather] });
// @ts-expect-error nor can it be registered as one
export const registered: AgentTool = weather;

// After: adapted, one tool or a list of them.
export const adapted = toAgentTool(weather);
export const agent = new Agent({ config, tools: [adapted, toAgentTool(count)] });
export const listed = new Agent({ config, tools: [weather, count].map(toAgentTool) });
agent.tools.register(toAgentTool(count), { replace: true });

// The input type is kept: what the model is asked for (a default makes `days` optional).
type Args = Parameters<typeof adapted.execute>[0];
export const args: Args = { city: "Oslo" };
export const full: Args = { city: "Oslo", days: 2, zone: null };
// @ts-expect-error `city` is required
export const missing: Args = { days: 2 };
// @ts-expect-error `days` is a number
export const wrong: Args = { city: "Oslo", days: "2" };

// Anything else is refused: an agent tool is not a typed tool.
// @ts-expect-error an AgentTool has no declaration or check
toAgentTool(adapted);
