/**
 * A real llama.cpp server for the tests and benchmarks that need one: `llama-server` with the tiny
 * model, started on a free loopback port and stopped by its pid. The folder holding `llama-server`
 * and `tiny.gguf` is the one the `LOOPWRIGHT_LIVE_LLAMA` environment variable names (CI sets it
 * where the machine provides one); nothing outside the repository is read unless it is set.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TestkitError } from "./errors.js";

function liveFolder(): string | undefined {
  const folder =
    (Object.hasOwn(process.env, "LOOPWRIGHT_LIVE_LLAMA") ? process.env.LOOPWRIGHT_LIVE_LLAMA : "") ?? "";
  return folder !== "" && existsSync(join(folder, "llama-server")) && existsSync(join(folder, "tiny.gguf"))
    ? folder
    : undefined;
}

/**
 * The folder `LOOPWRIGHT_LIVE_LLAMA` names, where it holds both `llama-server` and `tiny.gguf`;
 * `undefined` otherwise (unset, or either file missing), and a test needing the server skips with a
 * message. Read once, when this module is loaded.
 */
export const liveServerPath: string | undefined = liveFolder();

/** A running live server (from {@link startLive}). */
export interface LiveServer {
  /** `http://127.0.0.1:<port>/v1`, the `baseURL` for an OpenAI client or an `Endpoint`. */
  baseUrl: string;
  /** `http://127.0.0.1:<port>`, for `/health`, `/props` and `/slots`. */
  origin: string;
  /**
   * Stops the server (SIGTERM, then SIGKILL after 3 s) and removes its template file; resolves at once
   * for one that already ended. Idempotent.
   */
  stop(): Promise<void>;
}

/** Options of {@link startLive}. */
export interface LiveOptions {
  /**
   * The context in tokens (`-c`; 4096, the model's training length, unless given). Past 4096 the
   * server is told the model was trained that long (`--override-kv llama.context_length`), since it
   * would otherwise cap the slot there; the tiny model's output means nothing either way.
   */
  contextSize?: number | undefined;
  /** Server slots (`--parallel`); the server's own choice unless given. */
  slots?: number | undefined;
  /**
   * A Jinja chat template to use in place of the model's own (Qwen2.5's): its text, written to a
   * temporary file passed as `--chat-template-file`. A template that raises an exception (roles that
   * must alternate) makes the server refuse a request it cannot render with a 400.
   */
  chatTemplate?: string | undefined;
  /** `--reasoning-format` (`"deepseek"`, `"none"`, `"auto"`); the server's default unless given. */
  reasoningFormat?: string | undefined;
  /**
   * `--special`: the server prints special tokens into the text — the reply ends with `<|im_end|>`,
   * and its tool-call parser, meeting them, fails the turn with a 500 ("does not match the expected
   * peg-native format"). As some hosts run llama.cpp to see their model's tokens.
   */
  special?: boolean | undefined;
  /** How long to wait for `/health` to answer 200, in ms. 60,000 unless given. */
  startupMs?: number | undefined;
}

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

function whole(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1) {
    throw new TestkitError("invalid-option", `startLive: ${name} must be a whole number of 1 or more.`);
  }
  return value;
}

/**
 * Starts `llama-server` with `tiny.gguf` (served as the model `tiny`, with `--jinja`) on a free
 * loopback port, and resolves once `GET /health` answers 200.
 *
 * Throws a `TestkitError` (`invalid-option`) when `LOOPWRIGHT_LIVE_LLAMA` names no usable folder
 * (check `liveServerPath` first and skip) or for an option of the wrong type, and rejects with an
 * `Error` naming why when `llama-server` cannot be run (the spawn error, EACCES say, as its `cause`),
 * exits or is ended by a signal before it is healthy (at once, not after `startupMs`), or is not
 * healthy within `startupMs`; it is stopped before that rejection. Never leaves a server running
 * that the caller cannot stop, and never lets a failed spawn's error go unheard.
 */
export async function startLive(options: LiveOptions = {}): Promise<LiveServer> {
  if (typeof options !== "object" || options === null) {
    throw new TestkitError("invalid-option", "startLive: options must be an object.");
  }
  const contextSize = whole(options.contextSize, "contextSize") ?? 4096;
  const slots = whole(options.slots, "slots");
  const startupMs = whole(options.startupMs, "startupMs") ?? 60_000;
  for (const key of ["chatTemplate", "reasoningFormat"] as const) {
    if (options[key] !== undefined && typeof options[key] !== "string") {
      throw new TestkitError("invalid-option", `startLive: ${key} must be a string.`);
    }
  }
  if (options.special !== undefined && typeof options.special !== "boolean") {
    throw new TestkitError("invalid-option", "startLive: special must be true or false.");
  }
  const folder = liveServerPath;
  if (!folder) {
    throw new TestkitError(
      "invalid-option",
      "startLive: the live llama.cpp server is not present; set LOOPWRIGHT_LIVE_LLAMA to a folder holding llama-server and tiny.gguf.",
    );
  }
  const scratch = options.chatTemplate === undefined ? undefined : mkdtempSync(join(tmpdir(), "live-llama-"));
  const template = scratch === undefined ? undefined : join(scratch, "template.jinja");
  if (template !== undefined) writeFileSync(template, options.chatTemplate as string);
  const port = await freePort();
  const child: ChildProcess = spawn(
    join(folder, "llama-server"),
    [
      "-m",
      join(folder, "tiny.gguf"),
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "-c",
      String(contextSize),
      "--jinja",
      "--alias",
      "tiny",
      ...(contextSize > 4096 ? ["--override-kv", `llama.context_length=int:${contextSize}`] : []),
      ...(slots ? ["--parallel", String(slots)] : []),
      ...(template ? ["--chat-template-file", template] : []),
      ...(options.reasoningFormat ? ["--reasoning-format", options.reasoningFormat] : []),
      ...(options.special ? ["--special"] : []),
    ],
    { stdio: "ignore" },
  );
  // A spawn that fails (a llama-server that cannot be run: EACCES) is told by 'error', never 'exit';
  // unheard, it would kill the process running the tests.
  let failure: Error | undefined;
  child.on("error", (error) => {
    failure ??= error;
  });
  /** The child is not running: it never started, or it exited, or a signal ended it. */
  const gone = () =>
    failure !== undefined || child.pid === undefined || child.exitCode !== null || child.signalCode !== null;
  const origin = `http://127.0.0.1:${port}`;
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= new Promise<void>((resolve) => {
      const done = () => {
        if (scratch) rmSync(scratch, { recursive: true, force: true });
        resolve();
      };
      if (gone()) return done();
      child.once("exit", done);
      child.kill();
      // A server busy answering may take a while over SIGTERM; it holds nothing worth a wait.
      setTimeout(() => !gone() && child.kill("SIGKILL"), 3000).unref();
    });
    return stopping;
  };
  const deadline = Date.now() + startupMs;
  for (;;) {
    try {
      const health = await fetch(`${origin}/health`);
      if (health.status === 200) break;
    } catch {
      // not listening yet
    }
    if (gone()) {
      await stop();
      if (failure !== undefined) {
        throw new Error(`llama-server could not be started: ${failure.message}`, { cause: failure });
      }
      const how = child.signalCode !== null ? `signal ${child.signalCode}` : `exit code ${child.exitCode}`;
      throw new Error(`llama-server stopped (${how}) before it became healthy.`);
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`llama-server did not become healthy within ${startupMs} ms.`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { baseUrl: `${origin}/v1`, origin, stop };
}
