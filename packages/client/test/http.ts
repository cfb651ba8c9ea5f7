/** Test helpers: a real loopback server that accepts and never answers, and capture bodies. */
import { createServer } from "node:http";
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
  /** Paths asked, in order, with whether the client closed the request before an answer. */
  seen: { path: string; closedEarly: boolean }[];
  close(): Promise<void>;
}

/**
 * A plain HTTP server on 127.0.0.1 for what the testkit cannot script on GET routes (an answer that
 * never comes): `answer(path)` returns [status, body], or "hang" to leave the request open.
 */
export async function scriptedHttp(
  answer: (path: string) => [number, unknown] | "hang",
): Promise<ScriptedHttp> {
  const seen: ScriptedHttp["seen"] = [];
  const server = createServer((req, res) => {
    const entry = { path: req.url ?? "/", closedEarly: false };
    seen.push(entry);
    const reply = answer((req.url ?? "/").split("?")[0] ?? "/");
    if (reply === "hang") {
      res.on("close", () => {
        if (!res.writableEnded) entry.closedEarly = true;
      });
      return;
    }
    const [status, body] = reply;
    res.writeHead(status, { "content-type": "application/json" });
    res.end(typeof body === "string" ? body : JSON.stringify(body));
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
