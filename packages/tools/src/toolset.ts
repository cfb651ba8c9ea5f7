import { ToolInputError } from "./errors.js";
import { checkArguments, shorten, type Tool, type ToolDeclaration } from "./tool.js";

/** A tool call as a loop hands it to `dispatch` (structurally `@loopwright/tool-calls`' `ToolCallRequest`). */
export interface ToolCall {
  id: string;
  name: string;
  args: Record<string, unknown>;
  raw?: string;
}

/** Tools gathered for one run: what to declare, and one `dispatch` that runs any of them. */
export interface Toolset {
  /** Every tool's declaration, in the order given: `runAgentLoop`'s `tools`. */
  readonly tools: ToolDeclaration[];
  /**
   * Runs a call: finds the tool by name, checks the arguments against its schema (awaiting any
   * asynchronous refinement), then awaits `execute` with the parsed arguments — unless `signal` has
   * fired by then, when it rejects with the signal's reason and never starts `execute`.
   * `runAgentLoop`'s `dispatch`. Rejects with
   * `ToolInputError` (`unknown-tool`, `invalid-arguments`, `invalid-call` for a call that is not
   * one) without running anything; what
   * `execute` throws passes through.
   */
  dispatch(call: ToolCall, signal?: AbortSignal): Promise<unknown>;
  /** The tool of that name, or `undefined`. */
  get(name: string): Tool | undefined;
}

/**
 * Builds a toolset from tools `defineTool` made. Throws `ToolInputError` (`invalid-tool`) for a
 * `tools` that is not an array, a value in it that is not such a tool, or a name given twice. Never runs a tool.
 */
// biome-ignore lint/suspicious/noExplicitAny: a set holds tools of every input type
export function createToolset(tools: readonly Tool<any>[]): Toolset {
  if (!Array.isArray(tools)) {
    throw new ToolInputError(
      "invalid-tool",
      "",
      "createToolset: the tools must be an array of tools from defineTool, e.g. createToolset([search]).",
    );
  }
  const byName = new Map<string, Tool>();
  for (const tool of tools) {
    const name = tool?.declaration?.function?.name;
    if (typeof name !== "string" || typeof tool.parse !== "function") {
      throw new ToolInputError(
        "invalid-tool",
        "",
        "createToolset: every entry must be a tool from defineTool.",
      );
    }
    if (byName.has(name)) {
      throw new ToolInputError(
        "invalid-tool",
        name,
        `createToolset: ${name} is given twice; tool names are unique.`,
      );
    }
    byName.set(name, tool);
  }
  const known = () => [...byName.keys()].join(", ");
  return {
    tools: [...byName.values()].map((tool) => tool.declaration),
    get: (name) => byName.get(name),
    async dispatch(call, signal) {
      if (typeof call !== "object" || call === null || typeof call.name !== "string") {
        throw new ToolInputError(
          "invalid-call",
          "",
          "dispatch: a call is an object { id, name, args } with the tool's name as a string, as runAgentLoop hands it.",
        );
      }
      const tool = byName.get(call.name);
      if (!tool) {
        // The model made the name up, so it can be any size: echo the start of it and its length.
        const name = shorten(call.name, 60);
        throw new ToolInputError(
          "unknown-tool",
          call.name,
          `There is no tool named ${JSON.stringify(name)}; the tools are: ${known()}.`,
        );
      }
      const args = await checkArguments(tool, call.args);
      // A run stopped while an asynchronous refinement was being awaited does not start the tool.
      signal?.throwIfAborted();
      return tool.execute(args, signal === undefined ? { id: call.id } : { id: call.id, signal });
    },
  };
}
