/**
 * r72 review: a side task's time bound and a host whose event loop is held up. The testkit server
 * runs in a child process, so holding this process's loop does not also hold the server.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { isolated } from "../test/wire.js";
import { ask } from "./ask.js";
import { SideTaskError } from "./errors.js";
import { escapeHeaders } from "./headers.js";
import { transcriptText } from "./summariser.js";

const testkit = pathToFileURL(createRequire(import.meta.url).resolve("@loopwright/testkit")).href;

let child: ChildProcess | undefined;
const dirs: string[] = [];
afterEach(() => {
  child?.kill();
  child = undefined;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * A testkit server in a process of its own answering every request with `reply` (the source of a
 * Reply); it says "asked" on its stdout when a request comes, and 250 ms later (its answer written
 * by then) creates the file `answered`. Resolves to its base URL.
 */
async function serverElsewhere(
  reply: string,
): Promise<{ baseUrl: string; asked: ChildProcess; answered: string }> {
  const dir = mkdtempSync(join(tmpdir(), "r72-"));
  dirs.push(dir);
  const answered = join(dir, "answered");
  const started = spawn(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      `import { writeFileSync } from "node:fs";
import { startServer } from ${JSON.stringify(testkit)};
const server = await startServer({ replies: () => {
  process.stdout.write("asked\\n");
  setTimeout(() => writeFileSync(${JSON.stringify(answered)}, ""), 250);
  return ${reply};
} });
process.stdout.write(server.baseUrl + "\\n");`,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  child = started;
  const [first] = await once(started.stdout, "data");
  const baseUrl = String(first).trim();
  // One request first, so the server's first chat request is not also its first request of all.
  await fetch(`${baseUrl}/models`).then((response) => response.arrayBuffer());
  return { baseUrl, asked: started, answered };
}

/**
 * The time bound of the held-loop tests. The server must be asked well within it, or the bound falls
 * due before the loop is held and the case tests nothing (a busy machine's fresh child process took
 * more than 300 ms to read its first request).
 */
const BOUND_MS = 1000;

/**
 * Holds this process's event loop as soon as the server says it was asked: until `dueAt` (a time
 * past the bound, so the bound is due when the loop runs again), and, where `until` is given, until
 * that file exists too (the server's answer is in the socket then, however slowly a busy machine
 * ran the server), at most 10 s.
 */
function holdWhenAsked(server: ChildProcess, dueAt: number, until?: string) {
  server.stdout?.on("data", (data) => {
    if (!String(data).includes("asked")) return;
    const start = Date.now();
    while (
      Date.now() < dueAt ||
      (until !== undefined && !existsSync(until) && Date.now() - start < 10_000)
    ) {}
  });
}

// Each test starts a server process and holds this one's event loop past the bound: about 1.5 s
// idle, past vitest's 5 s default on a loaded machine (seen once in five loaded runs).
describe("r72: a side task's time bound falls due while the host's event loop is held up", {
  timeout: 30_000,
}, () => {
  it("uses the answer that arrived meanwhile, not a timeout", async () => {
    // The server answers 50 ms after it is asked; the host is busy from then until the answer is in,
    // 300 ms past the bound at least. Before: a timeout, though the answer was in the socket.
    const { baseUrl, asked, answered } = await serverElsewhere('{ content: "Paris", firstByteDelayMs: 50 }');
    holdWhenAsked(asked, Date.now() + BOUND_MS + 300, answered);
    const answer = await ask({ baseUrl }, "small", "", "Capital of France?", {
      ...isolated(),
      timeoutMs: BOUND_MS,
    }).catch((e: unknown) => e);
    expect(answer).toBe("Paris");
  });

  it("uses a long answer that arrived meanwhile (a body of many reads)", async () => {
    const { baseUrl, asked, answered } = await serverElsewhere(
      '{ content: "word ".repeat(100000).trim(), firstByteDelayMs: 50 }',
    );
    holdWhenAsked(asked, Date.now() + BOUND_MS + 300, answered);
    const answer = await ask({ baseUrl }, "small", "", "Say it.", {
      ...isolated(),
      timeoutMs: BOUND_MS,
    }).catch((e: unknown) => e);
    expect(typeof answer === "string" && answer.length).toBe(499_999);
  });

  it("still times out a server that never answers, held loop or not", async () => {
    const { baseUrl, asked } = await serverElsewhere('{ content: "never", silentAfterChunk: 0 }');
    holdWhenAsked(asked, Date.now() + BOUND_MS + 300);
    const error = await ask({ baseUrl }, "small", "", "x", { ...isolated(), timeoutMs: BOUND_MS }).catch(
      (e: unknown) => e,
    );
    expect(SideTaskError.isInstance(error) && error.code).toBe("timeout");
  });

  it("times out a silent server at its bound: no grace without a response begun", async () => {
    const { baseUrl } = await serverElsewhere('{ content: "never", silentAfterChunk: 0 }');
    // The moment a grace would have ended, as a timer of this loop: set before the call, so it falls
    // due before the bound (300 ms) and the grace (1 s) after it could, however late the call set its
    // timers. Its record waits one round of the loop more, as the bound does when it falls due: were
    // the loop held past both, the bound's round (queued first) still runs before it. The order of
    // the two, not a number of ms: on a slow machine the call only has to settle before this.
    let graceOver = false;
    const marker = setTimeout(() => setImmediate(() => (graceOver = true)), 300 + 1000 - 50);
    const error = await ask({ baseUrl }, "small", "", "x", { ...isolated(), timeoutMs: 300 }).catch(
      (e: unknown) => e,
    );
    const settledInGrace = graceOver;
    clearTimeout(marker);
    expect(SideTaskError.isInstance(error) && error.code).toBe("timeout");
    // The bound and a round of the event loop; the body's grace (a second) is not given.
    expect(settledInGrace).toBe(false);
  });

  it("gives a response whose headers came but whose body stalls a short grace, then times it out", async () => {
    const { baseUrl } = await serverElsewhere(
      '{ type: "raw", headers: { "content-type": "application/json" }, chunks: [\'{"id":"x",\', \'"choices":[]}\'], chunkDelayMs: 30000 }',
    );
    const started = Date.now();
    const error = await ask({ baseUrl }, "small", "", "x", { ...isolated(), timeoutMs: 300 }).catch(
      (e: unknown) => e,
    );
    expect(SideTaskError.isInstance(error) && error.code).toBe("timeout");
    // The grace is promised, so a lower bound (a few ms of Node's timer slack allowed); its end comes
    // long before the body's next chunk (30 s), where a wait past it would end at vitest's timeout.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1250);
  });
});

/** The header pattern escapeHeaders was written with before r72: the reference on short text. */
const HEADER_LINE = /^((?:[\t\v\f\p{Zs}\p{Cf}]|\\)*)(\[[^[\]\n\r\u2028\u2029]*\][\t\v\f\r\p{Zs}\p{Cf}]*)$/gmu;

describe("r72: header-like lines behind millions of blanks", () => {
  // About 0.8 s idle, near vitest's 5 s under load: the timeout leaves room (the size is what the
  // stack overflowed at).
  it("a tool result whose line holds twelve million blanks before a bracket is shown, not a RangeError", () => {
    // Before: the header pattern backtracked over the whole run of blanks and, past some ten
    // million characters (eight million in a tsx script), threw "Maximum call stack size exceeded" out of transcriptText.
    const blanks = "\u200b\u00a0\\".repeat(4_000_000);
    const shown = transcriptText([
      { role: "tool", content: `${blanks}[never closed` },
      { role: "tool", content: `${"\u200b\u00a0".repeat(6_000_000)}[user]` },
    ]);
    const [first, second] = shown.split("\n\n[tool result]\n");
    expect(first).toMatch(/never closed$/);
    expect(second).toMatch(/\\\[user\]$/);
  }, 30_000);

  it("escapes the lines the pattern escaped, and only those (fast-check)", () => {
    const piece = fc.constantFrom(
      "[",
      "]",
      "\\",
      " ",
      "\u00a0",
      "\u200b",
      "\ufeff",
      "\t",
      "\v",
      "\r",
      "\n",
      "\r\n",
      "\u2028",
      "\u2029",
      "a",
      "user",
      "\ud83d",
      "\ude00",
      "\u{e0001}",
      "\u3000",
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 40 }), (pieces) => {
        const text = pieces.join("");
        expect(escapeHeaders(text)).toBe(text.replace(HEADER_LINE, "$1\\$2"));
      }),
      propertyRuns(5000),
    );
  });
});
