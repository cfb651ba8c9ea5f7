/// <reference types="node" />
import { afterEach, describe, expect, it, vi } from "vitest";
import { withoutArgSecrets } from "./find-spec-secrets.js";

// Review r83d: what the command-line reader costs on the fuzz ladder's slowest shape, and the
// export's second round. Nothing the reader returns changes except where a fix says so (a
// differential check against the build before over the ladder's spec shapes and random lines).

afterEach(() => {
  vi.unstubAllGlobals();
});

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
  run();
  vi.unstubAllGlobals();
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
