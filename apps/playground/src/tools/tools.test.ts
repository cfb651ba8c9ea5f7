import { mkdir, mkdtemp, symlink, writeFile } from "node:fs/promises";
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
});
