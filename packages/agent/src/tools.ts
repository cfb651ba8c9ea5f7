import type { ToolDefinition } from "@loopwright/loop";
import { sanitizeTools } from "@loopwright/schema-compat";
import { AgentError } from "./errors.js";

/** What a tool's `execute` is handed besides its arguments. */
export interface AgentToolContext {
  /** The model's id for this call. */
  toolCallId: string;
  /** Fires when the run is aborted; a long tool should stop. */
  signal?: AbortSignal;
  /** Reports progress: each call becomes a `tool_execution_update` event (never sent to the model). */
  onUpdate: (partial: unknown) => void;
  /** Asks the run to end after this step; it does only when every call of the step asked (as `afterToolCall`'s `terminate`). */
  terminate: () => void;
}

/**
 * A tool an agent can run. `parameters` is the JSON Schema the model is shown; `execute` gets the
 * parsed (repaired) arguments and returns what the model reads — a string as it is, anything else
 * as JSON. A thrown error is what the model reads as the failure (`Error: <message>`).
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
 * Types a tool's arguments for `execute` while keeping it assignable to `AgentTool`. Returns the tool.
 * `Args` may be an interface or a type alias: the model's arguments are a parsed JSON object.
 *
 * A tool whose `parameters` name a property after an `Object.prototype` member (`constructor`,
 * `toString`, `valueOf`…) is returned as a copy whose `execute` reads such a property the call left
 * out as `undefined` (as its optional type says), not the inherited function: where the schema
 * declares it, `execute` gets a copy of that object whose prototype has `Object.prototype`'s members
 * but the declared names, so the left-out key is absent (`in` and `Object.hasOwn` false; `Object.keys`
 * and JSON show what the model wrote) and a host's later assignment to it is an ordinary property. Such
 * a copy is not `instanceof Object`. The call's own objects are never written into.
 * Every other tool is returned as it is.
 */
export function defineTool<Args extends object = Record<string, unknown>>(tool: AgentTool<Args>): AgentTool {
  if (!tool || typeof tool.execute !== "function" || !namesInherited(tool.parameters)) {
    return tool as unknown as AgentTool;
  }
  const execute = tool.execute;
  return {
    ...(tool as unknown as AgentTool),
    execute(args: Record<string, unknown>, context: AgentToolContext) {
      return execute.call(tool, withAbsentKeys(args, tool.parameters) as Args, context);
    },
  };
}

/** How deep `withAbsentKeys` follows the arguments; below it a value is handed on as it is. */
const FILL_DEPTH = 512;

/** The `Object.prototype` members a parameter may be named after (`__proto__` aside: it reads as the prototype). */
const INHERITED = new Set(
  Object.getOwnPropertyNames(Object.prototype).filter((name) => name !== "__proto__"),
);

type SchemaNode = { [keyword: string]: unknown };

/** Whether `schema` (at any depth, `$defs` included) names a property that `Object.prototype` also has. */
function namesInherited(schema: unknown): boolean {
  const seen = new Set<object>();
  const stack: unknown[] = [schema];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== "object" || node === null || seen.has(node)) continue;
    seen.add(node);
    const properties = (node as { properties?: unknown }).properties;
    if (typeof properties === "object" && properties !== null && !Array.isArray(properties)) {
      for (const key of Object.keys(properties)) if (INHERITED.has(key)) return true;
    }
    for (const child of Array.isArray(node) ? node : Object.values(node)) stack.push(child);
  }
  return false;
}

/** `node[keyword]` when `node` holds it as its own (a schema's `properties` never lends `constructor`). */
function own(node: unknown, keyword: string): unknown {
  return typeof node === "object" && node !== null && Object.hasOwn(node, keyword)
    ? (node as SchemaNode)[keyword]
    : undefined;
}

/** The schema objects `node` stands for: itself, what its `$ref` names, and its `allOf`/`anyOf`/`oneOf` branches. */
function schemaNodes(root: unknown, node: unknown, into: SchemaNode[]): SchemaNode[] {
  const seen = new Set<object>();
  const stack: unknown[] = [node];
  while (stack.length > 0) {
    const next = stack.pop();
    if (typeof next !== "object" || next === null || Array.isArray(next) || seen.has(next)) continue;
    seen.add(next);
    into.push(next as SchemaNode);
    const ref = own(next, "$ref");
    if (typeof ref === "string" && (ref === "#" || ref.startsWith("#/"))) {
      let target: unknown = root;
      for (const part of ref.slice(2).split("/")) {
        if (part === "") continue;
        target = own(target, part.replaceAll("~1", "/").replaceAll("~0", "~"));
      }
      stack.push(target);
    }
    for (const keyword of ["allOf", "anyOf", "oneOf"]) {
      const branches = own(next, keyword);
      if (Array.isArray(branches)) for (const branch of branches) stack.push(branch);
    }
  }
  return into;
}

/** `key` of `target` set as an ordinary own data property (an own `__proto__` key too, never the setter). */
function put(target: object, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** The prototypes `shadowing` made, by the names each leaves out (sorted, joined by a space). */
const shadows = new Map<string, object>();

/**
 * The prototype a copy at a place declaring `names` is given: a null-prototype object holding every
 * `Object.prototype` member but `names` (not enumerable, as there). A left-out parameter of such a
 * name is then truly absent (`in` false, no own key, reads `undefined`), and a host's assignment to
 * it (`args.toString ??= "x"`) makes an ordinary enumerable own property that JSON and spreads keep.
 */
function shadowing(names: ReadonlySet<string>): object {
  const key = [...names].sort().join(" ");
  let shadow = shadows.get(key);
  if (shadow === undefined) {
    const members = Object.getOwnPropertyDescriptors(Object.prototype) as {
      [name: string]: PropertyDescriptor;
    };
    for (const name of names) delete members[name];
    shadow = Object.preventExtensions(Object.create(null, members)) as object;
    shadows.set(key, shadow);
  }
  return shadow;
}

/**
 * `args` with every plain object at a place `schema` declares an inherited-name property, and that
 * does not hold it, copied with that property as a non-enumerable own `undefined`; only the objects
 * on the way there are copied (ordinary objects), arrays are walked by index, nothing the schema
 * does not declare is followed, and `args` is never written into.
 */
function withAbsentKeys(args: unknown, schema: unknown): unknown {
  const fill = (value: unknown, nodes: readonly SchemaNode[], depth: number): unknown => {
    if (typeof value !== "object" || value === null || nodes.length === 0 || depth > FILL_DEPTH) return value;
    if (Array.isArray(value)) {
      const items: SchemaNode[] = [];
      let longestPrefix = 0;
      for (const node of nodes) {
        const prefix = own(node, "prefixItems");
        if (Array.isArray(prefix)) longestPrefix = Math.max(longestPrefix, prefix.length);
        schemaNodes(schema, own(node, "items"), items);
      }
      let out: unknown[] | undefined;
      for (let at = 0; at < value.length; at++) {
        let itemNodes: readonly SchemaNode[] = items;
        if (at < longestPrefix) {
          const these = [...items];
          for (const node of nodes) {
            const prefix = own(node, "prefixItems");
            if (Array.isArray(prefix) && at < prefix.length) schemaNodes(schema, prefix[at], these);
          }
          itemNodes = these;
        }
        const item = value[at];
        const filled = fill(item, itemNodes, depth + 1);
        if (filled !== item) {
          out ??= value.slice();
          out[at] = filled;
        }
      }
      return out ?? value;
    }
    if (Object.getPrototypeOf(value) !== Object.prototype) return value;
    const changed = new Map<string, unknown>();
    for (const key of Object.keys(value)) {
      const childNodes: SchemaNode[] = [];
      for (const node of nodes) {
        const declared = own(own(node, "properties"), key);
        if (declared !== undefined) schemaNodes(schema, declared, childNodes);
        else schemaNodes(schema, own(node, "additionalProperties"), childNodes);
      }
      const child = (value as SchemaNode)[key];
      const filled = fill(child, childNodes, depth + 1);
      if (filled !== child) changed.set(key, filled);
    }
    const declared = new Set<string>();
    let absent = false;
    for (const node of nodes) {
      const properties = own(node, "properties");
      if (typeof properties !== "object" || properties === null) continue;
      for (const key of Object.keys(properties)) {
        if (!INHERITED.has(key)) continue;
        declared.add(key);
        if (!Object.hasOwn(value, key)) absent = true;
      }
    }
    if (changed.size === 0 && !absent) return value;
    const out = (absent ? Object.create(shadowing(declared)) : {}) as SchemaNode;
    for (const key of Object.keys(value))
      put(out, key, changed.has(key) ? changed.get(key) : (value as SchemaNode)[key]);
    return out;
  };
  return fill(args, schemaNodes(schema, schema, []), 0);
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
  #version = 0;

  constructor(tools: readonly AgentTool[] = []) {
    for (const tool of tools) this.register(tool);
  }

  /**
   * Adds a tool. Throws `AgentError` (`invalid-input`) for a tool without a name or execute,
   * (`duplicate-tool`) for a taken name unless `replace`, and (`duplicate-tool`, whatever `replace`
   * says) for a name another tool's becomes on the wire (the model could not tell a call to one from
   * a call to the other). Nothing is registered when it throws.
   */
  register(tool: AgentTool, options: { replace?: boolean } = {}): void {
    if (!tool || typeof tool.name !== "string" || tool.name === "" || typeof tool.execute !== "function") {
      throw new AgentError(
        "invalid-input",
        `A tool needs a non-empty name and an execute function; got ${JSON.stringify(tool?.name)}.`,
      );
    }
    if (this.#tools.has(tool.name) && !options.replace) {
      throw new AgentError(
        "duplicate-tool",
        `Two tools are named "${tool.name}". Rename one, or register with { replace: true } to override.`,
      );
    }
    const wire = wireName(tool.name);
    for (const [other, taken] of this.#wire) {
      if (taken !== wire || other === tool.name) continue;
      throw new AgentError(
        "duplicate-tool",
        `The tools "${other}" and "${tool.name}" would both be declared to the model as "${wire}" (a tool name ` +
          "on the wire is letters, digits, _ and - only), so a call to one could not be told from a call to the " +
          `other; "${tool.name}" was not registered. Rename one of them.`,
      );
    }
    this.#tools.set(tool.name, tool);
    this.#wire.set(tool.name, wire);
    this.#version++;
  }

  /** Removes a tool by name; returns whether one was there. */
  unregister(name: string): boolean {
    const removed = this.#tools.delete(name);
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
      function: { name: tool.name, description: tool.description, parameters: tool.parameters },
    }));
  }
}
