import { describeValue, ToolCallsError } from "./errors.js";
import { isRecord, repairLeading, repairParse, scanBrackets, tryParse } from "./json-text.js";
import { parseToolArguments } from "./parse-tool-arguments.js";
import type { ToolCallRequest } from "./types.js";

/**
 * A tool the model may call, as `recoverToolCalls` reads it: a bare name, an MCP-style
 * `{ name, inputSchema }`, or an OpenAI function tool. A parameters schema, where given, is used
 * to read Qwen3-Coder's untyped parameter text and to name a Harmony call that names no tool.
 */
export type ToolNameLike =
  | string
  | {
      name?: unknown;
      inputSchema?: unknown;
      parameters?: unknown;
      function?: { name?: unknown; parameters?: unknown };
    };

/** What {@link recoverToolCalls} found. */
export interface RecoveredToolCalls {
  /** The calls, in the order they were written, with ids `call_recovered_0` onward. */
  calls: ToolCallRequest[];
  /** The reply without the recovered calls (thinking before the last `</think>` kept as it was). */
  text: string;
}

interface Known {
  names: Set<string>;
  schemas: Map<string, Record<string, unknown>>;
}

interface Found {
  name: string;
  args: Record<string, unknown>;
  raw: string;
}

interface Span {
  start: number;
  end: number;
  calls: Found[];
}

const THINK_END = "</think>";

function readTools(tools: readonly ToolNameLike[]): Known {
  const known: Known = { names: new Set(), schemas: new Map() };
  for (const tool of tools) {
    if (typeof tool === "string") {
      known.names.add(tool);
      continue;
    }
    if (!isRecord(tool)) continue;
    const fn = isRecord(tool.function) ? tool.function : undefined;
    const name =
      typeof fn?.name === "string" ? fn.name : typeof tool.name === "string" ? tool.name : undefined;
    if (name === undefined) continue;
    known.names.add(name);
    const schema = fn?.parameters ?? tool.parameters ?? tool.inputSchema;
    if (isRecord(schema)) known.schemas.set(name, schema);
  }
  return known;
}

/** Reads a call's arguments, which a model writes as an object or as JSON in a string. */
function readArguments(value: unknown): { args: Record<string, unknown>; raw: string } | undefined {
  if (value === undefined || value === null) return { args: {}, raw: "{}" };
  if (isRecord(value)) return { args: value, raw: JSON.stringify(value) };
  if (typeof value !== "string") return undefined;
  try {
    return { args: parseToolArguments(value).value, raw: value };
  } catch {
    return undefined;
  }
}

/** The calls one JSON value holds: `{name, arguments}`, `{name, parameters}`, `{function: …}`, or a list. */
function callsIn(value: unknown): Found[] | undefined {
  const list = Array.isArray(value) ? value : [value];
  if (list.length === 0) return undefined;
  const calls: Found[] = [];
  for (const entry of list) {
    if (!isRecord(entry)) return undefined;
    const call = isRecord(entry.function) && entry.name === undefined ? entry.function : entry;
    if (typeof call.name !== "string") return undefined;
    const read = readArguments(call.arguments ?? call.parameters ?? call.args);
    if (!read) return undefined;
    calls.push({ name: call.name, ...read });
  }
  return calls;
}

function jsonAt(text: string, start: number): { value: unknown; end: number } | undefined {
  const { end } = scanBrackets(text, start);
  const stop = end < 0 ? text.length : end;
  const slice = text.slice(start, stop);
  const parsed = tryParse(slice) ?? repairParse(slice);
  return parsed ? { value: parsed.value, end: stop } : undefined;
}

function skipSpace(text: string, index: number): number {
  let i = index;
  while (i < text.length && /\s/.test(text[i] as string)) i++;
  return i;
}

/** Qwen3-Coder's `<function=name><parameter=key>value</parameter></function>` markup. */
const FUNCTION_BLOCK = /<function=([^>\n]+)>([\s\S]*?)(?:<\/function>|$)/g;
const PARAMETER = /<parameter=([^>\n]+)>([\s\S]*?)<\/parameter>/g;

function propertyType(schema: Record<string, unknown> | undefined, key: string): string[] {
  const props = isRecord(schema?.properties) ? schema.properties : undefined;
  const prop = props && Object.hasOwn(props, key) && isRecord(props[key]) ? props[key] : undefined;
  if (!prop) return [];
  const type = prop.type;
  if (typeof type === "string") return [type];
  return Array.isArray(type) ? type.filter((t): t is string => typeof t === "string") : [];
}

/** Reads one parameter's text the way its schema types it (text is a string unless typed otherwise). */
function parameterValue(text: string, types: readonly string[]): unknown {
  // The markup puts a value on its own line; that one newline each side is the format's, not the value's.
  const value = text.replace(/^\n/, "").replace(/\n$/, "");
  if (types.includes("string") || (types.length > 0 && !types.some((t) => t !== "null" && t !== "string"))) {
    if (types.includes("null") && value.trim() === "null") return null;
    return value;
  }
  const parsed = tryParse(value.trim()) ?? (types.length > 0 ? repairParse(value.trim()) : undefined);
  return parsed ? parsed.value : value;
}

function qwenCoderCalls(body: string, known: Known): Found[] | undefined {
  const calls: Found[] = [];
  for (const match of body.matchAll(FUNCTION_BLOCK)) {
    const name = (match[1] as string).trim();
    const schema = known.schemas.get(name);
    const args: Record<string, unknown> = {};
    for (const param of (match[2] as string).matchAll(PARAMETER)) {
      const key = (param[1] as string).trim();
      Object.defineProperty(args, key, {
        value: parameterValue(param[2] as string, propertyType(schema, key)),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    calls.push({ name, args, raw: JSON.stringify(args) });
  }
  return calls.length > 0 ? calls : undefined;
}

/** `<tool_call>…</tool_call>` (Hermes, Qwen; the closing tag is sometimes left out). */
function hermesSpans(text: string, known: Known): Span[] {
  const spans: Span[] = [];
  const OPEN = "<tool_call>";
  const CLOSE = "</tool_call>";
  let from = 0;
  for (;;) {
    const start = text.indexOf(OPEN, from);
    if (start < 0) break;
    const bodyStart = skipSpace(text, start + OPEN.length);
    let end: number;
    let calls: Found[] | undefined;
    if (text[bodyStart] === "{" || text[bodyStart] === "[") {
      const json = jsonAt(text, bodyStart);
      end = json ? json.end : text.length;
      calls = json ? callsIn(json.value) : undefined;
      const after = skipSpace(text, end);
      if (text.startsWith(CLOSE, after)) end = after + CLOSE.length;
    } else {
      const close = text.indexOf(CLOSE, bodyStart);
      const next = text.indexOf(OPEN, bodyStart);
      const bodyEnd = close < 0 ? (next < 0 ? text.length : next) : next >= 0 && next < close ? next : close;
      end = bodyEnd === close ? close + CLOSE.length : bodyEnd;
      calls = qwenCoderCalls(text.slice(bodyStart, bodyEnd), known);
    }
    if (calls) spans.push({ start, end, calls });
    from = Math.max(end, start + OPEN.length);
  }
  return spans;
}

/** Qwen3-Coder's `<function=…>` markup written without the `<tool_call>` wrapper. */
function bareFunctionSpans(text: string, known: Known): Span[] {
  const spans: Span[] = [];
  for (const match of text.matchAll(FUNCTION_BLOCK)) {
    const calls = qwenCoderCalls(match[0], known);
    if (calls) spans.push({ start: match.index, end: match.index + match[0].length, calls });
  }
  return spans;
}

/** Mistral's `[TOOL_CALLS] [{…}]` and its newer `[TOOL_CALLS]name[ARGS]{…}` spelling. */
function mistralSpans(text: string): Span[] {
  const spans: Span[] = [];
  const MARK = "[TOOL_CALLS]";
  let from = 0;
  for (;;) {
    const start = text.indexOf(MARK, from);
    if (start < 0) break;
    const at = skipSpace(text, start + MARK.length);
    let span: Span | undefined;
    if (text[at] === "[" || text[at] === "{") {
      const json = jsonAt(text, at);
      const calls = json ? callsIn(json.value) : undefined;
      if (json && calls) span = { start, end: json.end, calls };
    } else {
      const named = /^([^\s[\]{]+)\s*(?:\[CALL_ID\][^[]*)?\[ARGS\]\s*/.exec(text.slice(at));
      if (named) {
        const argsAt = at + named[0].length;
        if (text[argsAt] === "{") {
          const json = jsonAt(text, argsAt);
          const read = json ? readArguments(json.value) : undefined;
          if (json && read) {
            span = {
              start,
              end: json.end,
              calls: [{ name: named[1] as string, ...read, raw: text.slice(argsAt, json.end) }],
            };
          }
        }
      }
    }
    if (span) spans.push(span);
    from = span ? span.end : start + MARK.length;
  }
  return spans;
}

/** Llama 3's `<|python_tag|>{"name": …, "parameters": …}`, several separated by `;`. */
function pythonTagSpans(text: string): Span[] {
  const spans: Span[] = [];
  const MARK = "<|python_tag|>";
  let from = 0;
  for (;;) {
    const start = text.indexOf(MARK, from);
    if (start < 0) break;
    let at = skipSpace(text, start + MARK.length);
    const calls: Found[] = [];
    let end = at;
    while (text[at] === "{") {
      const json = jsonAt(text, at);
      const found = json ? callsIn(json.value) : undefined;
      if (!json || !found) break;
      calls.push(...found);
      end = json.end;
      at = skipSpace(text, end);
      if (text[at] === ";") at = skipSpace(text, at + 1);
    }
    if (calls.length > 0) {
      const tail = /^\s*<\|(?:eom_id|eot_id)\|>/.exec(text.slice(end));
      spans.push({ start, end: end + (tail ? tail[0].length : 0), calls });
    }
    from = Math.max(end, start + MARK.length);
  }
  return spans;
}

/** The tool whose parameters alone account for every key given, when exactly one does. */
function inferTool(args: Record<string, unknown>, known: Known): string | undefined {
  const keys = Object.keys(args);
  let match: string | undefined;
  for (const [name, schema] of known.schemas) {
    const props = isRecord(schema.properties) ? schema.properties : {};
    const required = Array.isArray(schema.required) ? schema.required : [];
    const fits =
      keys.every((k) => Object.hasOwn(props, k)) && required.every((k) => keys.includes(k as string));
    if (!fits) continue;
    if (match !== undefined) return undefined;
    match = name;
  }
  return match;
}

/** gpt-oss Harmony tokens served raw: `<|channel|>commentary to=functions.x …<|message|>{…}<|call|>`. */
function harmonySpans(text: string, known: Known): Span[] {
  const spans: Span[] = [];
  const HEADER =
    /(?:<\|start\|>assistant\s*)?((?:to=[^\s<]+\s*)?)<\|channel\|>commentary([^<]*?)(?:<\|constrain\|>[^<]*)?<\|message\|>/g;
  for (const match of text.matchAll(HEADER)) {
    const bodyAt = skipSpace(text, match.index + match[0].length);
    if (text[bodyAt] !== "{") continue;
    const json = jsonAt(text, bodyAt);
    const read = json ? readArguments(json.value) : undefined;
    if (!json || !read) continue;
    const recipient = /to=(?:functions\.)?([^\s<]+)/.exec(`${match[1] ?? ""} ${match[2] ?? ""}`);
    const name = recipient ? (recipient[1] as string) : inferTool(read.args, known);
    if (name === undefined) continue;
    const tail = /^\s*<\|(?:call|end)\|>/.exec(text.slice(json.end));
    spans.push({
      start: match.index,
      end: json.end + (tail ? tail[0].length : 0),
      calls: [{ name, args: read.args, raw: text.slice(bodyAt, json.end) }],
    });
  }
  return spans;
}

/** A reply that is nothing but a call (or a list of calls) in JSON. */
function wholeReplySpan(text: string): Span | undefined {
  const trimmed = text.trim();
  if (!/^[{[]/.test(trimmed)) return undefined;
  const strict = tryParse(trimmed);
  const parsed = strict ? { value: strict.value, whole: true } : repairLeading(trimmed);
  const calls = parsed?.whole ? callsIn(parsed.value) : undefined;
  return calls ? { start: 0, end: text.length, calls } : undefined;
}

/** The one fenced JSON block of a reply, when it holds a call. */
function fencedSpan(text: string): Span | undefined {
  const fences = [...text.matchAll(/```[\w-]*[^\S\n]*\n([\s\S]*?)```/g)];
  if (fences.length !== 1) return undefined;
  const fence = fences[0] as RegExpExecArray;
  const body = (fence[1] as string).trim();
  if (!/^[{[]/.test(body)) return undefined;
  const parsed = tryParse(body) ?? repairParse(body);
  const calls = parsed ? callsIn(parsed.value) : undefined;
  return calls ? { start: fence.index, end: fence.index + fence[0].length, calls } : undefined;
}

function overlaps(a: Span, spans: readonly Span[]): boolean {
  return spans.some((b) => a.start < b.end && b.start < a.end);
}

/**
 * Finds tool calls a server's parser missed and left in the reply as text, written after the
 * last `</think>` in any of the forms models use: Hermes/Qwen `<tool_call>{…}</tool_call>` (the
 * closing tag may be missing), Qwen3-Coder's `<function=name><parameter=key>…` markup, Mistral
 * `[TOOL_CALLS] [{…}]` and `[TOOL_CALLS]name[ARGS]{…}`, Llama 3 `<|python_tag|>{…}`, gpt-oss
 * Harmony `<|channel|>commentary to=functions.name … <|message|>{…}`, and — when none of those
 * appear — a reply that is only a JSON call, or one fenced JSON call.
 *
 * Only calls naming a tool in `tools` are recovered; a block that names anything else is left
 * in the text. Returns the calls with ids `call_recovered_0` onward and the text with them taken
 * out (trimmed); with nothing found, the text as it was. Never throws on any string; throws a
 * `ToolCallsError` when `text` is not a string or `tools` not an array.
 */
export function recoverToolCalls(text: string, tools: readonly ToolNameLike[]): RecoveredToolCalls {
  if (typeof text !== "string") {
    throw new ToolCallsError(
      "invalid-text",
      `recoverToolCalls needs the reply as a string, and was given ${describeValue(text)}.`,
    );
  }
  if (!Array.isArray(tools)) {
    throw new ToolCallsError(
      "invalid-tools",
      `recoverToolCalls needs the tools the model may call as an array (names or tool definitions), and was given ${describeValue(tools)}.`,
    );
  }
  const known = readTools(tools);
  const cut = text.lastIndexOf(THINK_END);
  const headEnd = cut >= 0 ? cut + THINK_END.length : 0;
  const head = text.slice(0, headEnd);
  const tail = text.slice(headEnd);
  if (known.names.size === 0 || tail.trim() === "") return { calls: [], text };

  const spans: Span[] = [];
  const add = (candidates: readonly Span[]) => {
    for (const span of candidates) if (!overlaps(span, spans)) spans.push(span);
  };
  add(hermesSpans(tail, known));
  add(bareFunctionSpans(tail, known));
  add(mistralSpans(tail));
  add(pythonTagSpans(tail));
  add(harmonySpans(tail, known));
  if (spans.length === 0) {
    const whole = wholeReplySpan(tail) ?? fencedSpan(tail);
    if (whole) spans.push(whole);
  }

  const accepted = spans
    .filter((span) => span.calls.every((call) => known.names.has(call.name)))
    .sort((a, b) => a.start - b.start);
  if (accepted.length === 0) return { calls: [], text };

  const calls: ToolCallRequest[] = [];
  let rest = "";
  let at = 0;
  for (const span of accepted) {
    rest += tail.slice(at, span.start);
    at = span.end;
    for (const call of span.calls) {
      calls.push({ id: `call_recovered_${calls.length}`, name: call.name, args: call.args, raw: call.raw });
    }
  }
  rest += tail.slice(at);
  return { calls, text: `${head}${rest}`.replace(/\n{3,}/g, "\n\n").trim() };
}
