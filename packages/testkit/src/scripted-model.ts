/**
 * The scripted demo "model": a small rule-based responder that calls a declared tool when the
 * user's words name it, answers from the tool's result, and otherwise replies plainly — always
 * saying that it is a simulator. Deterministic: the same request gives the same reply.
 */
import { ownFields, ownRequest, parseOwnBody } from "./own-body.js";
import { contentText } from "./prefix-cache.js";
import type { ScriptedToolCall, TurnReply } from "./replies.js";

/** The parts of a chat request the scripted model reads. */
export interface ScriptedModelRequest {
  messages?: unknown;
  tools?: unknown;
}

/** How the scripted model streams its replies. */
export interface ScriptedModelOptions {
  /** Characters per delta (default 4), so a terminal shows the text arriving. */
  chunkChars?: number | null | undefined;
  /** Milliseconds between chunks (default 10). */
  chunkDelayMs?: number | null | undefined;
}

interface ToolInfo {
  name: string;
  /** The tool's own name: the part after the last `__` of an MCP pool's `server__tool`, else the name. */
  own: string;
  description: string;
  properties: Record<string, Record<string, unknown>>;
  required: string[];
}

type ToolKind = "clock" | "calculator" | "read_file" | "other";

interface Message {
  role?: unknown;
  content?: unknown;
  tool_calls?: unknown;
  tool_call_id?: unknown;
}

const SIMULATOR_NOTE =
  "I am the loopwright testkit's scripted model, a rule-based simulator, not a language model.";

/** An empty object that reads nothing from a polluted `Object.prototype` (a missing schema, no arguments). */
const NOTHING: Record<string, never> = Object.freeze(Object.create(null));

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** Declared function tools with their parameter properties. */
function declaredTools(tools: unknown): ToolInfo[] {
  if (!Array.isArray(tools)) return [];
  const out: ToolInfo[] = [];
  for (const tool of tools) {
    const fn = record(record(tool)?.function);
    if (!fn || typeof fn.name !== "string") continue;
    const params = record(fn.parameters) ?? NOTHING;
    const props = record(params.properties) ?? NOTHING;
    // No prototype: a parameter named __proto__ is an entry like any other, not the object's prototype.
    const properties: Record<string, Record<string, unknown>> = Object.create(null);
    for (const [k, v] of Object.entries(props)) properties[k] = record(v) ?? NOTHING;
    out.push({
      name: fn.name,
      own: fn.name.includes("__") ? fn.name.slice(fn.name.lastIndexOf("__") + 2) || fn.name : fn.name,
      description: typeof fn.description === "string" ? fn.description : "",
      properties,
      required: Array.isArray(params.required)
        ? params.required.filter((r): r is string => typeof r === "string")
        : [],
    });
  }
  return out;
}

/** A tool whose name says it changes something (`write_file`, `createDirectory`): never a reader. */
const WRITES =
  /\b(write|overwrite|edit|create|delete|remove|move|rename|copy|append|update|save|upload|put|insert|patch|mkdir|touch)/;

/**
 * True when a line of `description` has "read" before "file", or "file" before "content" (what
 * `/read.*file|file.*content/` matches), found with one search each: the expression took time in
 * the square of a long description's length (an MCP server writes the descriptions).
 */
function readsFiles(description: string): boolean {
  return description.split(/[\n\r\u2028\u2029]/).some((line) => {
    const read = line.indexOf("read");
    if (read >= 0 && line.lastIndexOf("file") >= read + 4) return true;
    const file = line.indexOf("file");
    return file >= 0 && line.lastIndexOf("content") >= file + 4;
  });
}

/** What a tool is for, judged from its own name (then its description). */
function kindOf(tool: ToolInfo): ToolKind {
  const name = tool.own.toLowerCase();
  const writes = WRITES.test(nameWords(tool));
  if (/clock|time|date|now/.test(name)) return "clock";
  if (/calc|math|arith|eval/.test(name)) return "calculator";
  if (/read|file|cat|open/.test(name)) return writes ? "other" : "read_file";
  const description = tool.description.toLowerCase();
  if (/current time|clock/.test(description)) return "clock";
  if (/arithmetic|calculat/.test(description)) return "calculator";
  if (readsFiles(description) && !writes) return "read_file";
  return "other";
}

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= "0" && c <= "9";
const isSpace = (c: string | undefined): boolean => c !== undefined && /\s/.test(c);
/** The characters of an expression's first number: digits, `.`, `,` and white space. */
const isNumberPart = (c: string | undefined): boolean => isDigit(c) || c === "." || c === "," || isSpace(c);
const OPERATORS = new Set(["-", "+", "*", "/", "×", "÷", "^", "%", "x"]);

/**
 * Where one `operator operand` step that starts at `at` ends (white space, an operator or `**`,
 * opening brackets and white space, an optional minus, a number, white space, closing brackets),
 * or -1 when none starts there.
 */
function operatorStep(text: string, at: number): number {
  let i = at;
  while (isSpace(text[i])) i++;
  if (!OPERATORS.has(text[i] as string)) return -1;
  // `**` is one operator, tried when a single `*` is not followed by an operand.
  for (const width of text[i] === "*" && text[i + 1] === "*" ? [1, 2] : [1]) {
    let j = i + width;
    while (isSpace(text[j]) || text[j] === "(") j++;
    if (text[j] === "-" && isDigit(text[j + 1])) j++;
    if (!isDigit(text[j])) continue;
    while (isDigit(text[j]) || text[j] === ".") j++;
    while (isSpace(text[j])) j++;
    while (text[j] === ")") j++;
    return j;
  }
  return -1;
}

/**
 * The arithmetic expression in `text`: the longest run of numbers joined by operators (the first
 * longest when several tie). Read in one pass over the text: a message of any length costs time in
 * its length (a regular expression for it took seconds on 20,000 characters of digits and spaces).
 */
export function extractExpression(text: string): string | undefined {
  let best = "";
  let i = 0;
  while (i < text.length) {
    // Opening signs and brackets, white space, then the first number's digit.
    let j = i;
    while (text[j] === "-" || text[j] === "(") j++;
    while (isSpace(text[j])) j++;
    if (!isDigit(text[j])) {
      // Every start inside this run of signs and spaces reaches the same character.
      i = Math.max(j, i + 1);
      continue;
    }
    while (isNumberPart(text[j])) j++;
    let end = operatorStep(text, j);
    if (end < 0) {
      // Every start inside this number reaches the same end, where no operator follows.
      i = j;
      continue;
    }
    for (let next = operatorStep(text, end); next >= 0; next = operatorStep(text, end)) end = next;
    const run = text.slice(i, end).trim();
    if (run.length > best.length) best = run;
    i = end;
  }
  if (!best) return undefined;
  return best
    .replace(/×|x(?<=\d\s*x)(?=\s*\d)/g, "*")
    .replace(/÷/g, "/")
    .replace(/,/g, "");
}

/** A version number, not a path: `1.2.3`, `v1.2.3`, `V2.0`, `1.2.3-beta.1`, `2.0.0+build.5`. */
const VERSION = /^[vV]?\d+(?:\.\d+)+(?:[-+][\w.-]*)?$/;

/** A path whose last part has an extension that starts with a letter (`notes.md`, `src/a.d.ts`). */
const LETTER_EXTENSION = /(?:^|\/)[^/]*[^/.]\.[A-Za-z][A-Za-z0-9]{0,7}$/;

const OPENING = new Set(["`", "'", '"', "(", "<", "["]);
const CLOSING = new Set(["`", "'", '"', ")", ">", "]", ".", ",", ";", ":", "!", "?"]);

/**
 * `token` without the quotes and brackets that open it and the quotes, brackets and punctuation
 * that close it (the closing run counted after the opening one). By hand: a regular expression for
 * the closing run was tried at every character of a run of dots, each time to the end of it.
 */
function trimPunctuation(token: string): string {
  let start = 0;
  while (start < token.length && OPENING.has(token[start] as string)) start++;
  let end = token.length;
  while (end > start && CLOSING.has(token[end - 1] as string)) end--;
  return token.slice(start, end);
}

/**
 * The file path mentioned in `text`, or undefined: the first token with a file extension (a letter
 * after its last dot), else the first other path.
 *
 * A path is a token with a slash, or a name of two or more characters with a lower-case extension
 * (`README.md`, `src/index.ts`). URLs, version numbers (`1.2.3`, `v1.2.3`, `V2.0`, `1.2.3-beta.1`)
 * and `e.g.` are not paths.
 */
export function extractPath(text: string): string | undefined {
  let first: string | undefined;
  for (const raw of text.split(/\s+/)) {
    const token = trimPunctuation(raw);
    if (/^https?:/i.test(token) || VERSION.test(token)) continue;
    if (/^[\w.~-]*\/[\w./~-]*$/.test(token) || /^[\w.~/-]{2,}\.[a-z0-9]{1,8}$/.test(token)) {
      if (!/[A-Za-z]/.test(token)) continue;
      if (LETTER_EXTENSION.test(token)) return token;
      first ??= token;
    }
  }
  return first;
}

/** An IANA-like time zone or UTC named in `text`. */
function extractZone(text: string): string | undefined {
  return text.match(/\b[A-Z][a-z]+\/[A-Z][A-Za-z_]+\b/)?.[0] ?? text.match(/\b(UTC|GMT)\b/)?.[0];
}

/**
 * The arithmetic operations a tool may stand for, each with how a tool says it does it (its name
 * split into words, or its description) and how a question asks for it.
 */
const OPERATIONS: readonly { tool: RegExp; question: RegExp }[] = [
  { tool: /\b(add|adds|addition|sum|plus)\b/, question: /\+|\b(plus|add|sum|total)\b/ },
  {
    tool: /\b(subtract|subtracts|subtraction|minus|difference)\b/,
    question: /\d\s*-\s*\d|\b(minus|subtract|difference)\b/,
  },
  {
    tool: /\b(multiply|multiplies|multiplication|times|product)\b/,
    question: /[*×]|\d\s*x\s*\d|\b(times|multiply|multiplied|product)\b/,
  },
  { tool: /\b(divide|divides|division|quotient)\b/, question: /[/÷]|\b(divided|divide|quotient)\b/ },
];

/** The tool's own name as words: `addNumbers`, `add_numbers` → "add numbers". */
function nameWords(tool: ToolInfo): string {
  return tool.own
    .replace(/([a-z])([A-Z])/g, "$1 $2")
    .replace(/[_\-.]+/g, " ")
    .toLowerCase();
}

/** The tool's own name as words and its description. */
function toolWords(tool: ToolInfo): string {
  return `${nameWords(tool)} ${tool.description}`.toLowerCase();
}

/** True when every required parameter of `tool` takes numbers (a number, an integer, or an array of them). */
function takesOnlyNumbers(tool: ToolInfo): boolean {
  // A required parameter that allows null is an optional one in the strict form: it does not count.
  const needed = tool.required.filter((key) => !nullable(tool.properties[key] ?? NOTHING));
  return (
    needed.length > 0 &&
    needed.every((key) => {
      const schema = tool.properties[key] ?? NOTHING;
      const items = record(schema.items);
      return isNumberType(schema.type) || (schema.type === "array" && isNumberType(items?.type));
    })
  );
}

/** True for a schema whose `type` list allows null (`["string", "null"]`). */
function nullable(schema: Record<string, unknown>): boolean {
  return Array.isArray(schema.type) && schema.type.includes("null");
}

function isNumberType(type: unknown): boolean {
  return type === "number" || type === "integer";
}

/** True when the user's words point at `tool`. */
function named(tool: ToolInfo, kind: ToolKind, text: string): boolean {
  const lower = text.toLowerCase();
  for (const name of new Set([tool.name.toLowerCase(), tool.own.toLowerCase()])) {
    if (lower.includes(name) || lower.includes(name.replace(/[_-]+/g, " "))) return true;
  }
  switch (kind) {
    case "clock":
      return /\b(time|clock|date|day is it|today)\b/.test(lower);
    case "calculator":
      return (
        /\b(calculate|compute|calculator|sum of|multiply|divide)\b/.test(lower) ||
        extractExpression(text) !== undefined
      );
    case "read_file":
      return (
        extractPath(text) !== undefined ||
        (/\b(read|open|show|cat|contents?)\b/.test(lower) && /\bfile\b/.test(lower))
      );
    default: {
      // A tool over numbers that does one arithmetic operation answers a question asking for it.
      if (!takesOnlyNumbers(tool)) return false;
      const words = toolWords(tool);
      return OPERATIONS.some((op) => op.tool.test(words) && op.question.test(lower));
    }
  }
}

/** What a question offers for parameters: its numbers and quoted strings, each taken once, in order. */
interface Offer {
  text: string;
  numbers: number[];
  quoted: string[];
  expression: string | undefined;
  path: string | undefined;
  zone: string | undefined;
}

function offerOf(text: string): Offer {
  const path = extractPath(text);
  const zone = extractZone(text);
  const quoted = [...text.matchAll(/"([^"]+)"|'([^']+)'|`([^`]+)`|“([^”]+)”/g)].map(
    (m) => m[1] ?? m[2] ?? m[3] ?? m[4] ?? "",
  );
  // Numbers outside the path, zone and quotes; "1,000" is one thousand; "17-5" is 17 and 5.
  let plain = text.replace(/(\d),(?=\d{3}\b)/g, "$1");
  for (const taken of [path, zone, ...quoted]) if (taken) plain = plain.replace(taken, " ");
  const numbers = [...plain.matchAll(/(?<![\w.])-?\d+(?:\.\d+)?/g)].map((m) => Number(m[0]));
  return { text, numbers, quoted, expression: extractExpression(text), path, zone };
}

/** A run of capitalised words that does not open a sentence (a place, a person, a title), or undefined. */
function properNoun(text: string, tool: ToolInfo): string | undefined {
  const names = [tool.name.toLowerCase(), tool.own.toLowerCase()];
  // The look-behind is tried at capital letters only: tried at every position, it read each run of
  // white space back to its start from every character of it.
  const found = text.match(/[A-Z](?<=[^.!?\s]\s+[A-Z])[\w'-]*(?:\s+[A-Z][\w'-]*)*/g) ?? [];
  return found.find((w) => !names.includes(w.toLowerCase()) && !/^(I|I'm|I'd)$/.test(w));
}

/**
 * A value for one parameter from its JSON Schema (type, enum, items, default) and the words that
 * name it (key, description), taken from the question. `required` allows the plain fallbacks (the
 * first enum value or the default, the whole question for a free-text string, false for a flag).
 * A required parameter whose type allows null is the strict form of an optional one (as
 * `sanitizeTools` declares it): filled only from the question, else null, as a model sends it.
 */
function valueFor(
  key: string,
  schema: Record<string, unknown>,
  tool: ToolInfo,
  kind: ToolKind,
  offer: Offer,
  required: boolean,
): unknown {
  if (nullable(schema)) {
    const types = (schema.type as unknown[]).filter((type) => type !== "null");
    const plain = { ...schema, type: types.length === 1 ? types[0] : undefined };
    const value = valueFor(key, plain, tool, kind, offer, false);
    return value === undefined && required ? null : value;
  }
  const hint = `${key} ${typeof schema.description === "string" ? schema.description : ""}`.toLowerCase();
  const type = schema.type;
  if (Array.isArray(schema.enum)) {
    const mentioned = namedValue(schema.enum, offer.text);
    if (mentioned !== undefined) return mentioned;
    return required ? (schema.default ?? schema.enum[0]) : undefined;
  }
  if (isNumberType(type)) {
    const n = offer.numbers.shift();
    if (n === undefined) return required ? schema.default : undefined;
    return type === "integer" ? Math.trunc(n) : n;
  }
  if (type === "array") {
    const items = record(schema.items);
    if (isNumberType(items?.type) && offer.numbers.length > 0) return offer.numbers.splice(0);
    if (items?.type === "string" && offer.quoted.length > 0) return offer.quoted.splice(0);
    return required ? schema.default : undefined;
  }
  if (type === "boolean") return required ? (schema.default ?? false) : undefined;
  if (type !== "string" && type !== undefined) return required ? schema.default : undefined;
  if (/zone|\btz\b/.test(hint)) return offer.zone ?? (required ? "UTC" : undefined);
  if (/path|file|folder|dir/.test(hint) || (kind === "read_file" && /name/.test(hint))) return offer.path;
  if (
    (kind === "calculator" && /expr|formula|input|query/.test(hint)) ||
    /expression|formula|equation/.test(hint)
  )
    return offer.expression;
  if (kind === "calculator" && type === "string") return offer.expression;
  const quoted = offer.quoted.shift();
  if (quoted !== undefined) return quoted;
  if (!required) return undefined;
  if (/query|question|text|prompt|input|message|content|search|topic/.test(hint)) return offer.text.trim();
  return properNoun(offer.text, tool) ?? schema.default ?? offer.text.trim();
}

/** True when the character at `at` is a word character (`\w`: ASCII letter, digit, underscore). */
function isWordChar(text: string, at: number): boolean {
  const c = text.charCodeAt(at);
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
}

/** A node of `namedValue`'s trie: its children by UTF-16 code unit, the first value ending here (or -1). */
interface TrieNode {
  next: Map<number, TrieNode> | undefined;
  index: number;
}

/**
 * The first of `values` (in declared order) that `text` names, case-insensitively: a string value
 * standing in the text without cutting a word (`cat` is not named by "concatenate"; `C++` and
 * `.NET`, which begin or end with punctuation, are named by "I write C++" and "port it to .NET").
 * A value found only inside a longer value that is named there does not count: "C++" names `C++`,
 * not `C`. The values go into a trie walked from each place a word can start, so the time is the
 * text's length times the longest run of it that begins some value, whatever the number of values
 * (a regular expression per value took seconds for 100,000 values; a lookup per distinct value
 * length took 28 s for 1,000 values of 1,000 lengths).
 */
function namedValue(values: unknown[], text: string): unknown {
  const lower = text.toLowerCase();
  const root: TrieNode = { next: undefined, index: -1 };
  values.forEach((value, index) => {
    if (typeof value !== "string" || value === "") return;
    const v = value.toLowerCase();
    let node = root;
    for (let i = 0; i < v.length; i++) {
      node.next ??= new Map();
      let next = node.next.get(v.charCodeAt(i));
      if (next === undefined) {
        next = { next: undefined, index: -1 };
        node.next.set(v.charCodeAt(i), next);
      }
      node = next;
    }
    if (node.index === -1) node.index = index;
  });
  let first = Number.POSITIVE_INFINITY;
  let coveredUntil = 0;
  for (let start = 0; start < lower.length; start++) {
    if (start > 0 && isWordChar(lower, start - 1) && isWordChar(lower, start)) continue;
    // The longest value named from `start`: a shorter one there lies inside it.
    let node: TrieNode | undefined = root;
    let end = -1;
    let index = -1;
    for (let at = start; at < lower.length && node !== undefined; at++) {
      node = node.next?.get(lower.charCodeAt(at));
      if (node !== undefined && node.index >= 0 && !(isWordChar(lower, at) && isWordChar(lower, at + 1))) {
        end = at + 1;
        index = node.index;
      }
    }
    // One that ends within a value named from an earlier start lies inside that one.
    if (end <= coveredUntil) continue;
    coveredUntil = end;
    first = Math.min(first, index);
  }
  return Number.isFinite(first) ? values[first] : undefined;
}

/**
 * Arguments for `tool` read off its JSON Schema: required parameters first, in declared order,
 * then optional ones that the question gives. The missing required ones are listed instead.
 */
function argumentsFor(
  tool: ToolInfo,
  kind: ToolKind,
  text: string,
): { args: Record<string, unknown> } | { missing: string[] } {
  const offer = offerOf(text);
  const args: Record<string, unknown> = Object.create(null);
  const keys = Object.keys(tool.properties);
  const missing: string[] = [];
  for (const key of tool.required) {
    const value = valueFor(key, tool.properties[key] ?? NOTHING, tool, kind, offer, true);
    if (value === undefined) missing.push(key);
    else args[key] = value;
  }
  if (missing.length > 0) return { missing };
  for (const key of keys) {
    if (key in args) continue;
    const value = valueFor(key, tool.properties[key] ?? NOTHING, tool, kind, offer, false);
    if (value !== undefined) args[key] = value;
  }
  // Keep the schema's order in the JSON the model sends.
  const ordered: Record<string, unknown> = Object.create(null);
  for (const key of [...keys, ...Object.keys(args)]) if (key in args) ordered[key] = args[key];
  return { args: ordered };
}

/** What the simulator would need to call `tool`, said plainly. */
function missingArgumentAnswer(tool: ToolInfo, kind: ToolKind, missing: string[]): string {
  if (kind === "read_file")
    return `Which file should I read with ${tool.name}? Give me its path, e.g. README.md.`;
  if (kind === "calculator")
    return `What should I calculate with ${tool.name}? Write the expression, e.g. 12 * 7.`;
  return `I would call ${tool.name}, but ${tool.name} needs ${missing.join(", ")} and your message does not give ${missing.length > 1 ? "them" : "it"}.`;
}

function toolCallArgs(call: unknown): { name: string; args: Record<string, unknown> } {
  const fn = record(record(call)?.function);
  // Arguments that are not JSON are reported as given; those that are hold only their own fields.
  const args = record(parseOwnBody(String(fn?.arguments ?? "{}"))) ?? NOTHING;
  return { name: typeof fn?.name === "string" ? fn.name : "tool", args };
}

/** An answer built from the tool results that follow the last assistant tool call. */
function answerFromResults(messages: Message[], tools: ToolInfo[]): string {
  let i = messages.length;
  while (i > 0 && messages[i - 1]?.role === "tool") i--;
  const results = messages.slice(i);
  const calls = Array.isArray(messages[i - 1]?.tool_calls) ? (messages[i - 1]?.tool_calls as unknown[]) : [];
  // Each result's call by its id (the first call with that id), else the call at its position;
  // looked up in a map, so a long run of results costs time in its length, not its square.
  const byId = new Map<unknown, unknown>();
  for (const c of calls) {
    const id = record(c)?.id;
    if (!byId.has(id)) byId.set(id, c);
  }
  const lines = results.map((result, at) => {
    const call = byId.get(result.tool_call_id) ?? calls[at];
    const { name, args } = toolCallArgs(call);
    const tool = tools.find((t) => t.name === name);
    const kind = tool ? kindOf(tool) : "other";
    let text = contentText(result.content).trim();
    if (text.length > 600) text = `${text.slice(0, 600)}…`;
    if (/^error\b/i.test(text)) return `The ${name} tool failed: ${text}`;
    switch (kind) {
      case "clock":
        return `According to the ${name} tool, the time is ${text}.`;
      case "calculator":
        return `${String(Object.values(args)[0] ?? "The result")} = ${text}, worked out by the ${name} tool.`;
      case "read_file":
        return `Here is ${String(Object.values(args)[0] ?? "the file")}, read with the ${name} tool:\n\n${text}`;
      default:
        return `The ${name} tool returned: ${text}`;
    }
  });
  return `${lines.join("\n")}\n\n(Answered by the testkit's scripted simulator from the tool result.)`;
}

/** The plain reply when no tool applies. */
function plainAnswer(text: string, tools: ToolInfo[]): string {
  const offer =
    tools.length > 0
      ? ` I can call your tools when you name them: ${tools.map((t) => t.name).join(", ")} — for example ask for the time, a sum like 12 * 7, or a file by its path.`
      : " No tools were declared, so all I can do is reply with this text.";
  if (/^\s*(hi|hello|hey|good (morning|afternoon|evening))\b/i.test(text))
    return `Hello! ${SIMULATOR_NOTE}${offer}`;
  const quoted = text.length > 80 ? `${text.slice(0, 80)}…` : text;
  return `${SIMULATOR_NOTE} I cannot really answer "${quoted.trim()}".${offer}`;
}

/**
 * The rule-based demo model: decides one reply for a chat request, deterministically.
 *
 * - After tool results (the last messages are `role: "tool"`), it answers from them: the time for
 *   a clock-like tool, `expression = result` for a calculator, the file text for a file reader.
 * - Otherwise, when the latest user words name declared tools — by name, or by obvious words
 *   (time/clock/date; calculate or an arithmetic expression; read/open/show with a path) — it
 *   calls each of them, in parallel, with arguments taken from those words (the expression, the
 *   path, a time zone, required fields filled plainly, `null` for a required one that allows
 *   null). A tool is judged by its own name (`echo` of an MCP pool's `everything__echo`); one
 *   whose name says it writes is never a file reader. A tool whose required argument cannot be
 *   found is not called; the reply asks for it instead.
 * - Otherwise it answers plainly, saying it is a simulator and which tools it could call.
 * Text streams in small deltas (`chunkChars`, `chunkDelayMs`). `request` is a chat request body
 * (`ScriptedModelRequest`: a reply function passes its request's `body` as it is); anything else —
 * `undefined` for an empty body, a value that is not an object — is read as a request with no
 * messages and gets the plain answer. Never throws.
 */
export function scriptedModel(request: unknown, given: ScriptedModelOptions = {}): TurnReply {
  // The request and options as written, never a polluted Object.prototype's fields (see ownRequest).
  const options = ownFields(given, ["chunkChars", "chunkDelayMs"]) as ScriptedModelOptions;
  // Tool names go whole in the first delta, as OpenAI sends them; text and arguments in small pieces.
  const stream = {
    chunkChars: options.chunkChars ?? 4,
    chunkDelayMs: options.chunkDelayMs ?? 10,
    splitNames: false,
  };
  const body: ScriptedModelRequest = record(ownRequest(request)) ?? Object.create(null);
  const messages = (Array.isArray(body.messages) ? body.messages : []).map(
    (m) => (record(m) ?? NOTHING) as Message,
  );
  const tools = declaredTools(body.tools);
  if (messages.at(-1)?.role === "tool") return { ...stream, content: answerFromResults(messages, tools) };
  const lastUser = [...messages].reverse().find((m) => m.role === "user");
  const text = lastUser ? contentText(lastUser.content) : "";
  const calls: ScriptedToolCall[] = [];
  const missing: string[] = [];
  for (const tool of tools) {
    const kind = kindOf(tool);
    if (!named(tool, kind, text)) continue;
    const found = argumentsFor(tool, kind, text);
    if ("args" in found) calls.push({ name: tool.name, arguments: JSON.stringify(found.args) });
    else missing.push(missingArgumentAnswer(tool, kind, found.missing));
  }
  if (calls.length > 0) return { ...stream, toolCalls: calls };
  if (missing.length > 0) return { ...stream, content: `${missing.join("\n")}\n\n(${SIMULATOR_NOTE})` };
  return { ...stream, content: plainAnswer(text, tools) };
}
