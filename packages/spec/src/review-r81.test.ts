/// <reference types="node" />
import { readFileSync } from "node:fs";
import { Ajv2020 } from "ajv/dist/2020.js";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { exportSpec } from "./export-spec.js";
import { findSpecSecrets } from "./find-spec-secrets.js";
import { parseSpec } from "./parse-spec.js";
import { agentSpecJsonSchema, agentSpecSchema, SPEC_TOKEN } from "./schema.js";
import type { AgentSpec } from "./types.js";

// Review r81e: a JSON argument read twice, and the switch-off entries' hand-written schema branches.

/** A spec bundling one server whose args are `args`, as a host parses it. */
const withArgs = (...args: string[]): AgentSpec => {
  const { spec, errors } = parseSpec(
    { spec: SPEC_TOKEN, bundle: { mcpServers: [{ name: "s", command: "node", args }] } },
    { bundle: true },
  );
  expect(errors).toEqual([]);
  return spec as AgentSpec;
};
const exportedArgs = (spec: AgentSpec) => exportSpec(spec).bundle?.mcpServers?.[0]?.args ?? [];

describe("a credential in a JSON argument's key (r81e #1)", () => {
  // A JSON argument was read by its values, then, when they held nothing, read again whole as a
  // command line: a credential in a key was found only by that second reading, which rewrote the
  // argument into text that no longer parsed (the server, filled back, got another argument), and
  // missed it outright when a value had been flagged (`PASSWORD=X` as a key kept in clear).
  it.each([
    ['{"postgres://app:Zq7xyzw@db/app":{}}', "Zq7xyzw"],
    ['{"--api-key=Zq7xyzzy123":{},"x":1}', "Zq7xyzzy123"],
    ['{"ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8":"admin"}', "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"],
    ['{"PASSWORD=s3cr3tvalue":[1],"password":"hunter2hunter"}', "s3cr3tvalue"],
    ['--config={"export TOKEN=abcd1234":85822406,"token":"QJxyzzy1"}', "abcd1234"],
    ['{"mysql -uroot -pS3cretPw db":["a"], "auth": "Xyzzy123"}', "S3cretPw"],
  ])("%s: exported without it, and still the JSON it was", (arg, secret) => {
    const spec = withArgs("srv", arg);
    const [, exported = ""] = exportedArgs(spec);
    expect(exported).not.toContain(secret);
    const lead = /^--config=/.exec(exported)?.[0] ?? "";
    expect(arg.startsWith(lead)).toBe(true);
    // Still one line of JSON, each reference where a string or a number was (a bare `${NAME}` is a number's).
    expect(() =>
      JSON.parse(exported.slice(lead.length).replace(/(?<!")\$\{[A-Za-z_]\w*\}(?!")/g, "0")),
    ).not.toThrow();
    // Each reference the hints list is one the export writes (a URL's credentials are left out, not named).
    const hints = findSpecSecrets(spec);
    expect(hints.map((hint) => hint.path)).toContain("bundle.mcpServers[0].args[1]");
    for (const reference of hints.flatMap((hint) => hint.references ?? []))
      expect(exported).toContain(reference);
  });
});

describe("switch-off entries: the JSON Schema's hand-written branches agree with zod (r81e #2)", () => {
  const shipped = new Ajv2020({ strict: false }).compile(
    JSON.parse(readFileSync(new URL("../schema/agent.schema.json", import.meta.url), "utf8")),
  );
  const generated = new Ajv2020({ strict: false }).compile(agentSpecJsonSchema());
  // Each field absent, null (read as absent), a value zod takes, or one it refuses.
  const field = <T>(good: fc.Arbitrary<T>, bad: fc.Arbitrary<unknown>) =>
    fc.option(fc.oneof({ weight: 1, arbitrary: fc.constant(null) }, { weight: 3, arbitrary: good }, bad), {
      nil: undefined,
      freq: 2,
    });
  const enabled = field(fc.boolean(), fc.constantFrom("false", 0, "no"));
  const entry = (fields: Record<string, fc.Arbitrary<unknown>>) =>
    fc
      .record(fields, { requiredKeys: [] })
      .map((record) => Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)));
  const hookEntry = entry({
    id: fc.oneof(fc.constantFrom("audit", "greet"), fc.constant("")),
    events: field(fc.subarray(["sessionStart", "afterTurn"]), fc.constantFrom("afterTurn", ["later"])),
    server: field(fc.constant("log"), fc.constant("")),
    tool: field(fc.constant("write"), fc.constant("")),
    enabled,
  });
  const serverEntry = entry({
    name: fc.oneof(fc.constantFrom("github", "docs"), fc.constantFrom("", "  ")),
    type: field(fc.constantFrom("stdio", "http", "sse"), fc.constant("ws")),
    command: field(fc.constant("npx"), fc.constantFrom("", " ")),
    args: field(fc.constant(["-y", "x"]), fc.constant("x")),
    url: field(fc.constant("http://127.0.0.1:9000/mcp"), fc.constant("ftp://h/x")),
    enabled,
  });
  // A switch-off entry as written ({ id, enabled: false }), or nearly: its flag another value, a field beside it.
  const offHook = entry({
    id: fc.constantFrom("audit", ""),
    enabled,
    server: field(fc.constant("log"), fc.constant("")),
    events: fc.constantFrom(undefined, undefined, null, []),
  });
  const offServer = entry({
    name: fc.constantFrom("github", " "),
    enabled,
    type: field(fc.constantFrom("stdio", "http"), fc.constant("ws")),
    args: field(fc.constant(["x"]), fc.constant(1)),
    command: fc.constantFrom(undefined, undefined, null),
    url: fc.constantFrom(undefined, undefined, null),
  });
  const document = fc
    .record(
      {
        hooks: fc.array(fc.oneof(hookEntry, offHook), { maxLength: 2 }),
        mcpServers: fc.array(fc.oneof(serverEntry, offServer), { maxLength: 2 }),
      },
      { requiredKeys: [] },
    )
    .map(({ hooks, mcpServers }) => ({
      spec: SPEC_TOKEN,
      ...(hooks ? { hooks } : {}),
      ...(mcpServers ? { bundle: { mcpServers } } : {}),
    }));

  it("the shipped schema, the generated one and zod accept the same documents (fast-check)", () => {
    fc.assert(
      fc.property(document, (doc) => {
        const zod = agentSpecSchema.safeParse(doc).success;
        expect(generated(doc)).toBe(zod);
        expect(shipped(doc)).toBe(zod);
      }),
      propertyRuns(3000, { seed: 81 }),
    );
  });

  it("and parseSpec takes each such document the schemas accept without a warning", () => {
    fc.assert(
      fc.property(document, (doc) => {
        if (!shipped(doc)) return;
        const { errors, warnings } = parseSpec(doc, { bundle: true });
        expect([...errors, ...warnings].filter((issue) => issue.code !== "duplicate-id").map(String)).toEqual(
          [],
        );
      }),
      propertyRuns(1500, { seed: 82 }),
    );
  });

  it("is asked about switch-off entries both ways", () => {
    const alone = (key: "hooks" | "mcpServers", entry: Record<string, unknown>) =>
      shipped(
        key === "hooks"
          ? { spec: SPEC_TOKEN, hooks: [entry] }
          : { spec: SPEC_TOKEN, bundle: { mcpServers: [entry] } },
      );
    const hooks = fc.sample(offHook, { numRuns: 300, seed: 83 }).map((entry) => alone("hooks", entry));
    const servers = fc
      .sample(offServer, { numRuns: 300, seed: 84 })
      .map((entry) => alone("mcpServers", entry));
    // Taken (enabled: false and nothing wrong beside it) and refused (enabled true, null or "false").
    for (const taken of [hooks, servers]) {
      expect(taken.filter(Boolean).length).toBeGreaterThan(5);
      expect(taken.filter((ok) => !ok).length).toBeGreaterThan(30);
    }
  });
});
