import { createServer, type Server, Socket } from "node:net";
import { freePort } from "./redis-server.js";

/**
 * The plumbing every test relay in front of a real Redis shares: listens on a free loopback port,
 * opens the upstream to Redis for each client, pipes Redis's replies back, and tears both sockets
 * down together. Each relay says what happens to a client's chunk in `onChunk` (default: pass it on).
 */
export abstract class Relay {
  protected readonly sockets = new Set<Socket>();
  protected server: Server | undefined;

  protected constructor(
    readonly port: number,
    protected readonly target: number,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** A free loopback port to listen on. */
  protected static port(): Promise<number> {
    return freePort();
  }

  /** Starts accepting clients, relaying each to Redis. */
  protected listen(): Promise<void> {
    const server = createServer((client) => this.accept(client));
    this.server = server;
    return new Promise((resolve) => server.listen(this.port, "127.0.0.1", () => resolve()));
  }

  /** A client arrived: false refuses it (its socket is destroyed). */
  protected admit(_client: Socket): boolean {
    return true;
  }

  /** What happens to a client's chunk: by default, it goes on to Redis. */
  protected onChunk(chunk: Buffer, upstream: Socket, _client: Socket): void {
    upstream.write(chunk);
  }

  /** A client's connection (and its upstream) closed. */
  protected closed(_client: Socket): void {}

  private accept(client: Socket): void {
    if (!this.admit(client)) {
      client.destroy();
      return;
    }
    const upstream = new Socket();
    upstream.connect(this.target, "127.0.0.1");
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => this.sockets.delete(socket));
    }
    client.on("close", () => {
      upstream.destroy();
      this.closed(client);
    });
    upstream.on("close", () => client.destroy());
    upstream.pipe(client);
    client.on("data", (chunk: Buffer) => this.onChunk(chunk, upstream, client));
  }

  /** Drops every connection open now; keeps listening. */
  drop(): void {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  /** Drops every connection and stops listening. */
  close(): Promise<void> {
    this.drop();
    const server = this.server;
    this.server = undefined;
    return new Promise((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }
}
