import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "./server.js";

// Review r87: what a host's test would notice, over real HTTP.

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

/** One kept-alive chat request on `socket`; resolves with the reply's status line and body once it is all in, or with what came before the socket closed. */
function exchange(socket: ReturnType<typeof connect>): Promise<string> {
  const body = JSON.stringify({ model: "m", messages: [{ role: "user", content: "x" }] });
  return new Promise((resolve) => {
    let got = "";
    const onData = (chunk: Buffer) => {
      got += chunk.toString();
      // The reply is chunked: it is all in at the last, empty chunk.
      if (got.endsWith("\r\n0\r\n\r\n"))
        done(`${got.split("\r\n")[0]} ${got.slice(got.indexOf("\r\n\r\n") + 4)}`);
    };
    const onClose = () => done(`closed after ${JSON.stringify(got.slice(0, 40))}`);
    const done = (answer: string) => {
      socket.off("data", onData).off("close", onClose);
      resolve(answer);
    };
    socket.on("data", onData).on("close", onClose);
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: keep-alive\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
    );
  });
}

describe("a kept-alive connection left idle past Node's keep-alive timeout", () => {
  // The server and the test's client share the test's event loop. Node's server closed an idle
  // kept-alive socket after 5 s, so a test that held the loop longer than that (a timing loop, a
  // big parse) woke the server's timer and its client's next request together, on the same
  // socket: the request failed with "Connection error", its queued reply stayed queued, and every
  // later request read the reply meant for the one before it. Now only the client closes an idle
  // connection. The wait here is idle (a timer), so the test costs 7 s of wall time, not CPU.
  it("stays open, and the next request on it gets its own queued reply", { timeout: 60_000 }, async () => {
    server.enqueue(
      { type: "error", status: 429, body: { error: { message: "first" } } },
      { type: "error", status: 429, body: { error: { message: "second" } } },
    );
    const socket = connect(server.port, "127.0.0.1");
    socket.on("error", () => undefined);
    try {
      expect(await exchange(socket)).toMatch(/^HTTP\/1\.1 429 .*"first"/s);
      await new Promise((resolve) => setTimeout(resolve, 7_000));
      expect(socket.destroyed).toBe(false);
      expect(await exchange(socket)).toMatch(/^HTTP\/1\.1 429 .*"second"/s);
      expect(server.pending).toBe(0);
    } finally {
      socket.destroy();
    }
  });
});
