import { createServer, type Server, Socket } from "node:net";
import { freePort } from "./redis-server.js";

/**
 * A TCP relay on loopback in front of a real Redis, whose link can be cut and restored: the
 * clients lose their connections while Redis keeps every key (a network drop, not a restart).
 */
export class CutProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();

  private constructor(
    readonly port: number,
    private readonly target: number,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(target: number): Promise<CutProxy> {
    const proxy = new CutProxy(await freePort(), target);
    await proxy.restore();
    return proxy;
  }

  /** Accepts connections again, relaying each to Redis. */
  restore(): Promise<void> {
    const server = createServer((client) => {
      const upstream = new Socket();
      upstream.connect(this.target, "127.0.0.1");
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on("error", () => {});
        socket.on("close", () => {
          this.sockets.delete(socket);
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
    this.server = server;
    return new Promise((resolve) => server.listen(this.port, "127.0.0.1", () => resolve()));
  }

  /** Drops every relayed connection and refuses new ones until `restore`. */
  cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    return new Promise((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }
}
