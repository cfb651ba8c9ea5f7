import { createServer, type Server, Socket } from "node:net";
import { freePort } from "./redis-server.js";

/**
 * A TCP relay on loopback in front of a real Redis that stops relaying a connection's commands from
 * the first chunk holding `word`, in any case (`"PING"`, `"SUBSCRIBE"`, `"SMEMBERS"`) on, and keeps the connection
 * open: to its client, Redis went silent at that command, as one cut off by the network does.
 * Replies to what went before still come back.
 */
export class HoldProxy {
  private readonly sockets = new Set<Socket>();
  private server: Server | undefined;
  /** How many client connections are open through the relay now. */
  open = 0;
  /** How many connections have been held so far. */
  private heldCount = 0;

  private constructor(
    readonly port: number,
    private readonly target: number,
    private readonly word: string,
    private readonly holds: number,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** `holds`: how many connections are held at `word` before the relay passes it on (default: all). */
  static async start(target: number, word: string, holds = Number.POSITIVE_INFINITY): Promise<HoldProxy> {
    const proxy = new HoldProxy(await freePort(), target, word, holds);
    await proxy.listen();
    return proxy;
  }

  private listen(): Promise<void> {
    const server = createServer((client) => {
      this.open++;
      const upstream = new Socket();
      upstream.connect(this.target, "127.0.0.1");
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on("error", () => {});
        socket.on("close", () => this.sockets.delete(socket));
      }
      client.on("close", () => {
        this.open--;
        upstream.destroy();
      });
      upstream.on("close", () => client.destroy());
      let held = false;
      client.on("data", (chunk: Buffer) => {
        // node-redis spells some commands in lower case (`subscribe`).
        if (
          !held &&
          this.heldCount < this.holds &&
          chunk.toString("latin1").toUpperCase().includes(this.word.toUpperCase())
        ) {
          held = true;
          this.heldCount++;
        }
        if (!held) upstream.write(chunk);
      });
      upstream.pipe(client);
    });
    this.server = server;
    return new Promise((resolve) => server.listen(this.port, "127.0.0.1", () => resolve()));
  }

  /** Drops every connection open now (as a network that comes back with a reset does); keeps listening. */
  drop(): void {
    for (const socket of this.sockets) socket.destroy();
  }

  /** Drops every connection and stops listening. */
  close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    const server = this.server;
    return new Promise((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }
}
