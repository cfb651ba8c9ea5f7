// Test support, not part of the app: a TCP relay on a loopback port in front of a real server, whose
// tests can drop every connection through it (as a network link that fails does), and can let a
// server's answers be lost on the way back while what is sent still reaches it.
import { createServer, Socket } from "node:net";

export interface CutProxy {
  /** The relay's port on 127.0.0.1. */
  readonly port: number;
  /** From now on, what the server sends back is dropped (what is sent to it still arrives). */
  loseAnswers(): void;
  /** Drops every connection open through the relay (both ends); new ones are relayed in full. */
  cut(): void;
  close(): Promise<void>;
}

/** A relay from a free loopback port to `port` on 127.0.0.1. */
export async function startCutProxy(port: number): Promise<CutProxy> {
  const open = new Set<Socket>();
  let losing = false;
  const server = createServer((near) => {
    const far = new Socket();
    open.add(near);
    open.add(far);
    const drop = () => {
      near.destroy();
      far.destroy();
      open.delete(near);
      open.delete(far);
    };
    near.on("error", drop).on("close", drop);
    far.on("error", drop).on("close", drop);
    near.on("data", (chunk) => far.write(chunk));
    far.on("data", (chunk) => {
      if (!losing) near.write(chunk);
    });
    near.pause();
    far.connect(port, "127.0.0.1", () => near.resume());
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === "object" && address ? address.port : 0,
    loseAnswers() {
      losing = true;
    },
    cut() {
      losing = false;
      for (const socket of [...open]) socket.destroy();
      open.clear();
    },
    close() {
      for (const socket of [...open]) socket.destroy();
      open.clear();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
