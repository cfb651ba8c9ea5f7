import { connect, createServer, type Socket } from "node:net";

/** A TCP relay in front of a server, counting the client connections that carried a request. */
export interface Relay {
  /** `http://127.0.0.1:<port>/v1` through the relay. */
  baseUrl: string;
  /** Connections that carried a request and are still open. */
  readonly open: number;
  /** Resolves once every connection that carried a request has closed (rejects after `ms`). */
  drained(ms?: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * Relays 127.0.0.1:<new port> to `targetPort`, so a test can see when the client hangs up.
 *
 * Connections the client opened but never sent a byte on (undici warms one up after an abort)
 * are not counted: only one that carried a request says whether that request was closed.
 */
export async function startRelay(targetPort: number): Promise<Relay> {
  const all = new Set<Socket>();
  const used = new Set<Socket>();
  const server = createServer((client) => {
    all.add(client);
    const upstream = connect(targetPort, "127.0.0.1");
    client.once("data", () => used.add(client));
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      all.delete(client);
      used.delete(client);
      client.destroy();
      upstream.destroy();
    };
    client.on("close", end);
    client.on("error", end);
    upstream.on("close", end);
    upstream.on("error", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    get open() {
      return used.size;
    },
    async drained(ms = 2000) {
      const started = Date.now();
      while (used.size > 0) {
        if (Date.now() - started > ms)
          throw new Error(`${used.size} connection(s) still open after ${ms} ms`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    close() {
      for (const s of all) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
