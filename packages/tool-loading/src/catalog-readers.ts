import type { FunctionToolLike } from "@loopwright/schema-compat";
import { type CatalogServer, checkCatalog, definitionsByName } from "./catalog.js";
import { descriptionOf } from "./own.js";

/**
 * What a catalogue was checked and indexed as, kept by catalogue for the functions called on their
 * own (`proxiedCall`, `expandNames`, `loadNames`): each call used to check the catalogue and build
 * its lookups again (half a second a call at 10^5 tools). `shape` is every value the check and the
 * lookups read, in order; the entry holds only while the catalogue still has that shape, so a
 * catalogue changed in place is checked and indexed again.
 */
interface CatalogReaders {
  shape: unknown[];
  /** What has been built from the catalogue, by what it is (a resolver, a name reader). */
  built: Map<string, unknown>;
}

const byCatalog = new WeakMap<object, CatalogReaders>();

/** Every value `checkCatalog` and the lookups read off a checked catalogue, in order. */
function shapeOf(catalog: readonly CatalogServer[]): unknown[] {
  const shape: unknown[] = [catalog.length];
  for (const server of catalog) {
    shape.push(server, server.name, server.tools, server.tools.length);
    for (const tool of server.tools) shape.push(tool, tool.name, descriptionOf(tool));
  }
  return shape;
}

/** Whether `catalog` still reads as `shape` (a few comparisons a tool, nothing built). */
function holdsShape(catalog: unknown, shape: readonly unknown[]): boolean {
  if (!Array.isArray(catalog) || catalog.length !== shape[0]) return false;
  let at = 1;
  for (let i = 0; i < catalog.length; i++) {
    const server = catalog[i] as CatalogServer | undefined;
    if (server !== shape[at++]) return false;
    const { name, tools } = server as CatalogServer;
    if (name !== shape[at++] || tools !== shape[at++] || tools.length !== shape[at++]) return false;
    for (let j = 0; j < tools.length; j++) {
      const tool = tools[j];
      if (tool !== shape[at++]) return false;
      if (tool?.name !== shape[at++] || (tool ? descriptionOf(tool) : undefined) !== shape[at++])
        return false;
    }
  }
  return true;
}

/**
 * `catalog` checked (`checkCatalog`, its errors starting with `where`) and what `build` makes of it
 * under `kind`, built once per catalogue and again only when the catalogue no longer lists the same
 * servers, tools, names and descriptions.
 */
export function catalogMemo<T>(
  catalog: unknown,
  where: string,
  kind: string,
  build: (catalog: readonly CatalogServer[]) => T,
): T {
  const known = typeof catalog === "object" && catalog !== null ? byCatalog.get(catalog) : undefined;
  let entry = known;
  if (entry === undefined || !holdsShape(catalog, entry.shape)) {
    const checked = checkCatalog(catalog, where);
    entry = { shape: shapeOf(checked), built: new Map() };
    byCatalog.set(checked, entry);
  }
  if (!entry.built.has(kind)) entry.built.set(kind, build(catalog as readonly CatalogServer[]));
  return entry.built.get(kind) as T;
}

/** A tool array's definitions by name and the values they were read from (each tool, its function, its name). */
const byTools = new WeakMap<object, { shape: unknown[]; definitions: Map<string, FunctionToolLike> }>();

/**
 * `definitionsByName(tools, where)`, kept by tool array while it holds the same tool objects with the
 * same names: `proxiedCall` given `tools` built the map again on every call.
 */
export function definitionsOf(tools: unknown, where: string): Map<string, FunctionToolLike> {
  const known = typeof tools === "object" && tools !== null ? byTools.get(tools) : undefined;
  if (known !== undefined && holdsToolShape(tools, known.shape)) return known.definitions;
  const definitions = definitionsByName(tools, where);
  const list = tools as readonly FunctionToolLike[];
  const shape: unknown[] = [list.length];
  for (const tool of list) shape.push(tool, tool.function, tool.function.name);
  byTools.set(list, { shape, definitions });
  return definitions;
}

function holdsToolShape(tools: unknown, shape: readonly unknown[]): boolean {
  if (!Array.isArray(tools) || tools.length !== shape[0]) return false;
  let at = 1;
  for (let i = 0; i < tools.length; i++) {
    const tool = tools[i] as FunctionToolLike | undefined;
    if (tool !== shape[at++] || tool?.function !== shape[at++] || tool?.function?.name !== shape[at++])
      return false;
  }
  return true;
}
