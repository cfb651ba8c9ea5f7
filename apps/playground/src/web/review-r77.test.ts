// r77c, the playground's first hostile review: its web server as the network sees it, over real
// loopback HTTP (raw sockets where a browser's client would hide what the server did).
import { connect } from "node:net";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import { createClient } from "@redis/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HAS_REDIS, RedisServer } from "../../../../packages/redis/test/redis-server.js";
import { slowListing } from "./e2e-support.js";
import { startWebServer, type WebServer } from "./server.js";

/** Writes `parts` on one connection; what came back, and whether the server closed it. */
function exchange(port: number, parts: string[], waitMs = 1500): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = connect(Number(port), "127.0.0.1");
    let text = "";
    let closed = false;
    socket.on("data", (chunk) => {
      text += chunk.toString("latin1");
    });
    socket.on("error", () => {});
    socket.on("close", () => {
      closed = true;
      clearTimeout(timer);
      resolve({ text, closed });
    });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, closed });
    }, waitMs);
    socket.on("connect", () => {
      for (const part of parts) socket.write(part);
    });
  });
}

describe("the web server's answers to hostile requests (r77c)", () => {
  let server: WebServer;
  let port: number;
  beforeAll(async () => {
    server = await startWebServer({});
    port = Number(new URL(server.url).port);
  });
  afterAll(() => server.close());

  it("answers a body over 1 MB with 413 and closes the connection, which it could not use again", async () => {
    const body = "x".repeat(1_200_000);
    const head = (length: string) =>
      `POST /api/spec HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\n${length}\r\n`;
    const state = `GET /api/state HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`;
    // Declared up front, and sent chunked with no length said: both refused as too large, not as bad JSON.
    const chunked = `${(body.length).toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    for (const [length, sent] of [
      [`content-length: ${body.length}\r\n`, body],
      ["transfer-encoding: chunked\r\n", chunked],
    ] as const) {
      const { text, closed } = await exchange(port, [head(length), sent, state]);
      expect(text.split("\r\n")[0]).toBe("HTTP/1.1 413 Payload Too Large");
      expect(text).toMatch(/^connection: close$/im);
      expect(text).toContain("request body over 1 MB");
      // Said closed, and closed: a client (a browser's keep-alive pool) does not send its next request
      // on a connection that will never answer it.
      expect(closed).toBe(true);
    }
    // The server still answers on a new connection.
    expect((await fetch(new URL("api/state", server.url))).status).toBe(200);
  });
});

describe("framing (r77c)", () => {
  let server: WebServer;
  beforeAll(async () => {
    server = await startWebServer({});
  });
  afterAll(() => server.close());

  it("forbids every page of another origin to frame the playground, on the page and on the API", async () => {
    for (const path of ["", "api/state", "api/runs/nope/events"]) {
      const res = await fetch(new URL(path, server.url));
      expect(res.headers.get("x-frame-options")).toBe("DENY");
      expect(res.headers.get("content-security-policy")).toBe("frame-ancestors 'none'");
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    }
  });
});

describe("the page served from a pageDir written as a relative path (r77c)", () => {
  const built = fileURLToPath(new URL("../../dist/web/", import.meta.url));
  const written = `./${relative(process.cwd(), built)}`;
  let server: WebServer;
  beforeAll(async () => {
    server = await startWebServer({ pageDir: written });
  });
  afterAll(() => server.close());

  it("serves index.html for / and refuses a path out of it", async () => {
    const page = await fetch(server.url);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const { text } = await exchange(Number(new URL(server.url).port), [
      `GET /..%2f..%2fpackage.json HTTP/1.1\r\nHost: 127.0.0.1:${new URL(server.url).port}\r\nConnection: close\r\n\r\n`,
    ]);
    expect(text.split("\r\n")[0]).toBe("HTTP/1.1 404 Not Found");
  });
});

describe.skipIf(!HAS_REDIS)(
  "a page that leaves before its event stream is answered, with --redis (r77c)",
  () => {
    let redis: RedisServer;
    let web: WebServer;
    beforeAll(async () => {
      redis = await RedisServer.start();
      web = await startWebServer({ redis: redis.url, hangTool: true });
    });
    afterAll(async () => {
      try {
        redis?.resume();
      } catch {
        // Not paused.
      }
      await web?.close();
      await redis?.kill();
    });

    /** The connections Redis has open (each Redis watcher holds one of its own for XREAD BLOCK). */
    const connections = async () => {
      const client = createClient({ url: redis.url });
      await client.connect();
      try {
        return (await client.sendCommand(["CLIENT", "LIST"])).toString().trim().split("\n").length;
      } finally {
        client.destroy();
      }
    };

    it("leaves no watcher (and its Redis connection) behind for the run it asked for", async () => {
      const post = (path: string) =>
        fetch(new URL(path, web.url), {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ prompt: "call hang_forever" }),
        });
      const { id } = (await (await post("api/runs")).json()) as { id: string };
      // The run is live (its tool call hangs until stopped): a watcher of it would never end by itself.
      const live = new AbortController();
      const stream = await fetch(new URL(`api/runs/${id}/events`, web.url), { signal: live.signal });
      const reader = stream.body!.getReader();
      let seen = "";
      while (!seen.includes('"kind":"tool-call"'))
        seen += new TextDecoder().decode((await reader.read()).value);
      live.abort();
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const before = await connections();

      // Redis slow to answer (paused): the page gives up on the request before its headers come.
      redis.pause();
      const left = new AbortController();
      const asked = fetch(new URL(`api/runs/${id}/events`, web.url), { signal: left.signal }).catch(
        () => "left",
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      left.abort();
      expect(await asked).toBe("left");
      await new Promise((resolve) => setTimeout(resolve, 300));
      redis.resume();
      await new Promise((resolve) => setTimeout(resolve, 2000));
      expect(await connections()).toBe(before);

      await post(`api/runs/${id}/stop`);
    }, 30_000);
  },
);

describe("a run stopped while its endpoint's window is looked up (r77c)", () => {
  it("ends stopped at once, sending the endpoint nothing, rather than when the listing answers", async () => {
    const endpoint = await slowListing(6000);
    const web = await startWebServer({ endpoint: { baseUrl: endpoint.baseUrl, model: "m" } });
    try {
      const post = (path: string, body: unknown) =>
        fetch(new URL(path, web.url), {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        });
      const began = Date.now();
      const asked = await post("api/runs", { prompt: "hello" });
      expect(asked.status).toBe(201);
      const { id } = (await asked.json()) as { id: string };
      expect((await post(`api/runs/${id}/stop`, {})).status).toBe(202);
      const events = await (await fetch(new URL(`api/runs/${id}/events`, web.url))).text();
      expect(Date.now() - began).toBeLessThan(5000);
      expect(events).toContain('"kind":"done","stopped":true');
      expect(endpoint.chats).toEqual([]);
    } finally {
      await web.close();
      await endpoint.close();
    }
  }, 20_000);
});

describe.skipIf(!HAS_REDIS)("close() while a run's window is looked up, with --redis (r77c)", () => {
  it("waits for the run to end stopped, and nothing is emitted on the closed bus (no unhandled rejection)", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    const endpoint = await slowListing(1500);
    const redis = await RedisServer.start();
    try {
      const web = await startWebServer({
        redis: redis.url,
        endpoint: { baseUrl: endpoint.baseUrl, model: "m" },
      });
      void fetch(new URL("api/runs", web.url), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ prompt: "hello" }),
      }).catch(() => {
        // Closed with the server, or answered: either way not what this test reads.
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      await web.close();
      // Past the listing's answer, when the run (before: unawaited) went on to emit its end.
      await new Promise((resolve) => setTimeout(resolve, 2500));
      expect(unhandled.map((e) => (e as Error).message)).toEqual([]);
      expect(endpoint.chats).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
      await endpoint.close();
      await redis.kill();
    }
  }, 20_000);
});

describe("an empty redis option (r77c)", () => {
  it("is refused by name, not taken as no Redis (the CLI said the runs were shared through it)", async () => {
    for (const redis of ["", "  "]) {
      await expect(startWebServer({ redis })).rejects.toThrow(
        `startWebServer: \`redis\` must be a Redis URL (as redis://127.0.0.1:6379), or absent, and was given ${JSON.stringify(redis)}.`,
      );
    }
  });
});

describe("the state read while the endpoint's listing is slow to answer", () => {
  it("answers without a window rather than waiting out the lookup, and has it once the listing answers", async () => {
    const endpoint = await slowListing(8000);
    const web = await startWebServer({ endpoint: { baseUrl: endpoint.baseUrl, model: "m" } });
    try {
      const state = async () => {
        const body = (await (await fetch(new URL("api/state", web.url))).json()) as { contextLength: number };
        // Whether the listing's answer had been written when this read's answer came: the order of
        // the two, which no load on the machine changes, rather than a number of ms.
        return { window: body.contextLength, afterListing: endpoint.answered() > 0 };
      };
      // Two reads while the listing is pending (the page's first load, then its idle poll): each
      // answers in the read's bound (2 s), where before each waited for the listing (8 s) and so
      // answered after it.
      const [first, second] = await Promise.all([state(), state()]);
      expect(first).toEqual({ window: 0, afterListing: false });
      expect(second).toEqual({ window: 0, afterListing: false });
      let found = 0;
      for (let look = 0; look < 100 && found === 0; look++) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        found = (await state()).window;
      }
      expect(found).toBe(4096);
      // The reads shared one lookup: the endpoint was asked for its listing once.
      expect(endpoint.listings()).toBe(1);
    } finally {
      await web.close();
      await endpoint.close();
    }
  }, 60_000);
});
