import type { Socket } from "node:net";
import { Relay } from "./relay.js";

/**
 * A TCP relay on loopback in front of a real Redis that stops relaying a connection's commands from
 * the first chunk holding `word`, in any case (`"PING"`, `"SUBSCRIBE"`, `"SMEMBERS"`) on, and keeps the connection
 * open: to its client, Redis went silent at that command, as one cut off by the network does.
 * Replies to what went before still come back.
 */
export class HoldProxy extends Relay {
  /** How many client connections are open through the relay now. */
  open = 0;
  /** How many connections have been held so far. */
  private heldCount = 0;
  private readonly held = new WeakSet<Socket>();

  private constructor(
    port: number,
    target: number,
    private readonly word: string,
    private readonly holds: number,
  ) {
    super(port, target);
  }

  /** `holds`: how many connections are held at `word` before the relay passes it on (default: all). */
  static async start(target: number, word: string, holds = Number.POSITIVE_INFINITY): Promise<HoldProxy> {
    const proxy = new HoldProxy(await Relay.port(), target, word, holds);
    await proxy.listen();
    return proxy;
  }

  protected override admit(): boolean {
    this.open++;
    return true;
  }

  protected override closed(): void {
    this.open--;
  }

  protected override onChunk(chunk: Buffer, upstream: Socket, client: Socket): void {
    // node-redis spells some commands in lower case (`subscribe`).
    if (
      !this.held.has(client) &&
      this.heldCount < this.holds &&
      chunk.toString("latin1").toUpperCase().includes(this.word.toUpperCase())
    ) {
      this.held.add(client);
      this.heldCount++;
    }
    if (!this.held.has(client)) upstream.write(chunk);
  }
}
