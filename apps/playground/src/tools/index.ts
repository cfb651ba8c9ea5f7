import { readFile, stat } from "node:fs/promises";
import { relative, resolve } from "node:path";
import type { ToolDefinition } from "@loopwright/loop";
import { calculate } from "./calculator.js";

/** The playground's tools, declared the way a request declares them. */
export const TOOLS: ToolDefinition[] = [
  {
    type: "function",
    function: {
      name: "clock",
      description: "The current date and time, with the machine's time zone.",
      parameters: { type: "object", properties: {}, additionalProperties: false },
    },
  },
  {
    type: "function",
    function: {
      name: "calculator",
      description: "Evaluate an arithmetic expression: numbers, + - * / % ^ and parentheses.",
      parameters: {
        type: "object",
        properties: { expression: { type: "string", description: "For example (17 * 23) + 4" } },
        required: ["expression"],
        additionalProperties: false,
      },
    },
  },
  {
    type: "function",
    function: {
      name: "read_file",
      description: "Read a UTF-8 text file under the current directory (at most 20,000 characters).",
      parameters: {
        type: "object",
        properties: { path: { type: "string", description: "A path relative to the current directory" } },
        required: ["path"],
        additionalProperties: false,
      },
    },
  },
];

const MAX_FILE_CHARS = 20_000;

/** Runs one of the playground's tools. Throws with a message the model can act on. */
export async function runTool(
  name: string,
  args: Record<string, unknown>,
  cwd = process.cwd(),
): Promise<string> {
  switch (name) {
    case "clock": {
      const now = new Date();
      const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
      return `${now.toISOString()} (local time ${now.toLocaleString("en-GB", { timeZone: zone })}, ${zone})`;
    }
    case "calculator": {
      if (typeof args.expression !== "string") throw new Error("calculator needs { expression: string }.");
      return String(calculate(args.expression));
    }
    case "read_file": {
      if (typeof args.path !== "string" || !args.path) throw new Error("read_file needs { path: string }.");
      const full = resolve(cwd, args.path);
      const inside = relative(cwd, full);
      if (inside.startsWith("..") || resolve(cwd, inside) !== full) {
        throw new Error(`${args.path} is outside the current directory; only files under it can be read.`);
      }
      const info = await stat(full).catch(() => undefined);
      if (!info?.isFile()) throw new Error(`${args.path} is not a file under the current directory.`);
      const text = await readFile(full, "utf8");
      return text.length > MAX_FILE_CHARS
        ? `${text.slice(0, MAX_FILE_CHARS)}\n[… ${text.length - MAX_FILE_CHARS} more characters not shown]`
        : text;
    }
    default:
      throw new Error(
        `There is no tool named ${name}. The tools are: ${TOOLS.map((t) => t.function.name).join(", ")}.`,
      );
  }
}
