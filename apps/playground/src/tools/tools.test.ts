import { mkdir, mkdtemp, rm, symlink, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runTool, TOOLS } from "./index.js";

describe("playground tools", () => {
  it("declares clock, calculator and read_file", () => {
    expect(TOOLS.map((t) => t.function.name)).toEqual(["clock", "calculator", "read_file"]);
  });

  it("reads a file under the directory and refuses one outside it", async () => {
    const dir = await mkdtemp(join(tmpdir(), "playground-"));
    await writeFile(join(dir, "notes.txt"), "hello from a file");
    expect(await runTool("read_file", { path: "notes.txt" }, dir)).toBe("hello from a file");
    await expect(runTool("read_file", { path: "../etc/passwd" }, dir)).rejects.toThrow(
      /outside the current directory/,
    );
    await expect(runTool("read_file", { path: "/etc/passwd" }, dir)).rejects.toThrow(
      /outside the current directory/,
    );
    await expect(runTool("read_file", { path: "missing.txt" }, dir)).rejects.toThrow(/not a file/);
  });

  it("answers the clock with an ISO timestamp and names unknown tools", async () => {
    expect(await runTool("clock", {})).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    expect(await runTool("calculator", { expression: "17*23" })).toBe("391");
    await expect(runTool("weather", {})).rejects.toThrow(/no tool named weather/);
  });

  it("refuses a link under the directory that points outside it", async () => {
    const outside = await mkdtemp(join(tmpdir(), "playground-outside-"));
    await writeFile(join(outside, "secret.txt"), "not yours");
    const dir = await mkdtemp(join(tmpdir(), "playground-"));
    await symlink(join(outside, "secret.txt"), join(dir, "link.txt"));
    await symlink(outside, join(dir, "linked-dir"));
    await mkdir(join(dir, "sub"));
    await writeFile(join(dir, "sub", "ok.txt"), "fine");
    await expect(runTool("read_file", { path: "link.txt" }, dir)).rejects.toThrow(
      /outside the current directory/,
    );
    await expect(runTool("read_file", { path: "linked-dir/secret.txt" }, dir)).rejects.toThrow(
      /outside the current directory/,
    );
    expect(await runTool("read_file", { path: "sub/ok.txt" }, dir)).toBe("fine");
    expect(await runTool("read_file", { path: "..notes" }, dir).catch((e: Error) => e.message)).toMatch(
      /not a file/,
    );
  });

  it("reads the first 20,000 characters of a file of any size, saying how much more there is", async () => {
    const dir = await mkdtemp(join(tmpdir(), "playground-"));
    try {
      const head = Array.from({ length: 3000 }, (_, i) => `log line ${i}: ok`).join("\n");
      await writeFile(join(dir, "app.log"), head);
      // A log past the longest string JavaScript can hold (sparse: no disk is spent). Read whole, it
      // failed with "Cannot create a string longer than 0x1fffffe8 characters" after holding 600 MB.
      const size = 600 * 1024 * 1024;
      await truncate(join(dir, "app.log"), size);
      const text = await runTool("read_file", { path: "app.log" }, dir);
      expect(text.startsWith(head.slice(0, 20_000))).toBe(true);
      const shown = Buffer.byteLength(head.slice(0, 20_000));
      expect(text.slice(20_000)).toBe(`\n[… ${size - shown} more bytes not shown]`);
      // A file that fits is read whole, as before.
      await writeFile(join(dir, "small.txt"), "é".repeat(20_000));
      expect(await runTool("read_file", { path: "small.txt" }, dir)).toBe("é".repeat(20_000));
      await writeFile(join(dir, "over.txt"), "é".repeat(20_001));
      expect(await runTool("read_file", { path: "over.txt" }, dir)).toBe(
        `${"é".repeat(20_000)}\n[… 2 more bytes not shown]`,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
