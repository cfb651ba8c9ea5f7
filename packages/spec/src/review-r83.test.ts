/// <reference types="node" />
import { afterEach, describe, expect, it, vi } from "vitest";
import { exportSpec } from "./export-spec.js";
import { findSpecSecrets, withoutArgSecrets } from "./find-spec-secrets.js";
import { parseSpec } from "./parse-spec.js";

// Review r83d: what the command-line reader costs on the fuzz ladder's slowest shape, and the
// export's second round. Nothing the reader returns changes except where a fix says so (a
// differential check against the build before over the ladder's spec shapes and random lines).

afterEach(() => {
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
});

// biome-ignore lint/suspicious/noTemplateCurlyInString: the references an export writes, meant literally.
const PASSWORD = "${PASSWORD}";
// biome-ignore lint/suspicious/noTemplateCurlyInString: the references an export writes, meant literally.
const TOKEN = "${TOKEN}";

/** The characters handed to `new URL` while `run` runs. */
function urlCharsRead(run: () => void): number {
  const Real = URL;
  let chars = 0;
  class Counting extends Real {
    constructor(url: string | URL, base?: string | URL) {
      chars += String(url).length;
      super(url, base);
    }
  }
  vi.stubGlobal("URL", Counting);
  try {
    run();
  } finally {
    vi.unstubAllGlobals();
  }
  return chars;
}

describe("a word of many URLs with blanks between them (fuzz ladder: 1.7 s at 64 KiB in CI)", () => {
  it("reads each URL once, not each to the word's end", () => {
    // An unclosed quote makes the rest one word: each `x://` in it was read as a URL running to
    // the word's end (13,000 reads of 32 KiB on average at 64 KiB), though none holds an `@`, a
    // `?` or a `#`, without which no URL carries a sign.
    const word = `'${"x:// ".repeat(1600)}`;
    let out: string[] = [];
    const chars = urlCharsRead(() => {
      out = withoutArgSecrets(["-c", word]);
    });
    expect(out).toEqual(["-c", word]);
    expect(chars).toBeLessThan(word.length * 4);
  });

  it("still reads a URL to the word's end where a sign follows", () => {
    const word = `see x:// then https://h/p?token=a9Qz b`;
    const [, out] = withoutArgSecrets(["--note", word]);
    expect(out).toMatch(/^see x:\/\/ then https:\/\/h\/p/);
    expect(out).not.toContain("a9Qz");
  });
});

/** A spec bundling one server given `config` as its JSON argument, exported: that argument, and what `findSpecSecrets` finds in the export. */
function exportConfig(config: unknown): { arg: string; references: string[]; again: number } {
  const doc = {
    spec: "loopwright.agent/1",
    bundle: { mcpServers: [{ name: "s", command: "srv", args: ["--config", JSON.stringify(config)] }] },
  };
  const { spec } = parseSpec(doc, { bundle: true });
  if (spec === undefined) throw new Error("the document did not parse");
  const out = exportSpec(spec);
  const references = findSpecSecrets(spec).flatMap((hint) => hint.references ?? []);
  return {
    arg: out.bundle?.mcpServers?.[0]?.args?.[1] ?? "",
    references,
    again: findSpecSecrets(out).length,
  };
}

describe("a JSON argument's key holding a credential, exported", () => {
  it("keeps the values under a key the first round wrote a reference into (no second round takes them)", () => {
    // The key did not tell as written; written back as `-p${PASSWORD}` it did, so the export's
    // second round took `fastmode` out too (and `--token ${TOKEN}` under it became two references).
    const { arg, again } = exportConfig({
      "mysql -uroot -pS3cret db": { mode: "fastmode", cmd: "--token Zq7pwabc" },
    });
    expect(JSON.parse(arg)).toEqual({
      [`mysql -uroot -p${PASSWORD} db`]: { mode: "fastmode", cmd: `--token ${TOKEN}` },
    });
    expect(again).toBe(0);
  });

  it("names the values under it after the key as written back, never after its credential", () => {
    for (const [key, secret] of [
      ["--api-key=ZQ7PWABC9", "ZQ7PWABC9"],
      ["PGPASSWORD=ZQ7PWABC9 psql", "ZQ7PWABC9"],
      ["postgres://u:ZQ7PW9@db/x", "ZQ7PW9"],
      ["Authorization: Bearer ABCDEFGHIJKLMNOP", "ABCDEFGHIJKLMNOP"],
    ] as const) {
      const { arg, references, again } = exportConfig({
        [key]: { mode: "fastmode" },
        [`${key} `]: "fastmode",
      });
      expect(arg, key).not.toContain(secret);
      expect(references.join(" "), key).not.toContain(secret);
      expect(again, key).toBe(0);
    }
  });
});

describe("a JSON argument's short plain words are not read as arguments", () => {
  const config = JSON.stringify(
    Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`k${i}`, `job${i}`])),
  );

  it("keeps them, and reads them without the argument reader's rules", () => {
    // Taken off before the test returns: left on, every regex run of each later file in this worker
    // (one module graph, `isolate: false`) would go through the spy and be kept in its calls.
    const exec = vi.spyOn(RegExp.prototype, "exec");
    let runs: number;
    try {
      expect(withoutArgSecrets(["--config", config])).toEqual(["--config", config]);
      runs = exec.mock.calls.length;
    } finally {
      exec.mockRestore();
    }
    // Before: every key and value through readArg, 43393 regex runs; now about 10000.
    expect(runs).toBeLessThan(20000);
  });

  it("still reads what the rules flag beside them", () => {
    const [, out] = withoutArgSecrets([
      "--config",
      JSON.stringify({ mode: "fast", password: "Zq7pwabc", url: "https://u:Zq7pw9@h/x" }),
    ]);
    expect(JSON.parse(out as string)).toEqual({ mode: "fast", password: `\${PASSWORD}`, url: "https://h/x" });
  });
});
