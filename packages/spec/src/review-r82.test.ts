/// <reference types="node" />
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { withoutArgSecrets } from "./find-spec-secrets.js";
import { KEY_SHAPES, literalDefaults, looksLikeKey, withoutKeys, withoutReferences } from "./secret-signs.js";
import { withoutCommandLineSecrets } from "./without-command-line-secrets.js";

// Review r82d: the command-line reader's cost on a JSON argument's strings holding blanks. Each
// such string was split into words three times (pastedScript asked twice, then the reader itself)
// and every stretch the reader kept was scanned once a key shape (24 regex replaces) though it
// held none of their text. Nothing the reader returns changes (a differential check against the
// build before, over the fuzz ladder's shapes, the strings of this package's tests and random
// command lines, found no difference).

afterEach(() => {
  vi.restoreAllMocks();
});

// biome-ignore lint/suspicious/noTemplateCurlyInString: the ${SECRET} reference, meant literally.
const SECRET = "${SECRET}";
// biome-ignore lint/suspicious/noTemplateCurlyInString: a reference, meant literally.
const REFERENCE = "${X}";

/** `withoutKeys` as it was: every shape's replace in turn. */
const allShapes = (value: string, hide?: (key: string, name: undefined) => string) => {
  let out = value;
  for (const shape of KEY_SHAPES)
    out = out.replace(new RegExp(shape.source, `${shape.flags}g`), (key) => hide?.(key, undefined) ?? SECRET);
  return out;
};

/** Text near each key shape: its start in either case, and the characters its body and edges take. */
const keyish = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        "sk-",
        "sk-ant-",
        "SK-",
        "rk_live_",
        "sk_test_",
        "ghp_",
        "gho_",
        "GHP_",
        "github_pat_",
        "glpat-",
        "xoxb-",
        "AKIA",
        "akia",
        "AIza",
        "hf_",
        "gsk_",
        "xai-",
        "pplx-",
        "csk-",
        "fw_",
        "r8_",
        "lsv2_pt_",
        "tvly-dev-",
        "BSA",
        "npm_",
        "lin_api_",
        "sbp_",
        "ntn_",
        "secret_",
        "eyJ",
        ".",
        "Bearer ",
        "bearer\t",
        "BASIC ",
        "Token ",
        "-p",
        " -k",
        REFERENCE,
        " ",
      ),
      fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/),
    ),
    { maxLength: 8 },
  )
  .map((parts) => parts.join(""));

describe("withoutKeys and looksLikeKey read a text holding no key's text once (r82d)", () => {
  it("give what every shape's replace in turn gives (fast-check, near-keys in either case)", () => {
    fc.assert(
      fc.property(keyish, (text) => {
        expect(withoutKeys(text)).toBe(allShapes(text));
        const asked: string[] = [];
        const hide = (key: string) => {
          asked.push(key);
          return `<${key.length}>`;
        };
        const want: string[] = [];
        expect(withoutKeys(text, hide)).toBe(
          allShapes(text, (key) => {
            want.push(key);
            return `<${key.length}>`;
          }),
        );
        expect(asked).toEqual(want);
        // As it was: the text without its references, and each literal default's word, asked of every shape.
        const words = [
          withoutReferences(text),
          ...literalDefaults(text).map(({ start, end }) => text.slice(start, end)),
        ];
        expect(looksLikeKey(text)).toBe(words.some((word) => KEY_SHAPES.some((shape) => shape.test(word))));
      }),
      propertyRuns(4000, { seed: 82 }),
    );
  });

  it("each shape's own sample is still found", () => {
    const samples = [
      "sk-proj-abcdefghijklmnop1234",
      "rk_live_abcdefghijklmnop",
      "ghs_abcdefghijklmnopqrstuvwx",
      "github_pat_abcdefghijklmnopqrst12",
      "glpat-abcdefghijklmnop",
      "xoxr-abcdefghij",
      "AKIAABCDEFGHIJKLMNOP",
      "AIzaabcdefghijklmnopqrstuvwxyz0123",
      "hf_abcdefghijklmnopqrst",
      "gsk_abcdefghijklmnopqrst",
      "xai-abcdefghijklmnopqrst",
      "pplx-abcdefghijklmnopqrst",
      "csk-abcdefghijklmnopqrst",
      "fw_abcdefghijklmnopqrst",
      "r8_abcdefghijklmnopqrst",
      "lsv2_sk_abcdefghijklmnopqrst",
      "tvly-prod-abcdefghijklmnop",
      "BSAabcdefghijklmnopqrst",
      "npm_abcdefghijklmnopqrstuvwxyz0123",
      "lin_api_abcdefghijklmnopqrst",
      "sbp_abcdefghijklmnopqrst",
      "secret_abcdefghijklmnopqrstuvwxyz0123",
      "eyJabcdefgh.abcdefghij.sig",
      "tOkEn abcdefgh",
    ];
    // One sample a shape, each found by its own (the list above covers every shape).
    expect(KEY_SHAPES.map((shape) => samples.some((sample) => shape.test(sample)))).not.toContain(false);
    for (const sample of samples) {
      expect(looksLikeKey(`x ${sample} y`)).toBe(true);
      expect(withoutKeys(`x -p${sample} y`)).toBe(allShapes(`x -p${sample} y`));
      expect(withoutKeys(`x ${sample} y`)).not.toContain(sample);
    }
  });

  it("a JSON argument's strings holding blanks but no key's text cost no key-shape replace", () => {
    const strings = Array.from({ length: 500 }, (_, i) => `the quick brown fox ${i} jumps`);
    const arg = JSON.stringify(Object.fromEntries(strings.map((text, i) => [`k${i}`, text])));
    const replace = vi.spyOn(RegExp.prototype, Symbol.replace);
    expect(withoutArgSecrets(["srv", arg])).toEqual(["srv", arg]);
    // Before: each string's stretches scanned once a shape, 24 replaces and more a string.
    expect(replace.mock.calls.length).toBeLessThan(12 * strings.length);
  });
});

describe("a line read by several readers in turn reads the same whatever came before (r82d)", () => {
  // The words of the last short line read are kept: a reader given another line, or the same line
  // after another, must read it as it would alone.
  const lines = [
    "mysql -uroot -pS3cretPw db",
    "sh -c 'srv --token Zq7xyzzy123'",
    "srv --api-key Zq7xyzzy123 --verbose",
    "node -e \"process.env.TOKEN='Zq7xyzzy123'\"",
    "PASSWORD=s3cr3tvalue exec srv",
    "the quick brown fox",
    "$(printf '%s' --token) Zq7xyzzy123",
  ];
  const readings = (line: string) => [
    withoutCommandLineSecrets(line),
    withoutArgSecrets(["srv", line]),
    withoutArgSecrets(["-c", line]),
    withoutArgSecrets(["srv", JSON.stringify({ cmd: line, args: [line] })]),
  ];
  it("in any order", () => {
    const alone = new Map(lines.map((line) => [line, JSON.stringify(readings(line))]));
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...lines), { minLength: 2, maxLength: 8 }), (order) => {
        for (const line of order) expect(JSON.stringify(readings(line))).toBe(alone.get(line));
      }),
      propertyRuns(200, { seed: 821 }),
    );
    // And each secret is out of every reading.
    for (const line of lines.slice(0, 5))
      for (const reading of readings(line))
        expect(JSON.stringify(reading)).not.toMatch(/S3cretPw|Zq7xyzzy123|s3cr3tvalue/);
  });
});
