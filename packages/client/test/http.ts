/** Test helpers: a real loopback server that accepts and never answers, and capture bodies. */
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { readFixture } from "@loopwright/testkit";

/** A `curl -i` capture's body, parsed as JSON. */
export function captureJson(rel: string): unknown {
  const text = readFixture(rel);
  const split = /\r?\n\r?\n/.exec(text);
  return JSON.parse(split ? text.slice(split.index + split[0].length) : text);
}

/** A fixture file's JSON. */
export function fixtureJson(rel: string): unknown {
  return JSON.parse(readFixture(rel));
}

export interface ScriptedHttp {
  baseUrl: string;
  /**
   * Paths asked, in order, with whether the client closed the request before the answer ended, and
   * how many body bytes the server handed to the socket for it.
   */
  seen: { path: string; closedEarly: boolean; bytesWritten: number }[];
  close(): Promise<void>;
}

/**
 * A 200 body that does not end: `head`, then `repeat` written again and again as fast as the
 * client reads it, until the client closes the request or `upTo` bytes have been written (a
 * backstop, so a client that reads it all cannot take the test process down).
 */
export interface EndlessBody {
  head: string;
  repeat: string;
  upTo: number;
}

/**
 * A plain HTTP server on 127.0.0.1 for what the testkit cannot script on GET routes (an answer that
 * never comes, a body that never ends): `answer(path)` returns [status, body], "hang" to leave the
 * request open, or an `EndlessBody`.
 */
export async function scriptedHttp(
  answer: (path: string) => [number, unknown] | "hang" | EndlessBody,
): Promise<ScriptedHttp> {
  const seen: ScriptedHttp["seen"] = [];
  const server = createServer((req, res) => {
    const entry = { path: req.url ?? "/", closedEarly: false, bytesWritten: 0 };
    seen.push(entry);
    const reply = answer((req.url ?? "/").split("?")[0] ?? "/");
    res.on("close", () => {
      if (!res.writableEnded) entry.closedEarly = true;
    });
    if (reply === "hang") return;
    if (!Array.isArray(reply)) {
      void writeEndless(res, reply, entry);
      return;
    }
    const [status, body] = reply;
    res.writeHead(status, { "content-type": "application/json" });
    const text = typeof body === "string" ? body : JSON.stringify(body);
    entry.bytesWritten = Buffer.byteLength(text);
    res.end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Writes an endless body, waiting for the socket to drain as a real server would, until it closes. */
async function writeEndless(res: ServerResponse, body: EndlessBody, entry: { bytesWritten: number }) {
  res.writeHead(200, { "content-type": "application/json" });
  const chunk = Buffer.from(body.repeat);
  let more = res.write(body.head);
  entry.bytesWritten = Buffer.byteLength(body.head);
  while (!res.destroyed && entry.bytesWritten < body.upTo) {
    if (!more) {
      await drainedOrClosed(res);
      if (res.destroyed) return;
    }
    more = res.write(chunk);
    entry.bytesWritten += chunk.length;
  }
  if (!res.destroyed) res.end("]}");
}

/** Resolves when the response can take more, or has closed; leaves no listener behind. */
function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}

/**
 * Starts `server` on a free port of 127.0.0.1 and returns the port; pushes onto `closers` what stops
 * it (every connection ended), for the test file's afterEach to run.
 */
export async function listenOnLoopback(server: Server, closers: (() => Promise<void>)[]): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return (server.address() as AddressInfo).port;
}
