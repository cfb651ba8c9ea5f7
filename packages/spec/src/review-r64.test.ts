// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import { describe, expect, it } from "vitest";
import { exportSpec } from "./export-spec.js";
import { commandLineSecrets, withoutArgSecrets } from "./find-spec-secrets.js";
import { withoutCommandLineSecrets } from "./index.js";
import { SPEC_TOKEN } from "./schema.js";
import type { AgentSpec } from "./types.js";

// fix168 (review r64s of fix166 and 2a91d5e): regressions in the display and the export.

/** A spec whose bundled server `srv` is given `line` as one argument: `srv --run <line>`. */
const asArg = (line: string): AgentSpec => ({
  spec: SPEC_TOKEN,
  bundle: { mcpServers: [{ name: "srv", command: "srv", args: ["--run", line] }] },
});

/** A spec whose bundled server `srv` has `line` as its `command`: a whole command line, pasted. */
const pasted = (line: string): AgentSpec => ({
  spec: SPEC_TOKEN,
  bundle: { mcpServers: [{ name: "srv", command: line }] },
});

/** The export's and the display's references, filled back with what they hid, give `line` byte for byte. */
function expectFilledBack(line: string): void {
  expect(commandLineSecrets(line, (text) => text)?.safe ?? line).toBe(line);
  expect(withoutCommandLineSecrets(line, (text) => text)).toBe(line);
}

const exportedArg = (line: string) => exportSpec(asArg(line)).bundle?.mcpServers?.[0]?.args?.[1];
const exportedCommand = (line: string) => exportSpec(pasted(line)).bundle?.mcpServers?.[0]?.command;

describe("many values written apart in one word (r64s #1)", () => {
  const conn = (k: number) => `srv Server=db${'";Password=x"y'.repeat(k)}`;
  const node = (k: number) => `node -e '${"process.env.TOKEN = '\\''x'\\''; ".repeat(k)}'`;

  it("hides each value as before", () => {
    expect(withoutCommandLineSecrets(conn(2))).toBe("srv 'Server=db;Password=${PASSWORD};Password=${PASSWORD}'");
    expect(exportedArg(conn(2))).toBe('srv Server=db";Password=${PASSWORD};Password=${PASSWORD_2}');
    expect(withoutArgSecrets(["--run", node(2)])).toEqual([
      "--run",
      "node -e 'process.env.TOKEN = ${PROCESS_ENV_TOKEN}; process.env.TOKEN = ${PROCESS_ENV_TOKEN}; '",
    ]);
    expect(exportedCommand(conn(2))).toBe("srv 'Server=db;Password=${PASSWORD};Password=${PASSWORD}'");
  });

  it("reads a word of 100,000 characters holding thousands of them in linear time", () => {
    const start = performance.now();
    exportedCommand(conn(7000));
    withoutCommandLineSecrets(conn(7000));
    withoutArgSecrets(["--run", node(3000)]);
    // A walk over the word for each value took about 12 s here; one walk for all, under 1 s.
    expect(performance.now() - start).toBeLessThan(5000);
  }, 60_000);
});
