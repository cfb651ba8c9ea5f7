// r104a taught testkit's countWork to count the elements `unshift` moves. A session file ending in
// prompts the model never answered had them gathered from the end by putting each at the front of
// those found so far: every prompt moved all those after it, quadratic in the prompts.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { countWork, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { type AgentTool, createSession, type Session } from "./test-exports.js";
import { useTempDirs } from "./test-support/temp-dirs.js";

const tmpDir = useTempDirs("r104l");

/** Writes a session file `id` in `dir` whose messages are user prompts of the texts given, none answered. */
function askedOnly(dir: string, id: string, texts: readonly string[]): void {
  const header = JSON.stringify({ type: "session", version: 1, id, createdAt: "2026-01-01T00:00:00.000Z" });
  const lines = texts.map((content) =>
    JSON.stringify({ type: "message", message: { role: "user", content } }),
  );
  writeFileSync(join(dir, `${id}.jsonl`), `${[header, ...lines].join("\n")}\n`);
}

describe("a session file ending in many prompts never answered", () => {
  it("opens in work that grows with the prompts, not with their square, and names the first and the last, oldest first", async () => {
    const dir = tmpDir();
    let opened = 0;
    const open = async (prompts: number) => {
      const id = `asked${opened++}`;
      askedOnly(
        dir,
        id,
        Array.from({ length: prompts }, (_, at) => `prompt ${at}`),
      );
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

// The notices that name the user's own messages (a prompt a file ends in, never answered; a message
// queued with steer() or followUp() that was never sent) quoted them with JSON.stringify alone: a
// right-to-left override or a terminal's escape in one reached the host's screen raw.
const HOSTILE = "rename \u202egnp.exe\u001b[2J now\u0085";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

// biome-ignore lint/suspicious/noControlCharactersInRegex: the raw characters a notice must not hold
const raw = /[\u001b\u0085\u202e]/;

describe("a notice naming the user's own message", () => {
  it("writes controls and bidi marks in a prompt never answered as \\uXXXX", async () => {
    const dir = tmpDir();
    askedOnly(dir, "x", [HOSTILE]);
    const session = await createSession({
      config: { baseUrl: "http://127.0.0.1:9/v1", model: "m" },
      sessionDir: dir,
      sessionId: "x",
    });
    const notice = session
      .getSnapshot()
      .timeline.flatMap((e) => (e.type === "notice" && e.text.includes("never answered") ? [e.text] : []))[0];
    await session.close();
    expect(notice).toContain('"rename \\u202egnp.exe\\u001b[2J now\\u0085"');
    expect(notice).not.toMatch(raw);
  });

  it("writes them so in a follow-up that was never sent", async () => {
    server = await startServer({
      replies: [{ toolCalls: [{ id: "w1", name: "work", arguments: "{}" }] }, { content: "done" }],
    });
    let session: Session | undefined;
    const work: AgentTool = {
      name: "work",
      description: "Works",
      parameters: { type: "object", properties: {} },
      execute: () => {
        session?.agent.followUp(HOSTILE);
        session?.abort();
        return "worked";
      },
    };
    session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      tools: [work],
    });
    expect((await session.prompt("First prompt")).status).toBe("aborted");
    const notice = session
      .getSnapshot()
      .timeline.flatMap((e) => (e.type === "notice" && e.text.includes("never sent") ? [e.text] : []))[0];
    await session.close();
    expect(notice).toContain(
      '"rename \\u202egnp.exe\\u001b[2J now\\u0085" queued with steer() or followUp()',
    );
    expect(notice).not.toMatch(raw);
  });
});
