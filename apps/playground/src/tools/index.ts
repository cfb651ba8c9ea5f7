import { open, realpath, stat } from "node:fs/promises";
import { isAbsolute, relative, resolve, sep } from "node:path";
import { redactor } from "@loopwright/client";
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

/**
 * Runs one of the playground's tools. Throws with a message the model can act on. Each of `keys`
 * (by default the host's `OPENAI_API_KEY`) is replaced by `[redacted]` in what it returns, as
 * written or escaped: a model asking `read_file` for a project's `.env` never reads the key back,
 * whichever endpoint it runs on.
 */
export async function runTool(
  name: string,
  args: Record<string, unknown>,
  cwd = process.cwd(),
  keys: readonly string[] = [process.env.OPENAI_API_KEY ?? ""],
): Promise<string> {
  return withoutKeys(await toolResult(name, args, cwd), keys);
}

/**
 * A tool's answer (its text, or its parts) with each of `keys` (by default the host's
 * `OPENAI_API_KEY`) replaced by `[redacted]`, as written or escaped: what `runTool` does to its own
 * results, for an MCP server's (one given the key in its `env` may print it back). Given an error,
 * redacts it where it is (message, stack, causes) and answers it, as `redactor` does.
 */
export function withoutKeys<T>(value: T, keys: readonly string[] = [process.env.OPENAI_API_KEY ?? ""]): T {
  return keys.reduce((out, apiKey) => redactor({ apiKey })(out), value);
}

/**
 * A file's first `MAX_FILE_CHARS` characters, and how many bytes follow them: only the bytes that can
 * hold those characters are read, so a log of any size (past the longest string JavaScript can hold)
 * costs no more than a short one.
 */
async function readHead(path: string): Promise<string> {
  const handle = await open(path, "r");
  try {
    const { size } = await handle.stat();
    // A UTF-16 unit is at most 3 bytes of UTF-8 (a surrogate pair 4): the characters shown are whole.
    const buffer = Buffer.alloc(Math.min(size, MAX_FILE_CHARS * 3 + 4));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    const text = buffer.subarray(0, bytesRead).toString("utf8");
    if (bytesRead >= size && text.length <= MAX_FILE_CHARS) return text;
    const shown = text.slice(0, MAX_FILE_CHARS);
    return `${shown}\n[… ${Math.max(0, size - Buffer.byteLength(shown))} more bytes not shown]`;
  } finally {
    await handle.close();
  }
}

async function toolResult(name: string, args: Record<string, unknown>, cwd: string): Promise<string> {
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
      const outside = () =>
        new Error(`${args.path} is outside the current directory; only files under it can be read.`);
      const under = (root: string, target: string) => {
        const inside = relative(root, target);
        return inside === "" || !(inside === ".." || inside.startsWith(`..${sep}`) || isAbsolute(inside));
      };
      const full = resolve(cwd, args.path);
      if (!under(cwd, full)) throw outside();
      // Links are followed before the check: a link under the directory may point anywhere.
      const real = await realpath(full).catch(() => undefined);
      const info = real === undefined ? undefined : await stat(real).catch(() => undefined);
      if (real === undefined || !info?.isFile())
        throw new Error(`${args.path} is not a file under the current directory.`);
      if (!under(await realpath(cwd), real)) throw outside();
      return await readHead(real);
    }
    default:
      throw new Error(
        `There is no tool named ${name}. The tools are: ${TOOLS.map((t) => t.function.name).join(", ")}.`,
      );
  }
}
