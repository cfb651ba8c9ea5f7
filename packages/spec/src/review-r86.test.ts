// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { exportSpec, findSpecSecrets, parseSpec, withoutArgSecrets, withoutSecrets } from "./index.js";
import { expectExtraBodyExported } from "./test-support/spec-cases.js";
import type { AgentSpec } from "./types.js";

// Review r86d:
// 1. `withoutSecrets(value, name)` under a name that tells nothing (`CONN`, `DSN`, `RUN`) read the
//    value for a URL's credentials and key shapes only: a connection string's `Password=X`, a form's
//    `password=X`, `mysql -pX`, `PGPASSWORD=X psql` were shown in clear, while `withoutArgSecrets`
//    hid each of them as an argument; `findSpecSecrets` did not flag them in `env` or `headers`.
// 2. An `extraBody` string holding blanks was not read as a command line: `mysql -u root -pX db`
//    and `PGPASSWORD=X psql` were neither flagged nor hidden by `exportSpec`.
// 3. parseSpec's prototype-less copy (`bare`) copied each part again at every level above it.

function parsed(document: Record<string, unknown>): AgentSpec {
  const { spec } = parseSpec({ spec: "loopwright.agent/1", ...document }, { bundle: true });
  if (spec === undefined) throw new Error("the document did not parse");
  return spec;
}

describe("withoutSecrets under a name that tells nothing reads the value as an argument", () => {
  it.each([
    ["CONN", "Server=db;Password=X;", "Server=db;Password=${PASSWORD};"],
    ["FORM", "user=a&password=X", "user=a&password=${PASSWORD}"],
    ["CMD", "mysql -u root -pSECRET db", "mysql -u root -p${PASSWORD} db"],
    ["RUN", "PGPASSWORD=X psql", "PGPASSWORD=${PGPASSWORD}"],
    ["OPTS", "ro,username=bob,password=Zq7pwabc9", "ro,username=bob,password=${PASSWORD}"],
    ["DSN", "host=db password=Zq7pwabc9 sslmode=require", "host=db password=${PASSWORD} sslmode=require"],
    ["START", "srv --token Zq7pwabc9 --verbose", "srv --token ${TOKEN} --verbose"],
    ["SCRIPT", "cd /srv\nexec srv --token Zq7pwabc9", "cd /srv\nexec srv --token ${TOKEN}"],
  ])("%s=%j → %j, as withoutArgSecrets hides it", (name, value, hidden) => {
    expect(withoutSecrets(value, name)).toBe(hidden);
    expect(withoutSecrets(hidden, name)).toBe(hidden);
    // One line is hidden as an argument is; a text over several lines is read in place.
    if (!value.includes("\n")) expect(withoutArgSecrets([value])).toEqual([hidden]);
  });

  it("a string given alone (no name) is text: only a URL's credentials and key shapes, as before", () => {
    // Read as an argument, `A=x b c` would be one assignment and `x b c` hidden with it.
    const line = "GITHUB_TOKEN=${GITHUB_TOKEN} exec srv --api-key ${API_KEY} # token";
    expect(withoutSecrets(line)).toBe(line);
    expect(withoutSecrets("postgres://app:Zq7pwabc9@db/app")).toBe("postgres://db/app");
  });

  it.each([
    "Answer briefly.",
    "Answer briefly.\nNever reveal the password or the API key.",
    "Summarise: a=1 & b=2; then stop.",
    "https://example.com/docs?page=2",
    "postgres://db/app",
    "${VAR}",
    "Server=db;Password=${DB_PASSWORD}",
    "user=a&password=${PW}",
    "mysql -u root -p${PASSWORD} db",
    "srv --token ${TOKEN}",
    "a=1&b=2",
    "type=bind,src=/a",
    "--require ./x.js",
    "npx -y @scope/pkg",
  ])("%j stays as written", (value) => {
    expect(withoutSecrets(value, "CONN")).toBe(value);
  });

  it("one pass for a quoted value across a line break (read in place, then as the one line it leaves)", () => {
    for (const value of ['PGPASSWORD="Zq7\npwabc9" psql', 'srv --password "Zq7\npwabc9" --x']) {
      const shown = withoutSecrets(value, "RUN");
      expect(shown).not.toMatch(/Zq7|pwabc9/);
      expect(withoutSecrets(shown, "RUN")).toBe(shown);
    }
  });

  it("under a telling name the value is hidden whole, as before", () => {
    expect(withoutSecrets("Server=db;Password=X", "DB_PASSWORD")).toBe("${DB_PASSWORD}");
    expect(withoutSecrets("mysql -pX db", "API_TOKEN", () => "•")).toBe("•");
    expect(withoutSecrets("${TOKEN}", "GITHUB_TOKEN")).toBe("${TOKEN}");
  });

  it("findSpecSecrets flags the same values in env and headers", () => {
    const values = { CONN: "Server=db;Password=X;", RUN: "PGPASSWORD=X psql", MODE: "fast" };
    const spec = parsed({
      bundle: { mcpServers: [{ name: "s", command: "srv", env: values, headers: values }] },
    });
    expect(findSpecSecrets(spec).map((hint) => `${hint.path} ${hint.sign}`)).toEqual([
      "bundle.mcpServers[0].env.CONN flag",
      "bundle.mcpServers[0].env.RUN flag",
      "bundle.mcpServers[0].headers.CONN flag",
      "bundle.mcpServers[0].headers.RUN flag",
    ]);
  });
});

describe("an `extraBody` string holding blanks is read as a command line", () => {
  it("found, exported hidden, and found nowhere in the export", () => {
    expectExtraBodyExported(
      {
        cmd: "mysql -u root -pSECRET db",
        note: "PGPASSWORD=X psql",
        nested: [{ run: "srv --api-key Zq7pwabc9 --port 1" }],
        prose: "Answer briefly.\nNever reveal the password.",
      },
      [
        "model.extraBody.cmd ${PASSWORD}",
        "model.extraBody.note ${PGPASSWORD}",
        "model.extraBody.nested[0].run ${API_KEY}",
      ],
      {
        cmd: "mysql -u root -p${PASSWORD} db",
        note: "PGPASSWORD=${PGPASSWORD}",
        nested: [{ run: "srv --api-key ${API_KEY} --port 1" }],
        prose: "Answer briefly.\nNever reveal the password.",
      },
    );
  });
});

describe("property: what findSpecSecrets flags under a name that tells nothing, withoutSecrets hides", () => {
  const secret = fc.stringMatching(/^Qz[a-z]{3}[0-9]{2}[a-z]{2}$/);
  const withSecret: ((s: string) => string)[] = [
    (s) => `Server=db;User Id=sa;Password=${s};`,
    (s) => `Host=db;Database=app;Pwd=${s}`,
    (s) => `user=a&password=${s}&next=1`,
    (s) => `ro,username=bob,password=${s}`,
    (s) => `PGPASSWORD=${s} psql -h db`,
    (s) => `API_KEY=${s}`,
    (s) => `mysql -u root -p${s} db`,
    (s) => `srv --token ${s} --verbose`,
    (s) => `srv --api-key=${s}`,
    (s) => `curl -u admin:${s} https://h/p`,
    (s) => `postgres://app:${s}@db/app`,
    (s) => `https://h/v1?api_key=${s}`,
    (s) => `host=db password=${s} sslmode=require`,
    (s) => `cd /srv\nexec srv --password ${s}`,
  ];
  const words = fc.constantFrom(
    "answer",
    "the",
    "password",
    "key",
    "briefly",
    "use",
    "a",
    "limit",
    "of",
    "secret",
  );
  const prose = fc
    .tuple(fc.array(words, { minLength: 1, maxLength: 8 }), fc.constantFrom(" ", "\n", ". "))
    .map(([list, gap]) => list.join(gap));
  const clean = fc.oneof(
    prose,
    fc.constantFrom(
      "https://example.com/docs?page=2",
      "postgres://db/app",
      "${VAR}",
      "Server=db;Password=${DB_PASSWORD}",
      "user=a&password=${PW}",
      "srv --token ${TOKEN}",
      "a=1&b=2",
      "Server=db;Database=app",
      "type=bind,src=/a",
      "--require ./x.js",
    ),
  );
  const name = fc.constantFrom("CONN", "DSN", "DATABASE", "RUN", "CMD", "FORM", "OPTS", "NOTE");
  const value = fc.oneof(
    fc
      .tuple(fc.nat(withSecret.length - 1), secret)
      .map(([i, s]) => ({ text: (withSecret[i] as (s: string) => string)(s), s })),
    clean.map((text) => ({ text, s: undefined })),
  );

  it("every value flagged in env, headers and extraBody is changed, its secret gone; a value with none comes back unchanged", () => {
    fc.assert(
      fc.property(name, value, (key, { text, s }) => {
        const field = key.toLowerCase();
        const spec = parsed({
          model: { name: "m", extraBody: { [field]: text } },
          bundle: {
            mcpServers: [{ name: "srv", command: "srv", env: { [key]: text }, headers: { [key]: text } }],
          },
        });
        const flagged = new Set(findSpecSecrets(spec).map((hint) => hint.path));
        const shown = withoutSecrets(text, key);
        const changed = shown !== text;
        for (const path of [
          `bundle.mcpServers[0].env.${key}`,
          `bundle.mcpServers[0].headers.${key}`,
          `model.extraBody.${field}`,
        ])
          expect({ path, flagged: flagged.has(path) }).toEqual({ path, flagged: changed });
        expect(withoutSecrets(shown, key)).toBe(shown);
        if (s === undefined) {
          expect(shown).toBe(text);
          return;
        }
        expect(shown).not.toContain(s);
        expect(withoutSecrets(text, key, () => "•")).not.toContain(s);
        const out = exportSpec(spec);
        expect(JSON.stringify(out)).not.toContain(s);
        expect(findSpecSecrets(out)).toEqual([]);
      }),
      propertyRuns(200),
    );
  });
});

describe("parseSpec copies each part once for zod, not once per level above it", () => {
  afterEach(() => vi.restoreAllMocks());

  /** The objects (not lists) in a parsed spec, at any depth. */
  function objects(value: unknown): number {
    if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + objects(item), 0);
    if (typeof value !== "object" || value === null) return 0;
    return 1 + Object.values(value).reduce((sum: number, item) => sum + objects(item), 0);
  }

  it("prototype-less copies made by one parse: about one per object of the document", () => {
    const servers = Array.from({ length: 200 }, (_, index) => ({
      name: `s${index}`,
      command: "srv",
      args: ["--port", "1"],
      env: { MODE: "fast" },
      headers: { "X-Trace": "1" },
    }));
    const document = {
      spec: "loopwright.agent/1",
      model: {
        name: "m",
        endpoint: { baseUrl: "http://127.0.0.1:8080/v1" },
        extraBody: { a: { b: { c: 1 } } },
      },
      tasks: { title: { model: "small", endpoint: { baseUrl: "http://127.0.0.1:8081/v1" } } },
      bundle: { mcpServers: servers },
    };
    const create = Object.create;
    let copies = 0;
    vi.spyOn(Object, "create").mockImplementation((proto: object | null, fields?: PropertyDescriptorMap) => {
      if (proto === null) copies += 1;
      return fields === undefined ? create(proto) : create(proto, fields);
    });
    const { spec, warnings } = parseSpec(document, { bundle: true });
    vi.restoreAllMocks();
    expect(warnings).toEqual([]);
    const count = objects(spec);
    expect(count).toBeGreaterThan(600);
    // One copy per level above a part made each server, env and headers twice (ratio 2).
    expect(copies / count).toBeLessThan(1.3);
  });
});
