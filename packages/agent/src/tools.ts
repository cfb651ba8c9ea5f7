import type { ToolDefinition } from "@loopwright/loop";
import {
  argumentsPrototype,
  backtrackingRefusal,
  declaresInheritedName,
  isArgumentsPrototype,
  isPlainPrototype,
  mapAlongSchema,
  sanitizeTools,
} from "@loopwright/schema-compat";
import { quotedEcho } from "./echo.js";
import { AgentError, kindOf } from "./errors.js";
import { setting } from "./own.js";
import { protoless } from "./protoless.js";

/** What a tool's `execute` is handed besides its arguments. */
export interface AgentToolContext {
  /** The model's id for this call. */
  toolCallId: string;
  /** Fires when the run is aborted; a long tool should stop. */
  signal?: AbortSignal;
  /** Reports progress: each call becomes a `tool_execution_update` event (never sent to the model); once `execute` settled or the run was stopped, a report is dropped. */
  onUpdate: (partial: unknown) => void;
  /** Asks the run to end after this step; it does only when every call of the step asked (as `afterToolCall`'s `terminate`). */
  terminate: () => void;
}

/**
 * A tool an agent can run. `parameters` is the JSON Schema the model is shown; `execute` gets the
 * parsed (repaired) arguments and returns what the model reads — a string as it is, anything else
 * as JSON. A thrown error is what the model reads as the failure (`Error: <message>`; a thrown
 * value that is no Error as its text or JSON, a bigint as its digits, a cycle as "[Circular]").
 */
export interface AgentTool<Args extends object = Record<string, unknown>> {
  name: string;
  description: string;
  /** JSON Schema of the arguments. */
  parameters: Record<string, unknown>;
  /** A name for a UI; never sent. */
  label?: string | undefined;
  /** "sequential" makes every step that calls this tool run its calls one after another. */
  executionMode?: ToolExecutionMode | undefined;
  execute(args: Args, context: AgentToolContext): unknown | Promise<unknown>;
}

/** How a step's tool calls run: together (default) or one after another. */
export type ToolExecutionMode = "parallel" | "sequential";

/**
 * A tool's name as its errors show it: quoted as `quotedEcho` writes it (cut at 60 characters with
 * its length said, half a surrogate pair U+FFFD, each control, U+2028/2029 and bidirectional mark
 * `\uXXXX`); anything else by its kind. A name was echoed whole (a megabyte, raw control
 * characters), and a BigInt one made the error a `TypeError` from `JSON.stringify`.
 */
function quotedName(name: unknown): string {
  return typeof name === "string" ? quotedEcho(name) : kindOf(name);
}

/**
 * Types a tool's arguments for `execute` while keeping it assignable to `AgentTool`. Returns the tool.
 * `Args` may be an interface or a type alias: the model's arguments are a parsed JSON object.
 *
 * A tool whose `parameters` name a property after an `Object.prototype` member (`constructor`,
 * `toString`, `valueOf`…) is returned as a copy whose `execute` reads such a property the call left
 * out as `undefined` (as its optional type says), not the inherited function: where the schema
 * declares it, `execute` gets a copy of that object whose prototype has `Object.prototype`'s members
 * but the declared names, so the left-out key is absent (`in` and `Object.hasOwn` false; `Object.keys`
 * and JSON show what the model wrote) and a host's later assignment to it is an ordinary property. Such
 * a copy is not `instanceof Object`. Objects without a prototype on the way (a host's own parser's) are
 * walked through, so one under them reads the same. The call's own objects are never written into.
 * Every other tool is returned as it is.
 *
 * Throws `AgentError` (`invalid-input`) for such a tool whose `parameters` hold a
 * `patternProperties` pattern that may backtrack exponentially (`^([a-z]+)*$`; see
 * `backtrackingPatterns` in `@loopwright/schema-compat`) where the walk would have to test it on
 * the model's keys (its entry declares such a name, or it decides whether an
 * `additionalProperties` that does applies): the message names the tool, the schema path and the
 * pattern. The walk never runs such a pattern; refused here, it cannot quietly change which
 * objects lose their inherited members.
 */
export function defineTool<Args extends object = Record<string, unknown>>(tool: AgentTool<Args>): AgentTool {
  if (!tool || typeof tool.execute !== "function" || !declaresInheritedName(tool.parameters)) {
    return tool as unknown as AgentTool;
  }
  const refusal = backtrackingRefusal(tool.parameters);
  if (refusal !== undefined) {
    throw new AgentError("invalid-input", `defineTool: the tool ${quotedName(tool.name)} ${refusal}`);
  }
  const execute = tool.execute;
  return {
    ...(tool as unknown as AgentTool),
    execute(args: Record<string, unknown>, context: AgentToolContext) {
      return execute.call(tool, withAbsentKeys(args, tool.parameters) as Args, context);
    },
  };
}

type SchemaNode = { [keyword: string]: unknown };

/** `key` of `target` set as an ordinary own data property (an own `__proto__` key too, never the setter). */
function put(target: object, key: string, value: unknown): void {
  Object.defineProperty(
    target,
    key,
    protoless({ value, enumerable: true, writable: true, configurable: true }),
  );
}

/**
 * `args` with every plain object (of some realm's `Object.prototype`) at a place `schema` declares an
 * inherited-name property, and that does not hold it, copied with `argumentsPrototype` of the
 * declared names as its prototype, so the left-out one is absent (see `defineTool`); only the
 * objects on the way there are copied (ordinary objects, see `mapAlongSchema`), and `args` is never
 * written into. An object that holds every such name it declares is handed on as it is.
 */
function withAbsentKeys(args: unknown, schema: unknown): unknown {
  return mapAlongSchema(args, schema, (object, place) => {
    const prototype = Object.getPrototypeOf(object);
    // An ordinary object of any realm (a `node:vm` context's too), or one without a prototype (a
    // host's own parser's): that one inherits no name, but an ordinary object under it may. Not one
    // `argumentsPrototype` already made.
    const bare = prototype === null;
    if (!bare && (isArgumentsPrototype(prototype) || !isPlainPrototype(prototype))) return object;
    const value = object as SchemaNode;
    const changed = new Map<string, unknown>();
    for (const key of Object.keys(value)) {
      const child = value[key];
      const filled = place.walk(child, key);
      if (filled !== child) changed.set(key, filled);
    }
    let absent = false;
    if (!bare) for (const name of place.inherited) if (!Object.hasOwn(value, name)) absent = true;
    if (changed.size === 0 && !absent) return value;
    const out = (
      absent ? Object.create(argumentsPrototype(place.inherited)) : bare ? Object.create(null) : {}
    ) as SchemaNode;
    for (const key of Object.keys(value)) put(out, key, changed.has(key) ? changed.get(key) : value[key]);
    return out;
  });
}

/**
 * The name a tool is declared under to the model: the host's name made legal as `@loopwright/loop`
 * declares it (`sanitizeTools`: `fs.read` → `fs_read`).
 */
function wireName(name: string): string {
  const [legal] = sanitizeTools([
    { type: "function" as const, function: { name, parameters: { type: "object" } } },
  ]);
  return legal?.function.name ?? name;
}

/**
 * The set of tools an agent can call, by name: the seam where built-in, MCP and host tools meet.
 * Later registrations do not silently replace earlier ones: `register` throws on a taken name
 * unless `replace` is set, and on a name the model would be shown as another tool's (`fs.read`
 * beside `fs_read`: both are declared as `fs_read`), which no `replace` overrides.
 */
export class ToolRegistry {
  readonly #tools = new Map<string, AgentTool>();
  /** Each registered tool's name on the wire, by the name it was registered under. */
  readonly #wire = new Map<string, string>();
  /** The name each wire name was registered under (one each: `register` refuses a second). */
  readonly #byWire = new Map<string, string>();
  #version = 0;

  constructor(tools: readonly AgentTool[] = []) {
    for (const tool of tools) this.register(tool);
  }

  /**
   * Adds a tool. Throws `AgentError` (`invalid-input`) for a tool without a name or execute, or
   * whose `parameters` (given) are not an object, `description` (given) not text, or
   * `executionMode` (given) neither "parallel" nor "sequential" — each would be dropped in silence,
   * (`duplicate-tool`) for a taken name unless `replace` (absent or `undefined`: false), and (`duplicate-tool`, whatever `replace`
   * says) for a name another tool's becomes on the wire (the model could not tell a call to one from
   * a call to the other). Nothing is registered when it throws.
   */
  register(tool: AgentTool, options: { replace?: boolean | undefined } = {}): void {
    // A tool's fields, and `replace`, are read where the object (or its own class) holds them: one
    // on a polluted Object.prototype is no tool's.
    const name = setting(tool, "name");
    if (typeof name !== "string" || name === "" || typeof setting(tool, "execute") !== "function") {
      throw new AgentError(
        "invalid-input",
        `A tool needs a non-empty name and an execute function; got ${quotedName(name)}.`,
      );
    }
    const fault = toolFault(tool);
    if (fault) {
      throw new AgentError(
        "invalid-input",
        `The tool ${quotedName(tool.name)} ${fault}; it was not registered.`,
      );
    }
    if (this.#tools.has(tool.name) && !setting(options, "replace")) {
      throw new AgentError(
        "duplicate-tool",
        `Two tools are named ${quotedName(tool.name)}. Rename one, or register with { replace: true } to override.`,
      );
    }
    const wire = wireName(tool.name);
    // Looked up, not searched for: a search of every registered tool made registering n tools take
    // n² steps (20,000 tools: 11 s).
    const other = this.#byWire.get(wire);
    if (other !== undefined && other !== tool.name) {
      throw new AgentError(
        "duplicate-tool",
        `The tools ${quotedName(other)} and ${quotedName(tool.name)} would both be declared to the model as ${quotedName(wire)} (a tool name ` +
          "on the wire is letters, digits, _ and - only), so a call to one could not be told from a call to the " +
          `other; ${quotedName(tool.name)} was not registered. Rename one of them.`,
      );
    }
    this.#tools.set(tool.name, tool);
    this.#wire.set(tool.name, wire);
    this.#byWire.set(wire, tool.name);
    this.#version++;
  }

  /** Removes a tool by name; returns whether one was there. */
  unregister(name: string): boolean {
    const removed = this.#tools.delete(name);
    const wire = this.#wire.get(name);
    if (wire !== undefined && this.#byWire.get(wire) === name) this.#byWire.delete(wire);
    this.#wire.delete(name);
    if (removed) this.#version++;
    return removed;
  }

  /**
   * A count that moves on every `register` and every `unregister` that removed a tool: a running
   * agent compares it between steps to learn that the tools may have changed (and only then reads
   * `definitions()` again).
   */
  get version(): number {
    return this.#version;
  }

  /** The tool of that name, or undefined. */
  get(name: string): AgentTool | undefined {
    return this.#tools.get(name);
  }

  /** Every tool, in registration order. */
  list(): AgentTool[] {
    return [...this.#tools.values()];
  }

  /** The tools as the loop declares them to the model. */
  definitions(): ToolDefinition[] {
    return this.list().map((tool) => ({
      type: "function",
      function: {
        name: tool.name,
        description: setting(tool, "description") as string,
        parameters: setting(tool, "parameters") as Record<string, unknown>,
      },
    }));
  }
}

/**
 * What is wrong with a named tool's other fields, or undefined. Each left out (`undefined` or
 * `null`) is fine; given, `parameters` must be a JSON Schema object (its JSON text, a list, would
 * be declared as taking no arguments), `description` text (another value is not declared) and
 * `executionMode` one of its values (a misspelt "serial" would run the tool's calls together).
 */
function toolFault(tool: AgentTool): string | undefined {
  const parameters = setting(tool, "parameters");
  const description = setting(tool, "description");
  const executionMode = setting(tool, "executionMode");
  if (parameters != null && (typeof parameters !== "object" || Array.isArray(parameters))) {
    const hint = typeof parameters === "string" ? " (give the schema object, not its JSON text)" : "";
    return `has parameters that are not a JSON Schema object; got ${kindOf(parameters)}${hint}`;
  }
  if (
    parameters == null &&
    typeof setting(tool, "check") === "function" &&
    typeof setting(tool, "declaration") === "object" &&
    setting(tool, "input") != null
  ) {
    // A @loopwright/tools tool handed over as it is (from JavaScript, or past a cast) has a name and
    // an `execute`, so it passed for one: it was declared with no parameters at all, its `execute`
    // got the model's arguments unchecked and no `id`. Adapting it is one call.
    return (
      "is a typed tool of @loopwright/tools (a zod input and execute(args, { id, signal })), not an agent tool: " +
      "given as it is, it would be declared without its parameters and run on unchecked arguments; " +
      "adapt it with toAgentTool(tool) (tools.map(toAgentTool) for a list)"
    );
  }
  if (description != null && typeof description !== "string") {
    return `has a description that is not text; got ${kindOf(description)}`;
  }
  if (executionMode != null && executionMode !== "parallel" && executionMode !== "sequential") {
    return `has executionMode ${kindOf(executionMode)}; it must be "parallel" or "sequential"`;
  }
  return undefined;
}
