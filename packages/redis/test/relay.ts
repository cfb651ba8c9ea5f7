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

  /**
   * What happens to a chunk of Redis's replies, where a relay says (the default pipes them straight
   * back to the client).
   */
  protected onReply?(chunk: Buffer, client: Socket): void;

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
    if (this.onReply) upstream.on("data", (chunk: Buffer) => this.onReply?.(chunk, client));
    else upstream.pipe(client);
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

/**
 * A TCP relay on loopback in front of a real Redis that, once armed, holds back the first chunk
 * holding `word` (`HGETALL`: a capability store's reload reading a tenant's latches; `LRANGE`: a
 * calibration's reading its readings) and everything its connection sends after it, until
 * `whileHeld` has run; then relays them in order.
 */
export class HoldRelay extends Relay {
  /** What the held connection sent after the held chunk, so far. */
  queuedAfter = 0;
  private armed = false;
  private holding: Buffer[] | undefined;
  private heldOn: Socket | undefined;
  private whileHeld: () => Promise<unknown> = async () => {};
  private word = "";
  /** Resolves once the held chunks went on. */
  released: Promise<void> = Promise.resolve();

  // Public (Relay's is protected), so `start` makes a subclass's relay when called on it.
  constructor(port: number, target: number) {
    super(port, target);
  }

  /** A relay of this class (a subclass's, called on it) listening in front of Redis at `target`. */
  static async start<T extends HoldRelay>(
    this: new (
      port: number,
      target: number,
    ) => T,
    target: number,
  ): Promise<T> {
    const relay = new this(await Relay.port(), target);
    await relay.listen();
    return relay;
  }

  arm(word: string, whileHeld: () => Promise<unknown>): void {
    this.armed = true;
    this.word = `\r\n${word}\r\n`;
    this.whileHeld = whileHeld;
  }

  protected override onChunk(chunk: Buffer, upstream: Socket, client: Socket): void {
    if (this.holding && this.heldOn === client) {
      this.holding.push(chunk);
      this.queuedAfter++;
      return;
    }
    if (this.armed && chunk.toString("latin1").toUpperCase().includes(this.word)) {
      this.armed = false;
      const held = [chunk];
      this.holding = held;
      this.heldOn = client;
      this.released = this.whileHeld()
        .then(() => {})
        .finally(() => {
          this.holding = undefined;
          for (const part of held) upstream.write(part);
        });
      return;
    }
    upstream.write(chunk);
  }
}

/**
 * A relay whose server answers `TIME` `behindUs` µs behind Redis's own clock (0: Redis's own; below
 * 0, ahead of it) — the clock of the server an emitter reached before a failover, or a server's
 * clock before it stepped back — and holds, once armed, the first
 * `TIME` and what its connection sends after it (see `HoldRelay`).
 */
export class ClockRelay extends HoldRelay {
  behindUs = 0;
  /** Per client connection: its `TIME`s not yet answered. */
  private readonly asked = new WeakMap<Socket, number>();
  /** What the connections sent, as text: which commands went out. */
  sent = "";

  protected override onChunk(chunk: Buffer, upstream: Socket, client: Socket): void {
    const text = chunk.toString("latin1");
    this.sent += text;
    const times = text.toUpperCase().split("\r\nTIME\r\n").length - 1;
    if (times > 0) this.asked.set(client, (this.asked.get(client) ?? 0) + times);
    super.onChunk(chunk, upstream, client);
  }

  protected override onReply(chunk: Buffer, client: Socket): void {
    let pending = this.asked.get(client) ?? 0;
    if (pending === 0) {
      client.write(chunk);
      return;
    }
    const text = chunk
      .toString("latin1")
      .replace(/\*2\r\n\$\d+\r\n(\d+)\r\n\$\d+\r\n(\d+)\r\n/g, (whole, seconds: string, micros: string) => {
        if (pending === 0) return whole;
        pending--;
        const at = Number(seconds) * 1_000_000 + Number(micros) - this.behindUs;
        const [s, us] = [String(Math.floor(at / 1_000_000)), String(at % 1_000_000)];
        return `*2\r\n$${s.length}\r\n${s}\r\n$${us.length}\r\n${us}\r\n`;
      });
    this.asked.set(client, pending);
    client.write(Buffer.from(text, "latin1"));
  }
}
