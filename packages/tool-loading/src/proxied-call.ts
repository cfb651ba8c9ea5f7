import { type CatalogServer, catalogIndex, checkCatalog } from "./catalog.js";
import { describe, ToolLoadingError } from "./errors.js";
import { expandNames } from "./names.js";

/** The inner call a `call_tool` stands for: the tool it names and its arguments as an object. */
export interface ProxiedCall {
  /** The catalogued tool's name. */
  name: string;
  /** Its arguments, read into an object (`{}` where none were given). */
  args: Record<string, unknown>;
  /** The arguments as text: what the model wrote where it wrote a string, the JSON of the object otherwise. */
  raw: string;
}

/** Options for {@link proxiedCall}. */
export interface ProxiedCallOptions {
  /**
   * Reads arguments given as text. `JSON.parse` unless given; the loop passes its lenient reader
   * (`parseToolArguments` from `@loopwright/tool-calls`) so almost-JSON is repaired. Whatever it
   * throws becomes the `cause` of an `invalid-arguments` error.
   */
  parse?: (text: string) => unknown;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Reads a `call_tool` call's arguments — `{ name, arguments }` — into the call it stands for. The
 * arguments may be an object or JSON text of one; absent, `null` or empty means `{}`. The name must
 * be in the catalogue (a `server.tool` form that `expandNames` resolves to exactly one tool counts).
 *
 * Throws a `ToolLoadingError` whose message is written for the model: `missing-name` when no tool
 * is named, `unknown-tool` for a name outside the catalogue, `invalid-arguments` for arguments that
 * are not an object, and `invalid-catalog` for a malformed catalogue. Never runs anything.
 */
export function proxiedCall(
  args: unknown,
  catalog: readonly CatalogServer[],
  options: ProxiedCallOptions = {},
): ProxiedCall {
  checkCatalog(catalog, "proxiedCall");
  let outer = args;
  if (typeof outer === "string") {
    try {
      outer = JSON.parse(outer);
    } catch (cause) {
      throw new ToolLoadingError(
        "invalid-arguments",
        'call_tool takes { "name": "<tool>", "arguments": { ... } }, and its arguments were not JSON.',
        { cause },
      );
    }
  }
  const record = isRecord(outer) ? outer : {};
  const given = record.name ?? record.tool ?? record.tool_name;
  if (typeof given !== "string" || given.trim() === "") {
    throw new ToolLoadingError(
      "missing-name",
      `call_tool needs the name of the tool to run, as { "name": "<tool>", "arguments": { ... } }, and was given ${describe(given)} as its name.`,
    );
  }
  const name = resolveOne(given.trim(), catalog);
  const inner = record.arguments ?? record.args ?? record.parameters ?? record.input;
  if (inner === undefined || inner === null || (typeof inner === "string" && inner.trim() === "")) {
    return { name, args: {}, raw: typeof inner === "string" ? inner : "{}" };
  }
  if (isRecord(inner)) return { name, args: inner, raw: JSON.stringify(inner) };
  if (typeof inner === "string") {
    let parsed: unknown;
    try {
      parsed = (options.parse ?? JSON.parse)(inner);
    } catch (cause) {
      throw new ToolLoadingError(
        "invalid-arguments",
        `call_tool for "${name}": its arguments are not a JSON object (${cause instanceof Error ? cause.message : String(cause)}). Give them as an object.`,
        { cause },
      );
    }
    if (isRecord(parsed)) return { name, args: parsed, raw: inner };
    throw new ToolLoadingError(
      "invalid-arguments",
      `call_tool for "${name}": its arguments must be a JSON object, and the text given reads as ${describe(parsed)}.`,
    );
  }
  throw new ToolLoadingError(
    "invalid-arguments",
    `call_tool for "${name}": its arguments must be an object, and were given ${describe(inner)}.`,
  );
}

function resolveOne(name: string, catalog: readonly CatalogServer[]): string {
  if (catalogIndex(catalog).has(name)) return name;
  const { names, overCap } = expandNames([name], catalog, 1);
  if (names.length === 1 && overCap.length === 0 && names[0] !== undefined) return names[0];
  throw new ToolLoadingError(
    "unknown-tool",
    `call_tool: "${name}" is not in the catalogue. Call one of the tools the catalogue lists, loaded with load_tools.`,
  );
}
