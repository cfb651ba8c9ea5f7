/**
 * Failures inside the server — a missing recording, a reply function that throws, a personality
 * with a bug — reach the client as an HTTP error whose message names what failed. Never a hung
 * request, never an unhandled rejection; the server keeps serving afterwards.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Personality } from "./personalities/personality.js";
import type { PersonalityName } from "./personalities/resolve.js";
import { startServer, type TestServer } from "./server.js";

let server: TestServer | undefined;
afterEach(async () => {
  vi.unstubAllEnvs();
  await server?.close();
  server = undefined;
});

const chatBody = JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] });

/** Posts a chat request (or GETs `path`) with a 5 s cap, so a hung request fails the test instead of the run. */
async function call(
  s: TestServer,
  path = "/v1/chat/completions",
  body = chatBody,
): Promise<{ status: number; text: string }> {
  const init: RequestInit =
    path === "/v1/chat/completions"
      ? { method: "POST", body, headers: { "content-type": "application/json" } }
      : {};
  const res = await fetch(`${s.origin}${path}`, { ...init, signal: AbortSignal.timeout(5000) });
  return { status: res.status, text: await res.text() };
}

/** A personality whose one hook throws `message`. */
function buggy(hook: keyof Personality, message: string): Personality {
  return {
    name: "buggy",
    [hook]: () => {
      throw new Error(message);
    },
  } as Personality;
}

describe("failures inside the server become HTTP errors that name them", () => {
  it("a reply function that rejects asynchronously", async () => {
    server = await startServer({ replies: async () => Promise.reject(new Error("async script bug")) });
    const res = await call(server);
    expect(res.status).toBe(500);
    expect(res.text).toContain("the replies function failed on chat request #1");
    expect(res.text).toContain("async script bug");
  });

  it("a reply function that returns something that is not a reply", async () => {
    server = await startServer({ replies: () => 42 as never });
    const res = await call(server);
    expect(res.status).toBe(500);
    expect(res.text).toMatch(/reply/i);
  });

  it.each([
    ["check", "/v1/chat/completions"],
    ["intercept", "/v1/models"],
    ["models", "/v1/models"],
    ["props", "/props"],
    ["route", "/health"],
    ["notFound", "/nowhere"],
    ["headers", "/v1/models"],
    ["streamsUsage", "/v1/chat/completions"],
    ["completionBudget", "/v1/chat/completions"],
  ] as const)("a personality whose %s hook throws (%s)", async (hook, path) => {
    server = await startServer({ personality: buggy(hook, `bug in ${hook}`), replies: [{ content: "x" }] });
    const res = await call(server, path);
    expect(res.status).toBe(500);
    expect(res.text).toContain(`the buggy personality's ${hook} failed`);
    expect(res.text).toContain(`bug in ${hook}`);
    // It keeps serving: the next request gets an answer too.
    expect((await call(server, path)).status).toBe(500);
  });

  it.each(["openai", "llamacpp", "vllm", "lmstudio"] as const)(
    "the %s personality with its recordings missing names the missing file",
    async (name: PersonalityName) => {
      vi.stubEnv("LOOPWRIGHT_FIXTURES", mkdtempSync(join(tmpdir(), "testkit-empty-")));
      server = await startServer({ personality: name, replies: () => ({ content: "x" }) });
      const paths = ["/v1/chat/completions", "/v1/models", "/props", "/api/v0/models", "/nowhere"];
      const answers = [];
      for (const path of paths) answers.push(await call(server, path));
      // A request every personality refuses in its recorded words: stream_options without stream.
      const refused = JSON.parse(chatBody);
      answers.push(
        await call(server, "/v1/chat/completions", JSON.stringify({ ...refused, stream_options: {} })),
      );
      const failed = answers.filter((a) => a.status === 500);
      // Every personality reads recordings for at least one of these; each of those answers names the file.
      expect(failed.length).toBeGreaterThan(0);
      for (const a of failed)
        expect(a.text, JSON.stringify(answers)).toMatch(/Cannot read fixture \\"[^"]+\\"/);
    },
  );
});
