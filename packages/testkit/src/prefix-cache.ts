/**
 * The prefix-cache model: a deterministic chat-template-like rendering of a request, a documented
 * token rule, and a cache that reports how many leading tokens a request shares with earlier ones.
 */
import { ownRequest } from "./own-body.js";

/** The parts of a chat-completions body that the rendering reads. */
export interface PromptLike {
  tools?: unknown;
  messages?: unknown;
}

/**
 * The token rule: one token per match of this expression, in order.
 *
 * A role marker such as `<|user|>` is one token; a run of letters is one token; every digit is its
 * own token; every other non-space character (punctuation, symbols, emoji) is one token; a run of
 * whitespace is one token. Every character of the input belongs to exactly one token.
 */
export const TOKEN_PATTERN: RegExp = /<\|[a-z_]+\|>|\p{L}+|\p{N}|\s+|[^\p{L}\p{N}\s]/gu;

/**
 * Splits text into tokens by {@link TOKEN_PATTERN}; joining the result gives the text back.
 */
export function tokenize(text: string): string[] {
  return text.match(TOKEN_PATTERN) ?? [];
}

/** Counts the tokens of `text` by {@link TOKEN_PATTERN}. */
export function countTokens(text: string): number {
  let n = 0;
  for (const _ of text.matchAll(TOKEN_PATTERN)) n++;
  return n;
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** Message content as text: strings as-is, text parts joined, other parts as their JSON. */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (content === null || content === undefined) return "";
  if (Array.isArray(content)) {
    return content
      .map((part) => {
        const p = asRecord(part);
        return p && typeof p.text === "string" ? p.text : jsonText(part);
      })
      .join("");
  }
  return jsonText(content);
}

/**
 * `JSON.stringify(value)`, and for a value it cannot write (a bigint, a cycle: a request a host
 * built, never one read off the wire) the same with each bigint written as its digits and an object
 * met again as "[Circular]", so rendering never throws.
 */
function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value) as string;
  } catch {
    const seen = new WeakSet<object>();
    try {
      return JSON.stringify(value, (_key, item: unknown) => {
        if (typeof item === "bigint") return item.toString();
        if (typeof item === "object" && item !== null) {
          if (seen.has(item)) return "[Circular]";
          seen.add(item);
        }
        return item;
      }) as string;
    } catch {
      // A toJSON that throws.
      return "[unserialisable]";
    }
  }
}

/**
 * Renders a chat-completions request into one prompt string, the way a chat template does.
 *
 * Order: the `tools` array first (one `<|tools|>` block holding `JSON.stringify(tools)` exactly as
 * sent, so key order matters as it does for real templates), then each message as
 * `<|role|>\n<content>\n`; an assistant's tool calls follow its content as
 * `<|tool_call|>name\n<arguments>\n`; a tool message starts with its `tool_call_id`. The prompt
 * ends with `<|assistant|>\n`, the generation prompt. Never throws: unknown shapes render as JSON.
 * Reads only the fields the request holds, never a polluted `Object.prototype`'s (see `ownRequest`).
 */
export function renderPrompt(given: PromptLike): string {
  const request = ownRequest(given) as PromptLike;
  let out = "";
  if (Array.isArray(request.tools) && request.tools.length > 0) {
    out += `<|tools|>\n${jsonText(request.tools)}\n`;
  }
  const messages = Array.isArray(request.messages) ? request.messages : [];
  for (const raw of messages) {
    const m = asRecord(raw);
    if (!m) {
      out += `<|unknown|>\n${jsonText(raw)}\n`;
      continue;
    }
    const role = typeof m.role === "string" && /^[a-z_]+$/.test(m.role) ? m.role : "unknown";
    out += `<|${role}|>\n`;
    if (role === "tool" && typeof m.tool_call_id === "string") out += `${m.tool_call_id}\n`;
    out += `${contentText(m.content)}\n`;
    if (Array.isArray(m.tool_calls)) {
      for (const call of m.tool_calls) {
        const fn = asRecord(asRecord(call)?.function);
        const name = typeof fn?.name === "string" ? fn.name : "";
        const args = typeof fn?.arguments === "string" ? fn.arguments : "";
        out += `<|tool_call|>${name}\n${args}\n`;
      }
    }
  }
  return `${out}<|assistant|>\n`;
}

/** Number of leading tokens two token lists share. */
export function commonPrefixLength(a: readonly string[], b: readonly string[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/** What {@link PrefixCache.process} reports for one request. */
export interface PromptCount {
  /** Tokens of the rendered prompt. */
  promptTokens: number;
  /** Longest common token prefix with any earlier prompt this cache saw (0 for the first), at most `promptTokens - 1`. */
  cachedTokens: number;
}

/** A prefix cache: remembers every rendered prompt it processed. */
export interface PrefixCache {
  /** Counts `request`'s prompt tokens and cached prefix, then remembers its prompt. */
  process(request: PromptLike): PromptCount;
  /** Counts like `process` without remembering the prompt. */
  peek(request: PromptLike): PromptCount;
  /** Forgets every remembered prompt. */
  clear(): void;
}

/**
 * One edge of the prompt tree: the tokens it spells and the edges that leave its end, by their
 * first token. Prompts that share a prefix share its edges, so an appended conversation is held
 * once, not once per request.
 */
interface PromptNode {
  edge: string[];
  children: Map<string, PromptNode>;
}

/** Length of the longest path from `root` that `tokens` begins with. */
function matchLength(root: PromptNode, tokens: readonly string[]): number {
  let node = root;
  let i = 0;
  for (;;) {
    const child = i < tokens.length ? node.children.get(tokens[i] as string) : undefined;
    if (!child) return i;
    const edge = child.edge;
    let j = 0;
    while (j < edge.length && i < tokens.length && edge[j] === tokens[i]) {
      i++;
      j++;
    }
    if (j < edge.length) return i;
    node = child;
  }
}

/**
 * The tokens from `start` on, as a list of its own: tokens cut from a prompt hold on to the whole
 * prompt text, so a kept edge is written out and split again (the same tokens: each match of the
 * rule depends only on the text from where it starts).
 */
function ownTokens(tokens: readonly string[], start: number): string[] {
  return tokenize(tokens.slice(start).join(""));
}

/** Adds `tokens` as a path from `root`, splitting the edge where it leaves a known prompt. */
function insertPrompt(root: PromptNode, tokens: readonly string[]): void {
  let node = root;
  let i = 0;
  while (i < tokens.length) {
    const first = tokens[i] as string;
    const child = node.children.get(first);
    if (!child) {
      const edge = ownTokens(tokens, i);
      node.children.set(edge[0] as string, { edge, children: new Map() });
      return;
    }
    const edge = child.edge;
    let j = 0;
    while (j < edge.length && i < tokens.length && edge[j] === tokens[i]) {
      i++;
      j++;
    }
    if (j === edge.length) {
      node = child;
      continue;
    }
    // A prompt that is a prefix of a known one is already held.
    if (i === tokens.length) return;
    const tail: PromptNode = { edge: edge.slice(j), children: child.children };
    const branch: PromptNode = { edge: ownTokens(tokens, i), children: new Map() };
    child.edge = edge.slice(0, j);
    child.children = new Map([
      [tail.edge[0] as string, tail],
      [branch.edge[0] as string, branch],
    ]);
    return;
  }
}

/**
 * Makes an empty prefix cache.
 *
 * `cachedTokens` for a request is the longest common token prefix (by {@link tokenize}) between its
 * {@link renderPrompt} output and any earlier prompt passed to `process`, at most all its tokens
 * but the last (a server computes that one for its logits). The prompts are held as
 * a tree of shared prefixes: a request costs time in its own length, however many came before,
 * and a conversation that only appends holds each token once.
 */
export function createPrefixCache(): PrefixCache {
  let root: PromptNode = { edge: [], children: new Map() };
  const count = (request: PromptLike): { tokens: string[]; result: PromptCount } => {
    const tokens = tokenize(renderPrompt(request));
    // A real server computes at least the last token of a prompt it has seen whole, for its logits
    // (llama.cpp answers a repeated 268-token prompt with 267 cached).
    const cachedTokens = Math.min(matchLength(root, tokens), Math.max(0, tokens.length - 1));
    return { tokens, result: { promptTokens: tokens.length, cachedTokens } };
  };
  return {
    process(request) {
      const { tokens, result } = count(request);
      insertPrompt(root, tokens);
      return result;
    },
    peek: (request) => count(request).result,
    clear() {
      root = { edge: [], children: new Map() };
    },
  };
}
