// The guesses findSpecSecrets makes about a string: each a cheap test, wrong in both directions
// by design (a flag called --keyboard is named; a bare positional token is missed).

/** Why a place may hold a credential. */
export const SecretSign = {
  /** A URL with `user:password@` (or a bare token as the user) before its host. */
  Userinfo: "userinfo",
  /** A URL query parameter with a telling name, such as `?token=` or `?api_key=`. */
  Query: "query",
  /**
   * A command-line argument with a telling name: a flag such as `--api-key X` or `--token=X`, a
   * header such as `Authorization: Bearer X`, or an assignment such as docker's `-e GITHUB_TOKEN=X`.
   */
  Flag: "flag",
  /** A value shaped like a known kind of key (`sk-…`, `gsk_…`, `ghp_…`, `tvly-…`, `Bearer …`, a JWT). */
  Value: "value",
  /** A field with a telling name, such as `env.GITHUB_TOKEN` or `headers.Authorization`. */
  Field: "field",
} as const;

/** One of the `SecretSign` values. */
export type SecretSign = (typeof SecretSign)[keyof typeof SecretSign];

// `token(?!s)`: max_tokens is a ceiling, not a credential.
const TELLING_NAME = /key|token(?!s)|secret|passw|pwd|auth|credential|cookie|bearer|signature|private/i;

/**
 * True for a field, flag, variable or parameter name that credentials are usually given under
 * (`apiKey`, `--token`, `GITHUB_TOKEN`, `password`, `Authorization`, `cookie`); false for
 * `maxTokens` and anything that is not a string. The same test `findSpecSecrets` makes
 * (`SecretSign.Field`, `Flag`, `Query`): a guess both ways (`--keyboard` is named). Never throws.
 */
export function looksSecretName(name: string): boolean {
  return typeof name === "string" && TELLING_NAME.test(name);
}

/** The string with every `${VAR}` reference removed: what is left is what the document itself says. */
export function withoutReferences(value: string): string {
  return value.replace(/\$\{[^}]*\}/g, "");
}

/** @internal The shapes `looksLikeKey` knows. None matches fewer than 14 characters (`quotable` relies on it). */
export const KEY_SHAPES: readonly RegExp[] = [
  /\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}/, // OpenAI, Anthropic
  /\bgh[pousr]_[A-Za-z0-9]{20,}/, // GitHub
  /\bgithub_pat_[A-Za-z0-9_]{20,}/,
  /\bglpat-[A-Za-z0-9_-]{16,}/, // GitLab
  /\bxox[abposr]-[A-Za-z0-9-]{10,}/, // Slack
  /\bAKIA[0-9A-Z]{16}\b/, // AWS access key id
  /\bAIza[0-9A-Za-z_-]{30,}/, // Google
  /\bhf_[A-Za-z0-9]{20,}/, // Hugging Face
  /\bgsk_[A-Za-z0-9]{20,}/, // Groq
  /\bxai-[A-Za-z0-9]{20,}/, // xAI
  /\bpplx-[A-Za-z0-9]{20,}/, // Perplexity
  /\bcsk-[A-Za-z0-9]{20,}/, // Cerebras
  /\bfw_[A-Za-z0-9]{20,}/, // Fireworks
  /\br8_[A-Za-z0-9]{20,}/, // Replicate
  /\blsv2_(?:pt|sk)_[A-Za-z0-9_]{20,}/, // LangSmith
  /\btvly-(?:dev-|prod-)?[A-Za-z0-9]{16,}/, // Tavily (an MCP search server's key)
  /\bBSA[A-Za-z0-9_-]{20,}/, // Brave Search
  /\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}/, // Stripe
  /\bnpm_[A-Za-z0-9]{30,}/, // npm
  /\blin_api_[A-Za-z0-9]{20,}/, // Linear
  /\bsbp_[A-Za-z0-9]{20,}/, // Supabase
  /\b(?:ntn|secret)_[A-Za-z0-9]{30,}/, // Notion
  /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/, // JWT
  /\b(?:Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{8,}/i, // an Authorization value
];

const GLOBAL_SHAPES = KEY_SHAPES.map((shape) => new RegExp(shape.source, `${shape.flags}g`));

/** The string with every key-shaped part replaced by the reference `${SECRET}`. */
export function withoutKeys(value: string): string {
  let out = value;
  for (const shape of GLOBAL_SHAPES) out = out.replace(shape, "${SECRET}");
  return out;
}

/**
 * True when a string, with its `${VAR}` references left out, holds a value shaped like a known
 * kind of key anywhere in it: OpenAI's and Anthropic's `sk-…`, GitHub's `ghp_…`, AWS's `AKIA…`,
 * Groq's `gsk_…`, a JWT, an `Authorization` value such as `Bearer <token>`, and others (each at
 * least 14 characters). The test `findSpecSecrets` makes for `SecretSign.Value`; false for
 * anything that is not a string. Never throws.
 */
export function looksLikeKey(value: string): boolean {
  if (typeof value !== "string") return false;
  const literal = withoutReferences(value);
  return KEY_SHAPES.some((shape) => shape.test(literal));
}

/** The sign a URL carries, if any: credentials before the host, or a telling query parameter. */
export function urlSign(value: string): SecretSign | undefined {
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(value)) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (withoutReferences(decodeSafe(url.username) + decodeSafe(url.password)) !== "")
    return SecretSign.Userinfo;
  for (const [name, param] of url.searchParams) {
    if (looksSecretName(name) && withoutReferences(param).trim() !== "") return SecretSign.Query;
  }
  return undefined;
}

function decodeSafe(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/** True when a value, once references are removed, still says something. */
export function isLiteral(value: string): boolean {
  return (
    withoutReferences(value)
      .replace(/^\s*(?:Bearer|Basic|Token)\b/i, "")
      .trim() !== ""
  );
}

/**
 * The URL with what `urlSign` reads taken out: the userinfo, and each query parameter with a
 * telling name and a literal value. The rest is kept as written (no re-encoding), so `${VAR}`
 * references elsewhere in it survive. A string that is not a URL is returned as it is.
 */
export function withoutUrlSecrets(value: string): string {
  const match = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)(?:[^/?#]*@)?([^?#]*)(?:\?([^#]*))?(#[\s\S]*)?$/.exec(value);
  if (!match) return value;
  const [, scheme = "", rest = "", query, fragment = ""] = match;
  const kept = (query ?? "").split("&").filter((pair) => {
    if (pair === "") return false;
    const cut = pair.indexOf("=");
    const name = decodeSafe((cut === -1 ? pair : pair.slice(0, cut)).replace(/\+/g, " "));
    const param = cut === -1 ? "" : decodeSafe(pair.slice(cut + 1).replace(/\+/g, " "));
    return !(looksSecretName(name) && withoutReferences(param).trim() !== "");
  });
  return `${scheme}${rest}${kept.length > 0 ? `?${kept.join("&")}` : ""}${fragment}`;
}
