import { ToolInputError } from "./errors.js";
import { checkArguments, escapeControls, shorten, type Tool, type ToolDeclaration } from "./tool.js";

/** Whether `signal` is an AbortSignal as `dispatch` uses one (or something with its shape). */
function isSignal(signal: unknown): signal is AbortSignal {
  const like = signal as { aborted?: unknown; addEventListener?: unknown; removeEventListener?: unknown };
  return (
    typeof signal === "object" &&
    signal !== null &&
    typeof like.aborted === "boolean" &&
    typeof like.addEventListener === "function" &&
    typeof like.removeEventListener === "function"
  );
}

/** Rejects with the signal's reason once it has fired, as `AbortSignal.throwIfAborted` does. */
function stopIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason;
}

/**
 * The dispatches waiting on one signal, behind the one listener added to it: a run hands every
 * call of a step the same signal, and a listener per call in flight made Node print
 * `MaxListenersExceededWarning` past ten parallel calls.
 */
const waiting = new WeakMap<AbortSignal, { callbacks: Set<() => void>; detach: () => void }>();

/** Calls `onAbort` once when `signal` fires; answers the function that stops listening. */
function listen(signal: AbortSignal, onAbort: () => void): () => void {
  let entry = waiting.get(signal);
  if (entry === undefined) {
    const callbacks = new Set<() => void>();
    const fire = () => {
      waiting.delete(signal);
      for (const callback of [...callbacks]) callback();
      callbacks.clear();
    };
    signal.addEventListener("abort", fire, { once: true });
    entry = { callbacks, detach: () => signal.removeEventListener("abort", fire) };
    waiting.set(signal, entry);
  }
  const held = entry;
  held.callbacks.add(onAbort);
  // The listener goes with the last dispatch waiting on it.
  return () => {
    if (!held.callbacks.delete(onAbort) || held.callbacks.size > 0) return;
    held.detach();
    if (waiting.get(signal) === held) waiting.delete(signal);
  };
}

/**
 * `work`, or a rejection with the signal's reason as soon as `signal` fires, whichever comes first.
 * The listener goes when either wins; `work` is left to settle, and a late rejection of it is handled.
 */
function untilStopped<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return work;
  return new Promise<T>((resolve, reject) => {
    const stop = () => {
      work.catch(() => {});
      reject(signal.reason);
    };
    if (signal.aborted) return stop();
    const unlisten = listen(signal, stop);
    work.then(
      (value) => {
        unlisten();
        resolve(value);
      },
      (error: unknown) => {
        unlisten();
        reject(error);
      },
    );
  });
}

/** How many of a set's tool names an `unknown-tool` refusal names before it only counts the rest. */
const NAMED_TOOLS = 40;

/** A tool call as a loop hands it to `dispatch` (structurally `@loopwright/tool-calls`' `ToolCallRequest`). */
export interface ToolCall {
  id: string;
  name: string;
  args: Record<string, unknown>;
  /** The model's own argument text, where there was one; `undefined` reads as absent. */
  raw?: string | undefined;
}

/** Tools gathered for one run: what to declare, and one `dispatch` that runs any of them. */
export interface Toolset {
  /** Every tool's declaration, in the order given: `runAgentLoop`'s `tools`. */
  readonly tools: ToolDeclaration[];
  /**
   * Runs a call: finds the tool by name, checks the arguments against its schema (awaiting any
   * asynchronous refinement), then awaits `execute` with the parsed arguments — unless `signal` has
   * fired before the check or while it is awaited, when it rejects with the signal's reason at once
   * (a pending refinement is left to settle) and never starts `execute`. `runAgentLoop`'s `dispatch`. Rejects with `ToolInputError` (`unknown-tool`;
   * `invalid-arguments`, also for arguments nested deeper than `MAX_ARGUMENT_DEPTH` or holding a
   * key named `__proto__` at any depth (zod would drop it); `invalid-call`
   * for a call that is not one, with no string `id`, or a `signal` that is not an AbortSignal)
   * without running anything; what `execute` throws passes through.
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
  // A set can hold hundreds of tools (an MCP pool's): a refusal names the first few and counts the
  // rest, as every one is declared to the model anyway.
  // Those whose name holds the one called or is held by it (letters and digits only, any case) come
  // first: the tool it meant, written another way (github_create_issue for github__create_issue).
  const known = (called: string) => {
    const names = [...byName.keys()];
    if (names.length <= NAMED_TOOLS) return names.join(", ");
    const bare = (name: string) => name.toLowerCase().replace(/[^a-z0-9]/g, "");
    const wanted = bare(called.slice(0, 200));
    const near = (name: string) => {
      const other = bare(name);
      return wanted !== "" && other !== "" && (other.includes(wanted) || wanted.includes(other));
    };
    const ordered = [...names.filter(near), ...names.filter((name) => !near(name))];
    return `${ordered.slice(0, NAMED_TOOLS).join(", ")} and ${names.length - NAMED_TOOLS} more`;
  };
  return {
    tools: [...byName.values()].map((tool) => tool.declaration),
    get: (name) => byName.get(name),
    async dispatch(call, given) {
      if (
        typeof call !== "object" ||
        call === null ||
        typeof call.name !== "string" ||
        typeof call.id !== "string"
      ) {
        throw new ToolInputError(
          "invalid-call",
          "",
          "dispatch: a call is an object { id, name, args } with the call's id and the tool's name as strings, as runAgentLoop hands it.",
        );
      }
      // Left out, or null: no signal. The controller passed in its signal's place is the usual slip.
      const passed: unknown = given;
      if (passed !== undefined && passed !== null && !isSignal(passed)) {
        const what =
          passed instanceof AbortController
            ? "an AbortController"
            : typeof passed === "object"
              ? "an object that is not one"
              : `a ${typeof passed}`;
        throw new ToolInputError(
          "invalid-call",
          call.name,
          `dispatch: signal must be an AbortSignal (the run's, or controller.signal), or left out; it was ${what}.`,
        );
      }
      const signal = given ?? undefined;
      const tool = byName.get(call.name);
      if (!tool) {
        // The model made the name up, so it can be any size and hold anything: echo the start of
        // it and its length as a JSON string (its quotes and backslashes escaped, so the name's end
        // is plain), its other control and bidirectional characters escaped too (see `echoed`).
        throw new ToolInputError(
          "unknown-tool",
          call.name,
          `There is no tool named ${escapeControls(JSON.stringify(shorten(call.name, 60)))}; the tools are: ${known(call.name)}.`,
        );
      }
      // A stopped run checks nothing: an asynchronous refinement may have effects of its own.
      stopIfAborted(signal);
      const args = await untilStopped(checkArguments(tool, call.args), signal);
      // A run stopped while an asynchronous refinement was being awaited does not start the tool.
      stopIfAborted(signal);
      return tool.execute(args, signal === undefined ? { id: call.id } : { id: call.id, signal });
    },
  };
}
