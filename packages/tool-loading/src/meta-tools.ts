import type { FunctionToolLike } from "@loopwright/schema-compat";

/** The name of the meta-tool that loads tools from the catalogue. */
export const LOAD_TOOLS_NAME = "load_tools";
/** The name of the proxied meta-tool that runs a loaded tool by name. */
export const CALL_TOOL_NAME = "call_tool";

const NAMES_PARAMETER = {
  type: "object",
  properties: {
    names: {
      type: "array",
      items: { type: "string" },
      description: "Tool names from the catalogue; a server's name stands for all of its tools.",
    },
  },
  required: ["names"],
  additionalProperties: false,
};

/**
 * The `load_tools` meta-tool as declared in on-demand mode: it takes `{ names: string[] }`, and
 * the tools it loads join the request's tool array from the next step on. Frozen; never changes
 * between steps, so it never moves the prompt cache.
 */
export const LOAD_TOOLS: FunctionToolLike = Object.freeze({
  type: "function",
  function: Object.freeze({
    name: LOAD_TOOLS_NAME,
    description: "Load tools from the catalogue in the system prompt so that you can call them.",
    parameters: NAMES_PARAMETER,
  }),
}) as FunctionToolLike;

const PROXY_LOAD_TOOLS: FunctionToolLike = Object.freeze({
  type: "function",
  function: Object.freeze({
    name: LOAD_TOOLS_NAME,
    description:
      "Read the definitions of tools from the catalogue in the system prompt. Run a loaded tool with call_tool.",
    parameters: NAMES_PARAMETER,
  }),
}) as FunctionToolLike;

/** The `call_tool` meta-tool: runs a catalogued tool given `{ name, arguments }`. */
export const CALL_TOOL: FunctionToolLike = Object.freeze({
  type: "function",
  function: Object.freeze({
    name: CALL_TOOL_NAME,
    description:
      "Run a tool whose definition load_tools gave you, by its name, with arguments that match its parameters.",
    parameters: {
      type: "object",
      properties: {
        name: { type: "string", description: "The tool's name, as load_tools gave it." },
        arguments: { type: "object", description: "The tool's arguments, matching its parameters." },
      },
      required: ["name", "arguments"],
      additionalProperties: false,
    },
  }),
}) as FunctionToolLike;

/**
 * Every tool a proxied request declares, and nothing else: `call_tool` and `load_tools`, in name
 * order. The array is the same on every step, so the head of the prompt never changes however
 * many tools the model loads.
 */
export const PROXY_TOOLS: readonly FunctionToolLike[] = Object.freeze([CALL_TOOL, PROXY_LOAD_TOOLS]);
