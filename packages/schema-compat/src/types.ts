/** A JSON Schema as this package reads and writes it: a plain object of keywords. */
export type JsonSchema = { [keyword: string]: unknown };

/**
 * The part of an OpenAI chat-completions tool definition this package reads: a function tool
 * with a name, an optional description and a parameters schema. Other fields are passed through.
 */
export interface FunctionToolLike {
  type: "function";
  function: {
    name: string;
    description?: string;
    parameters?: unknown;
    strict?: boolean | null;
    [field: string]: unknown;
  };
  [field: string]: unknown;
}

/** Anything that can sit in a tool array: a function tool, or another kind passed through as is. */
export type ToolLike = FunctionToolLike | { type: string; [field: string]: unknown };

/** The narrowest shape `orderTools` reads: a function tool's name, or a top-level `name`. */
export interface NamedToolLike {
  function?: { name?: unknown };
  name?: unknown;
}
