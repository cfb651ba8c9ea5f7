import type { McpServerConfig } from "./config.js";

const SHORTEST_SECRET = 4;

/**
 * The values in a server's config that may be credentials: every `env` and `headers` value, and
 * the userinfo and query values of its URL. What is reported about a server (its stderr tail, an
 * error from the SDK that quotes a request) passes through {@link redact} with these first.
 */
export function secretsOf(server: McpServerConfig): string[] {
  const values: string[] = [...(server.masked ?? [])];
  if (server.type === "stdio") {
    values.push(...Object.values(server.env ?? {}));
  } else {
    values.push(...Object.values(server.headers ?? {}));
    // A "Bearer abc" header leaks as "abc" too.
    for (const value of Object.values(server.headers ?? {})) values.push(...value.split(/\s+/));
    try {
      const url = new URL(server.url);
      values.push(url.username, url.password, ...[...url.searchParams.values()]);
    } catch {
      // A bad URL was refused when the config was read.
    }
  }
  return [...new Set(values.filter((v) => v.length >= SHORTEST_SECRET))].sort((a, b) => b.length - a.length);
}

/** `text` with every occurrence of each secret replaced by `***`. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) out = out.split(secret).join("***");
  return out;
}

/** A URL as it may be shown: origin and path, without userinfo, query or fragment. */
export function showUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return "(a URL)";
  }
}

/** How a server is named in a message: its name and what it runs or where it is, never its env or headers. */
export function describeServer(server: McpServerConfig): string {
  return server.type === "stdio"
    ? `MCP server "${server.name}" (${server.command})`
    : `MCP server "${server.name}" (${showUrl(server.url)})`;
}
