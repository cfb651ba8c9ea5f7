// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import {
  exportSpec,
  findSpecSecrets,
  parseSpec,
  withoutArgSecrets,
  withoutCommandLineSecrets,
  withoutSecrets,
} from "./index.js";
import type { SecretHide } from "./secret-signs.js";
import { expectArgs, expectExtraBodyExported, expectHiddenLine } from "./test-support/spec-cases.js";

// Review r85a:
// 1. Pairs set apart by `&` (a form body, curl's `-d user=a&password=X`) or `,` (mount's
//    `-o user=a,password=X`) after a first pair that tells nothing: the telling pair's value was
//    kept in clear in an argument, a JSON string value and a command line's word (r84a read them
//    in a JSON key only); `password=X` alone was hidden.
// 2. A JSON string holding a telling assignment and words after it (`PGPASSWORD=X psql -h db`,
//    as a key or a value) had the words taken with X into the reference: read as an argument's
//    `-e "DB_PASS=two words"`, where the value runs to the end. A JSON string is read as a command
//    line: only X changes.
// 3. `withoutArgSecrets` given a non-list or an entry that is no string threw a TypeError from
//    deep inside ("args.forEach is not a function", "word.split is not a function"), and it,
//    `withoutSecrets` and `withoutCommandLineSecrets` threw "hide is not a function" for a `hide`
//    that is no function, where each says it never throws.
// 4. An `extraBody` string under a name that tells nothing was read for URLs and key shapes only:
//    a connection string's `Password=X`, a form's `password=X`, an `API_KEY=X` were exported in clear.

describe("a telling pair after others, set apart by `&` or `,`", () => {
  // Each row: the words before the argument, then the argument as given, shown and exported.
  it.each([
    [[], "user=a&password=Zq7pwabc9", "user=a&password=•", "user=a&password=${PASSWORD}"],
    [
      ["-d"],
      "user=a&password=Zq7pwabc9&next=1",
      "user=a&password=•&next=1",
      "user=a&password=${PASSWORD}&next=1",
    ],
    [
      [],
      "--data=grant_type=password&client_secret=Zq7pwabc9",
      "--data=grant_type=password&client_secret=•",
      "--data=grant_type=password&client_secret=${CLIENT_SECRET}",
    ],
    [[], "x&token=Zq7pwabc9", "x&token=•", "x&token=${TOKEN}"],
    [
      ["-o"],
      "ro,username=bob,password=Zq7pwabc9,rw",
      "ro,username=bob,password=•,rw",
      "ro,username=bob,password=${PASSWORD},rw",
    ],
    [[], "DATA=a=1&password=Zq7pwabc9", "DATA=a=1&password=•", "DATA=a=1&password=${PASSWORD}"],
  ])("%j %s: only the value changes, in both views", (lead, arg, shown, exported) => {
    expectArgs([...lead, arg], [...lead, shown], [...lead, exported]);
  });

  it("in a JSON string value, and as an argv entry of a JSON list", () => {
    expect(withoutArgSecrets(['{"k":"a=1&password=Zq7pwabc9"}'])).toEqual([
      '{"k":"a=1&password=${PASSWORD}"}',
    ]);
    expect(withoutArgSecrets(['{"k":"a=1,password=Zq7pwabc9","j":2}'])).toEqual([
      '{"k":"a=1,password=${PASSWORD}","j":2}',
    ]);
    expect(withoutArgSecrets(['{"k":["user=a&password=Zq7pwabc9"]}'])).toEqual([
      '{"k":["user=a&password=${PASSWORD}"]}',
    ]);
  });

  it("on a command line, quoted or escaped", () => {
    expectHiddenLine(
      'curl -d "user=a&password=Zq7pwabc9" https://x',
      'curl -d "user=a&password=•" https://x',
      'curl -d "user=a&password=${PASSWORD}" https://x',
    );
    expect(withoutCommandLineSecrets("mount -o ro,username=bob,password=Zq7pwabc9,rw //h/s /m")).toBe(
      "mount -o ro,username=bob,password=${PASSWORD},rw //h/s /m",
    );
  });

  it("what tells nothing, a reference and a URL's query are read as before", () => {
    for (const arg of ["a=1&b=2", "type=bind,src=/a,dst=/b", "a=1&password=${PASSWORD}", "a,b&c"])
      expect(withoutArgSecrets([arg])).toEqual([arg]);
    // A URL's telling query pair is dropped, as documented (README, withoutArgSecrets: "a URL's part is dropped").
    expect(withoutArgSecrets(["https://x/y?a=1&api_key=Zq7pwabc9&b=2"])).toEqual(["https://x/y?a=1&b=2"]);
  });

  it("an exported server's args: found, hidden, and found nowhere in the export", () => {
    const { spec } = parseSpec(
      {
        spec: "loopwright.agent/1",
        bundle: {
          mcpServers: [
            {
              name: "s",
              command: "curl",
              args: ["-d", "user=a&password=Zq7pwabc9", '{"k":"a=1,token=Qj4tokn77"}'],
            },
          ],
        },
      },
      { bundle: true },
    );
    if (spec === undefined) throw new Error("the document did not parse");
    expect(findSpecSecrets(spec).map((hint) => hint.path)).toEqual([
      "bundle.mcpServers[0].args[1]",
      "bundle.mcpServers[0].args[2]",
    ]);
    const out = exportSpec(spec);
    expect(out.bundle?.mcpServers?.[0]?.args).toEqual([
      "-d",
      "user=a&password=${PASSWORD}",
      '{"k":"a=1,token=${TOKEN}"}',
    ]);
    expect(findSpecSecrets(out)).toEqual([]);
  });

  it("property: a telling pair anywhere in a list of pairs is hidden, the rest kept, one pass", () => {
    const name = fc.constantFrom("a", "user", "mode", "page_size", "grant_type");
    const value = fc.stringMatching(/^[a-z0-9]{1,6}$/);
    const pair = fc.tuple(name, value).map(([n, v]) => `${n}=${v}`);
    fc.assert(
      fc.property(
        fc.array(pair, { minLength: 1, maxLength: 4 }),
        fc.array(pair, { maxLength: 3 }),
        fc.constantFrom("&", ","),
        fc.constantFrom("password", "api_key", "client_secret", "token"),
        (before, after, separator, telling) => {
          const arg = [...before, `${telling}=Zq7pwabc9`, ...after].join(separator);
          const out = withoutArgSecrets([arg]);
          expect(out[0]).toBe(arg.replace("Zq7pwabc9", `\${${telling.toUpperCase()}}`));
          expect(withoutArgSecrets(out)).toEqual(out);
          expect(withoutArgSecrets([arg], (secret) => secret)).toEqual([arg]);
        },
      ),
      propertyRuns(150),
    );
  });
});

describe("an `extraBody` string holding pairs under a name that tells nothing", () => {
  it("a connection string's, a form's, an option list's and an assignment's telling value: found and exported as references", () => {
    expectExtraBodyExported(
      {
        conn: "Server=db;Password=Zq7pwabc9",
        q: "a=1&token=Qj4tokn77",
        opts: [{ mount: "ro,password=Wx5pass123" }],
        env: "API_KEY=Rk8apikey5",
        plain: "a=1&b=2",
      },
      [
        "model.extraBody.conn ${PASSWORD}",
        "model.extraBody.q ${TOKEN}",
        "model.extraBody.opts[0].mount ${PASSWORD_2}",
        "model.extraBody.env ${API_KEY}",
      ],
      {
        conn: "Server=db;Password=${PASSWORD}",
        q: "a=1&token=${TOKEN}",
        opts: [{ mount: "ro,password=${PASSWORD_2}" }],
        env: "API_KEY=${API_KEY}",
        plain: "a=1&b=2",
      },
    );
  });
});

describe("a JSON string holding a telling assignment and words after it", () => {
  it("as a value: only the assignment's value changes", () => {
    expect(withoutArgSecrets(['{"k":"PGPASSWORD=Zq7pwabc9 psql"}'])).toEqual([
      '{"k":"PGPASSWORD=${PGPASSWORD} psql"}',
    ]);
    expect(withoutArgSecrets(['{"k":"TOKEN=Zq7pwabc9 srv --x"}'])).toEqual([
      '{"k":"TOKEN=${TOKEN} srv --x"}',
    ]);
  });

  it("as a key: its words kept", () => {
    const [out = ""] = withoutArgSecrets(['{"PGPASSWORD=Zq7pwabc9 psql -h db":1}']);
    expect(out).toBe('{"PGPASSWORD=${PGPASSWORD} psql -h db":1}');
    expect(withoutArgSecrets([out])).toEqual([out]);
  });

  it("a plain argument's assignment still takes its value to the end (docker's `-e`)", () => {
    expect(withoutArgSecrets(["-e", "DB_PASS=two words"])).toEqual(["-e", "DB_PASS=${DB_PASS}"]);
  });
});

describe("bad input: never thrown on, read as documented", () => {
  it("withoutArgSecrets: a non-list is returned as it is", () => {
    for (const bad of ["str", null, undefined, 1, {}]) expect(withoutArgSecrets(bad as never)).toBe(bad);
  });

  it("withoutArgSecrets: an entry that is no string is kept, the others read one for one", () => {
    const sparse: unknown[] = ["--token", "Zq7pwabc9"];
    sparse[3] = "x";
    expect(withoutArgSecrets([1, {}, null, "--token", "Zq7pwabc9"] as never)).toEqual([
      1,
      {},
      null,
      "--token",
      "${TOKEN}",
    ]);
    expect(withoutArgSecrets(sparse as never)).toEqual(["--token", "${TOKEN}", undefined, "x"]);
    // A non-string before a value is no flag: nothing is hidden for it.
    expect(withoutArgSecrets([5, "abc"] as never)).toEqual([5, "abc"]);
  });

  it("a `hide` that is no function is read as none", () => {
    const bad = 5 as unknown as SecretHide;
    expect(withoutArgSecrets(["--token", "Zq7pwabc9"], bad)).toEqual(["--token", "${TOKEN}"]);
    expect(withoutSecrets("Zq7pwabc9", "TOKEN", bad)).toBe("${TOKEN}");
    expect(withoutSecrets("Zq7pwabc9", 7 as never)).toBe("Zq7pwabc9");
    expect(withoutCommandLineSecrets("srv --token Zq7pwabc9", bad)).toBe("srv --token ${TOKEN}");
  });
});
