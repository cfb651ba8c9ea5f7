/** A JSON Schema as this package reads and writes it: a plain object of keywords. */
export type JsonSchema = { [keyword: string]: unknown };

/**
 * The part of an OpenAI chat-completions tool definition this package reads: a function tool
 * with a name, an optional description and a parameters schema. Other fields are passed through.
 * The `openai` SDK's `ChatCompletionFunctionTool` is one.
 */
export interface FunctionToolLike {
  type: "function";
  function: {
    name: string;
    description?: string | undefined;
    parameters?: unknown | undefined;
    strict?: boolean | null | undefined;
  };
}

/** A tool of another kind (the SDK's `ChatCompletionCustomTool`, say): passed through as it is. */
export interface OtherToolLike {
  type: string;
}

/** Anything that can sit in a tool array: a function tool, or another kind passed through as is. */
export type ToolLike = FunctionToolLike | OtherToolLike;

/**
 * What `sanitizeTools` and `relaxTools` hand back for a tool of type `T`: a function tool with its
 * description a string (or gone) and its parameters a JSON Schema object, any other kind as it
 * was. For the SDK's `ChatCompletionTool` union the result still narrows on `tool.type === "function"`,
 * and goes back to the SDK as it is.
 */
export type SanitizedTool<T> = T extends { type: "function"; function: infer F }
  ? Omit<T, "function"> & {
      type: "function";
      function: Omit<F, "description" | "parameters"> & { description?: string; parameters: JsonSchema };
    }
  : T;

/** The narrowest shape `orderTools` reads: a function tool's name, or a top-level `name`. */
export interface NamedToolLike {
  function?: { name?: unknown | undefined } | undefined;
  name?: unknown | undefined;
}
