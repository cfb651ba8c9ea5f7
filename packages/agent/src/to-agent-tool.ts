import { AgentError, kindOf } from "./errors.js";
import { setting } from "./own.js";
import type { AgentTool } from "./tools.js";

/**
 * What `toAgentTool` reads of a tool `defineTool` of `@loopwright/tools` made, written here as a
 * shape so this package does not import that one (nor zod): its `declaration`, its `check` (the
 * check a toolset's `dispatch` makes) and its `execute`. `In` is what the model is asked for (the
 * schema's input side, read through the Standard Schema `~standard` types zod declares), `Out` what
 * `execute` is handed (defaults filled, transforms run).
 */
export interface TypedToolLike<In = unknown, Out = unknown> {
  readonly input: {
    readonly "~standard": { readonly types?: { readonly input: In; readonly output: Out } | undefined };
  };
  readonly declaration: {
    readonly function: {
      readonly name: string;
      readonly description: string;
      readonly parameters: { [keyword: string]: unknown };
    };
  };
  check(args: unknown): Promise<Out>;
  execute(args: Out, context: { id: string; signal?: AbortSignal | undefined }): unknown;
}

/**
 * The arguments a typed tool's adapter is declared to take: its schema's input side where that is an
 * object. Read from the tool's type rather than inferred from two places, so a list of tools of
 * different schemas adapts with `map` (each a union member).
 */
export type TypedToolArgs<T> = T extends {
  readonly input: { readonly "~standard": { readonly types?: infer Types } };
}
  ? NonNullable<Types> extends { readonly input: infer In }
    ? In extends object
      ? In
      : Record<string, unknown>
    : Record<string, unknown>
  : Record<string, unknown>;

/** Throws the signal's reason once it has aborted, as a toolset's `dispatch` does. */
function stopIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason;
}

/**
 * An `AgentTool` that runs a `@loopwright/tools` tool as that package's `dispatch` runs it. Its name,
 * description and `parameters` are the tool's `declaration` (the JSON Schema as zod wrote it: the
 * loop makes it strict or relaxed for the endpoint, as for every agent tool, and takes a strict
 * dialect's nulls back out of the model's arguments before the call is run). Its `execute` checks
 * the arguments with the tool's `check` (zod: defaults filled, asynchronous refinements awaited),
 * then calls the tool's `execute` with them and `{ id, signal }` (the call's id, and the run's stop
 * when there is one); what that returns is the result the model reads. Arguments the schema refuses
 * are the tool's `ToolInputError` thrown, which the run answers to the model as `Error: <message>`
 * (what is wrong and where, "Call it again…") and goes on, so the model can try again; the tool's
 * `execute` is then not run. A run stopped before or during the check does not start it either.
 * What the tool's `execute` throws is the call's failure, as for any agent tool.
 *
 * Keeps the input type: the result is an `AgentTool` of the schema's input side, an `Agent` takes
 * it in `tools`, and a list adapts with `tools.map(toAgentTool)`. Throws `AgentError`
 * (`invalid-input`) for a value that is not such a tool (no `declaration` with a name, no `check`
 * or no `execute`, each the tool's own or its class's, never one on `Object.prototype`; a tool from a
 * `@loopwright/tools` without `check` is one). Never calls the tool.
 */
// biome-ignore lint/suspicious/noExplicitAny: any tool's schema; its own types are read by TypedToolArgs
export function toAgentTool<T extends TypedToolLike<any, any>>(tool: T): AgentTool<TypedToolArgs<T>> {
  // Each read as the tool's own (or its class's), never a polluted Object.prototype's: a `check`
  // some code set there made a tool without one pass, and every call ran that function instead.
  const declared = setting(setting(tool, "declaration"), "function") as
    | Partial<TypedToolLike["declaration"]["function"]>
    | undefined;
  const check = setting(tool, "check");
  const run = setting(tool, "execute");
  if (
    typeof setting(declared, "name") !== "string" ||
    typeof check !== "function" ||
    typeof run !== "function"
  ) {
    throw new AgentError(
      "invalid-input",
      `toAgentTool: takes a tool made by defineTool of @loopwright/tools (a declaration, check and execute); got ${kindOf(tool)}${
        typeof declared?.name === "string" && typeof check !== "function"
          ? ` named ${JSON.stringify(declared.name)} without check (a @loopwright/tools older than toAgentTool: update it)`
          : ""
      }.`,
    );
  }
  const { name, description, parameters } = declared as TypedToolLike["declaration"]["function"];
  return {
    name,
    description,
    parameters,
    async execute(args, context) {
      const signal = context.signal;
      // A stopped run checks nothing (an asynchronous refinement may have effects of its own) and
      // starts nothing after the check: the call was answered with the stop already.
      stopIfAborted(signal);
      const checked: unknown = await Reflect.apply(check, tool, [args]);
      stopIfAborted(signal);
      return Reflect.apply(run, tool, [
        checked,
        signal === undefined ? { id: context.toolCallId } : { id: context.toolCallId, signal },
      ]);
    },
  };
}
