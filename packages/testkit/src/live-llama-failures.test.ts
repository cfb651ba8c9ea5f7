/**
 * startLive when the folder LOOPWRIGHT_LIVE_LLAMA names holds a llama-server that cannot serve: one
 * that cannot be run at all (not executable), and one killed by a signal as it starts. Neither needs
 * the real server: each is a file this test writes into a temporary folder, and the module is loaded
 * afresh after the variable is set (it reads the folder once, when loaded).
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";

const before = process.env.LOOPWRIGHT_LIVE_LLAMA;
const folders: string[] = [];

afterEach(() => {
  if (before === undefined) delete process.env.LOOPWRIGHT_LIVE_LLAMA;
  else process.env.LOOPWRIGHT_LIVE_LLAMA = before;
  // The module loaded with the broken folder must not be the one a later file in this worker gets
  // (workers are shared between files): the next import reads the variable afresh.
  vi.resetModules();
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

/** startLive loaded with LOOPWRIGHT_LIVE_LLAMA naming a folder whose llama-server is `script`. */
async function withServer(script: string, mode: number) {
  const folder = mkdtempSync(join(tmpdir(), "live-llama-broken-"));
  folders.push(folder);
  writeFileSync(join(folder, "llama-server"), script);
  chmodSync(join(folder, "llama-server"), mode);
  writeFileSync(join(folder, "tiny.gguf"), "not a model");
  process.env.LOOPWRIGHT_LIVE_LLAMA = folder;
  vi.resetModules();
  const live = await import("./live-llama.js");
  expect(live.liveServerPath).toBe(folder);
  return live.startLive;
}

// startupMs is two minutes, and each failure is expected in well under one (a spawn error or a signal
// within milliseconds idle): far from the wait it must not sit out, with room for a loaded machine.
const STARTUP_MS = 120_000;

describe("startLive with a llama-server that cannot serve", () => {
  it("rejects at once, naming why, for one that cannot be run (not executable)", {
    timeout: 90_000,
  }, async () => {
    const startLive = await withServer("#!/bin/sh\nexit 0\n", 0o644);
    const started = Date.now();
    const error = await startLive({ startupMs: STARTUP_MS }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/llama-server could not be started: .*EACCES/);
    expect(((error as Error).cause as NodeJS.ErrnoException).code).toBe("EACCES");
    expect(Date.now() - started).toBeLessThan(STARTUP_MS / 2);
  });

  it("rejects at once for one killed by a signal while it starts, not after startupMs", {
    timeout: 90_000,
  }, async () => {
    const startLive = await withServer("#!/bin/sh\nkill -TERM $$\n", 0o755);
    const started = Date.now();
    const error = await startLive({ startupMs: STARTUP_MS }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(
      /llama-server stopped \(signal SIGTERM\) before it became healthy/,
    );
    expect(Date.now() - started).toBeLessThan(STARTUP_MS / 2);
  });
});
