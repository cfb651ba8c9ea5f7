import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach } from "vitest";

/**
 * A maker of fresh directories under the system's temp directory, each named `<prefix>-…` and
 * removed after every test. Call it at a test file's top level, before the file's own `afterEach`
 * hooks: vitest runs `afterEach` hooks in reverse order, so the directories go last, after the
 * file has closed the sessions that write into them.
 */
export function useTempDirs(prefix: string): () => string {
  const made: string[] = [];
  afterEach(() => {
    for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    const dir = mkdtempSync(join(tmpdir(), `${prefix}-`));
    made.push(dir);
    return dir;
  };
}
