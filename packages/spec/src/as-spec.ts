import { AgentSpecError } from "./errors.js";
import { reasonOf, type SpecIssue } from "./issues.js";
import { parseInto } from "./parse-spec.js";
import type { AgentSpec } from "./types.js";

/**
 * The spec as `parseSpec` would hand it back, or an `AgentSpecError` when `value` is not one
 * unchanged: a function that takes a parsed spec re-checks it, so a hand-built layer with a
 * temperature of 5 is refused here rather than sent.
 */
export function asSpec(value: unknown, caller: string, label = "the spec"): AgentSpec {
  const ctx = { errors: [] as SpecIssue[], warnings: [] as SpecIssue[] };
  let spec: AgentSpec | undefined;
  try {
    spec = parseInto(value, { bundle: true, anyRequires: true }, ctx);
  } catch (cause) {
    throw new AgentSpecError("not-a-spec", `${caller}: ${label} could not be read.`, { cause });
  }
  const issues = [...ctx.errors, ...ctx.warnings];
  if (spec === undefined || issues.length > 0) {
    const shown = issues.slice(0, 3).map(reasonOf).join("; ");
    const more = issues.length > 3 ? ` (and ${issues.length - 3} more)` : "";
    throw new AgentSpecError(
      "not-a-spec",
      `${caller}: ${label} is not a parsed agent spec: ${shown}${more}. Pass documents through parseSpec first and use its spec.`,
      { issues },
    );
  }
  return spec;
}
