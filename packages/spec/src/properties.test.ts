import { Ajv2020 } from "ajv/dist/2020.js";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import { exportSpec } from "./export-spec.js";
import { findSpecSecrets } from "./find-spec-secrets.js";
import { parseSpec } from "./parse-spec.js";
import { resolveAgentSpec } from "./resolve-agent-spec.js";
import { agentSpecJsonSchema, SPEC_TOKEN } from "./schema.js";
import type { AgentSpec } from "./types.js";

// Documents that are mostly right: each field is usually a plausible value, sometimes a wrong
// one, sometimes null, so the parser's keep, drop and refuse paths are all exercised.
const leafJunk = fc.oneof(fc.string({ maxLength: 8 }), fc.double(), fc.integer(), fc.boolean());
const maybe = <T>(arb: fc.Arbitrary<T>, junk: fc.Arbitrary<unknown> = leafJunk) =>
  fc.oneof(
    { weight: 6, arbitrary: arb as fc.Arbitrary<unknown> },
    { weight: 1, arbitrary: junk },
    { weight: 1, arbitrary: fc.constant(null) },
  );
const rarely = <T>(arb: fc.Arbitrary<T>) =>
  fc.oneof(
    { weight: 12, arbitrary: arb as fc.Arbitrary<unknown> },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 1 }) },
  );
const optional = <T extends Record<string, fc.Arbitrary<unknown>>>(fields: T) =>
  fc.record(fields, { requiredKeys: [] });

const text = fc.string({ maxLength: 12 });
const name = fc.oneof(
  fc.constantFrom("title", "compaction", "toolSelect", "a-b_c"),
  fc.string({ maxLength: 6 }),
);
const effort = fc.constantFrom("off", "none", "minimal", "low", "medium", "high", "xhigh", "max", "extreme");
const url = fc.oneof(
  fc.webUrl({ withQueryParameters: true, withFragments: true }),
  fc.constantFrom("http://127.0.0.1:8080/v1", "https://u:p@h.example/v1?token=x", `\${BASE_URL}`, "ftp://x"),
);
const seconds = fc.oneof(fc.integer({ min: -3, max: 600 }), fc.double({ min: -1, max: 1e6, noNaN: true }));
const count = fc.oneof(fc.integer({ min: -3, max: 100_000 }), fc.double({ min: -1, max: 10, noNaN: true }));
const body = fc.dictionary(
  fc.oneof(
    fc.constantFrom("top_k", "min_p", "api_key", "messages", "__proto__"),
    fc.string({ maxLength: 6 }),
  ),
  fc.jsonValue({ maxDepth: 2 }),
  { maxKeys: 4 },
);
const endpointFields = {
  baseUrl: maybe(url),
  requestTimeoutSeconds: maybe(seconds),
  firstTokenSeconds: maybe(seconds),
  apiKey: fc.constant("sk-should-never-survive"),
};
const modelSettings = {
  maxTokens: maybe(count),
  temperature: maybe(fc.double({ min: -0.5, max: 2.5, noNaN: true })),
  reasoningEffort: maybe(effort),
  extraBody: maybe(body),
};
const stringList = fc.array(maybe(fc.string({ maxLength: 10 })), { maxLength: 4 });
// Strings that carry a credential in each way findSpecSecrets can see one, mixed with plain ones.
const secretish = fc.oneof(
  text,
  fc.constantFrom(
    "--api-key",
    "--token",
    "-e",
    "sk-abcdefghijklmnopqrstuvwx",
    `--token=\${T}`,
    "--token=abc",
    "--url=https://u:p@h.example/x?key=1",
    "GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz",
    "Authorization: Bearer abcdefgh12",
    "https://h.example/p?access_token=z&x=1",
    "see sk-proj-abcdefghijklmnopqrstuvwx and ghp_abcdefghijklmnopqrstuvwxyz",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
    // A literal default, read at run time only while its variable is set (and those that are not one).
    `\${DB_PASSWORD:-Tr0ub4dor3x}`,
    `--token=\${T:-hunter2x9}`,
    `Authorization: Bearer \${TOKEN:-sk-abcdefghijklmnopqrstuvwx}`,
    `\${GH-ghp_abcdefghijklmnopqrstuvwxyz}`,
    `\${DB_PASSWORD:-\${PASSWORD}}`,
    `\${T:-$OTHER}`,
    `\${PORT:-8080}`,
  ),
  fc
    .tuple(fc.constantFrom("sk-", "ghp_", "hf_", "gsk_"), fc.stringMatching(/^[A-Za-z0-9]{20,30}$/))
    .map(([lead, tail]) => lead + tail),
);
const secretUrl = fc.oneof(
  url,
  fc
    .tuple(
      fc.constantFrom("http://", "https://"),
      fc.constantFrom("", "u:p@", "tok@", "${U}:${P}@", "sk-abcdefghijklmnopqrstuvwx@"),
      fc.domain(),
      fc.constantFrom("", "/v1", "/ghp_abcdefghijklmnopqrstuvwxyz"),
      fc.constantFrom("", "?api_key=x", "?a=1&token=y&b=${B}", "?secret=${S}", "?Auth%6Fr=z"),
    )
    .map((parts) => parts.join("")),
);

const server = optional({
  name: maybe(name),
  type: maybe(fc.constantFrom("stdio", "http", "sse")),
  command: maybe(fc.constantFrom("npx", "uvx", "")),
  args: rarely(
    fc.array(fc.oneof(text, fc.constantFrom("--api-key", "sk-abcdefghijklmnopqrstuvwx", `--token=\${T}`)), {
      maxLength: 4,
    }),
  ),
  env: rarely(fc.dictionary(fc.constantFrom("API_KEY", "DEBUG", "PATH"), fc.string({ maxLength: 8 }))),
  headers: rarely(fc.dictionary(fc.constantFrom("Authorization", "X-Team"), fc.string({ maxLength: 8 }))),
  url: maybe(url),
  cwd: maybe(text),
  enabled: maybe(fc.boolean()),
});

// A command pasted as a whole command line: its words secretish, some of them quoted.
const commandLine = fc
  .array(
    fc.oneof(
      secretish,
      secretish.map((word) => `"${word.replace(/["\\]/g, "\\$&")}"`),
      secretish.filter((word) => !word.includes("'")).map((word) => `'${word}'`),
    ),
    { maxLength: 5 },
  )
  .map((words) => ["npx", ...words].join(" "));
const secretServer = fc.record({
  name,
  command: fc.oneof(fc.constant("npx"), commandLine),
  args: fc.array(secretish, { maxLength: 6 }),
  env: fc.dictionary(fc.constantFrom("API_KEY", "DEBUG"), secretish, { maxKeys: 2 }),
});
const secretUrlServer = fc.record({ name, url: secretUrl });
const secretBody = fc.dictionary(
  fc.constantFrom("api_key", "top_k", "auth", "nested"),
  fc.oneof(
    secretish,
    fc.array(secretish, { maxLength: 3 }),
    fc.dictionary(fc.constantFrom("token", "x"), secretish),
  ),
  { maxKeys: 3 },
);
// Free text with credentials pasted into it, and identifiers some of which are keys (two ids must
// stay two ids once redacted).
const secretProse = fc
  .array(
    fc.oneof(
      secretish,
      fc.constantFrom(
        "then",
        "key:",
        "Authorization:",
        "password:",
        "hunter2pass",
        "&token=abc123xyz789",
        "postgres://admin:hunter2pass@db/app",
        "(page=2&api_key=Q1w2e3r4t5).",
        "`--api-key",
        "9f8e7d6c5b4a3210fedcba98`",
      ),
    ),
    { maxLength: 6 },
  )
  .map((words) => words.join(" "));
const secretId = fc.oneof(name, secretish);
const secretDocument = fc.record({
  spec: fc.constant(SPEC_TOKEN),
  description: secretProse,
  prompt: fc.array(fc.record({ id: secretId, text: secretProse }), { maxLength: 3 }),
  tools: fc.record({ servers: fc.array(secretId, { maxLength: 2 }) }),
  hooks: fc.array(fc.record({ id: secretId, events: fc.constant(["beforeTurn"]), server: secretId }), {
    maxLength: 2,
  }),
  model: fc.record({ endpoint: fc.record({ baseUrl: secretUrl }), extraBody: secretBody }),
  tasks: fc.dictionary(
    fc.constantFrom("title", "toolSelect"),
    fc.record({ endpoint: fc.record({ baseUrl: secretUrl }), extraBody: secretBody }),
    { maxKeys: 2 },
  ),
  bundle: fc.record({ mcpServers: fc.array(fc.oneof(secretServer, secretUrlServer), { maxLength: 3 }) }),
});

const documentArb = optional({
  spec: fc.oneof(
    { weight: 10, arbitrary: fc.constantFrom(SPEC_TOKEN, "loopwright.agent/1.3") },
    { weight: 1, arbitrary: fc.constantFrom("loopwright.agent/2", "x", "") },
  ),
  $schema: maybe(text),
  requires: rarely(
    fc.array(fc.constantFrom("hooks", "tasks", "bundle", "tools.discovery"), { maxLength: 2 }),
  ),
  name: maybe(text),
  description: maybe(text),
  model: rarely(
    optional({
      name: maybe(text),
      endpoint: rarely(optional(endpointFields)),
      contextLength: maybe(count),
      ...modelSettings,
    }),
  ),
  prompt: rarely(fc.array(rarely(optional({ id: maybe(name), text: maybe(text) })), { maxLength: 4 })),
  tools: rarely(
    optional({
      servers: rarely(stringList),
      discovery: maybe(fc.constantFrom("eager", "ondemand", "proxy", "lazy")),
      preselect: rarely(
        optional({
          enabled: maybe(fc.boolean()),
          keywords: maybe(fc.boolean()),
          routing: maybe(fc.constantFrom("exclusive", "append")),
        }),
      ),
      parallel: maybe(fc.boolean()),
      order: maybe(fc.constantFrom("name", "given")),
    }),
  ),
  hooks: rarely(
    fc.array(
      rarely(
        optional({
          id: maybe(name),
          events: rarely(
            fc.array(maybe(fc.constantFrom("beforeTurn", "afterTurn", "sessionStart")), { maxLength: 3 }),
          ),
          server: maybe(text),
          maxTokens: maybe(count),
          enabled: maybe(fc.boolean()),
        }),
      ),
      { maxLength: 3 },
    ),
  ),
  tasks: rarely(
    fc.dictionary(
      name,
      rarely(optional({ model: maybe(text), endpoint: rarely(optional(endpointFields)), ...modelSettings })),
      {
        maxKeys: 3,
      },
    ),
  ),
  limits: rarely(
    optional({
      maxToolIterations: maybe(count),
      maxRetries: maybe(count),
      maxContinuations: maybe(count),
      loadingTimeoutSeconds: maybe(seconds),
      compact: maybe(fc.boolean()),
    }),
  ),
  bundle: rarely(optional({ mcpServers: rarely(fc.array(rarely(server), { maxLength: 3 })) })),
  colour: maybe(text),
});

/** The spec with what exportSpec is documented to remove taken out, written independently of it. */
function withoutSecrets(spec: AgentSpec): AgentSpec {
  const copy = JSON.parse(JSON.stringify(spec)) as AgentSpec;
  for (const server of copy.bundle?.mcpServers ?? []) {
    delete server.env;
    delete server.headers;
  }
  return copy;
}

const RUNS = propertyRuns(400);

// Generated documents by the thousand: seconds alone, more on a busy machine (not a timing assert).
describe("parseSpec never throws", { timeout: propertyTimeout(60_000) }, () => {
  it("on any JSON value", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.boolean(), (value, bundle) => {
        const result = parseSpec(value, { bundle });
        expect(result.spec === undefined).toBe(result.errors.length > 0);
      }),
      RUNS,
    );
  });

  it("on any value at all", () => {
    fc.assert(
      fc.property(fc.anything({ withNullPrototype: true, withObjectString: true }), (value) => {
        const result = parseSpec(value, { bundle: true });
        expect(result.spec === undefined).toBe(result.errors.length > 0);
      }),
      RUNS,
    );
  });

  it("on any value placed anywhere in an otherwise valid document", () => {
    fc.assert(
      fc.property(documentArb, fc.anything(), fc.boolean(), (document, anything, bundle) => {
        const result = parseSpec({ ...document, model: anything }, { bundle });
        expect(result.spec === undefined).toBe(result.errors.length > 0);
        parseSpec({ ...document, extraneous: anything, tasks: { title: { extraBody: { x: anything } } } });
      }),
      RUNS,
    );
  });
});

describe("what parseSpec accepts survives export and re-parse", { timeout: propertyTimeout(60_000) }, () => {
  it("accepts enough generated documents for the properties below to mean something", () => {
    const samples = fc.sample(documentArb, { numRuns: 400, seed: 7 });
    const accepted = samples.filter((document) => parseSpec(document, { bundle: true }).spec !== undefined);
    expect(accepted.length).toBeGreaterThan(80);
  });

  it("exportSpec's output always parses, with nothing refused or dropped", () => {
    fc.assert(
      fc.property(documentArb, fc.boolean(), (document, bundle) => {
        const { spec } = parseSpec(document, { bundle });
        if (!spec) return;
        const exported = exportSpec(spec);
        const again = parseSpec(JSON.parse(JSON.stringify(exported)), {
          bundle: true,
          features: spec.requires,
        });
        expect(again.errors).toEqual([]);
        expect(again.warnings).toEqual([]);
        expect(again.spec).toEqual(exported);
      }),
      RUNS,
    );
  });

  it("parseSpec after exportSpec keeps every field but bundled servers' env and headers when nothing else is flagged", () => {
    fc.assert(
      fc.property(documentArb, (document) => {
        const { spec } = parseSpec(document, { bundle: true });
        if (!spec || findSpecSecrets(withoutSecrets(spec)).length > 0) return;
        const again = parseSpec(JSON.parse(JSON.stringify(exportSpec(spec))), { bundle: true });
        expect(again.spec).toEqual(withoutSecrets(spec));
      }),
      RUNS,
    );
  });

  it("exportSpec leaves nothing findSpecSecrets can see, in any generated document", () => {
    fc.assert(
      fc.property(fc.oneof(documentArb, secretDocument), (document) => {
        const { spec } = parseSpec(document, { bundle: true });
        if (!spec) return;
        const exported = exportSpec(spec);
        expect(findSpecSecrets(exported)).toEqual([]);
        // A literal default's word (`${DB_PASSWORD:-Tr0ub4dor3x}`) is not left in a bundled server's args.
        const args = JSON.stringify((exported.bundle?.mcpServers ?? []).map((server) => server.args));
        for (const word of [
          "Tr0ub4dor3x",
          "hunter2x9",
          "sk-abcdefghijklmnopqrstuvwx",
          "ghp_abcdefghijklmnop",
        ])
          expect(args).not.toContain(word);
        const again = parseSpec(JSON.parse(JSON.stringify(exported)), {
          bundle: true,
          features: spec.requires,
        });
        expect(again.warnings).toEqual([]);
        expect(again.spec).toEqual(exported);
      }),
      RUNS,
    );
  });

  it("the secret-bearing documents are accepted and flagged often enough to mean something", () => {
    const flagged = fc
      .sample(secretDocument, { numRuns: 200, seed: 11 })
      .map((document) => parseSpec(document, { bundle: true }).spec)
      .filter((spec): spec is AgentSpec => spec !== undefined && findSpecSecrets(spec).length > 0);
    expect(flagged.length).toBeGreaterThan(150);
  });

  it("a parsed spec parses to itself (parsing is idempotent)", () => {
    fc.assert(
      fc.property(documentArb, (document) => {
        const { spec } = parseSpec(document, { bundle: true });
        if (!spec) return;
        const again = parseSpec(spec, { bundle: true });
        expect(again.warnings).toEqual([]);
        expect(again.spec).toEqual(spec);
      }),
      RUNS,
    );
  });

  it("never keeps a key on an endpoint, and always resolves apiKey to the empty string", () => {
    fc.assert(
      fc.property(fc.array(documentArb, { maxLength: 3 }), (documents) => {
        const specs = documents
          .map((document) => parseSpec(document, { bundle: true }).spec)
          .filter((spec): spec is AgentSpec => spec !== undefined);
        expect(JSON.stringify(specs)).not.toContain("sk-should-never-survive");
        const config = resolveAgentSpec(specs);
        expect(config.apiKey).toBe("");
        for (const task of Object.values(config.tasks)) {
          if (task.endpoint) expect(task.endpoint.apiKey).toBe("");
        }
      }),
      RUNS,
    );
  });

  it("findSpecSecrets reads any parsed spec and names only places that hold a string", () => {
    fc.assert(
      fc.property(documentArb, (document) => {
        const { spec } = parseSpec(document, { bundle: true });
        if (!spec) return;
        for (const hint of findSpecSecrets(spec)) expect(typeof valueAt(spec, hint.path)).toBe("string");
      }),
      RUNS,
    );
  });
});

describe("the JSON Schema agrees with parseSpec", { timeout: propertyTimeout(60_000) }, () => {
  const validate = new Ajv2020({ strict: false }).compile(agentSpecJsonSchema());
  // A generated document, or what parseSpec kept of one (which parseSpec takes cleanly), as JSON
  // text reads it (no NaN, no undefined); a side task sometimes given as null, read as absent.
  const jsonDocument = fc
    .tuple(documentArb, fc.boolean(), fc.boolean())
    .map(([generated, kept, nullTask]) => {
      const chosen = (kept && parseSpec(generated, { bundle: true }).spec) || generated;
      const document = JSON.parse(JSON.stringify(chosen)) as Record<string, unknown>;
      if (nullTask && typeof document.tasks === "object" && document.tasks !== null)
        (document.tasks as Record<string, unknown>).later = null;
      return document;
    });
  // What the schema cannot say: that two prompt entries, hooks or servers share an id.
  const clean = (document: unknown) => {
    const { errors, warnings } = parseSpec(document, { bundle: true });
    return errors.length === 0 && warnings.every((warning) => warning.code === "duplicate-id");
  };

  it("accepts a document exactly when parseSpec takes it without an error or a warning", () => {
    fc.assert(
      fc.property(jsonDocument, (document) => {
        expect(validate(document)).toBe(clean(document));
      }),
      RUNS,
    );
  });

  it("is asked about enough documents it accepts for that to mean something", () => {
    const samples = fc.sample(jsonDocument, { numRuns: 400, seed: 7 });
    expect(samples.filter((document) => validate(document)).length).toBeGreaterThan(40);
  });
});

/** Reads a path such as `a.b[2]["c d"]` back out of a value. */
function valueAt(root: unknown, path: string): unknown {
  let current = root;
  const steps = path.matchAll(/(?:^|\.)([A-Za-z_$][\w$]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]/g);
  for (const [, word, index, quoted] of steps) {
    const key = word ?? (index !== undefined ? Number(index) : JSON.parse(quoted as string));
    current = (current as Record<string | number, unknown>)[key];
  }
  return current;
}
