// What the loop's tool naming costs, run by `pnpm bench`: declaring a run's tools (each sanitized
// alone, so a collision shows) against one `sanitizeTools` over the array, and mapping a
// transcript's replayed calls to the wire's names against a bare copy of it. Each timed as the
// fastest of many runs, sizes interleaved; numbers are printed, never asserted.
import { sanitizeTools } from "@loopwright/schema-compat";
import type { ChatMessage, ToolDefinition } from "../src/config.js";
import { declareTools, wireMessages } from "../src/tool-names.js";
import { fastest } from "./timing.js";

function tools(count: number): ToolDefinition[] {
  return Array.from({ length: count }, (_, i) => ({
    type: "function" as const,
    function: {
      name: `server${i % 7}.tool_${i}`,
      description: `Tool ${i}: reads a thing and says what it found.`,
      parameters: {
        type: "object",
        properties: {
          path: { type: "string", description: "Where", pattern: "^src/" },
          depth: { type: "integer", minimum: 0, maximum: 10 },
          flags: { type: "array", items: { type: "string", enum: ["a", "b", "c"] } },
        },
        required: ["path"],
      },
    },
  }));
}

function transcript(size: number, names: readonly string[]): ChatMessage[] {
  const messages: ChatMessage[] = [{ role: "user", content: "Look around." }];
  for (let i = 0; messages.length < size; i++) {
    const id = `call_${i}`;
    const name = names[i % names.length] as string;
    messages.push({
      role: "assistant",
      content: null,
      tool_calls: [{ id, type: "function", function: { name, arguments: '{"path":"src/a.ts"}' } }],
    });
    messages.push({ role: "tool", tool_call_id: id, content: "export const a = 1;\n".repeat(10) });
  }
  return messages;
}

const ms = (value: number) => `${value.toFixed(3)} ms`;

console.log("declareTools vs sanitizeTools (baseline), per run start:");
for (const count of [20, 200, 1000]) {
  const set = tools(count);
  const [declared, baseline] = fastest([() => declareTools(set), () => sanitizeTools(set)]);
  console.log(
    `  ${String(count).padStart(5)} tools: ${ms(declared as number)} vs ${ms(baseline as number)} (×${((declared as number) / (baseline as number)).toFixed(2)})`,
  );
}

console.log("wireMessages vs a bare copy (baseline), per request:");
const { toWire } = declareTools(tools(20));
for (const size of [100, 1000, 10_000]) {
  const messages = transcript(size, [...toWire.keys()]);
  const [mapped, copied] = fastest([() => wireMessages(messages, toWire), () => [...messages]]);
  console.log(
    `  ${String(size).padStart(6)} messages: ${ms(mapped as number)} vs ${ms(copied as number)} (×${((mapped as number) / (copied as number)).toFixed(1)})`,
  );
}
