// Review r93: a body that is not JSON, posted to any route that reads one, is answered 400 with a
// fixed message and where the parser stopped, never with the parser's own words, which quote part of
// the body back (a prompt, or a spec holding a key). Over real loopback HTTP.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWebServer, type WebServer } from "./server.js";

describe("a POST body that is not JSON (r93)", () => {
  let web: WebServer;
  beforeAll(async () => {
    web = await startWebServer({});
  });
  afterAll(() => web?.close());

  const post = async (path: string, body: string) => {
    const res = await fetch(new URL(path, web.url), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    return { status: res.status, text: await res.text() };
  };

  it.each(["api/runs", "api/spec"])(
    "is a 400 naming the fault, not quoting the body, on %s",
    async (path) => {
      const cases = [
        { body: '{"prompt": "abc', at: 15 },
        // The parser quotes a stray token with the text around it (here a key a host pasted), and
        // names no position for it: the answer then says only that it is not JSON.
        { body: "sk-live-SECRET-0123456789", at: undefined },
        { body: '{"text": "model key sk-live-SECRET-0123456789",}', at: 47 },
      ];
      for (const { body, at } of cases) {
        const answer = await post(path, body);
        expect(answer.status, body).toBe(400);
        expect(JSON.parse(answer.text), body).toEqual({
          error: `the request body is not valid JSON${at === undefined ? "" : ` (at position ${at})`}`,
        });
        expect(answer.text).not.toContain("SECRET");
        expect(answer.text).not.toContain("abc");
      }
    },
  );

  it("still starts a run from a well-formed body afterwards", async () => {
    const answer = await post("api/runs", JSON.stringify({ prompt: "hello" }));
    expect(answer.status).toBe(201);
  });
});
