// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import { describe, expect, it } from "vitest";
import { exportSpec } from "./export-spec.js";
import { findSpecSecrets, withoutSecrets } from "./find-spec-secrets.js";
import { SPEC_TOKEN } from "./schema.js";
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
