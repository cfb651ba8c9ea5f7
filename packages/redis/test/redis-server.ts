import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createServer } from "node:net";

/** Whether a `redis-server` binary is on PATH: the tests need a real server and skip without one. */
export const HAS_REDIS = spawnSync("redis-server", ["--version"], { stdio: "ignore" }).status === 0;
export const SKIP_MESSAGE =
  "no redis-server binary on PATH: install it (apt-get install -y redis-server) to run the Redis tests";

/** A port the kernel just said was free on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/** One real redis-server on a loopback port, without persistence, stopped by its pid. */
export class RedisServer {
  private child: ChildProcess | undefined;
  /** `more`: further `redis-server` arguments (`--rename-command TIME ""`, say). */
  constructor(
    readonly port: number,
    private readonly more: readonly string[] = [],
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(more: readonly string[] = []): Promise<RedisServer> {
    // Tests that run side by side each start their own: should another process take the port
    // between `freePort` and the bind, the server exits at once (its "Address already in use" may
    // not have been read by then), and another free port is tried.
    for (let attempt = 1; ; attempt++) {
      const server = new RedisServer(await freePort(), more);
      try {
        await server.start();
        return server;
      } catch (error) {
        if (attempt >= 3) throw error;
      }
    }
  }

  /** Starts the server (again) on the same port and resolves once it accepts connections. */
  start(): Promise<void> {
    const child = spawn(
      "redis-server",
      ["--port", String(this.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", ...this.more],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    this.child = child;
    return new Promise((resolve, reject) => {
      let out = "";
      const onData = (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes("Ready to accept connections")) {
          child.stdout?.off("data", onData);
          child.stdout?.resume();
          resolve();
        }
      };
      child.stdout?.on("data", onData);
      child.stderr?.resume();
      child.once("exit", (code) => reject(new Error(`redis-server exited with ${code}: ${out}`)));
    });
  }

  /**
   * Stops the server by its pid (SIGSTOP): it keeps every connection open and answers nothing, as a
   * Redis cut off by the network does, until `resume`.
   */
  pause(): void {
    process.kill(this.child?.pid as number, "SIGSTOP");
  }

  /** Lets a paused server run again (SIGCONT); it answers what was sent meanwhile. */
  resume(): void {
    process.kill(this.child?.pid as number, "SIGCONT");
  }

  /** Kills the server by its pid (SIGKILL: everything it held is gone) and waits for the exit. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    process.kill(child.pid as number, "SIGKILL");
    await exited;
  }
}
