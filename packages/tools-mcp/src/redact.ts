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

/**
 * An error as it may be kept as a `cause`: the same error when no secret is in its message, stack,
 * string properties (and lists of strings, such as `spawnargs`) or causes, else a copy (same prototype, so `instanceof` still holds) with each
 * secret replaced by `***`. Anything that is not an `Error` is kept only when it is a string (masked).
 */
export function redactError(error: unknown, secrets: readonly string[], depth = 0): unknown {
  if (typeof error === "string") return redact(error, secrets);
  if (!(error instanceof Error) || secrets.length === 0) return error;
  let changed = false;
  const copy = Object.create(Object.getPrototypeOf(error) as object) as Error;
  for (const key of Reflect.ownKeys(error)) {
    const descriptor = Object.getOwnPropertyDescriptor(error, key) as PropertyDescriptor;
    let value: unknown = descriptor.value;
    if (typeof value === "string") value = redact(value, secrets);
    else if (key === "cause" && depth < 4) value = redactError(value, secrets, depth + 1);
    else if (Array.isArray(value) && value.some((v) => typeof v === "string")) {
      // A spawn failure's `spawnargs`: the server's arguments, where a credential may be.
      const list: unknown[] = value;
      const masked = list.map((v) => (typeof v === "string" ? redact(v, secrets) : v));
      if (masked.some((v, i) => v !== list[i])) value = masked;
    }
    if (value !== descriptor.value) changed = true;
    Object.defineProperty(copy, key, "value" in descriptor ? { ...descriptor, value } : descriptor);
  }
  return changed ? copy : error;
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
