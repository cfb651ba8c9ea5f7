// Review r73a (client): a same-origin 307/308 of a request whose body is a stream, through the
// fetch helpers' default (sameOriginRedirects). Every case speaks HTTP to a loopback server of the
// test's own.

import { createServer } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { listenOnLoopback } from "../test/http.js";
import { keepErrorBodies } from "./error-bodies.js";
import { redactingFetch } from "./redact-fetch.js";

const KEY = "sk-r73a-key-7c2e9b4d1a6f3058bb22";

const open: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((close) => close()));
});

/** A server that answers `/old` with `status` and `Location: /new`, `/new` with 200, and records each body. */
async function moving(status: number) {
  const seen: string[] = [];
  const http = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => {
      body += chunk;
    });
    req.on("end", () => {
      seen.push(`${req.method} ${req.url} ${body}`);
      if (req.url === "/old") res.writeHead(status, { location: "/new" }).end("moved");
      else res.writeHead(200, { "content-type": "text/plain" }).end("arrived");
    });
  });
  const port = await listenOnLoopback(http, open);
  return { url: `http://127.0.0.1:${port}`, seen };
}

/** A body fetch can send only once. */
function streamed(text: string): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(text));
      controller.close();
    },
  });
}

describe("R73A-2: a same-origin 307/308 of a request whose body is a stream", () => {
  for (const [name, made] of [
    ["redactingFetch(secrets)", () => redactingFetch([KEY])],
    ["keepErrorBodies()", () => keepErrorBodies()],
  ] as const) {
    for (const status of [307, 308]) {
      it(`${name}: a ${status} is answered as it is (the body was sent once, not again empty)`, async () => {
        const server = await moving(status);
        const response = await made()(`${server.url}/old`, {
          method: "POST",
          body: streamed('{"q":1}'),
          duplex: "half",
        } as RequestInit);
        // Before: TypeError "Response body object should not be disturbed or locked", thrown by the
        // second fetch asked with the spent stream.
        expect(response.status).toBe(status);
        expect(response.headers.get("location")).toBe("/new");
        expect(await response.text()).toBe("moved");
        expect(server.seen).toEqual(['POST /old {"q":1}']);
      });
    }
  }

  it("a body that can be sent again (a string) is still followed, method and body kept", async () => {
    const server = await moving(307);
    const response = await redactingFetch([KEY])(`${server.url}/old`, { method: "POST", body: '{"q":1}' });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("arrived");
    expect(server.seen).toEqual(['POST /old {"q":1}', 'POST /new {"q":1}']);
  });
});
