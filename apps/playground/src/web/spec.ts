// An agent spec document loaded from the page: validated with `parseSpec` (every warning kept with its
// path, so the page can show it beside the field), resolved with `resolveAgentSpec` over the
// playground's own settings, and turned into the loop config and system prompt of the next runs.
import type { LoopConfig } from "@loopwright/loop";
import { parseSpec, resolveAgentSpec, SPEC_TOKEN } from "@loopwright/spec";

/** One leaf of the loaded document, as the page lists it. */
export interface SpecField {
  path: string;
  /** The value as JSON, cut to 120 characters. */
  value: string;
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

function leaves(value: unknown, path: string, out: SpecField[]): SpecField[] {
  if (value !== null && typeof value === "object") {
    const entries = Array.isArray(value)
      ? value.map((v, i) => [`${path}[${i}]`, v] as const)
      : Object.entries(value).map(([k, v]) => [path ? `${path}.${k}` : k, v] as const);
    if (entries.length === 0) out.push({ path, value: Array.isArray(value) ? "[]" : "{}" });
    for (const [p, v] of entries) leaves(v, p, out);
    return out;
  }
  const text = JSON.stringify(value) ?? String(value);
  out.push({ path, value: text.length > 120 ? `${text.slice(0, 120)}…` : text });
  return out;
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
  } catch (error) {
    return {
      report: { errors: [`not JSON: ${(error as Error).message}`], warnings: [], fields: [] },
    };
  }
  const fields = leaves(value, "", []);
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
  // The playground's own endpoint (and its key) stays unless the document names another.
  if (resolved.baseUrl && resolved.baseUrl !== base.baseUrl) {
    config.baseUrl = resolved.baseUrl;
    config.apiKey = process.env.OPENAI_API_KEY ?? "";
  }
  for (const key of ["temperature", "maxTokens", "reasoningEffort", "contextLength", "maxRetries"] as const) {
    if (resolved[key] !== undefined) Object.assign(config, { [key]: resolved[key] });
  }
  const system = resolved.prompt.map((p) => p.text).join("\n\n") || undefined;
  report.applied = {
    ...(resolved.name ? { name: resolved.name } : {}),
    model: resolved.model,
    ...(config.baseUrl ? { baseUrl: config.baseUrl } : {}),
    system: system !== undefined,
    maxToolIterations: resolved.maxToolIterations,
  };
  return { report, applied: { config, ...(system ? { system } : {}) } };
}
