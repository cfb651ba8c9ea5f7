// A live llama.cpp server for the tests that need a real one: started on a free loopback port,
// stopped by its pid. The folder holding `llama-server` and `tiny.gguf` is named by the
// LOOPWRIGHT_LIVE_LLAMA environment variable (CI sets it where such a folder is provided); the
// tests read nothing outside the repository on their own. `liveServerPath` is undefined where the
// variable is unset or the folder lacks either file, and those tests skip with a message.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";

const folder = process.env.LOOPWRIGHT_LIVE_LLAMA ?? "";

/** The live server's folder, or undefined where it is absent. */
export const liveServerPath: string | undefined =
  folder !== "" && existsSync(join(folder, "llama-server")) && existsSync(join(folder, "tiny.gguf"))
    ? folder
    : undefined;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

export interface LiveServer {
  baseUrl: string;
  stop(): Promise<void>;
}

export interface LiveOptions {
  /**
   * The context in tokens (default 4096, the model's training length). Past 4096 the server is
   * told the model was trained that long (`--override-kv llama.context_length`), since it would
   * otherwise cap the slot there; the tiny model's output means nothing either way.
   */
  contextSize?: number;
  /** Server slots (`--parallel`); absent: the server's own choice. */
  slots?: number;
}

/** Starts llama-server with tiny.gguf (alias `tiny`) and waits until /health answers 200. */
export async function startLive(options: LiveOptions = {}): Promise<LiveServer> {
  if (!liveServerPath) throw new Error("The live llama.cpp server is not present.");
  const port = await freePort();
  const child: ChildProcess = spawn(
    join(liveServerPath, "llama-server"),
    [
      "-m",
      join(liveServerPath, "tiny.gguf"),
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "-c",
      String(options.contextSize ?? 4096),
      "--jinja",
      "--alias",
      "tiny",
      ...(options.contextSize && options.contextSize > 4096
        ? ["--override-kv", `llama.context_length=int:${options.contextSize}`]
        : []),
      ...(options.slots ? ["--parallel", String(options.slots)] : []),
    ],
    { stdio: "ignore" },
  );
  const origin = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const health = await fetch(`${origin}/health`);
      if (health.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill();
      throw new Error("llama-server did not become healthy within 60 s.");
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    baseUrl: `${origin}/v1`,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill();
        // A server busy answering may take a while over SIGTERM; it holds nothing worth a wait.
        setTimeout(() => child.exitCode === null && child.kill("SIGKILL"), 3000).unref();
      }),
  };
}
