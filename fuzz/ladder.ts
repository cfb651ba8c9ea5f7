/**
 * The size ladder: each adversarial shape a looping model or a broken server sends, built at
 * 8 KiB and doubled up to a ceiling, timed at each size. Time must grow about as the input does;
 * a parser fails its shape when doubling the input more than triples the time (a quadratic one
 * quadruples it). Each size is timed as the best of several runs, and a floor of a few
 * milliseconds keeps scheduler noise on a shared machine from reading as growth.
 */

import { shownRemoteWords } from "../apps/playground/src/web/spec.js";
import { firstTokenMs, listedWindow, redactor, timeoutMs } from "../packages/client/src/index.js";
import { runMetrics } from "../packages/events/src/index.js";
import { contextTokens } from "../packages/ledger/src/index.js";
import { isOverflow, isTransient, readRefusal } from "../packages/negotiate/src/index.js";
import {
  checkStrictSchema,
  dropOptionalNulls,
  isGrammarError,
  mapAlongSchema,
  relaxSchema,
  restoreArguments,
  sanitizeSchema,
  sanitizeTools,
} from "../packages/schema-compat/src/index.js";
import { preselectByKeywords, preselection, preselectSystem } from "../packages/side-task/src/index.js";
import { transcriptText } from "../packages/side-task/src/summariser.js";
import {
  exportSpec,
  findSpecSecrets,
  looksLikeKey,
  parseSpec,
  resolveAgentSpec,
  withoutArgSecrets,
  withoutCommandLineSecrets,
  withoutProseSecrets,
  withoutSecrets,
} from "../packages/spec/src/index.js";
import { FenceSplitter, stripThinking } from "../packages/stream/src/index.js";
import { TurnReader } from "../packages/stream/src/turn-reader.js";
import { parseJson, parseToolArguments, recoverToolCalls } from "../packages/tool-calls/src/index.js";
import {
  catalogText,
  expandNames,
  heldDefinitions,
  loadNames,
  proxiedCall,
} from "../packages/tool-loading/src/index.js";
import { toolOutput } from "../packages/tools-mcp/src/content.js";

/** One adversarial shape: how to build it at a size, and what reads it. */
export interface Shape {
  /** The parser, and what the input is made of. */
  name: string;
  /** The input at about `size` characters (or entries worth that many). */
  build(size: number): unknown;
  /** Reads the input; any typed error it throws counts as an answer. */
  run(input: unknown): void;
}

const TOOLS = ["f", "write_file", "add"];
const quietly = (fn: () => unknown) => {
  try {
    fn();
  } catch {
    // A typed error is an answer; the ladder times, the properties check what was answered.
  }
};
const repeat = (unit: string, size: number) => unit.repeat(Math.max(1, Math.floor(size / unit.length)));
/** An agent document bundling one server whose `command` is `line`, exported (its line read as a pasted command). */
const exportCommand = (line: string) =>
  exportSpec({ spec: "loopwright.agent/1", bundle: { mcpServers: [{ name: "s", command: line }] } } as never);
const recover = (text: unknown) => recoverToolCalls(text as string, TOOLS);
const args = (text: unknown) => quietly(() => parseToolArguments(text));
const json = (text: unknown) => parseJson(text as string);
const refusal = (message: unknown) => {
  const error = { status: 400, error: { message, type: "invalid_request_error" } };
  readRefusal(error);
  isOverflow(error);
  isTransient(error);
};
const splitByChar = (text: unknown) => {
  const splitter = new FenceSplitter();
  for (const c of text as string) splitter.push(c);
  splitter.flush();
};
/** One chunk carrying one tool-call piece. */
const call = (piece: unknown) => ({ choices: [{ index: 0, delta: { tool_calls: [piece] } }] });
/** About `size` characters' worth of chunks, `each` characters apiece. */
const pieces = (size: number, each: number, make: (i: number) => unknown) =>
  Array.from({ length: Math.max(1, Math.floor(size / each)) }, (_, i) => make(i));
const readChunks = (chunks: unknown) => {
  const reader = new TurnReader();
  for (const chunk of chunks as object[]) reader.read(chunk);
  reader.finish();
};
const JUNK = "a{[:,'\" x}]#/*\\\n\t<>=";
const junk = (size: number) => {
  let out = "";
  for (let i = 0; out.length < size; i++) out += JUNK[(i * 7 + (i >> 3)) % JUNK.length];
  return out;
};

/** `{"<key>": [01, 01, …]}`: a key of half `size` characters (escapes in it), over `01` tokens worth the other half. */
const longKeyOverZeros = (size: number) =>
  `{"${repeat("k\\u00e9", size / 2)}": [${repeat("01, ", size / 2)}1]}`;

/**
 * About `size` characters of Qwen3-Coder markup whose parameters are typed through sixteen
 * definitions, each a union of four references to the next, the seventeenth `last`; parameter
 * `k` is typed by definition `refOf(k)`.
 */
const fannedOut = (size: number, last: unknown, refOf: (k: number) => number) => {
  const $defs: Record<string, unknown> = { d16: last };
  for (let i = 15; i >= 0; i--) {
    $defs[`d${i}`] = { anyOf: Array.from({ length: 4 }, () => ({ $ref: `#/$defs/d${i + 1}` })) };
  }
  const count = Math.max(1, Math.floor(size / 40));
  const properties: Record<string, unknown> = {};
  let body = "";
  for (let k = 0; k < count; k++) {
    properties[`p${k}`] = { $ref: `#/$defs/d${refOf(k)}` };
    body += `<parameter=p${k}>\n${k}\n</parameter>\n`;
  }
  return {
    text: `<tool_call>\n<function=set>\n${body}</function>\n</tool_call>`,
    tools: [{ name: "set", inputSchema: { type: "object", properties, $defs } }],
  };
};
const recoverMarkup = (input: unknown) => {
  const { text, tools } = input as { text: string; tools: [{ name: string; inputSchema: unknown }] };
  recoverToolCalls(text, tools);
};

export const SHAPES: Shape[] = [
  { name: "recoverToolCalls: 'to=' repeated", build: (n) => repeat("to=", n), run: recover },
  { name: "recoverToolCalls: '<function=' repeated", build: (n) => repeat("<function=", n), run: recover },
  {
    name: "recoverToolCalls: '<invoke name=a' repeated",
    build: (n) => repeat("<invoke name=a", n),
    run: recover,
  },
  {
    name: "recoverToolCalls: '<|tool_call_begin|>' then spaces",
    build: (n) => `<|tool_call_begin|>${" ".repeat(n)}`,
    run: recover,
  },
  { name: "recoverToolCalls: tabs then text", build: (n) => `${"\t".repeat(n)}text`, run: recover },
  {
    name: "recoverToolCalls: '<tool_call>{ ' repeated",
    build: (n) => repeat("<tool_call>{ ", n),
    run: recover,
  },
  {
    name: "recoverToolCalls: '[TOOL_CALLS]' repeated",
    build: (n) => repeat("[TOOL_CALLS]", n),
    run: recover,
  },
  { name: "recoverToolCalls: fences repeated", build: (n) => repeat("```json\n{", n), run: recover },
  { name: "recoverToolCalls: '{' repeated", build: (n) => repeat("{", n), run: recover },
  { name: "recoverToolCalls: '>>>f\\n{' repeated", build: (n) => repeat(">>>f\n{", n), run: recover },
  {
    name: "recoverToolCalls: '<|channel|>commentary' repeated",
    build: (n) => repeat("<|channel|>commentary to=x", n),
    run: recover,
  },
  { name: "recoverToolCalls: pythonic '[f(a=' repeated", build: (n) => repeat("[f(a=", n), run: recover },
  // A model looping on one pythonic call, its quote never closed: the repair of last resort re-read
  // the rest of the text from every quote (28 KB: 19 s before; such text now ends inside a string).
  {
    name: "recoverToolCalls: pythonic \"[f(a='x \" repeated then ']'",
    build: (n) => `[${repeat("f(a='x ", n)}]`,
    run: recover,
  },
  {
    name: "recoverToolCalls: pythonic '[f(a=\"x ' repeated then ']'",
    build: (n) => `[${repeat('f(a="x ', n)}]`,
    run: recover,
  },
  {
    name: "recoverToolCalls: \"<tool_call>[f(a='x \" repeated then ']</tool_call>'",
    build: (n) => `<tool_call>[${repeat("f(a='x ", n)}]</tool_call>`,
    run: recover,
  },
  {
    name: "recoverToolCalls: \"<|python_tag|>[f(a='x \" repeated then ']'",
    build: (n) => `<|python_tag|>[${repeat("f(a='x ", n)}]`,
    run: recover,
  },
  {
    name: 'parseToolArguments: "a=\'x " repeated in a list',
    build: (n) => `{"a": [${repeat("a='x ", n)}]}`,
    run: args,
  },
  { name: "recoverToolCalls: junk", build: junk, run: recover },
  { name: "parseToolArguments: junk", build: junk, run: args },
  {
    name: "parseToolArguments: a fence then spaces",
    build: (n) => `\`\`\`json\n${" ".repeat(n)}{"a": 1}`,
    run: args,
  },
  // One call's arguments sent over and over (a proxy streaming the whole object again), the last different.
  {
    name: "parseToolArguments: one object repeated, the last one different",
    build: (n) => `${repeat('{"path":"a"}\n', n)}{"path":"b"}`,
    run: args,
  },
  {
    name: "parseToolArguments: '{}' repeated, then an object",
    build: (n) => `${repeat("{}", n)}{"a":1}`,
    run: args,
  },
  { name: "parseToolArguments: '{' repeated", build: (n) => repeat("{", n), run: args },
  { name: "parseToolArguments: '[' repeated", build: (n) => repeat("[", n), run: args },
  { name: "parseToolArguments: \"{'a':\" repeated", build: (n) => repeat("{'a':", n), run: args },
  { name: "parseToolArguments: 'a ' repeated", build: (n) => repeat("a ", n), run: args },
  {
    name: "parseToolArguments: integers JS cannot hold, under one key and in a list",
    build: (n) =>
      `{${repeat('"k": 12345678901234567891, ', n / 2)}"a": [${repeat("12345678901234567891, ", n / 2)}1]}`,
    run: (text) => quietly(() => parseToolArguments(text, { takesString: () => true })),
  },
  {
    // Every number token read as text where only a string is taken (a list of zip codes), beside
    // numbers read as numbers, and nesting that deepens the paths asked about.
    name: "parseToolArguments: number tokens where only a string is taken (takesOnlyString)",
    build: (n) =>
      `{"zips": [${repeat("02134, +5, ", n / 2)}1], "n": [${repeat("[0012, {'a': 1.10}], ", n / 2)}1]}`,
    run: (text) => quietly(() => parseToolArguments(text, { takesOnlyString: (path) => path[0] === "zips" })),
  },
  {
    // Numbers JSON refuses but whose meaning is plain, where a number is taken: each rewritten as
    // JSON writes it before the reading (`.5` as 0.5), nested so the walk keeps a stack.
    name: "parseToolArguments: '+5' and '.5' where a number is taken",
    build: (n) => `{"a": [${repeat("+5, {'b': [.5, -.5]}, ", n)}1]}`,
    run: args,
  },
  {
    // One long key over many tokens a number does not write back (`01`): each token's path decoded
    // every key on the stack again (200k-char key, 20,000 tokens: 102 ms -> 6 s before).
    name: "parseToolArguments: one long key over '01' tokens (takesOnlyString)",
    build: (n) => longKeyOverZeros(n),
    run: (text) => quietly(() => parseToolArguments(text, { takesOnlyString: (path) => path.length > 5 })),
  },
  {
    // The same recovered from the reply: every recovered call's numbers are remembered by path.
    name: "recoverToolCalls: one long key over '01' tokens",
    build: (n) => `<tool_call>{"name": "f", "arguments": ${longKeyOverZeros(n)}}</tool_call>`,
    run: recover,
  },
  {
    // Numbers JS cannot hold, then one key written again and again: each repeat searched every
    // number found so far (128 KiB: 3.5 s before; each object lists the numbers under its keys now).
    name: "parseToolArguments: numbers JS cannot hold, then a key repeated",
    build: (n) => {
      const count = Math.max(1, Math.floor(n / 28));
      const numbers = Array.from({ length: count }, (_, i) => `"n${i}": 1e400`).join(", ");
      return `{${numbers}, ${repeat('"x": 0, ', n / 2)}"x": 0}`;
    },
    run: (text) => quietly(() => parseToolArguments(text, { takesString: () => true })),
  },
  {
    // The same with the repeats inside many small objects after the numbers (256 KiB: 5.7 s before).
    name: "parseToolArguments: numbers JS cannot hold, then objects each repeating a key",
    build: (n) => `{"n": [${repeat("1e400,", n / 2)}1], "m": [${repeat('{"a":0,"a":0},', n / 2)}{}]}`,
    run: (text) => quietly(() => parseToolArguments(text, { takesString: () => true })),
  },
  { name: "parseToolArguments: '// x\\n' repeated", build: (n) => `{${repeat("// x\n", n)}`, run: args },
  {
    name: "parseToolArguments: values without commas '[1 ' repeated",
    build: (n) => `{"a": [${repeat("1 ", n)}`,
    run: args,
  },
  {
    name: "parseToolArguments: ', inf :' repeated",
    build: (n) => `{"a": [0${repeat(", inf :", n)}`,
    run: args,
  },
  {
    name: "parseToolArguments: triple quotes repeated",
    build: (n) => `{"a": ${repeat('"""x"""', n)}`,
    run: args,
  },
  { name: "parseToolArguments: '{\"a\":1} ' repeated", build: (n) => repeat('{"a":1} ', n), run: args },
  {
    name: "recoverToolCalls: '<invoke name=a><parameter name=k>' repeated",
    build: (n) => repeat("<invoke name=a><parameter name=k>v", n),
    run: recover,
  },
  {
    name: "recoverToolCalls: GLM '<tool_call>a<arg_key>k</arg_key>' repeated",
    build: (n) => repeat("<tool_call>a<arg_key>k</arg_key><arg_value>v", n),
    run: recover,
  },
  {
    name: "recoverToolCalls: '`<tool_call>{}' repeated (inline code)",
    build: (n) => repeat("`<tool_call>{} `` ", n),
    run: recover,
  },
  {
    name: "recoverToolCalls: calls whose strings hold '</think>', repeated",
    build: (n) => repeat('<tool_call>{"name":"f","arguments":{"a":"x </think> ```y"}}</tool_call>\n', n),
    run: recover,
  },
  {
    name: "recoverToolCalls: '</think>' and fences repeated",
    build: (n) => repeat('</think>```xml\n<tool_call>{"a": "', n),
    run: recover,
  },
  {
    name: "recoverToolCalls: calls between long runs of spaces",
    build: (n) => repeat(`${" ".repeat(4096)}x<tool_call>{"name":"f","arguments":{}}</tool_call>`, n),
    run: recover,
  },
  {
    // A server ignoring the end of the turn repeats its end token up to its token limit.
    name: "recoverToolCalls: a JSON call, then '<|im_end|>' lines repeated",
    build: (n) => `{"name":"f","arguments":{}}${repeat("<|im_end|>\n", n)}`,
    run: recover,
  },
  {
    name: "recoverToolCalls: Kimi calls, each after an opener and a long run of blank lines",
    build: (n) =>
      repeat(
        `x<|tool_calls_section_begin|>${"\n".repeat(512)}<|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{}<|tool_call_end|>`,
        n,
      ),
    run: recover,
  },
  {
    name: "recoverToolCalls: '<function=a><parameter=k>' repeated, cut at the limit",
    build: (n) => repeat("<function=a><parameter=k>v", n),
    run: (text: unknown) => recoverToolCalls(text as string, TOOLS, { finishReason: "length" }),
  },
  {
    name: "recoverToolCalls: Qwen3-Coder values then stray '</parameter>j' repeated",
    build: (n) => `<function=a>${repeat("<parameter=k>x", n / 2)}${repeat("</parameter>j", n / 2)}`,
    run: recover,
  },
  {
    name: "recoverToolCalls: '<tool_call>' Qwen3-Coder blocks left open, one '</function>' at the end",
    build: (n) => `${repeat("<tool_call>\n<function=a>\n<parameter=k>\nv\n</tool_call>", n)}</function>`,
    run: recover,
  },
  {
    name: "recoverToolCalls: GLM values left open to '</tool_call>' repeated, one '</arg_value></tool_call>' at the end",
    build: (n) =>
      `${repeat("<tool_call>a<arg_key>k</arg_key><arg_value>x</tool_call>", n)}</arg_value></tool_call>`,
    run: recover,
  },
  { name: "parseJson: junk", build: junk, run: json },
  { name: "parseJson: '[' repeated", build: (n) => `x ${repeat("[", n)}`, run: json },
  { name: "parseJson: fences repeated", build: (n) => repeat("```\n{", n), run: json },
  { name: "parseJson: '{\"a\":' repeated", build: (n) => repeat('{"a":', n), run: json },
  {
    name: 'parseJson: \'{"a": "</think>\' repeated',
    build: (n) => repeat('{"a": "</think>", ', n),
    run: json,
  },
  { name: "parseJson: '</think>{' repeated", build: (n) => repeat('</think>{"a": "', n), run: json },
  {
    name: "FenceSplitter: spaces inside a fence, a character at a time",
    build: (n) => `<think>a${" ".repeat(n)}b</think>x`,
    run: splitByChar,
  },
  {
    name: "FenceSplitter: '<' repeated, a character at a time",
    build: (n) => repeat("<", n),
    run: splitByChar,
  },
  {
    name: "FenceSplitter: '</thin' repeated, a character at a time",
    build: (n) => `<think>${repeat("</thin", n)}`,
    run: splitByChar,
  },
  {
    name: "TurnReader: whole-JSON argument pieces after an unfinished one",
    build: (n) => [
      call({ index: 0, id: "c", function: { name: "f", arguments: '{"x":' } }),
      ...pieces(n, 7, () => call({ index: 0, function: { arguments: '{"a":1}' } })),
    ],
    run: readChunks,
  },
  {
    name: "TurnReader: calls without an index, each with a new id",
    build: (n) => pieces(n, 16, (i) => call({ id: `c${i}`, function: { name: "f", arguments: "{}" } })),
    run: readChunks,
  },
  {
    name: "TurnReader: named pieces without index or id after an unfinished call",
    build: (n) => [
      call({ function: { name: "f", arguments: '{"x":' } }),
      ...pieces(n, 6, () => call({ function: { name: "f", arguments: " " } })),
    ],
    run: readChunks,
  },
  {
    name: "stripThinking: '<think>' repeated",
    build: (n) => repeat("<think>", n),
    run: (t) => stripThinking(t as string),
  },
  { name: "readRefusal: one long word", build: (n) => "a".repeat(n), run: refusal },
  { name: "readRefusal: newlines", build: (n) => `${"\n".repeat(n)}x`, run: refusal },
  { name: "readRefusal: 'a and ' repeated", build: (n) => repeat("a and ", n), run: refusal },
  { name: "readRefusal: 'max_tokens ' repeated", build: (n) => repeat("max_tokens ", n), run: refusal },
  { name: "readRefusal: quotes repeated", build: (n) => repeat("'a", n), run: refusal },
  {
    name: "readRefusal: 'Input should be ' repeated",
    build: (n) => repeat("Input should be 'a' ", n),
    run: refusal,
  },
  {
    // A `String` object's own keys are one per character: the walk must not list them.
    name: "redactor: an error holding a String object of the text, with a named field",
    build: (n) =>
      Object.assign(new Error("x"), { body: Object.assign(new String(repeat("a sk-", n)), { note: "n" }) }),
    run: (error) => redactor({ apiKey: "sk-live-ABCDEFGHIJKLMNOP1234", baseUrl: "http://x" })(error),
  },
  {
    name: "listedWindow: Ollama parameters of newlines",
    build: (n) => `${"\n".repeat(n)}x`,
    run: (p) => listedWindow({ id: "m", parameters: p as string }),
  },
  // Each key shape's prefix, repeated with a separator that keeps it a word start: a shape that
  // rescans the rest of the run from every start is quadratic.
  ...[
    "eyJ-",
    "eyJaaaaaaaa.",
    "eyJaaaaaaaa.aaaaaaaa-",
    "${",
    "sk-",
    "AKIA",
    "Bearer ",
    "Bearer -",
    "ghp_-",
  ].map(
    (unit): Shape => ({
      name: `looksLikeKey: '${unit}' repeated`,
      build: (n) => repeat(unit, n),
      run: (text) => looksLikeKey(text as string),
    }),
  ),
  {
    name: "withoutArgSecrets: 'eyJ-' and '${' repeated, as a URL, a header and a flag value",
    build: (n) => {
      const body = repeat("eyJ-${", n / 4);
      return [`http://u:${body}@h/?token=${body}`, `X-Api-Key: ${body}`, "--token", body];
    },
    run: (list) => withoutArgSecrets(list as string[]),
  },
  {
    // A JSON-looking argument holding `${` whose string is never closed: the bare references in it
    // were found by a regex whose string branch read to the end at every `"` (100,000 characters: 8 s).
    name: "withoutArgSecrets: a JSON argument whose string of escaped quotes is never closed, with a bare reference",
    build: (n) => {
      const arg = `{"a":"${repeat('\\"', n)} \${X}`;
      return [arg, "--config", arg];
    },
    run: (list) => {
      withoutArgSecrets(list as string[]);
      withoutCommandLineSecrets(`srv --config '${(list as string[])[0]}'`);
    },
  },
  {
    // A URL field that fails its pattern by one trailing space: the host and the rest of the URL
    // could match the same characters, so every split point was tried (100,000 characters: 13 s).
    name: "parseSpec: a long base URL, bundled URL and task URL each ending in a space",
    build: (n) => {
      const bad = `http://${"a".repeat(Math.max(1, Math.floor(n / 3)))} `;
      return {
        spec: "loopwright.agent/1",
        model: { endpoint: { baseUrl: bad } },
        tasks: { title: { endpoint: { baseUrl: bad } } },
        bundle: { mcpServers: [{ name: "s", url: bad }] },
      };
    },
    run: (doc) => parseSpec(doc, { bundle: true }),
  },
  {
    // A bundled server's command pasted as a whole command line: split into words (quotes read),
    // each scanned as an argument, the flagged ones written back.
    name: "exportSpec: a command line of flags, quotes and assignments",
    build: (n) => ({
      spec: "loopwright.agent/1",
      bundle: {
        mcpServers: [
          { name: "s", command: `srv ${repeat(`--token abc -e DB_PASS='a b' "x\\"y" 'unclosed `, n)}` },
        ],
      },
    }),
    run: (doc) => {
      const { spec } = parseSpec(doc, { bundle: true });
      if (spec) exportSpec(spec);
    },
  },
  {
    // An argument holding whitespace is read a word at a time (a shell's command), a connection
    // string a pair at a time, and `--env=` as the assignment it holds.
    name: "withoutArgSecrets: a long sh -c command, connection string and --env= value",
    build: (n) => [
      "-c",
      repeat("--token 'a b' p=x;Password=y ", n),
      repeat("Server=db;Password=x;Pwd={a;b} ", n),
      `Server=db;Pwd=${repeat("{'\"=", n)}`,
      `--env=A=${repeat("a=b;", n)}`,
    ],
    run: (list) => withoutArgSecrets(list as string[]),
  },
  {
    // A shell's command is split at operators, with `$(…)`, `${…}` and backticks kept whole, and
    // each secret's value replaced where it is written: one pass however the line is built.
    name: "withoutArgSecrets: a sh -c command of operators, substitutions, quotes and long scheme-like runs",
    build: (n) => [
      "-c",
      repeat('--password x1;y|z>w<<<$(a (b) `c` "$(d)" ', n),
      "-c",
      `--token ${repeat("$(", n)}`,
      "-c",
      `--api-key "${repeat('a\\"', n)}`,
      "-c",
      `GITHUB_TOKEN=${repeat("ab+c", n)} ${repeat("a:/", n)} '${repeat("x:// ", n)}`,
      "-c",
      `--conn "Server=db;${repeat("Password=x;", n)}"`,
      "-c",
      `--conn "Server=db;${repeat("Password=x;postgres://u:p@h;", n)}"`,
    ],
    run: (list) => withoutArgSecrets(list as string[]),
  },
  {
    // Quotes, escapes and comments read inside `$(…)`, `${…}` and backticks, comments and heredoc
    // bodies read as data, `$"…"`, line continuations and `${NAME:-word}` defaults: still one pass.
    name: "withoutArgSecrets: a sh -c command of quoted closers in substitutions, comments, heredocs and defaults",
    // Thirteen commands of n / 4 characters each: a rung's input is about 3n in all (it was 13n,
    // so its 128 KiB rung read 1.7 MB and met the per-rung time cap on a loaded machine).
    build: (size) => {
      const n = Math.max(64, Math.floor(size / 4));
      return [
        "-c",
        repeat("$(a ')' \"$(b ')')\" $'\\')' \\) # c'(\n) ", n),
        "-c",
        `X=$(${repeat("'(' \"(\" ( $( ", n)}`,
        "-c",
        `X=${repeat("$" + "{A:-b", n)}`,
        "-c",
        `--password ${repeat("$" + "{DB_PASSWORD:-x1}", n)}`,
        "-c",
        `X=${repeat("$" + "{A:-'b", n)} ${repeat("$" + '{A:-"b', n)}`,
        "-c",
        repeat("$(cat <<E\nit's (\nE\n) ", n),
        "-c",
        `${repeat("a # it's\n", n)}--token x`,
        "-c",
        `cat <<EOF\n${repeat("it's\n", n)}EOF\n--token x`,
        "-c",
        repeat("cat <<A <<-B\n", n),
        "-c",
        repeat("$\"a $'b ", n),
        "-c",
        repeat("`a \\` ' ", n),
        "-c",
        `--token ${repeat("x\\\n", n)}`,
      ];
    },
    run: (list) => withoutArgSecrets(list as string[]),
  },
  {
    // r37: heredoc bodies and comments read a line at a time as words (quotes unread), a
    // delimiter with its quotes removed and a CRLF line's `\r` set aside; an argument that
    // merely holds spaces read with no comment or heredoc.
    name: "withoutArgSecrets: a sh -c command of config bodies and comments, read a line at a time",
    build: (n) => [
      "-c",
      `cat <<\\EOF\r\n${repeat('DB_PASSWORD=x1 password: \'y2\', "api_key": "z3",\r\n', n)}EOF\r\n--token x`,
      "-c",
      repeat("# it's --token x DB_PASSWORD=$" + "{A:-y} a: b\n", n),
      "--extra",
      repeat("--note #1 <<EOF --password x\n", n),
    ],
    run: (list) => withoutArgSecrets(list as string[]),
  },
  {
    // r37: arithmetic (`((…))`, `$[…]`), nested literal defaults, and heredoc words left open.
    name: "withoutArgSecrets: a sh -c command of arithmetic, nested defaults and open delimiters",
    build: (n) => [
      "-c",
      `--password ${repeat("$" + "{A:-", n)}x${repeat("}", n)} ${repeat("$" + "{A:-", n)}`,
      "-c",
      `${repeat("((n <<= 1)) $[1<<2] ", n)}((`,
      "-c",
      `X=$(${repeat("cat <<'E ", n)}`,
      "-c",
      `X=$(${repeat('cat <<"E ', n)}`,
    ],
    run: (list) => withoutArgSecrets(list as string[]),
  },
  {
    // r37: a quote or substitution left open at the end, or holding whitespace: its text read again as words, once.
    name: "withoutArgSecrets: a sh -c command with a quote or a substitution left open",
    // Five runs of n / 2 characters: about 2.5n in all (it was 5n).
    build: (size) => {
      const n = Math.max(64, Math.floor(size / 2));
      return [
        "-c",
        `echo 'it's ${repeat("--token x ", n)}`,
        "-c",
        `X="$(${repeat("a --password y ", n)}`,
        "-c",
        `echo "${repeat("--token x1234567y ", n)}" '${repeat("a b ", n)}' $(${repeat("c --api-key d ", n)})`,
      ];
    },
    run: (list) => withoutArgSecrets(list as string[]),
  },
  {
    // r42a: `--user`/`-U` then a long run of spaces or tabs (the `user%password` shape's gap was
    // read by two quantifiers in a row: 64 KiB took 7.5 s).
    name: "withoutArgSecrets: a sh -c command of --user and -U then long runs of spaces",
    build: (n) => [
      "-c",
      `smbclient --user${" ".repeat(n)}x`,
      "-c",
      `smbclient -U${"\t".repeat(n)}x`,
      "-c",
      `smbclient --user=${" ".repeat(n)}x`,
      "-c",
      repeat("--user  -U  admin ", n),
    ],
    run: (list) => withoutArgSecrets(list as string[]),
  },
  {
    // r42a: a shell's command or program text with no whitespace, or tight to its flag, read as
    // one script (references and compound assignments set aside first).
    name: "withoutArgSecrets: a program's text with no whitespace or tight to its flag",
    build: (n) => [
      "bash",
      "-c",
      repeat("a=$b;$c??=", n),
      "node",
      `--eval=${repeat("$env:k||=x;", n)}`,
      "python3",
      `-c${repeat("--user%-U", n)}`,
    ],
    run: (list) => withoutArgSecrets(list as string[]),
  },
  {
    // r43 #1, #2: a JSON argument's arrays read as argv, its strings as command lines, everything
    // under a telling key; a client's password flag read along a command's words.
    name: "withoutArgSecrets: a JSON argument of argv arrays, command lines and telling keys, and sshpass/mysql -p",
    build: (n) => [
      "--config",
      `{"argv":[${repeat('"--token","x y",5,{"a":[1]},', n / 4)}"z"],"cmd":"${repeat("mysql -pX1 --api-key k ", n / 4)}","auth":{"u":[${repeat('"a",{"b":"c"},', n / 4)}"d"]}}`,
      "sshpass",
      ...Array.from({ length: Math.floor(n / 64) }, () => "-vp"),
      `-p${repeat("s", n / 8)}`,
      "mysql",
      repeat("-pX ", n / 8),
    ],
    run: (list) => withoutArgSecrets(list as string[]),
  },
  {
    // r85a: pairs set apart by `&` or `,` (a form body, mount's options) read for a telling pair
    // after others, in an argument, a JSON string and a command line's quoted word; a JSON string
    // starting with a telling assignment read as a command line.
    name: "withoutArgSecrets and withoutCommandLineSecrets: &- and ,-lists of pairs, and JSON strings of assignments",
    build: (n) => [
      repeat("a=1&password=x9&", n / 4),
      `-o${repeat("ro,user=b,password=x9,", n / 4)}`,
      `{"k":"${repeat("a=1,token=x9,", n / 12)}","PGPASSWORD=x9 ${repeat("psql -h ", n / 12)}":"TOKEN=x9 ${repeat("a=b&c ", n / 12)}"}`,
      `curl -d "${repeat("u=a&password=x9&", n / 8)}" -o ${repeat("=,", n / 8)}`,
    ],
    run: (list) => {
      const [form = "", options = "", json = "", line = ""] = list as string[];
      withoutArgSecrets([form, options, json]);
      withoutArgSecrets(["-d", form], (text) => text);
      withoutCommandLineSecrets(line);
    },
  },
  {
    // r43 #3: a JSON word of a pasted command line read as a JSON argument is.
    name: "exportSpec: a pasted command line of JSON words with argv arrays and telling keys",
    build: (n) => ({
      spec: "loopwright.agent/1",
      bundle: {
        mcpServers: [
          {
            name: "s",
            command: `npx x --config '{"a":[${repeat('"--token","x y",', n / 3)}"z"],"auth":{"u":"${repeat("v", n / 3)}"}}' ${repeat('--c={"k":1} ', n / 3)}`,
          },
        ],
      },
    }),
    run: (doc) => {
      const { spec } = parseSpec(doc, { bundle: true });
      if (spec) exportSpec(spec);
    },
  },
  {
    // fix130: a program's assignments to its environment read across the line and given to the word
    // that writes each value, PowerShell's `$env:NAME=`, and `;`-parts whose values go on with flags.
    name: "withoutCommandLineSecrets and exportSpec: program env assignments, $env: and ;-parts with flags",
    build: (n) => [
      `python3 -c "${repeat("os.environ['API_KEY']='x'; os.environ.setdefault('TOKEN','y'); ", n / 4)}"`,
      `node -e '${repeat('process.env.TOKEN="x";process.env["API_KEY"] = `y` ', n / 4)}'`,
      `${repeat(`$env:API_KEY='x'; $env:TOKEN = \\"y\\"; `, n / 8)} ${repeat("os.environ['TOKEN'", n / 8)}`,
      `A=x ;${repeat("GITHUB_TOKEN=a b --c ;", n / 8)}Server=db;Password=${repeat("a b ", n / 8)}--c`,
    ],
    run: (list) => {
      for (const line of list as string[]) {
        withoutCommandLineSecrets(line);
        exportCommand(line);
      }
    },
  },
  {
    // fix163: names bound to os.environ read across the line (each use checked against them), a
    // type annotation or blanks before `=`, and a program one escaped quote level down, read with
    // its escapes undone and each hidden text mapped back.
    name: "withoutCommandLineSecrets and withoutArgSecrets: program env aliases, annotations, escaped programs",
    // Five lines of a fifth of the rung's size each, so the rung is the size of all it reads (each
    // line was the whole size: five times the input the rung names, 1.6–3.2 s at 128K on two cores).
    build: (n) => [
      `python -c "${repeat("e = os.environ; e['TOKEN'] = 'x'; abc['TOKEN'] ; ", n / 5)}"`,
      `python -c "os.environ['TOKEN']: a[${repeat(" ,", n / 5)}"`,
      `python -c "${repeat("os.environ [ 'TOKEN' ] ", n / 5)}"`,
      `sh -c "node -e \\"${repeat("process.env.TOKEN=f('x9secretpw');", n / 5)}\\""`,
      `node -e "${repeat("process.env.TOKEN=require('x').y('curl a|sh')+'x9secretpw';", n / 5)}"`,
    ],
    run: (list) => {
      for (const line of list as string[]) {
        withoutCommandLineSecrets(line);
        withoutArgSecrets(["srv", "--run", line]);
      }
    },
  },
  {
    // r58-2: a connection string's telling pairs each holding a command, shown in place: a `;`
    // inside an unclosed `$(` split the pairs, and each pair's walk read the `$(` to the line's end.
    name: "withoutCommandLineSecrets: connection-string pairs holding commands",
    build: (n) => [
      `Server=db;${repeat("Pwd=a$(;", n / 8)}`,
      `Server=db;${repeat("Pwd=a$(b);", n / 10)}`,
      `Server=db;${repeat("Pwd=a`;", n / 7)}`,
    ],
    run: (list) => {
      for (const line of list as string[]) withoutCommandLineSecrets(line);
    },
  },
  {
    // r61: a telling value's run-time parts asked whether they close (each asked once: one inside a
    // closed one is not asked again), quotes opened inside values, and a quoted connection string read
    // as a word's pairs; in a pasted line, an argument and a word.
    name: "connection strings: telling values' parts and quotes left open or closed",
    build: (n) => [
      `Server=db;App=$(;Password=${repeat("$(", n / 4)}${repeat(")", n / 4)}`,
      `Server=db;${repeat("Password=a'b;", n / 13)}`,
      `Server=db;${repeat("App=it's;", n / 9)}Password=X`,
      `psql "Server=db;${repeat("Pwd=x$(y);", n / 10)}App=$("`,
      `Server=db;Password="${repeat("$(a)", n / 4)}"`,
    ],
    run: (list) => {
      for (const line of list as string[]) {
        withoutCommandLineSecrets(line);
        withoutArgSecrets(["-c", line]);
        exportCommand(line);
      }
    },
  },
  {
    // r63: a line the shell refuses read for a telling name's literal value (each name read where a
    // run of name characters starts), `$1` before a URL's scheme, an argument holding a shell's
    // own command read as a line, then as the script it holds, ODBC values shown in the line, and
    // values written apart hidden as written.
    name: "command lines: refused lines' telling values, $1 before a URL, scripts in an argument",
    build: (n) => [
      `"x;${repeat("Password=a;", n / 11)}Password=hunter2SECRET9`,
      `$(; ${repeat("--password ", n / 11)}`,
      `srv ${repeat("${DB_PASSWORD:-", n / 15)}`,
      `srv ${repeat("$1a", n / 3)}https://u:p@h`,
      `sh -c "srv --password \\"X9 secretpw\\" ${repeat('--url \\"$HOST\\" ', n / 17)}"`,
      // ODBC `{…}` values whose quote closes after their `;`, shown in one walk over the line.
      `Server=db;${repeat('Pwd={$(a)"};x";', n / 16)}`,
      // Values written apart by quotes, each hidden as written (its quotes read once for each value).
      `srv ${repeat("--password=a'b'c ", n / 17)}`,
      `srv Server=db;${repeat("Password=a'b'c;", n / 15)}`,
    ],
    run: (list) => {
      for (const line of list as string[]) {
        withoutCommandLineSecrets(line);
        withoutArgSecrets(["--run", line]);
        exportSpec({
          spec: "loopwright.agent/1",
          bundle: { mcpServers: [{ name: "s", command: line }] },
        } as never);
      }
    },
  },
  {
    // r64: a URL glued after other text in an argument given word by word (each run of scheme
    // characters read once, every URL in the word read for its credentials), and values written
    // apart inside one quote, hidden there (each value's quotes read once).
    name: "exportSpec and withoutArgSecrets: URLs glued after text, values written apart in one quote",
    build: (n) => [
      repeat("1.", n),
      `x${repeat("a1+", n)}`,
      repeat("$1https://u:p@h", n),
      repeat("x$1a://", n),
      // An eighth of the rung: each value of a shell's command is read several ways (linear, but
      // about 13 µs a character for each call).
      `sh -c "${repeat('srv -e TOKEN=\\"X9\\"; ', n / 8)}"`,
    ],
    run: (list) => {
      for (const word of list as string[]) {
        withoutArgSecrets(["--url", word]);
        withoutArgSecrets(["--run", word]);
        exportSpec({
          spec: "loopwright.agent/1",
          bundle: { mcpServers: [{ name: "s", command: "s", args: [word], env: { A: word } }] },
        } as never);
      }
    },
  },
  {
    // r64s: a word holding many values written apart, each found as written in one walk over the
    // word for all of them (a walk for each took values × the word's length); then lines whose
    // comments hold quotes, operators after telling flags and `name:` values, on lines the shell
    // accepts or refuses (each read whole, for the refused line's telling value, in one pass).
    name: "command lines: many values written apart in one word, comments and operators after flags",
    build: (n) => [
      `srv Server=db${repeat('";Password=x"y', n / 5)}`,
      `node -e '${repeat("process.env.TOKEN = '\\''x'\\''; ", n / 5)}'`,
      `srv --auth && ${repeat("echo a # it's ", n / 5)}`,
      `srv ${repeat("--password < a token: x ", n / 5)}'`,
      `${repeat("token:", n / 5)}'`,
    ],
    run: (list) => {
      for (const line of list as string[]) {
        withoutCommandLineSecrets(line);
        withoutArgSecrets(["--run", line]);
        exportCommand(line);
      }
    },
  },
  {
    // fix169: every URL in a word read for its userinfo, each from where the one before it ends
    // (each authority read once), in a comma-separated list, a word of many glued URLs, `?next=`
    // URLs nested in queries and schemes with nothing but an `@` after them. A quarter of the rung
    // each: every URL is parsed for its sign (linear, but about 2 µs a character for each call).
    name: "exportSpec, withoutArgSecrets and withoutCommandLineSecrets: URLs glued after URLs",
    build: (n) => [
      `${repeat("https://h/p,", n / 4)}https://u:X9pw@h`,
      repeat("https://u:X9pw@h/,", n / 4),
      repeat("https://a@h/p|", n / 4),
      `${repeat("https://h/?next=", n / 4)}https://u:X9pw@h`,
      repeat("https://@", n / 4),
    ],
    run: (list) => {
      for (const word of list as string[]) {
        withoutArgSecrets(["--url", word]);
        withoutCommandLineSecrets(`srv --url ${word}`);
        exportSpec({
          spec: "loopwright.agent/1",
          bundle: { mcpServers: [{ name: "s", command: "s", args: ["--url", word], env: { A: word } }] },
        } as never);
        exportCommand(`srv --url ${word}`);
      }
    },
  },
  {
    // fix170 (r65): a program's literals holding backticks (each read up to 512 characters), one
    // left open to the line's end, bash's `NAME+=value` assignments, and a URL's fragment cut into
    // its `?` parts and `&` pairs (each read once). An eighth of the rung each for the first two
    // (each value is read by the program's reader and the shell's, about 10 µs a character), a
    // quarter for the others.
    name: "command lines and URLs: backticks in a program's literals, NAME+=value, fragment pairs",
    build: (n) => [
      `node -e "${repeat("process.env.TOKEN = 'x`id`'; ", n / 8)}"`,
      `node -e "process.env.TOKEN = '${repeat("x`", n / 8)}'"`,
      `${repeat("TOKEN+=x9 ", n / 4)}srv`,
      `https://h/p#/cb?${repeat("token=x9&", n / 4)}`,
      `https://h/p#${repeat("?token=x9", n / 4)}`,
    ],
    run: (list) => {
      for (const line of list as string[]) {
        withoutCommandLineSecrets(line);
        withoutArgSecrets(["--run", line]);
        withoutArgSecrets(["--url", line]);
        exportCommand(line);
      }
    },
  },
  {
    // fix171: the display of a URL's telling query values holding run-time parts, each read once
    // for its literal text and its parts (`$(…)`, a backtick's, `${…}`, each to its close): many
    // closed parts, one `$(` and one `${` left open over the rest, many pairs. A quarter each.
    name: "withoutCommandLineSecrets: run-time parts in a URL's telling query values",
    build: (n) => [
      `srv --url "https://h/p?token=${repeat("a$(b)`c`$" + "{d}", n / 4)}"`,
      `srv --url "https://h/p?token=x${repeat("$(", n / 4)}"`,
      `srv --url "https://h/p?token=x${repeat("${{", n / 4)}"`,
      `srv --url "https://h/p?${repeat("token=x$(id)&", n / 4)}"`,
    ],
    run: (list) => {
      for (const line of list as string[]) {
        withoutCommandLineSecrets(line);
        withoutCommandLineSecrets(line, (text) => text);
        exportCommand(line);
      }
    },
  },
  {
    // fix172: a URL's end read past blanks inside run-time parts its query opens and closes (each
    // opener's close found in one pass over the word, each URL's end read from its start once):
    // many closed parts holding blanks, many `$(` left open each holding a URL, URLs inside a
    // part, a quoted URL with a long run of quotes after it; as a pasted line and as one argument.
    name: "withoutCommandLineSecrets, exportSpec, withoutArgSecrets: URLs read past blanks in run-time parts",
    build: (n) => [
      `srv --url "https://h/p?token=${repeat("$(curl e|sh)a9", n / 14)}"`,
      `srv --url https://h/p?token=${repeat("$(x https://a/?t=", n / 17)}`,
      `srv --url https://h/p?token=$(${repeat("https://a/?t=$(x y) ", n / 20)})`,
      `srv --url "https://h/p?token=\${T}${repeat("'\"", n / 2)}`,
    ],
    run: (list) => {
      for (const line of list as string[]) {
        withoutCommandLineSecrets(line);
        withoutCommandLineSecrets(line, (text) => text);
        exportCommand(line);
        withoutArgSecrets(["--url", line.slice(10)]);
      }
    },
  },
  {
    // fix173: an argument that starts with a URL read as one value to its end, then what that
    // leaves read as before (its parts written as marks, filled back in one replace); a URL written
    // apart in a word placed part by part (each part's place read once), on lines leaving a quote
    // open too; `$TOKEN` values read as references. Many blanks and quotes in one argument's query
    // value, many pairs holding defaults, a quote left open after many run-time parts, many `$T` pairs.
    name: "withoutArgSecrets, withoutCommandLineSecrets, exportSpec: one-word URLs and URLs written apart",
    build: (n) => [
      `https://u:p@h/p?token=${repeat("a 'b \"c $(d ", n / 12)}`,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell's default, meant literally.
      `srv --url https://h/p?${repeat("token=${X:-Q}b7&", n / 16)}`,
      `srv --url https://h/p?token=${repeat("$(curl e|sh)a9", n / 14)}'; srv2`,
      `srv --url "https://h/p?${repeat("token=$T&", n / 9)}"`,
    ],
    run: (list) => {
      const [arg, ...lines] = list as string[];
      withoutArgSecrets(["--url", arg as string]);
      withoutArgSecrets(["--url", arg as string], (text) => text);
      withoutArgSecrets(["-e", `DB_URL=${arg}`], () => "*");
      for (const line of lines) {
        withoutCommandLineSecrets(line, (text) => text);
        exportCommand(line);
      }
    },
  },
  {
    // fix175: a `${…}` a shell refuses (a blank or no name after `${`) is literal text, each `${`
    // asked once whether a name and an operator follow (an index read up to its `]`, the next `$`
    // or `}`); a value starting with `-` after a telling flag is that flag's value; a `sh -c`
    // script's connection-string value shown around its run-time parts.
    name: "withoutArgSecrets, withoutCommandLineSecrets, exportSpec: bad substitutions and values starting with '-'",
    build: (n) => [
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a bad substitution, meant literally.
      `https://h/p?token=${repeat("${-  %V}", n / 8)}`,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a bad substitution, meant literally.
      `srv --token "${repeat("${X Y}$(id)", n / 11)}"`,
      `srv --url https://h/p?token=${repeat("${a[b", n / 5)}`,
      `srv --token ${repeat("${ ", n / 3)}`,
      `srv ${repeat("--token -VJJ ", n / 13)}`,
      // A shell's own command read as one connection string, its pair's value cut around each `\$(…)`.
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a default's `${X:-…}`, meant literally.
      `sh -c "srv --api-key=Zq9 | tee ${repeat("\\$(id) x \\${X:-\\$(id)} ", n / 24)};"`,
      // A quoted word of many URLs with blanks: only one at its start (or after a `NAME=`) runs to its end.
      `srv "${repeat("https://h/?token=a ", n / 19)}" -e "A=${repeat("https://h/?token=a ", n / 19)}"`,
    ],
    run: (list) => {
      const [arg, ...lines] = list as string[];
      withoutArgSecrets(["--url", arg as string]);
      withoutArgSecrets(["--url", arg as string], (text) => text);
      withoutArgSecrets((lines.at(-1) as string).split(" "), () => "*");
      for (const line of lines) {
        withoutCommandLineSecrets(line, (text) => text);
        exportCommand(line);
      }
    },
  },
  {
    // fix176: a quoted word holding a URL and blanks read as one value to its end (whether it reads
    // as one value asked in one pass over the word, each closed run-time part passed over once); a
    // default that is a `${…}` a shell refuses read as a literal default's word (a word read again
    // at most once when its line leaves an opener open); a telling query value's literal defaults.
    name: "withoutCommandLineSecrets, exportSpec, withoutArgSecrets: quoted URLs with blanks, refused and literal defaults",
    build: (n) => [
      // An argument's URL: a telling value of many literal defaults. A seventh each (a twenty-first
      // for the word of many substitutions holding an operator, each of whose commands is read too).
      // biome-ignore lint/suspicious/noTemplateCurlyInString: literal defaults, meant literally.
      `https://h/p?token=${repeat("${V:-Q9}", n / 7)}`,
      `srv --url "https://h/p?token=${repeat("a $(id) `x` ", n / 7)}"`,
      `srv "see ${repeat("x ", n / 14)}https://h/p?token=a ${repeat("b ", n / 14)}"`,
      `srv "${repeat("x $(a;b) ", n / 21)}https://h/p?token=a b;"`,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a refused default, meant literally.
      `srv --token ${repeat("${X:-${-  %VQ}}", n / 7)}`,
      `srv --token "${repeat("${X:-", n / 14)}\${-  %VQ}${repeat("}", n / 14)}`,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: nested defaults, meant literally.
      `srv --url "https://h/p?token=$(id)${repeat("${V:-", n / 21)}Q${repeat("}", n / 21)}${repeat("${V:-Q9}", n / 21)}"`,
    ],
    run: (list) => {
      const [arg, ...lines] = list as string[];
      withoutArgSecrets(["--url", arg as string], () => "*");
      for (const line of lines) {
        withoutCommandLineSecrets(line);
        withoutCommandLineSecrets(line, (text) => text);
        exportCommand(line);
      }
    },
  },
  {
    // fix177: a default's word mixing literal text and references or run-time parts, read in one
    // pass (literalDefaults: a stack of the parts open, each asked in constant time; shell-words'
    // mixedDefault: each part passed over once, tried at most twice for a `${`); an argument's URL
    // after a blank (argUrl's tellsToEnd, markedRunTime: one pass each).
    name: "withoutCommandLineSecrets, exportSpec, withoutArgSecrets: defaults mixing literal text and run-time parts",
    build: (n) => [
      // biome-ignore lint/suspicious/noTemplateCurlyInString: mixed defaults, meant literally.
      `\${V:-${repeat("J${X}a$B/", n / 7)}}`,
      `\${V:-${repeat("${-", n / 14)}${repeat("x", n / 14)}`,
      // An argument's URL after a blank: its telling value read to the end, its parts and `&`s marked.
      `see https://h/p?${repeat("b=1&", n / 28)}token=${repeat("a $(x) `y` ", n / 28)}`,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: mixed defaults, meant literally.
      `srv --token ${repeat("${V:-J$(id)}", n / 7)}`,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: mixed defaults left open, meant literally.
      `srv --token "${repeat("${V:-J${X}", n / 7)}"`,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: nested defaults, meant literally.
      `srv --url "https://h/p?token=${repeat("${V:-", n / 21)}Q$(id)${repeat("}", n / 21)}${repeat("${V:-${X}QJ}", n / 21)}"`,
    ],
    run: (list) => {
      const [first, second, third, ...lines] = list as string[];
      withoutArgSecrets(["--token", first as string, "--url", `https://h/p?token=${second}`], () => "*");
      withoutArgSecrets([third as string], () => "*");
      withoutArgSecrets([third as string], (text) => text);
      exportSpec({
        spec: "loopwright.agent/1",
        bundle: { mcpServers: [{ name: "s", command: "s", args: [third as string] }] },
      } as never);
      for (const line of lines) {
        withoutCommandLineSecrets(line);
        withoutCommandLineSecrets(line, (text) => text);
        exportCommand(line);
      }
    },
  },
  {
    // fix178: a default's word holding quotes and escapes (shell-words' mixedDefault: one pass, a
    // quote left open read to the end once), a URL's query glued past an unquoted `&` (one pass over
    // the words), an argument's later URL with more telling pairs (tellsToEnd, markedRunTime's `&name=`).
    name: "withoutCommandLineSecrets, exportSpec, withoutArgSecrets: quoted mixed defaults, glued query pairs",
    build: (n) => [
      `see https://h/p?token=a b${repeat("&token=J$(x)", n / 48)}${repeat("&`$(", n / 48)}`,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: mixed defaults, meant literally.
      `srv --token ${repeat('${V:-"Q9"$(id)\\x}', n / 42)}${repeat("${V:-'a$(", n / 42)}`,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: glued pairs, meant literally.
      `srv https://h/p?b=1${repeat("&token=${X}-J", n / 26)}${repeat("&a", n / 4)}`,
    ],
    run: (list) => {
      const [first, ...lines] = list as string[];
      withoutArgSecrets([first as string], () => "*");
      withoutArgSecrets(["--run", first as string], (text) => text);
      for (const line of lines) {
        withoutCommandLineSecrets(line);
        withoutCommandLineSecrets(line, (text) => text);
        exportCommand(line);
        withoutArgSecrets(["--run", line], () => "*");
      }
    },
  },
  {
    // Many servers whose names all give one reference base (each name a different CJK letter, so
    // each base is `COMMAND`): the numbering was quadratic (10,000 servers took about 20 s, so about
    // 0.5 s at 1,600 and 2 s at 3,200: ×4 a doubling). One server for each 20 bytes of the rung:
    // 400 at 8 KiB, 3,200 at 64 KiB.
    name: "findSpecSecrets: servers whose names all give the same reference base",
    build: (n) => ({
      spec: "loopwright.agent/1",
      bundle: {
        mcpServers: Array.from({ length: Math.max(1, Math.floor(n / 20)) }, (_, i) => ({
          name: String.fromCharCode(0x4e00 + i),
          command: "sh",
          args: ["-c", `exec srv --token-file /run/t${i}`],
        })),
      },
    }),
    run: (doc) => findSpecSecrets(doc as never),
  },
  {
    // fix182: the words before a glued query pair read in one pass (fix181 walked back from each
    // word over the words a quote's text is read again as: a 64 KiB quote took seconds, x3 a
    // doubling). One line of about half the rung, read by the display, the export and as an argument.
    name: "withoutCommandLineSecrets, exportSpec, withoutArgSecrets: a quote's words, then a glued pair left open",
    build: (n) => [`srv "${repeat("a b ", n / 2)}" https://h/p?t=$(a b)x&code=\${V:-J`],
    run: (list) => {
      for (const line of list as string[]) {
        withoutCommandLineSecrets(line);
        exportCommand(line);
        withoutArgSecrets(["--run", line]);
      }
    },
  },
  {
    // fix162: a quoted command's words that open a quote read with the words up to its closing one
    // (each word read at most once for each quote), a URL's userinfo holding blanks, and curl's,
    // redis-cli's and Samba's password flags with quoted values holding blanks.
    name: "withoutCommandLineSecrets and exportSpec: quoted client passwords holding blanks",
    // Eight lines of about size / 16 characters each (such a line took about 0.3 s at 20,000
    // characters before this change too: the rungs are kept under the cap). The last two: a quoted
    // command's words with operators written against them, and inner '…' values holding parts the
    // outer "…" expands (each shown in place).
    build: (size) => {
      const n = size / 16;
      return [
        `sh -c 'a ${repeat('"x ', n)}'`,
        `sh -c "a ${repeat(`'x y ' "z `, n)}"`,
        `sh -c 'a --password "${repeat("x ", n)}"'`,
        `sh -c 'wget ${repeat('--password "pa ss X9" -p"a b" ', n)}'`,
        `psql "a://u:${repeat("x ", n / 2)}" "${repeat("a://u:p w@h ", n / 2)}"`,
        `curl ${repeat('-u "u:p w9" -U a%"b c" ', n / 3)} ${repeat("{ ! ", n / 3)}redis-cli ${repeat('-a "p w9x" ', n / 3)}`,
        `sh -c "${repeat("x;mysql -pX9ab;(redis-cli -a 'p;q')|", n)}"`,
        `bash -c "${repeat("srv --password 'a$(b)c' -p'x$Y' ", n)}"`,
      ];
    },
    run: (list) => {
      for (const line of list as string[]) {
        withoutCommandLineSecrets(line);
        exportCommand(line);
      }
    },
  },
  {
    // r48 F3: a program's text as the line itself, each concatenated value's expression opening the
    // next: the expression's end is found once, not again for each value inside it.
    name: "withoutCommandLineSecrets: a program's text whose expressions nest",
    build: (n) => `${repeat("process.env.API_TOKEN='x' + (", n)}1`,
    run: (line) => withoutCommandLineSecrets(line as string),
  },
  // Prose read for credentials a word at a time, each word with the words before it: a word's braces
  // or the gap before it once rescanned from the start took ~10 s at 200,000 characters.
  ...[
    "}",
    '"a": "',
    "a = ",
    "mysql -p",
    "k=v;Password=S3cretPass99;",
    "Token: a.b(1,2) ",
    "redis-cli -a -uX:",
  ].map((unit) => ({
    name: `withoutProseSecrets: ${JSON.stringify(unit)} repeated`,
    build: (n: number) => repeat(unit, n),
    run: (text: unknown) => withoutProseSecrets(text as string),
  })),
  {
    name: "resolveAgentSpec: prompt entries",
    build: (n) => ({
      spec: "loopwright.agent/1",
      model: { name: "m" },
      prompt: Array.from({ length: Math.floor(n / 32) }, (_, i) => ({ id: `p${i}`, text: "x" })),
    }),
    run: (doc) => {
      const { spec } = parseSpec(doc);
      if (spec) resolveAgentSpec([spec, spec]);
    },
  },
  {
    name: "sanitizeSchema: many properties",
    build: (n) => ({
      type: "object",
      properties: Object.fromEntries(
        Array.from({ length: Math.floor(n / 40) }, (_, i) => [`p${i}`, { type: "string", pattern: "abc" }]),
      ),
    }),
    run: (schema) => {
      sanitizeSchema(schema as Record<string, unknown>);
      relaxSchema(schema as Record<string, unknown>);
      checkStrictSchema(schema as Record<string, unknown>);
    },
  },
  {
    // Every part names one shared property: it was merged part by part into a nested allOf
    // (3,000 parts: 6.4 s, 20,000: 223 s before it was read as one flat list).
    name: "sanitizeSchema: wide allOf",
    build: (n) => ({
      type: "object",
      allOf: Array.from({ length: Math.floor(n / 80) }, (_, i) => ({
        properties: { shared: { type: "string" }, [`p${i}`]: { type: "integer" } },
        required: [`p${i}`],
      })),
    }),
    run: (schema) => {
      sanitizeSchema(schema as Record<string, unknown>);
    },
  },
  {
    // A pattern of many top-level alternatives (`^a|a|…|b$`), as an MCP server may publish: each
    // `|` sliced the rewrite built so far (80,000 alternatives: 3 s, 160,000: 25 s before it was
    // kept in pieces and joined once).
    name: "sanitizeSchema: pattern alternatives",
    build: (n) => ({ type: "string", pattern: `^${repeat("a|", n)}b$` }),
    run: (schema) => {
      sanitizeSchema(schema as Record<string, unknown>);
    },
  },
  {
    // A null for every one of many required parameters: each was looked up in the required list
    // (40,000: 1.4 s before; a set now).
    name: "dropOptionalNulls: many nulls",
    build: (n) => {
      const names = Array.from({ length: Math.floor(n / 24) }, (_, i) => `p${i}`);
      return {
        schema: {
          type: "object",
          properties: Object.fromEntries(names.map((k) => [k, { type: "string" }])),
          required: names,
        },
        args: Object.fromEntries(names.map((k) => [k, null])),
      };
    },
    run: (input) => {
      const { schema, args } = input as { schema: unknown; args: unknown };
      dropOptionalNulls(args, schema);
    },
  },
  {
    // Many children of a recursive tree, each with its own children as JSON text (where the
    // sanitized schema stopped expanding the reference): every one is parsed back, its nulls dropped.
    name: "restoreArguments: many JSON-text values",
    build: (n) => {
      const node = {
        type: "object",
        properties: {
          name: { type: "string" },
          tag: { type: "string" },
          kids: { type: "array", items: { $ref: "#/$defs/node" } },
        },
        required: ["name"],
      };
      const text = JSON.stringify([{ name: "c", tag: null, kids: [{ name: "d" }] }]);
      const item = { name: "b", tag: null, kids: text };
      return {
        schema: { ...node, $defs: { node } },
        args: { name: "a", tag: null, kids: Array.from({ length: Math.floor(n / 90) }, () => item) },
      };
    },
    run: (input) => {
      const { schema, args } = input as { schema: unknown; args: unknown };
      restoreArguments(args, schema);
    },
  },
  {
    // A host's backtracking pattern under an entry that declares `constructor` (so the walk must
    // know whether a key matches), and the model's keys each the 31-character repro of r43: on
    // 17443d0 one key blocked the event loop for 54 s, so the first rung never ended. The pattern
    // is now never run (mayBacktrack): the walk takes each key both ways, in milliseconds.
    name: "mapAlongSchema: 31-character keys under a backtracking patternProperties pattern",
    build: (n) => {
      // Lower-case letters only (the index's digits as a to j), then the "!" that makes it fail.
      const key = (i: number) => {
        const tag = [...String(i)].map((digit) => "abcdefghij"[Number(digit)]).join("");
        return `${"a".repeat(30 - tag.length)}${tag}!`;
      };
      return {
        schema: {
          type: "object",
          patternProperties: { "^([a-z]+)*$": { properties: { constructor: { type: "string" } } } },
        },
        args: Object.fromEntries(
          Array.from({ length: Math.max(1, Math.floor(n / 40)) }, (_, i) => [key(i), {}]),
        ),
      };
    },
    run: (input) => {
      const { schema, args } = input as { schema: unknown; args: unknown };
      const along = (object: object, place: { walk(child: unknown, key: string): unknown }): unknown => {
        for (const [key, child] of Object.entries(object)) place.walk(child, key);
        return object;
      };
      mapAlongSchema(args, schema, along);
    },
  },
  {
    // Qwen3-Coder markup whose parameters are typed through definitions that fan out (each a
    // union of four references to the next, sixteen deep): read path by path, one parameter
    // cost 4^16 readings; each schema object is now read once per call.
    name: "recoverToolCalls: markup typed through fanned-out $refs",
    build: (n) => fannedOut(n, { type: "string" }, () => 0),
    run: recoverMarkup,
  },
  {
    // The same fan-out closed into a cycle (the last definition refers back to the first): a reading
    // made inside the cycle is kept only while the cycle is read, never re-read path by path.
    name: "recoverToolCalls: markup typed through fanned-out $refs that cycle back",
    build: (n) => fannedOut(n, { anyOf: [{ $ref: "#/$defs/d0" }, { type: "string" }] }, (k) => k % 17),
    run: recoverMarkup,
  },
  {
    // Many tools under one name (servers listing the same tools): each new name was searched
    // for from suffix _2 up (8,000 tools: 41 s before).
    name: "sanitizeTools: one name many times",
    build: (n) =>
      Array.from({ length: Math.floor(n / 64) }, () => ({
        type: "function",
        function: { name: "read_file", parameters: { type: "object" } },
      })),
    run: (tools) => {
      sanitizeTools(tools as never);
    },
  },
  {
    // A sanitized schema lists every property in required: each was looked up in that list
    // (40,000 properties: 3.6 s before).
    name: "checkStrictSchema: many required properties",
    build: (n) => {
      const names = Array.from({ length: Math.floor(n / 40) }, (_, i) => `p${i}`);
      return {
        type: "object",
        properties: Object.fromEntries(names.map((k) => [k, { type: "string" }])),
        required: names,
        additionalProperties: false,
      };
    },
    run: (schema) => {
      checkStrictSchema(schema as Record<string, unknown>);
    },
  },
  {
    // An error body that echoes the request's tool paths: the Gemini patterns ran an unbounded
    // run of path characters from every start (200 KB: 13.5 s before).
    name: "isGrammarError: echoed tool paths",
    build: (n) => ({
      status: 400,
      message: `Unknown name "a" at '${"function_declarations[0].parameters ".repeat(Math.floor(n / 37))}`,
    }),
    run: (error) => {
      isGrammarError(error);
    },
  },
  {
    // A tool result full of lines posing as the transcript's block headers, each escaped.
    name: "transcriptText: header-like lines",
    build: (n) => [
      { role: "tool", content: repeat("[user]\n", n) },
      { role: "user", content: repeat("[a", n) },
    ],
    run: (messages) => {
      transcriptText(messages as never);
    },
  },
  {
    // The same, each line opening with blanks, invisible characters and backslashes, and a bracket
    // never closed: the header pattern must not read the run again from every character of it.
    name: "transcriptText: blanks before a bracket never closed",
    build: (n) => [
      { role: "tool", content: `${repeat("\u200b\u00a0\\", n / 2)}[${"a".repeat(n / 2)}` },
      { role: "tool", content: repeat("\u200b[a]\u200bb\n", n) },
    ],
    run: (messages) => {
      transcriptText(messages as never);
    },
  },
  {
    // A run of carriage returns between two letters: in a multiline pattern `^` stands after every
    // lone `\r`, so each one starts a line; a prefix that could read `\r` read the rest of the run
    // from each of them (40,000 once took 8 s).
    name: "transcriptText: a run of carriage returns",
    build: (n) => [{ role: "tool", content: `a${"\r".repeat(n)}a` }],
    run: (messages) => {
      transcriptText(messages as never);
    },
  },
  {
    // The same with blanks between the carriage returns, as terminal output that redraws its line.
    name: "transcriptText: carriage returns between blanks",
    build: (n) => [{ role: "tool", content: `a${repeat("\r \t", n)}a` }],
    run: (messages) => {
      transcriptText(messages as never);
    },
  },
  {
    // A pasted request with a run of apostrophes inside a word: its trim once cost the run's square.
    name: "preselectByKeywords: apostrophes inside a word",
    build: (n) => `read a${"'".repeat(n)}b file`,
    run: (request) => {
      preselectByKeywords(
        [{ name: "fs", tools: [{ name: "read_file", description: "Read a file." }] }],
        request as string,
      );
    },
  },
  {
    // Base64 data with a long run of '=' before its last character: sizing it once cost the run's square.
    name: "toolOutput: an image whose base64 is a run of '=' then a letter",
    build: (n) => ({ content: [{ type: "image", data: `${"=".repeat(n)}A`, mimeType: "image/png" }] }),
    run: (result) => {
      toolOutput(result as never);
    },
  },
  {
    // A preselection prompt over one server of many tools, listed in reverse name order.
    name: "preselectSystem: one server of many tools",
    build: (n) => [
      {
        name: "s",
        tools: Array.from({ length: Math.floor(n / 16) }, (_, i) => ({
          name: `tool_${1e9 - i}`,
          description: "d",
        })),
      },
    ],
    run: (catalog) => preselectSystem(catalog as never),
  },
  {
    // A preselection reply of names the model made up, every one different.
    name: "preselection: many unknown names",
    build: (n) => ({ tools: Array.from({ length: Math.floor(n / 8) }, (_, i) => `Tool_${i}`) }),
    run: (reply) => {
      preselection(reply, [{ name: "s", tools: [{ name: "tool_1" }, { name: "TOOL_1" }] }]);
    },
  },
  {
    // Many catalogue entries under one server name, each a tool listed again.
    name: "catalogText: one server name many times",
    build: (n) =>
      Array.from({ length: Math.floor(n / 32) }, (_, i) => ({
        name: "fs",
        tools: [{ name: `t${i % 500}`, description: `d${i}` }, { name: "read" }],
      })),
    run: (catalog) => {
      catalogText(catalog as never, { descriptions: true });
    },
  },
  {
    // A load_tools naming every tool case-folded: each name is matched against the catalogue.
    name: "expandNames: case-folded names",
    build: (n) => {
      const count = Math.floor(n / 16);
      const tools = Array.from({ length: count }, (_, i) => ({ name: `tool_${i}` }));
      return { catalog: [{ name: "s", tools }], names: tools.map((t) => t.name.toUpperCase()) };
    },
    run: (input) => {
      const { catalog, names } = input as { catalog: never; names: string[] };
      expandNames(names, catalog);
    },
  },
  {
    // A load_tools repeating one pattern (a small model in a repetition loop), against a catalogue
    // growing with it: each copy was matched against every tool again.
    name: "expandNames: one pattern written again and again",
    build: (n) => {
      const tools = Array.from({ length: Math.floor(n / 64) }, (_, i) => ({ name: `tool_${i}` }));
      return {
        catalog: [{ name: "s", tools }],
        names: Array.from({ length: Math.floor(n / 8) }, () => "tool_*"),
      };
    },
    run: (input) => {
      const { catalog, names } = input as { catalog: never; names: string[] };
      expandNames(names, catalog);
    },
  },
  {
    // A load_tools of distinct patterns (a looping model counting a1*, a2*, …), against a catalogue
    // growing with it: each pattern was tested against every tool.
    name: "expandNames: distinct patterns",
    build: (n) => {
      const tools = Array.from({ length: Math.floor(n / 64) }, (_, i) => ({ name: `tool_${i}` }));
      const shapes = [(i: number) => `a${i}*`, (i: number) => `*x${i}*`, (i: number) => `tool_${i}*`];
      return {
        catalog: [{ name: "s", tools }],
        names: Array.from({ length: Math.floor(n / 8) }, (_, i) =>
          (shapes[i % 3] as (i: number) => string)(i),
        ),
      };
    },
    run: (input) => {
      const { catalog, names } = input as { catalog: never; names: string[] };
      expandNames(names, catalog);
    },
  },
  {
    // A load_tools (or call_tool) name of nothing but separators, against servers whose names hold
    // them: each place a separator stands could end a server's name.
    name: "expandNames: a name of separators",
    build: (n) => ({
      catalog: [
        { name: "mcp.notion", tools: [{ name: "search" }] },
        { name: "a.b.c.d.e.f.g.h", tools: [{ name: "x" }] },
      ],
      names: [`${repeat("a.", n)}x`, `${repeat(".", n)}x`, `${repeat("__", n)}x`],
    }),
    run: (input) => {
      const { catalog, names } = input as { catalog: never; names: string[] };
      expandNames(names, catalog);
      for (const name of names) quietly(() => proxiedCall({ name }, catalog));
    },
  },
  {
    // A load_tools whose names are one long string of separators and quotes.
    name: "loadNames: one long names string",
    build: (n) => ({ names: repeat('"a", [b];`c` ', n) }),
    run: (args) => quietly(() => loadNames(args)),
  },
  {
    // A long proxied transcript: every load answered with definition lines.
    name: "heldDefinitions: many loads",
    build: (n) =>
      Array.from({ length: Math.floor(n / 200) }, (_, i) => [
        {
          role: "assistant",
          tool_calls: [{ id: `l${i}`, function: { name: "load_tools", arguments: "{}" } }],
        },
        {
          role: "tool",
          tool_call_id: `l${i}`,
          content: `{"name":"t${i}","description":"","parameters":{}}\nRun these with call_tool: { "name": "<tool>", "arguments": { ... } }.`,
        },
      ]).flat(),
    run: (messages) => {
      heldDefinitions(messages as never);
    },
  },
  {
    // A call_tool whose arguments are a long almost-JSON string.
    name: "proxiedCall: long argument text",
    build: (n) => ({ name: "read", arguments: `{"a": "${repeat("x\\", n)}"` }),
    run: (args) => quietly(() => proxiedCall(args, [{ name: "s", tools: [{ name: "read" }] }])),
  },
  {
    name: "runMetrics: events",
    build: (n) =>
      Array.from({ length: Math.floor(n / 16) }, (_, i) => ({
        kind: "tool-result",
        name: `t${i % 97}`,
        ok: false,
        content: "",
      })),
    run: (events) => runMetrics(events as never),
  },
  {
    name: "contextTokens: messages",
    build: (n) => ({
      messages: Array.from({ length: Math.floor(n / 16) }, () => ({ role: "user", content: "hello there" })),
    }),
    run: (body) => contextTokens(body as never, { promptTokens: 1000 }),
  },
  {
    name: "timeouts",
    build: (n) => n,
    run: (n) => [timeoutMs({ requestTimeoutSeconds: n as number }), firstTokenMs({})],
  },
  // r92b: a whole pasted document (documents.ts's kinds of lines, a secret in each construct) through
  // the three text readers; and a text starting with a URL whose fragment runs on over many lines,
  // now read a line at a time (it was one URL to the parser, every line after the first dropped).
  // Built at a quarter of the size: three readers of the whole text take about 10 µs a byte between
  // them, and the short form's budget is shared.
  {
    name: "withoutSecrets (named and not), withoutProseSecrets: a pasted document of mixed lines, at a quarter of the size",
    build: (n) =>
      repeat(
        [
          "host: db",
          "password: |",
          "  Zq7pw9ab12K more words",
          "env: {API_KEY: Zq7pw9ab12K, MODE: dev}",
          '"api_key": "Zq7pw9ab12K",',
          "export DB_PASSWORD=Zq7pw9ab12K # ci",
          "token = Zq7pw9ab12K",
          "```bash",
          "npx -y some-mcp --api-key Zq7pw9ab12K --port 8080",
          "cd /srv && make build",
          "mysql -h db -u root -pZq7pw9ab12K app",
          "```",
          "Read C:\\Users\\me\\token.txt, then https://example.com/docs/auth#token",
          "PORT=8080 and postgres://app:Zq7pw9ab12K@db/app?sslmode=off",
          "The token: ask for it later.",
          "",
        ].join("\n"),
        n / 4,
      ),
    run: (text) => {
      withoutSecrets(text as string, "CONFIG");
      withoutProseSecrets(text as string);
      withoutSecrets(text as string);
    },
  },
  {
    name: "withoutSecrets: a text starting with a URL, its fragment's pairs on the lines after it",
    build: (n) =>
      `https://h/p#x\n${repeat("token=abc&q=1\nhttps://u:Zq7pw9ab12K@h/p?api_key=Zq7pw9ab12K\n", n)}`,
    run: (text) => withoutSecrets(text as string),
  },
  // r50 F5: ssh's remote words, each value with literal text beside a run-time part placed where it
  // is written; placing each value once rescanned every word before it (4.5 s at 200,000 characters).
  // Built at a quarter of the size: spec's reader takes about 0.7 s for 200,000 characters of these
  // words on its own, which would put the top rung over the ceiling however it grows.
  ...[["TOKEN=$X'ab9'"], ["--token", "$X'ab9'"]].map((unit) => ({
    name: `shownRemoteWords: ${JSON.stringify(unit)} repeated, at a quarter of the size`,
    build: (n: number) =>
      Array.from({ length: Math.max(1, Math.floor(n / 4 / (unit.join(" ").length + 1))) }, () => unit).flat(),
    run: (words: unknown) => shownRemoteWords(words as string[], (secret) => `<${secret.length}>`),
  })),
];

/** A collection before each timing, where the run exposes one (`node --expose-gc`). */
const collect = (globalThis as { gc?: () => void }).gc ?? (() => {});

/** The best of `reps` runs, in ms; small inputs are run in a loop until they take long enough to time. */
function time(shape: Shape, input: unknown, reps: number): number {
  let best = Number.POSITIVE_INFINITY;
  for (let r = 0; r < reps; r++) {
    collect();
    let loops = 0;
    const start = performance.now();
    let elapsed = 0;
    do {
      shape.run(input);
      loops++;
      elapsed = performance.now() - start;
    } while (elapsed < 5 && loops < 1000);
    best = Math.min(best, elapsed / loops);
  }
  return best;
}

/** One rung: the size and its time. */
export interface Rung {
  size: number;
  ms: number;
}

/** A shape's verdict: its rungs, and the first doubling that more than tripled the time. */
export interface LadderResult {
  name: string;
  rungs: Rung[];
  failure?: string;
}

/** The longest one run of any rung may take: past it, the shape fails without climbing further. */
const MAX_RUN_MS = 2000;

/** A rung whose one run takes this long is timed once beside its warm-up (see timeRung). */
const SLOW_RUN_MS = 50;

/** Below this many ms a rung is within timer and scheduler noise; growth there is not judged. */
const FLOOR_MS = 3;

/** The least-squares slope of log(time) over log(size): 1 for linear time, 2 for quadratic. */
function exponent(rungs: readonly Rung[]): number | undefined {
  const points = rungs
    .filter((r) => r.ms >= FLOOR_MS)
    .map((r) => [Math.log2(r.size), Math.log2(r.ms)] as const);
  if (points.length < 3) return undefined;
  const mx = points.reduce((sum, [x]) => sum + x, 0) / points.length;
  const my = points.reduce((sum, [, y]) => sum + y, 0) / points.length;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return num / den;
}

/** Doubling the input more than triples the time: an exponent above log2(3). */
const MAX_EXPONENT = Math.log2(3);

/** How many doublings past `maxSize` a shape climbs when its fit failed or had too few rungs. */
const EXTRA_RUNGS = 2;

/**
 * Times one rung: a warm-up run held to {@link MAX_RUN_MS} (on a collected heap), then the best of
 * it and `reps` timings. Answers the failure message instead when the warm-up ran over.
 */
function timeRung(shape: Shape, size: number, reps: number): { rung: Rung; failure?: string } {
  const input = shape.build(size);
  collect();
  const warm = performance.now();
  shape.run(input);
  let once = performance.now() - warm;
  if (once > MAX_RUN_MS) {
    // Once more before it fails: a run a busy neighbour held off the core for a while (the whole
    // suite's workers beside it once took two linear shapes' 64 KiB rungs past 2 s, at 1 s alone)
    // is not a parser's time. A parser that slow is slow again.
    collect();
    const again = performance.now();
    shape.run(input);
    once = Math.min(once, performance.now() - again);
  }
  if (once > MAX_RUN_MS) {
    return {
      rung: { size, ms: once },
      failure: `${(size / 1024).toFixed(0)} KiB took ${once.toFixed(0)} ms, over the ${MAX_RUN_MS} ms any rung may take`,
    };
  }
  // The warm-up counts as one more timing: on a large rung (one run past 5 ms) it is a run like any.
  // A rung whose one run takes SLOW_RUN_MS or more sits far above timer noise, so one timing beside
  // the warm-up judges it: a fit over the limit times every rung again with more runs before it is
  // believed (see climb). The short form's time goes mostly to such rungs (the spec shapes' secret
  // finders, 100 ms to 2 s a run). Not the first rung: its warm-up also compiles the parser, and a
  // first rung read too slow flattens the fit a superlinear parser is judged by.
  const timings = once >= SLOW_RUN_MS && size > 8 * 1024 ? Math.min(reps, 1) : reps;
  return { rung: { size, ms: Math.min(once, time(shape, input, timings)) } };
}

/**
 * Whether the growth the fit found holds at the top of the ladder: the last doubling, both rungs
 * timed again (the best of all timings kept), more than triples the time, and the doubling after
 * it, one rung further up, still grows faster than linear time. A superlinear parser's growth
 * only steepens as the input grows; a one-off step (a collection landing in one rung, a table
 * resized once, V8 moving a many-keyed object to another representation) leaves the doubling past
 * it near 2. Such a step at the top
 * rung once failed CI: 8 to 10 ms up to 256 KiB, 34 ms at 512 KiB, then 57 and 91 ms.
 */
function persists(shape: Shape, rungs: Rung[], reps: number): boolean {
  if (rungs.length < 2) return true;
  const retime = (rung: Rung) => {
    rung.ms = Math.min(rung.ms, time(shape, shape.build(rung.size), reps));
  };
  const top = rungs[rungs.length - 1]!;
  const below = rungs[rungs.length - 2]!;
  retime(below);
  retime(top);
  if (top.ms / below.ms <= 2 ** MAX_EXPONENT) return false;
  // One rung more, where one run of it stays within what a run may take even were it quadratic: a
  // step is not a slope. A shape already slow at the top is believed as it stands. (The bound was a
  // quarter of that: a recovery shape whose collections step once between 256 and 512 KiB, 12 then
  // 59 ms, then 170 ms at 1 MiB, was believed at its top rung and failed about one run in four.)
  if (top.ms * 4 > MAX_RUN_MS) return true;
  // Judged halfway (geometrically) between linear and quadratic growth, 2^1.5: a linear one past a
  // step doubles, a quadratic one quadruples, and a busy machine's noise in one rung moves neither
  // across it as easily as across 3.
  const { rung, failure } = timeRung(shape, top.size * 2, reps);
  rungs.push(rung);
  return failure !== undefined || rung.ms / top.ms > 2 ** 1.5;
}

/**
 * The fewest rungs (8 to 64 KiB) a shape climbs before a rung over `climb`'s `budgetMs` ends its
 * climb: three doublings, each of which a quadratic parser makes four times slower.
 */
const BUDGETED_RUNGS = 4;

/**
 * Climbs one shape's ladder from 8 KiB up to `maxSize` and judges the growth over all rungs at
 * once (a fitted exponent), so one rung slowed by a busy neighbour does not fail a linear parser.
 * A rung whose single run exceeds {@link MAX_RUN_MS} fails at once. A fit over the limit is
 * believed only after every rung is timed again and, for a shape fast enough, after up to
 * {@link EXTRA_RUNGS} more doublings, and only when the top doubling alone still more than triples
 * the time. With `budgetMs`, a shape slow enough that a rung takes longer than that stops climbing
 * there once it has {@link BUDGETED_RUNGS} rungs: its growth is judged over the rungs it has (a
 * slow parser's rungs sit far above the noise floor, so four of them judge it well), and the
 * short form's time goes where the shapes are fast.
 */
export function climb(
  shape: Shape,
  maxSize: number,
  reps = 3,
  budgetMs = Number.POSITIVE_INFINITY,
): LadderResult {
  const rungs: Rung[] = [];
  for (let size = 8 * 1024; size <= maxSize; size *= 2) {
    const { rung, failure } = timeRung(shape, size, reps);
    rungs.push(rung);
    if (failure) return { name: shape.name, rungs, failure };
    if (rungs.length >= BUDGETED_RUNGS && rung.ms > budgetMs) break;
  }
  let slope = exponent(rungs);
  if (slope !== undefined && slope > MAX_EXPONENT) {
    // Every rung timed again (the best of both timings kept).
    for (const rung of rungs) rung.ms = Math.min(rung.ms, time(shape, shape.build(rung.size), reps + 2));
    slope = exponent(rungs);
  }
  // A fast shape has few rungs over the noise floor: with fewer than three it is not judged at all
  // (a quadratic at 18 ms for 128 KiB passed unseen), and with three, one rung slowed by a
  // collection landing in it (a step that moves with the heap's state, not with the input) can
  // decide the fit alone. Such a shape climbs further before it is judged: a superlinear parser
  // only grows clearer up there, a one-off step is diluted. A rung that could pass MAX_RUN_MS when
  // doubled ends the climb.
  for (let extra = 0; extra < EXTRA_RUNGS && (slope === undefined || slope > MAX_EXPONENT); extra++) {
    const last = rungs[rungs.length - 1]!;
    if (last.ms * 4 > MAX_RUN_MS) break;
    const { rung, failure } = timeRung(shape, last.size * 2, reps + 2);
    rungs.push(rung);
    if (failure) return { name: shape.name, rungs, failure };
    slope = exponent(rungs);
  }
  if (slope !== undefined && slope > MAX_EXPONENT && !persists(shape, rungs, reps + 2)) {
    // The fit was carried by one step lower down (a collection, a table growing past a size): the
    // top of the ladder grows linearly, which a superlinear parser never does.
    slope = undefined;
  }
  if (slope !== undefined && slope > MAX_EXPONENT) {
    return {
      name: shape.name,
      rungs,
      failure: `time grows as size^${slope.toFixed(2)} (doubling the input multiplies it by ${(2 ** slope).toFixed(1)}, over 3)`,
    };
  }
  return { name: shape.name, rungs };
}
