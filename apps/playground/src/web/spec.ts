// An agent spec document loaded from the page: validated with `parseSpec` (every warning kept with its
// path, so the page can show it beside the field), resolved with `resolveAgentSpec` over the
// playground's own settings, and turned into the loop config and system prompt of the next runs.
import type { LoopConfig } from "@loopwright/loop";
import {
  findSpecSecrets,
  looksLikeKey,
  looksSecretName,
  parseSpec,
  resolveAgentSpec,
  SPEC_TOKEN,
} from "@loopwright/spec";

/** One leaf of the loaded document, as the page lists it. */
export interface SpecField {
  path: string;
  /** The value as JSON, cut to 120 characters; {@link HIDDEN} where it may be a credential. */
  value: string;
}

/** What the page is shown in place of a value that may be a credential. */
export const HIDDEN = "(hidden: may be a credential)";

/**
 * A URL as the page or the terminal may show it: without `user:password@`, query or fragment (a
 * `redis://` URL too, whose `origin` the URL parser calls "null").
 */
export function shownUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return parsed.username || parsed.password || parsed.search || parsed.hash
      ? `${parsed.protocol}//${parsed.host}${parsed.pathname}`
      : url;
  } catch {
    return url;
  }
}

/** What the page is told about a loaded document. */
export interface SpecReport {
  /** The document's faults: when any, nothing was applied. */
  errors: string[];
  /** Fields dropped, each with its path (`model.temperature`) and the reason. */
  warnings: { path: string; message: string }[];
  /** Every leaf of the document as written, in order. */
  fields: SpecField[];
  /** What the next runs use, when the document was applied. */
  applied?: { name?: string; model: string; baseUrl?: string; system: boolean; maxToolIterations: number };
}

/** What a loaded spec changes for the next runs. */
export interface AppliedSpec {
  config: Partial<LoopConfig>;
  system?: string;
}

/**
 * Every leaf of the document. A string where a credential may be is hidden: a bundled server's
 * `env` and `headers` values, a value under a key named like one (spec's `looksSecretName`), a
 * key-shaped value (spec's `looksLikeKey`), each place `findSpecSecrets` points at; a URL is shown
 * without its userinfo and query.
 */
function leaves(
  value: unknown,
  path: string,
  out: SpecField[],
  flagged: ReadonlySet<string>,
  key = "",
  parent = "",
): SpecField[] {
  if (value !== null && typeof value === "object") {
    const entries = Array.isArray(value)
      ? value.map((v, i) => [`${path}[${i}]`, v, key] as const)
      : Object.entries(value).map(([k, v]) => [path ? `${path}.${k}` : k, v, k] as const);
    if (entries.length === 0) out.push({ path, value: Array.isArray(value) ? "[]" : "{}" });
    for (const [p, v, k] of entries) leaves(v, p, out, flagged, k, Array.isArray(value) ? parent : key);
    return out;
  }
  if (
    typeof value === "string" &&
    (parent === "env" ||
      parent === "headers" ||
      looksSecretName(key) ||
      looksLikeKey(value) ||
      flagged.has(path))
  ) {
    out.push({ path, value: shownUrl(value) !== value ? JSON.stringify(shownUrl(value)) : HIDDEN });
    return out;
  }
  const text = JSON.stringify(value) ?? String(value);
  out.push({ path, value: text.length > 120 ? `${text.slice(0, 120)}…` : text });
  return out;
}

/** How deep a loaded document may go (the format's deepest place is about six levels down). */
const MAX_DEPTH = 64;

/** Whether `value` has objects or lists nested more than `limit` deep; without recursion. */
function deeperThan(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop() as [unknown, number];
    if (item === null || typeof item !== "object") continue;
    if (depth >= limit) return true;
    for (const child of Object.values(item)) stack.push([child, depth + 1]);
  }
  return false;
}

/** The paths `findSpecSecrets` points at, bundled servers included. */
function secretPaths(value: unknown): Set<string> {
  const { spec } = parseSpec(value, { bundle: true });
  try {
    return new Set(spec ? findSpecSecrets(spec).map((hint) => hint.path) : []);
  } catch {
    return new Set();
  }
}

/**
 * Reads a document's text: JSON, then `parseSpec`, then `resolveAgentSpec` over `base` (the
 * playground's endpoint and model, the weakest layer). Never throws: a document that is not JSON or
 * not a spec comes back with `errors` and nothing applied.
 */
export function checkSpec(text: string, base: LoopConfig): { report: SpecReport; applied?: AppliedSpec } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // The parser's message quotes the text around the fault, which may be a credential: say less.
    return {
      report: {
        errors: [
          "not JSON: the text does not parse as JSON (its parser's message is left out: it quotes the text).",
        ],
        warnings: [],
        fields: [],
      },
    };
  }
  // Every reader after this one walks the document recursively: a deep one is refused by name here.
  if (deeperThan(value, MAX_DEPTH)) {
    return {
      report: {
        errors: [
          `too deeply nested: the document goes more than ${MAX_DEPTH} levels deep, and an agent spec is a few levels deep.`,
        ],
        warnings: [],
        fields: [],
      },
    };
  }
  const fields = leaves(value, "", [], secretPaths(value));
  const { spec, errors, warnings } = parseSpec(value);
  const report: SpecReport = {
    errors: errors.map(String),
    warnings: warnings.map((w) => ({ path: w.path, message: w.message })),
    fields,
  };
  if (!spec) return { report };
  const settings = {
    spec: SPEC_TOKEN,
    model: { name: base.model, endpoint: { baseUrl: base.baseUrl } },
    limits: { maxToolIterations: base.maxToolIterations ?? 8 },
  };
  const resolved = resolveAgentSpec([settings, spec]);
  const config: Partial<LoopConfig> = {
    model: resolved.model,
    maxToolIterations: resolved.maxToolIterations,
  };
  // The playground's own endpoint and its key stay unless the document names another endpoint,
  // which is sent no key: the host's key belongs to the endpoint it was given for, never to a URL
  // a pasted document chose.
  if (resolved.baseUrl && resolved.baseUrl !== base.baseUrl) {
    config.baseUrl = resolved.baseUrl;
    config.apiKey = "";
  }
  for (const key of ["temperature", "maxTokens", "reasoningEffort", "contextLength", "maxRetries"] as const) {
    if (resolved[key] !== undefined) Object.assign(config, { [key]: resolved[key] });
  }
  const system = resolved.prompt.map((p) => p.text).join("\n\n") || undefined;
  report.applied = {
    ...(resolved.name ? { name: resolved.name } : {}),
    model: resolved.model,
    ...(config.baseUrl ? { baseUrl: shownUrl(config.baseUrl) } : {}),
    system: system !== undefined,
    maxToolIterations: resolved.maxToolIterations,
  };
  return { report, applied: { config, ...(system ? { system } : {}) } };
}
