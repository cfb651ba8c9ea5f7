/// <reference types="node" />
// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import { readFileSync } from "node:fs";
import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { exportSpec } from "./export-spec.js";
import { parseSpec } from "./parse-spec.js";
import { resolveAgentSpec } from "./resolve-agent-spec.js";
import { SPEC_TOKEN } from "./schema.js";

// Review r79a: the document side (parse, layer, export).

/** The shipped JSON Schema, as an editor reads it. */
const validate = new Ajv2020({ strict: false }).compile(
  JSON.parse(readFileSync(new URL("../schema/agent.schema.json", import.meta.url), "utf8")),
);

describe("an extraBody __proto__ key (r79a #1)", () => {
  // As JSON text gives it: an own key. Resolved, it reached @loopwright/negotiate's buildBody,
  // which refuses a config whose extraBody holds one, so a document that parsed without a word
  // failed every request of the run.
  const text = `{
    "spec": "${SPEC_TOKEN}",
    "model": { "name": "m", "extraBody": { "__proto__": { "top_k": 5 }, "min_p": 0.1 } },
    "tasks": { "title": { "extraBody": { "__proto__": 1, "top_k": 2 } } }
  }`;

  it("is dropped with a warning naming it, the rest of the body kept", () => {
    const { spec, warnings } = parseSpec(JSON.parse(text));
    expect(warnings.map(String)).toEqual([
      "model.extraBody.__proto__: is not an accepted name (a request body cannot carry a __proto__ field); dropped.",
      "tasks.title.extraBody.__proto__: is not an accepted name (a request body cannot carry a __proto__ field); dropped.",
    ]);
    const config = resolveAgentSpec([spec as NonNullable<typeof spec>]);
    expect(Object.keys(config.extraBody ?? {})).toEqual(["min_p"]);
    expect(Object.keys(config.tasks.title?.extraBody ?? {})).toEqual(["top_k"]);
  });

  it("is refused by the JSON Schema too, and kept deeper inside a field's value", () => {
    expect(validate(JSON.parse(text))).toBe(false);
    const nested = JSON.parse(
      `{ "spec": "${SPEC_TOKEN}", "model": { "extraBody": { "chat_template_kwargs": { "__proto__": 1 } } } }`,
    );
    expect(validate(nested)).toBe(true);
    const { spec, warnings } = parseSpec(nested);
    expect(warnings).toEqual([]);
    expect(JSON.stringify(exportSpec(spec as NonNullable<typeof spec>).model)).toBe(
      '{"extraBody":{"chat_template_kwargs":{"__proto__":1}}}',
    );
  });
});

describe("what a host connecting the bundled servers refuses (r79a #2, #3)", () => {
  // tools-mcp's mcpServers refuses the whole list for one such entry ("a server needs a non-empty
  // name", "not an absolute URL"), and the client refuses such a baseUrl on its first request, where
  // parseSpec kept each without a word.
  const parsed = (document: Record<string, unknown>) =>
    parseSpec({ spec: SPEC_TOKEN, ...document }, { bundle: true });

  it("drops a bundled server whose name or command is only blanks, naming the field", () => {
    const document = {
      bundle: {
        mcpServers: [
          { name: "  ", command: "npx" },
          { name: "a", command: " \t" },
          { name: "b", command: "npx" },
        ],
      },
    };
    const { spec, warnings } = parsed(document);
    expect(warnings.map((warning) => `${warning.path} ${warning.code}`)).toEqual([
      "bundle.mcpServers[0].name invalid-value",
      "bundle.mcpServers[0] incomplete",
      "bundle.mcpServers[1].command invalid-value",
      "bundle.mcpServers[1] incomplete",
    ]);
    expect(String(warnings[0])).toContain("expected a name of 1 to 200 characters, not only blanks");
    expect(spec?.bundle?.mcpServers).toEqual([{ name: "b", command: "npx" }]);
    expect(validate({ spec: SPEC_TOKEN, ...document })).toBe(false);
    expect(validate({ spec: SPEC_TOKEN, bundle: { mcpServers: [{ name: " b ", command: " npx" }] } })).toBe(
      true,
    );
  });

  it("drops a URL the URL parser does not read: a port past 65535, a ^ or | in the host", () => {
    for (const url of [
      "http://127.0.0.1:99999/v1",
      "http://a^b/v1",
      "https://a|b.example/v1",
      "http://[::1/v1",
    ]) {
      const { spec, warnings } = parsed({
        model: { endpoint: { baseUrl: url } },
        tasks: { title: { model: "t", endpoint: { baseUrl: url } } },
        bundle: { mcpServers: [{ name: "web", url }] },
      });
      expect(warnings.map((warning) => warning.path)).toEqual([
        "model.endpoint.baseUrl",
        "tasks.title.endpoint.baseUrl",
        "tasks.title.endpoint",
        "bundle.mcpServers[0].url",
        "bundle.mcpServers[0]",
      ]);
      expect(String(warnings[0])).toContain("expected an absolute http(s) URL, got a string");
      expect(resolveAgentSpec([spec as NonNullable<typeof spec>])).toMatchObject({
        baseUrl: "",
        tasks: { title: { model: "t" } },
      });
    }
  });

  it("keeps a URL holding a reference a host fills before it reads it, and every URL the parser reads", () => {
    const urls = [
      "http://h:${PORT}/mcp",
      "http://${HOST}/mcp",
      "http://[::1]:8080/v1",
      "https://xn--bcher-kva.example/v1",
    ];
    for (const url of urls) {
      const { warnings } = parsed({
        model: { endpoint: { baseUrl: url } },
        bundle: { mcpServers: [{ name: "web", url }] },
      });
      expect(warnings).toEqual([]);
    }
  });
});

describe("a requires entry quoted in an error (r79a #4)", () => {
  const said = (entry: string) => String(parseSpec({ spec: SPEC_TOKEN, requires: [entry] }).errors[0]);

  it("is cut between characters, never between the halves of an emoji", () => {
    const message = said(`${"a".repeat(59)}😀 and more`);
    expect(message.isWellFormed()).toBe(true);
    expect(message).toBe(
      `requires[0]: this host does not understand "${"a".repeat(59)}…", so it cannot run the agent as meant.`,
    );
    // A path quoting a field name is cut the same way.
    const { warnings } = parseSpec({ spec: SPEC_TOKEN, model: { [`${"a".repeat(59)}😀x`]: 1 } });
    expect(warnings[0]?.path).toBe(`model["${"a".repeat(59)}…"]`);
  });

  it("has a line break or a lone half of a pair escaped, so a log line stays one line", () => {
    expect(said("x-host.memory\nERROR forged line")).toBe(
      'requires[0]: this host does not understand "x-host.memory\\nERROR forged line", so it cannot run the agent as meant.',
    );
    expect(said("x-\uD800").isWellFormed()).toBe(true);
  });
});

describe("a hole in a list built in code (r79a #5)", () => {
  it("is dropped with a warning naming its index, as null is, never silently", () => {
    // biome-ignore lint/suspicious/noSparseArray: the hole is the case.
    const servers = ["a", , "b"];
    const { spec, warnings } = parseSpec({
      spec: SPEC_TOKEN,
      tools: { servers },
      prompt: [undefined, { id: "p", text: "t" }],
    });
    expect(warnings.map(String)).toEqual([
      "tools.servers[1]: is empty; dropped.",
      "prompt[0]: is empty; dropped.",
    ]);
    expect(spec?.tools?.servers).toEqual(["a", "b"]);
  });

  it("says a run of holes once, however long", () => {
    const servers: string[] = new Array(10_000_000);
    servers[5] = "a";
    const { spec, warnings } = parseSpec({ spec: SPEC_TOKEN, tools: { servers } });
    expect(warnings.map(String)).toEqual([
      "tools.servers[0]: is empty, and so are the 4 after it; dropped.",
      "tools.servers[6]: is empty, and so are the 9999993 after it; dropped.",
    ]);
    expect(spec?.tools?.servers).toEqual(["a"]);
  });
});

describe("an entry written only to switch one off (r79a #6)", () => {
  // r80e made the short form ({ name, enabled: false }) valid (review-r80.test.ts); a switch-off
  // entry still dropped for another fault says it switches nothing off.
  it("says, when it is dropped for a fault, that it switches nothing off", () => {
    const { warnings } = parseSpec(
      {
        spec: SPEC_TOKEN,
        bundle: { mcpServers: [{ name: "github", command: "x", url: "http://h/", enabled: false }] },
      },
      { bundle: true },
    );
    expect(warnings.map(String)).toEqual([
      "bundle.mcpServers[0]: a bundled server needs exactly one of command (stdio) or url (http); dropped whole, so it switches nothing off: a weaker layer's entry of that name stays on (its name and enabled: false are enough).",
    ]);
    // An entry that is not a switch-off is dropped as before.
    expect(String(parseSpec({ spec: SPEC_TOKEN, hooks: [{ id: "a" }] }).warnings[0])).toBe(
      "hooks[0]: events is missing; dropped whole.",
    );
  });
});

describe("a key pasted as a name where the document takes any name (r79a #7)", () => {
  // findSpecSecrets reads values, not names, so exportSpec handed such a document on with the key
  // in clear: a task named ghp_…, an extraBody field named sk-…, at any depth.
  const github = "ghp_abcdefghijklmnopqrstuvwxyz0123";
  const openai = "sk-proj-abcdefghijklmnopqrstuvwx";

  it("is dropped with a credential warning that never quotes it, and never reaches an export", () => {
    const { spec, warnings } = parseSpec(
      {
        spec: SPEC_TOKEN,
        model: { extraBody: { [openai]: true, top_k: 5, kwargs: { [github]: 1 } } },
        tasks: { [github]: { model: "m" }, title: { model: "t" } },
        bundle: { mcpServers: [{ name: "s", command: "srv", env: { [openai]: "1", DEBUG: "1" } }] },
      },
      { bundle: true },
    );
    expect(warnings.map((warning) => `${warning.path} ${warning.code}`)).toEqual([
      'model.extraBody["${SECRET}"] credential',
      "model.extraBody.kwargs credential",
      'tasks["${SECRET}"] credential',
      'bundle.mcpServers[0].env["${SECRET}"] credential',
    ]);
    const said = warnings.join("\n");
    expect(said).not.toContain("abcdefghijklmnop");
    expect(said).toContain("a document never carries a credential");
    const exported = JSON.stringify(exportSpec(spec as NonNullable<typeof spec>));
    expect(exported).not.toContain("abcdefghijklmnop");
    expect(exported).toBe(
      `{"spec":"${SPEC_TOKEN}","model":{"extraBody":{"top_k":5}},"tasks":{"title":{"model":"t"}},"bundle":{"mcpServers":[{"name":"s","command":"srv"}]}}`,
    );
  });

  it("keeps a name that is no key: a reference, a short or plain one", () => {
    const { warnings } = parseSpec({
      spec: SPEC_TOKEN,
      model: {
        extraBody: { "${SECRET}": 1, chat_template_kwargs: { enable_thinking: false }, "sk-short": 2 },
      },
      tasks: { ghp_title: { model: "m" } },
    });
    expect(warnings).toEqual([]);
  });
});
