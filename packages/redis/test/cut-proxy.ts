import { Relay } from "./relay.js";

/**
 * A TCP relay on loopback in front of a real Redis, whose link can be cut and restored: the
 * clients lose their connections while Redis keeps every key (a network drop, not a restart).
 */
export class CutProxy extends Relay {
  static async start(target: number): Promise<CutProxy> {
    const proxy = new CutProxy(await Relay.port(), target);
    await proxy.restore();
    return proxy;
  }

  /** Accepts connections again, relaying each to Redis. */
  restore(): Promise<void> {
    return this.listen();
  }

  /** Drops every relayed connection and refuses new ones until `restore`. */
  cut(): Promise<void> {
    return this.close();
  }
}
