// Shared by the tests: where the published servers and the fixture server are, a free port, an
// HTTP server process started and stopped by pid, and one agent run that calls given tools once.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type CallResult, runAgentLoop } from "@loopwright/loop";
import { startServer } from "@loopwright/testkit";
import { createMcpPool, type McpPool } from "../src/index.js";

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

/** The published servers' entry points (root devDependencies, hoisted). */
export const EVERYTHING = here("../node_modules/@modelcontextprotocol/server-everything/dist/index.js");
export const FILESYSTEM = here("../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
export const FIXTURE = here("./fixture-server.mjs");
/** A server written by hand over stdio (no SDK): oversized answers, endless pages, slow writes. */
export const RAW = here("./raw-server.mjs");
export const NODE = process.execPath;

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Starts server-everything in an HTTP mode on a free port; resolves once it listens. */
export async function startEverythingHttp(
  mode: "streamableHttp" | "sse",
): Promise<{ port: number; child: ChildProcess; stop: () => void }> {
  const port = await freePort();
  const child = spawn(NODE, [EVERYTHING, mode], {
    env: { ...process.env, PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  await new Promise<void>((resolve, reject) => {
    let seen = "";
    const onData = (chunk: Buffer) => {
      seen += String(chunk);
      if (/listening|running/i.test(seen)) resolve();
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => reject(new Error(`server-everything ${mode} exited (${code}): ${seen}`)));
    setTimeout(() => reject(new Error(`server-everything ${mode} did not start: ${seen}`)), 15_000);
  });
  return { port, child, stop: () => child.kill() };
}

/**
 * One `runAgentLoop` against the testkit: the first turn calls every tool given (one call each, in
 * order), the scripted model answers from the results. Resolves to each call's result by tool name
 * and the run's final answer.
 */
export async function callEachOnce(
  pool: McpPool,
  calls: ReadonlyArray<{ name: string; args: Record<string, unknown> }>,
): Promise<{ results: Map<string, CallResult>; answer: string; dispatched: string[] }> {
  const model = await startServer({
    replies: [
      {
        toolCalls: calls.map((call, index) => ({
          id: `call_${index}`,
          name: call.name,
          arguments: JSON.stringify(call.args),
        })),
      },
    ],
    scriptedModel: { chunkDelayMs: 0 },
  });
  const results = new Map<string, CallResult>();
  const dispatched: string[] = [];
  try {
    const result = await runAgentLoop({
      config: { baseUrl: model.baseUrl, model: "sim", maxToolIterations: 4 },
      messages: [{ role: "user", content: "Use every tool once." }],
      tools: await pool.tools(),
      dispatch: ({ name, args }, signal) => {
        dispatched.push(name);
        return pool.call(name, args, signal);
      },
      dedupeToolCalls: (request) => pool.dedupe(request),
      onToolResult: (r) => results.set(r.name, r),
    });
    return { results, answer: result.turn.content, dispatched };
  } finally {
    await model.close();
  }
}

/** `text` written at `dir/relative`, its folders made (a client's config file where it keeps it); the file's path. */
export async function writeUnder(dir: string, relative: string, text: string): Promise<string> {
  const path = join(dir, relative);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, text);
  return path;
}

/**
 * What the pool's error says of the fixture server told to fail with `args` after `--fail` (it
 * prints its arguments on stderr, then exits): the stderr tail it quotes, masked. The pool is put
 * in `pools` for the test's cleanup.
 */
export async function failedWithArgs(pools: McpPool[], args: readonly string[]): Promise<string> {
  const pool = createMcpPool([{ name: "broken", command: NODE, args: [FIXTURE, "--fail", ...args] }]);
  pools.push(pool);
  const [status] = await pool.connect();
  return status?.error?.message ?? "";
}
