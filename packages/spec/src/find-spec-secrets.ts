import { asSpec } from "./as-spec.js";
import { child, isPlainObject } from "./json.js";
import { isLiteral, looksLikeKey, looksSecretName, SecretSign, urlSign } from "./secret-signs.js";
import type { AgentSpec, EndpointSpec } from "./types.js";

/** A place in a spec that may hold a credential: where, in which bundled server, and why. Never the value. */
export interface SecretHint {
  /** e.g. `bundle.mcpServers[0].args[2]`, `model.endpoint.baseUrl`, `tasks.title.extraBody.api_key`. */
  path: string;
  /** The bundled server's name, for a place inside `bundle.mcpServers`. */
  server?: string;
  sign: SecretSign;
}

/**
 * Lists the places in a spec that may hold a credential, so a host can warn before calling it safe to share.
 *
 * Reads bundled servers (url, args, env, headers), endpoint URLs, and `extraBody` at any depth.
 * A hint is a place and a reason, never the value; it is a guess both ways. A `${VAR}` reference is
 * not a credential and is not reported. Throws `AgentSpecError` when `spec` is not a parsed spec.
 */
export function findSpecSecrets(spec: AgentSpec): SecretHint[] {
  const checked = asSpec(spec, "findSpecSecrets");
  const hints: SecretHint[] = [];
  const endpoint = (at: string, value: EndpointSpec | undefined) => {
    if (value?.baseUrl === undefined) return;
    const sign = urlSign(value.baseUrl);
    if (sign) hints.push({ path: child(at, "baseUrl"), sign });
  };
  endpoint("model.endpoint", checked.model?.endpoint);
  if (checked.model?.extraBody) scanFree("model.extraBody", checked.model.extraBody, undefined, hints);
  for (const [key, task] of Object.entries(checked.tasks ?? {})) {
    const at = child("tasks", key);
    endpoint(child(at, "endpoint"), task.endpoint);
    if (task.extraBody) scanFree(child(at, "extraBody"), task.extraBody, undefined, hints);
  }
  (checked.bundle?.mcpServers ?? []).forEach((server, index) => {
    const at = child("bundle.mcpServers", index);
    const name = server.name;
    const push = (path: string, sign: SecretSign | undefined) => {
      if (sign) hints.push({ path, server: name, sign });
    };
    if (server.url !== undefined) push(child(at, "url"), urlSign(server.url));
    scanArgs(child(at, "args"), server.args ?? [], push);
    for (const field of ["env", "headers"] as const) {
      const entries = server[field] ?? {};
      for (const key of Object.keys(entries)) {
        push(child(child(at, field), key), stringSign(entries[key] as string, looksSecretName(key)));
      }
    }
  });
  return hints;
}

/** The sign of a string at a place whose name may already tell. */
function stringSign(value: string, tellingName: boolean): SecretSign | undefined {
  const url = urlSign(value);
  if (url) return url;
  if (tellingName && isLiteral(value)) return SecretSign.Field;
  if (looksLikeKey(value)) return SecretSign.Value;
  return undefined;
}

function scanArgs(
  at: string,
  args: readonly string[],
  push: (path: string, sign: SecretSign | undefined) => void,
): void {
  args.forEach((arg, index) => {
    const path = child(at, index);
    const flag = /^--?([A-Za-z][\w.-]*)(?:=([\s\S]*))?$/.exec(arg);
    if (flag) {
      const [, name = "", inline] = flag;
      if (inline !== undefined) {
        push(path, looksSecretName(name) && isLiteral(inline) ? SecretSign.Flag : stringSign(inline, false));
      }
      return;
    }
    const previous = index > 0 ? /^--?([A-Za-z][\w.-]*)$/.exec(args[index - 1] ?? "") : null;
    if (previous && looksSecretName(previous[1] ?? "") && isLiteral(arg)) {
      push(path, SecretSign.Flag);
      return;
    }
    // An environment assignment given as an argument: docker's `-e GITHUB_TOKEN=ghp_…`.
    const assignment = /^([A-Za-z_][A-Za-z0-9_.-]*)=([\s\S]*)$/.exec(arg);
    if (assignment && looksSecretName(assignment[1] ?? "")) {
      if (isLiteral(assignment[2] ?? "")) push(path, SecretSign.Flag);
      return;
    }
    // A header given as an argument: "Authorization: Bearer …".
    const header = /^([\w-]+)\s*:\s*(\S[\s\S]*)$/.exec(arg);
    if (header && !/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(arg) && looksSecretName(header[1] ?? "")) {
      if (isLiteral(header[2] ?? "")) push(path, SecretSign.Flag);
      return;
    }
    push(path, stringSign(arg, false));
  });
}

function scanFree(at: string, value: unknown, name: string | undefined, hints: SecretHint[]): void {
  if (typeof value === "string") {
    const sign = stringSign(value, name !== undefined && looksSecretName(name));
    if (sign) hints.push({ path: at, sign });
    return;
  }
  if (Array.isArray(value)) {
    value.forEach((item, index) => {
      scanFree(child(at, index), item, name, hints);
    });
    return;
  }
  if (isPlainObject(value)) {
    for (const key of Object.keys(value)) scanFree(child(at, key), value[key], key, hints);
  }
}
