// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { AgentSpecError } from "./errors.js";
import { exportSpec } from "./export-spec.js";
import { findSpecSecrets, withoutArgSecrets, withoutSecrets } from "./find-spec-secrets.js";
import { child } from "./json.js";
import { parseSpec } from "./parse-spec.js";
import { resolveAgentSpec } from "./resolve-agent-spec.js";
import { SPEC_TOKEN } from "./schema.js";
import { eightAgainstOne } from "./test-support/linear-ratio.js";
import type { AgentSpec } from "./types.js";

// r90e. Two limits carried for several rounds, and a round-trip model of the whole package.
//
// 1. A second `withoutSecrets` (or `withoutArgSecrets`) pass over its own output could hide more, on
//    hostile fragments with a quote or `$(` left open: `user=a&password="X --x` was written
//    `user=a&password="${PASSWORD}`, whose quote, read again, is text before a reference and was
//    hidden too (`${PASSWORD}${PASSWORD}`); `$(TOKEN=a?token=user=a&password=X` had the pair's value
//    hidden, and read again, `TOKEN=`'s. About 20 of 20,000 generated values. Both now read what they
//    wrote again (a few times at most, so linear) and return a fixed point.
// 2. A `password: X` line inside a multi-line value (a whole YAML or JSON document in one env
//    variable or `extraBody` string) stayed in clear, where the same line alone was hidden: each
//    line of such a value is now read as a data line too.

const RUNS = Number(process.env.R90_SPEC_RUNS ?? 300);
const SEED = process.env.R90_SPEC_SEED ? { seed: Number(process.env.R90_SPEC_SEED) } : {};

describe("withoutSecrets and withoutArgSecrets return a fixed point", () => {
  const key = "ghp_0123456789abcdefghijABCDEFGHIJklmn";
  // Each found by the fuzz below against the build before this change: one pass, then a second
  // that hid more of the first one's output.
  it.each([
    ['user=a&password="Zq7pw9ab --x'],
    ["user=a&password='Zq7pw9ab --x"],
    ['\\user=a&password="user=a&password=@h/db--password '],
    ["$(TOKEN=a?token=user=a&password=PGPASSWORD="],
    ["`--token=user=a&password=srvPGPASSWORD=?token="],
    [`\${V:-${key}PGPASSWORD=--token=-pS3cr3t9b`],
    [`"postgres://u:${key}\${X}--token=,$(user=a&password=`],
  ])("%s: read again, comes back as it is", (value) => {
    const once = withoutSecrets(value, "RUN");
    expect(once).not.toBe(value);
    expect(withoutSecrets(once, "RUN")).toBe(once);
    const args = withoutArgSecrets([value]);
    expect(withoutArgSecrets(args)).toEqual(args);
    const flagged = withoutArgSecrets(["--run", value]);
    expect(withoutArgSecrets(flagged)).toEqual(flagged);
  });

  it("so does a text given with no name", () => {
    const value = "postgres://u:<<EOF\n@h/db-e postgres://u:${X}@h/db}a?token=`";
    const once = withoutSecrets(value);
    expect(once).not.toBe(value);
    expect(withoutSecrets(once)).toBe(once);
  });

  it("keeps what it wrote the first time where that was already a fixed point", () => {
    expect(withoutSecrets("Server=db;Password=hunter2;", "CONN")).toBe("Server=db;Password=${PASSWORD};");
    expect(withoutArgSecrets(["--api-key", "abc123"])).toEqual(["--api-key", "${API_KEY}"]);
    expect(withoutSecrets("srv --token X", "RUN")).toBe("srv --token ${TOKEN}");
  });

  it("with a hide of the caller's, reads once: what hide returns is never read again", () => {
    const asked: [string, string | undefined][] = [];
    const shown = withoutSecrets('user=a&password="Zq7pw9ab', "RUN", (secret, name) => {
      asked.push([secret, name]);
      return "•";
    });
    expect(shown).not.toContain("Zq7pw9ab");
    expect(asked).toHaveLength(1);
  });

  // Hostile fragments: quotes, `$(`, backticks and defaults left open or nested, telling names,
  // pairs, URLs, keys and line breaks, glued in any order.
  const fragment = fc.constantFrom(
    "PGPASSWORD=",
    "--password ",
    "--token=",
    "Password=",
    "TOKEN=",
    '"',
    "'",
    "$(",
    ")",
    "`",
    "${V:-",
    "}",
    "${X}",
    "Zq7pw9ab",
    " ",
    ";",
    "\n",
    "psql",
    "srv",
    "=",
    "&",
    ",",
    "\\",
    "postgres://u:",
    "@h/db",
    "?token=",
    "#",
    "-pS3cr3t9",
    "mysql ",
    "Server=db;",
    "-e ",
    key,
    "Bearer ",
    "Authorization: ",
    "user=a&password=",
    "<<EOF\n",
    "password: ",
    '"token": "',
    "  - api_key: ",
    "a",
  );
  const hostile = fc.array(fragment, { minLength: 1, maxLength: 12 }).map((parts) => parts.join(""));

  it("f(f(x)) = f(x) for generated hostile values (property)", () => {
    fc.assert(
      fc.property(hostile, (value) => {
        for (const name of ["RUN", "CONN", "GITHUB_TOKEN"]) {
          const once = withoutSecrets(value, name);
          expect(withoutSecrets(once, name)).toBe(once);
        }
        const text = withoutSecrets(value);
        expect(withoutSecrets(text)).toBe(text);
        for (const args of [[value], ["--run", value], ["--token", value], ["sh", "-c", value]]) {
          const once = withoutArgSecrets(args);
          expect(withoutArgSecrets(once)).toEqual(once);
        }
      }),
      propertyRuns(RUNS * 3, { ...SEED }),
    );
  });

  it("reads its own output again in linear time: one text 8 times as long costs about what 8 texts do", () => {
    // Each copy of the fragment needs a second reading. One reading of 8n copies against eight
    // readings of n, the same work if the reader is linear (a ratio near 1), 8 times more if it is
    // quadratic; interleaved, best of five, so a busy machine slows both sides alike. (A ratio of 8n
    // against one reading of n drifted past its bound under load: the small side is too short.)
    const fragment = "$(TOKEN=a?token=user=a&password=Zq7pw9ab ";
    const short = fragment.repeat(200);
    const long = fragment.repeat(1600);
    const ratio = eightAgainstOne(
      (value) => {
        withoutSecrets(value, "RUN");
        withoutArgSecrets([value]);
      },
      short,
      long,
    );
    expect(ratio).toBeLessThan(3);
  });
});

describe("a multi-line value's data lines are read as one such line alone is", () => {
  it.each([
    ["host: db\npassword: hunter2", "host: db\npassword: ${PASSWORD}"],
    ["db:\n  host: db\n  password: hunter2\n", "db:\n  host: db\n  password: ${PASSWORD}\n"],
    ["users:\n  - token: Zq7pw9ab # ci\n", "users:\n  - token: ${TOKEN} # ci\n"],
    ['{\n  "user": "me",\n  "password": "x9secret"\n}', '{\n  "user": "me",\n  "password": "${PASSWORD}"\n}'],
    ["a: 1\r\napi_key: 'abc123def'\r\n", "a: 1\r\napi_key: '${API_KEY}'\r\n"],
    [
      "name: app\nspring.datasource.password: S3cret99",
      "name: app\nspring.datasource.password: ${SPRING_DATASOURCE_PASSWORD}",
    ],
    // The same rules as before on every line: an assignment, a connection string on line 3, a URL's userinfo.
    ["KEY_ID=a1\nPASSWORD=b", "KEY_ID=a1\nPASSWORD=${PASSWORD}"],
    ["a\nb\nServer=db;Password=S3cr3t;", "a\nb\nServer=db;Password=${PASSWORD};"],
    ["x\ny\npostgres://u:pw@db/app", "x\ny\npostgres://db/app"],
  ])("%j → %j", (value, hidden) => {
    expect(withoutSecrets(value, "CONFIG")).toBe(hidden);
    expect(withoutSecrets(hidden, "CONFIG")).toBe(hidden);
    const spec: AgentSpec = {
      spec: SPEC_TOKEN,
      model: { extraBody: { config: value } },
      bundle: { mcpServers: [{ name: "srv", command: "srv", env: { CONFIG: value } }] },
    };
    expect(findSpecSecrets(spec).map((hint) => hint.path)).toEqual([
      "model.extraBody.config",
      "bundle.mcpServers[0].env.CONFIG",
    ]);
    expect(exportSpec(spec).model?.extraBody?.config).toBe(hidden);
  });

  it("a single line written as one JSON pair is read so too", () => {
    expect(withoutSecrets('"password": "x9secret",', "CONFIG")).toBe('"password": "${PASSWORD}",');
  });

  it.each([
    "Never reveal the password.\nBe kind.",
    "The password: is asked later.\nok",
    "Password: ask the user for it.\nThen go on.",
    "token: ${GH_TOKEN}\nuser: me",
    "password: null\nauth: true\ntoken: ~\nkey: <your key>",
    // A block scalar under a telling name is read since r91d (review-r91.test.ts); under one that tells nothing, kept.
    "notes: |\n  password: hunter2 is no value here",
    "max_tokens: 800\nmodel: qwen3",
  ])("keeps prose, references and words of no value as written: %j", (value) => {
    expect(withoutSecrets(value, "CONFIG")).toBe(value);
    const spec: AgentSpec = { spec: SPEC_TOKEN, model: { extraBody: { config: value } } };
    expect(findSpecSecrets(spec)).toEqual([]);
  });
});

// The round trip: random specs with secrets in every place the format has for one, exported,
// parsed back, resolved. A secret value is a distinctive word, so it is found wherever it leaks.
describe("a random spec's round trip: exportSpec → parseSpec → resolveAgentSpec (property)", () => {
  const secretValue = fc.stringMatching(/^[a-z]{3}[0-9][A-Za-z0-9]{5}[0-9]$/).map((tail) => `Qz${tail}`);
  const plainWord = fc.constantFrom("srv", "--port", "80", "--verbose", "app", "db", "eu-west", "");
  /** A place and a secret it holds, written as each reader knows one. */
  const argWith = (s: string) =>
    fc.constantFrom(
      ["--token", s],
      [`--api-key=${s}`],
      ["-e", `GITHUB_TOKEN=${s}`],
      [`postgres://app:${s}@db/app`],
      [`Server=db;Password=${s};`],
      [`https://h.example/v1?access_token=${s}`],
      ["-H", `Authorization: Bearer ${s}`],
    );
  const bodyWith = (s: string) =>
    fc.constantFrom(
      { api_key: s },
      { nested: { token: s } },
      { config: `host: db\npassword: ${s}\n` },
      { config: `{\n  "password": "${s}"\n}` },
      { conn: `Server=db;Password=${s};` },
      { run: `PGPASSWORD=${s} psql -h db` },
    );
  const proseWith = (s: string) =>
    fc.constantFrom(
      `Read from postgres://admin:${s}@db/app, then summarise.`,
      `Use --api-key ${s} when asked.`,
      `Answer briefly.`,
    );
  const secretSpec = fc.uniqueArray(secretValue, { minLength: 6, maxLength: 6 }).chain(([a, b, c, d, e, f]) =>
    fc
      .record({
        spec: fc.constant(SPEC_TOKEN),
        name: fc.constantFrom("Reviewer", "a b"),
        description: proseWith(a as string),
        model: fc.record({
          name: fc.constantFrom("qwen3-32b", "gpt-4o-mini"),
          endpoint: fc.record({
            baseUrl: fc.constantFrom(`https://u:${b}@h.example/v1`, "http://127.0.0.1:8080/v1"),
          }),
          temperature: fc.double({ min: 0, max: 2, noNaN: true }),
          extraBody: bodyWith(c as string),
        }),
        prompt: fc.array(
          fc.record({ id: fc.constantFrom("role", "style", "rules"), text: proseWith(d as string) }),
          { maxLength: 3 },
        ),
        tools: fc.record({ servers: fc.constant(["srv", "web"]), parallel: fc.boolean() }),
        hooks: fc.array(
          fc.record({
            id: fc.constantFrom("audit", "log"),
            events: fc.constant(["beforeTurn"]),
            server: fc.constant("srv"),
          }),
          { maxLength: 2 },
        ),
        tasks: fc.record({
          title: fc.record({ model: fc.constant("small"), extraBody: bodyWith(e as string) }),
        }),
        limits: fc.record({ maxToolIterations: fc.nat(200), compact: fc.boolean() }),
        bundle: fc.record({
          mcpServers: fc.tuple(
            fc.record({
              name: fc.constant("srv"),
              command: fc.constant("srv"),
              args: fc
                .tuple(fc.array(plainWord, { maxLength: 2 }), argWith(f as string))
                .map(([p, s]) => [...p, ...s]),
              env: fc.record({ CONFIG: bodyWith(f as string).map((body) => String(Object.values(body)[0])) }),
            }),
            fc.record({
              name: fc.constant("web"),
              url: fc.constantFrom(`https://me:${a}@mcp.example/x`, "https://mcp.example/x"),
              headers: fc.constant({ Authorization: `Bearer ${b}` }),
            }),
          ),
        }),
      })
      .map((spec) => ({ spec, secrets: [a, b, c, d, e, f] as string[] })),
  );

  /** Every string leaf of `value` with its path, as `findSpecSecrets` writes paths. */
  const leaves = (value: unknown, at = "", out = new Map<string, unknown>()) => {
    if (Array.isArray(value))
      for (const [index, item] of value.entries()) leaves(item, child(at, index), out);
    else if (value !== null && typeof value === "object")
      for (const [key, item] of Object.entries(value)) leaves(item, child(at, key), out);
    else out.set(at, value);
    return out;
  };

  it("parses back to the export whole, changes only what it reports, and leaks no secret anywhere", () => {
    fc.assert(
      fc.property(secretSpec, ({ spec: written, secrets }) => {
        const parsed = parseSpec(written, { bundle: true });
        expect(parsed.errors).toEqual([]);
        const spec = parsed.spec as AgentSpec;
        const hints = findSpecSecrets(spec);
        const exported = exportSpec(spec);
        const back = parseSpec(JSON.parse(JSON.stringify(exported)), { bundle: true });
        // Parsed back whole: the same document, no warning, no error.
        expect(back.errors).toEqual([]);
        expect(back.warnings).toEqual([]);
        expect(back.spec).toEqual(exported);
        // The same spec minus its secrets: a leaf differs only at a place reported (env and headers removed).
        const before = leaves(spec);
        const after = leaves(exported);
        const reported = hints.map((hint) => hint.path);
        for (const [path, value] of before) {
          if (after.get(path) === value) continue;
          expect(
            reported.some(
              (place) => path === place || path.startsWith(`${place}.`) || path.startsWith(`${place}[`),
            ) || /\.(?:env|headers)\./.test(path),
            path,
          ).toBe(true);
        }
        // Nothing added: every place of the export was a place of the spec.
        for (const path of after.keys()) expect(before.has(path), path).toBe(true);
        expect(findSpecSecrets(exported)).toEqual([]);
        expect(exportSpec(exported)).toEqual(exported);
        // Resolving is stable: the export and its parse resolve alike, and every field that held no secret resolves as the original.
        const resolved = resolveAgentSpec([exported]);
        expect(resolveAgentSpec([back.spec as AgentSpec])).toEqual(resolved);
        const original = resolveAgentSpec([spec]);
        for (const field of [
          "model",
          "temperature",
          "maxToolIterations",
          "compact",
          "parallel",
          "servers",
        ] as const)
          expect(resolved[field]).toEqual(original[field]);
        expect(resolved.prompt.length).toBe(original.prompt.length);
        expect(resolved.hooks).toEqual(original.hooks);
        // No secret in any output or message: the export, the hints, what a refused layer says.
        // A layer refused — the original, secrets and all, with a temperature of 5 — says why, not what it holds.
        const refusal = (layer: AgentSpec): unknown => {
          try {
            resolveAgentSpec([layer]);
            return undefined;
          } catch (error) {
            return error;
          }
        };
        const error = refusal({ ...spec, model: { ...spec.model, temperature: 5 } });
        expect(AgentSpecError.isInstance(error)).toBe(true);
        const refused = `${String(error)}\n${JSON.stringify((error as AgentSpecError).issues)}`;
        expect(refused).toMatch(/temperature/);
        const badOriginal = parseSpec(
          { ...written, model: { ...written.model, temperature: 5 } },
          { bundle: true },
        );
        const outputs = [
          JSON.stringify(exported),
          JSON.stringify(hints),
          JSON.stringify(resolved),
          refused,
          back.warnings.join("\n"),
          badOriginal.warnings.map(String).join("\n"),
          badOriginal.errors.map(String).join("\n"),
          // The one-value readers a host shows a server with: its args, its headers.
          ...(spec.bundle?.mcpServers ?? []).flatMap((server) => [
            ...withoutArgSecrets(server.args ?? []),
            ...Object.entries(server.headers ?? {}).map(([name, value]) => withoutSecrets(value, name)),
          ]),
        ].join("\n");
        for (const secret of secrets) expect(outputs).not.toContain(secret);
      }),
      propertyRuns(RUNS, { ...SEED }),
    );
  });
});
