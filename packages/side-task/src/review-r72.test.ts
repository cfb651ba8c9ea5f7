/**
 * r72 review: a side task's time bound and a host whose event loop is held up. The testkit server
 * runs in a child process, so holding this process's loop does not also hold the server.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { isolated } from "../test/wire.js";
import { ask } from "./ask.js";
import { SideTaskError } from "./errors.js";

const testkit = pathToFileURL(createRequire(import.meta.url).resolve("@loopwright/testkit")).href;

let child: ChildProcess | undefined;
afterEach(() => {
  child?.kill();
  child = undefined;
});

/**
 * A testkit server in a process of its own answering every request with `reply` (the source of a
 * Reply); it says "asked" on its stdout when a request comes. Resolves to its base URL.
 */
async function serverElsewhere(reply: string): Promise<{ baseUrl: string; asked: ChildProcess }> {
  const started = spawn(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      `import { startServer } from ${JSON.stringify(testkit)};
const server = await startServer({ replies: () => { process.stdout.write("asked\\n"); return ${reply}; } });
process.stdout.write(server.baseUrl + "\\n");`,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  child = started;
  const [first] = await once(started.stdout, "data");
  return { baseUrl: String(first).trim(), asked: started };
}

/** Holds this process's event loop for `ms` as soon as the server says it was asked. */
function holdWhenAsked(server: ChildProcess, ms: number) {
  server.stdout?.on("data", (data) => {
    if (!String(data).includes("asked")) return;
    const end = Date.now() + ms;
    while (Date.now() < end) {}
  });
}

describe("r72: a side task's time bound falls due while the host's event loop is held up", () => {
  it("uses the answer that arrived meanwhile, not a timeout", async () => {
    // The server answers 50 ms after it is asked; the host is busy for 600 ms from then, past the
    // 300 ms bound. Before: a timeout, though the answer was already in the socket.
    const { baseUrl, asked } = await serverElsewhere('{ content: "Paris", firstByteDelayMs: 50 }');
    holdWhenAsked(asked, 600);
    const answer = await ask({ baseUrl }, "small", "", "Capital of France?", {
      ...isolated(),
      timeoutMs: 300,
    }).catch((e: unknown) => e);
    expect(answer).toBe("Paris");
  });

  it("uses a long answer that arrived meanwhile (a body of many reads)", async () => {
    const { baseUrl, asked } = await serverElsewhere(
      '{ content: "word ".repeat(100000).trim(), firstByteDelayMs: 50 }',
    );
    holdWhenAsked(asked, 600);
    const answer = await ask({ baseUrl }, "small", "", "Say it.", {
      ...isolated(),
      timeoutMs: 300,
    }).catch((e: unknown) => e);
    expect(typeof answer === "string" && answer.length).toBe(499_999);
  });

  it("still times out a server that never answers, held loop or not", async () => {
    const { baseUrl, asked } = await serverElsewhere('{ content: "never", silentAfterChunk: 0 }');
    holdWhenAsked(asked, 600);
    const error = await ask({ baseUrl }, "small", "", "x", { ...isolated(), timeoutMs: 300 }).catch(
      (e: unknown) => e,
    );
    expect(SideTaskError.isInstance(error) && error.code).toBe("timeout");
  });

  it("times out a silent server at its bound: no grace without a response begun", async () => {
    const { baseUrl } = await serverElsewhere('{ content: "never", silentAfterChunk: 0 }');
    const started = Date.now();
    const error = await ask({ baseUrl }, "small", "", "x", { ...isolated(), timeoutMs: 300 }).catch(
      (e: unknown) => e,
    );
    expect(SideTaskError.isInstance(error) && error.code).toBe("timeout");
    // The bound and a round of the event loop; the body's grace (a second) is not given.
    expect(Date.now() - started).toBeLessThan(1200);
  });

  it("gives a response whose headers came but whose body stalls a short grace, then times it out", async () => {
    const { baseUrl } = await serverElsewhere(
      '{ type: "raw", headers: { "content-type": "application/json" }, chunks: [\'{"id":"x",\', \'"choices":[]}\'], chunkDelayMs: 30000 }',
    );
    const started = Date.now();
    const error = await ask({ baseUrl }, "small", "", "x", { ...isolated(), timeoutMs: 300 }).catch(
      (e: unknown) => e,
    );
    const took = Date.now() - started;
    expect(SideTaskError.isInstance(error) && error.code).toBe("timeout");
    expect(took).toBeGreaterThanOrEqual(1250);
    expect(took).toBeLessThan(3000);
  });
});
