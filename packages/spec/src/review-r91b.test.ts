// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import { describe, expect, it } from "vitest";
import { exportSpec } from "./export-spec.js";
import { findSpecSecrets, withoutSecrets } from "./find-spec-secrets.js";
import { SPEC_TOKEN } from "./schema.js";
import { eightAgainstOne } from "./test-support/linear-ratio.js";
import type { AgentSpec } from "./types.js";

// r91j. r90e hid a one-line `password: hunter2` on every line of a document value; r91d's document
// reader then skipped every line of a block scalar, and under a name that tells nothing
// (a Kubernetes ConfigMap's `application.yml: |`, a `description: |`) those lines were read by no
// data reader at all: the file inside the block showed its password in clear again.

const configMap = [
  "apiVersion: v1",
  "kind: ConfigMap",
  "data:",
  "  application.yml: |",
  "    spring:",
  "      datasource:",
  "        url: jdbc:postgresql://db/app",
  "        password: hunter2",
  "  config.json: |",
  '    {"api_key": "sk-live-abc", "mode": "prod"}',
  "",
].join("\n");

describe("a one-line pair inside a block scalar under a name that tells nothing", () => {
  it("is taken out, the block's other lines kept", () => {
    expect(withoutSecrets(configMap, "CONFIG")).toBe(
      configMap.replace("hunter2", "${PASSWORD}").replace("sk-live-abc", "${API_KEY}"),
    );
    expect(withoutSecrets("description: |\n  password: hunter2\n  Ask Bob.\nname: x", "CONFIG")).toBe(
      "description: |\n  password: ${PASSWORD}\n  Ask Bob.\nname: x",
    );
  });

  it("is flagged in an env value and an extraBody string, and exported as references", () => {
    const spec: AgentSpec = {
      spec: SPEC_TOKEN,
      model: { extraBody: { config: configMap } },
      bundle: { mcpServers: [{ name: "srv", command: "srv", env: { CONFIG: configMap } }] },
    };
    const exported = exportSpec(spec);
    expect(findSpecSecrets(spec).map((hint) => hint.path)).toEqual(
      expect.arrayContaining(["model.extraBody.config", "bundle.mcpServers[0].env.CONFIG"]),
    );
    expect(exported.model?.extraBody?.config).toBe(withoutSecrets(configMap, "config"));
  });

  it("keeps a block of prose that names no credential byte for byte", () => {
    const prose = "notes: |\n  The token: is on the card.\n  key words: a b c\nname: x\n";
    expect(withoutSecrets(prose, "CONFIG")).toBe(prose);
  });
});

// r91j. The document reader's "linear" held in lines but not within a line: a line of blanks then a
// word (a prose line, a value `a<blanks>b`) cost its length squared in two patterns, up to the 4,096
// characters a line is read to: 400 such lines (1.6 MB) took 8 to 12 s, where r90 took 0.1 s.
describe("a document of long lines of blanks is read in time linear in each line's length", () => {
  const doc = (blanks: number) =>
    Array.from({ length: 12 }, (_, i) =>
      i % 3 === 0
        ? `${" ".repeat(blanks)}x!`
        : i % 3 === 1
          ? `notes: a${"\t".repeat(blanks)}b`
          : `API_KEY=a${" ".repeat(blanks)}b`,
    ).join("\n");

  it("eight times longer lines cost about eight times as much, not sixty-four", () => {
    const ratio = eightAgainstOne((value) => withoutSecrets(value, "CONFIG"), doc(500), doc(4000));
    expect(ratio).toBeLessThan(3);
  });
});

// r91j. A line's reading left its `block` unset, so a polluted `Object.prototype.block` (as some code
// in the host's process may set one) started a block on every line: a document naming no credential
// lost every line after the first to one `${PASSWORD}`.
describe("a document under a polluted Object.prototype.block", () => {
  it("is read as without it", () => {
    const proto = Object.prototype as unknown as Record<string, unknown>;
    const text = "host: db\nuser: bob\nport: 5432\n";
    proto.block = { column: -1, name: "password" };
    let read: string;
    try {
      read = withoutSecrets(text, "CONFIG");
    } finally {
      delete proto.block;
    }
    expect(read).toBe(text);
  });
});
