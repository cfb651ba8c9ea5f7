import { afterEach, describe, expect, it } from "vitest";
import { readFixture } from "../fixtures.js";
import { countTokens, renderPrompt } from "../prefix-cache.js";
import { startServer, type TestServer } from "../server.js";
import { lmstudioPersonality } from "./lmstudio.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const user = (content: string) => ({ model: "m", messages: [{ role: "user", content }] });
const post = (body: unknown) =>
  fetch(`${server?.baseUrl}/chat/completions`, { method: "POST", body: JSON.stringify(body) });

describe("lmstudio personality", () => {
  it("serves the documented /api/v0/models listing, marking the loaded model", async () => {
    server = await startServer({ personality: "lmstudio" });
    const recorded = JSON.parse(readFixture("models/lmstudio-api-v0-models.docs-example.json"));
    expect(await fetch(`${server.origin}/api/v0/models`).then((r) => r.json())).toEqual(recorded);
    await server.close();
    server = await startServer({
      personality: lmstudioPersonality({ model: "meta-llama-3.1-8b-instruct", contextLength: 8192 }),
    });
    const body = (await fetch(`${server.origin}/api/v0/models`).then((r) => r.json())) as { data: unknown[] };
    expect(body.data[1]).toMatchObject({
      state: "loaded",
      loaded_context_length: 8192,
      max_context_length: 131072,
    });
  });

  it("refuses response_format json_object with the recorded string error", async () => {
    server = await startServer({ personality: "lmstudio", replies: () => ({ content: "x" }) });
    const res = await post({ ...user("x"), response_format: { type: "json_object" } });
    expect(res.status).toBe(400);
    expect(await res.text()).toBe(readFixture("errors/lmstudio/response-format-json-object-rejected.json"));
  });

  it("refuses a prompt longer than the loaded context with the recorded wording", async () => {
    server = await startServer({
      personality: lmstudioPersonality({ contextLength: 16 }),
      replies: () => ({ content: "x" }),
    });
    const body = user("hello ".repeat(20));
    const tokens = countTokens(renderPrompt(body));
    const json = await (await post(body)).json();
    expect(json).toEqual({
      error: `Trying to keep the first ${tokens} tokens when context the overflows. However, the model is loaded with context length of only 16 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input`,
    });
    expect((await post(user("hi"))).status).toBe(200);
  });
});
