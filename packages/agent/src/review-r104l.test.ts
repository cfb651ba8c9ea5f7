// r104a taught testkit's countWork to count the elements `unshift` moves. A session file ending in
// prompts the model never answered had them gathered from the end by putting each at the front of
// those found so far: every prompt moved all those after it, quadratic in the prompts.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { countWork } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { createSession } from "./test-exports.js";
import { useTempDirs } from "./test-support/temp-dirs.js";

const tmpDir = useTempDirs("r104l");

describe("a session file ending in many prompts never answered", () => {
  it("opens in work that grows with the prompts, not with their square, and names the first and the last, oldest first", async () => {
    const dir = tmpDir();
    const header = JSON.stringify({
      type: "session",
      version: 1,
      id: "x",
      createdAt: "2026-01-01T00:00:00.000Z",
    });
    let opened = 0;
    const open = async (prompts: number) => {
      const id = `asked${opened++}`;
      const body = Array.from({ length: prompts }, (_, at) =>
        JSON.stringify({ type: "message", message: { role: "user", content: `prompt ${at}` } }),
      ).join("\n");
      writeFileSync(join(dir, `${id}.jsonl`), `${header}\n${body}\n`);
      let named: number[] = [];
      let notice = "";
      const work = await countWork(async () => {
        const session = await createSession({
          config: { baseUrl: "http://127.0.0.1:9/v1", model: "m" },
          sessionDir: dir,
          sessionId: id,
        });
        notice =
          session
            .getSnapshot()
            .timeline.flatMap((e) =>
              e.type === "notice" && e.text.includes("never answered") ? [e.text] : [],
            )[0] ?? "";
        named = [...notice.matchAll(/"prompt (\d+)"/g)].map((m) => Number(m[1]));
        await session.close();
      });
      // r104k: the first three, how many are between, and the last (every one named, 16,000 of them
      // made a notice of about a megabyte).
      expect(named).toEqual([0, 1, 2, prompts - 1]);
      expect(notice).toContain(`… and ${(prompts - 4).toLocaleString("en-US")} more`);
      return work.total;
    };
    // Counted, not timed: the Array, Map, Set and RegExp steps (and elements moved) of the open,
    // against 8 times the prompts. Measured 84,543 and 672,547 (7.96) gathered from the end and
    // turned round once; 2.1 M and 128.7 M (61.8) with each put at the front of those found.
    const [few, many] = [await open(2_000), await open(16_000)];
    expect(many / few).toBeLessThan(16);
  }, 120_000);
});
