import { asSpec } from "./as-spec.js";
import type { AgentSpec, BundledServer } from "./types.js";

/**
 * A copy of the spec safe to hand on: every bundled server's `env` and `headers` removed.
 *
 * Those are where the format puts a bundled server's credentials. Everything else is kept —
 * a server's URL and arguments included, since a server with its query string cut off is a
 * different server — so run `findSpecSecrets` on the result before calling it safe to share.
 * The result is a valid document: `parseSpec(exportSpec(spec), { bundle: true })` reads it back
 * whole. Never changes its argument. Throws `AgentSpecError` when `spec` is not a parsed spec.
 */
export function exportSpec(spec: AgentSpec): AgentSpec {
  const copy = asSpec(spec, "exportSpec");
  const servers = copy.bundle?.mcpServers;
  if (copy.bundle && servers) {
    copy.bundle = {
      ...copy.bundle,
      mcpServers: servers.map(({ env: _env, headers: _headers, ...rest }): BundledServer => rest),
    };
  }
  return copy;
}
