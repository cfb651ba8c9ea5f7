/**
 * Review r85g: what the server WRITES read through a polluted `Object.prototype` (r85d made it read
 * request bodies as sent; this is the other half). The chunks, usage and timings the testkit builds
 * were read back through the prototype by the personalities (`Object.prototype.name = "X"` sent
 * llama.cpp's first tool-call delta as `"get_weatherXX"`, `.cached_tokens` made every usage
 * `prompt_tokens: null`), missing personality hooks and options were read from it (`.nCtx` made
 * every llamacpp request a 500, `.checkReply` every openai one), and so were `startServer`'s own
 * options (`.port = "x"` made it throw), `scriptedModel`'s request and `fixturesDir`'s variable.
 * Each case compares the raw answer with the same request's answer before the fields were set.
 */
import { afterEach, describe, expect, it } from "vitest";
import { fixturesDir } from "./fixtures.js";
import type { PersonalityName } from "./personalities/resolve.js";
import { renderPrompt } from "./prefix-cache.js";
import type { Reply } from "./replies.js";
import { scriptedModel } from "./scripted-model.js";
import { type ServerOptions, startServer, type TestServer } from "./server.js";
import { polluted } from "./test-support/polluted.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const reply: Reply = {
  reasoning: "think",
  content: "Let me check",
  toolCalls: [
    { name: "get_weather", arguments: '{"city":"Paris"}' },
    { name: "clock", arguments: "" },
  ],
};
const tool = (name: string) => ({
  type: "function",
  function: { name, parameters: { type: "object", properties: {} } },
});
const request = (stream: boolean) => ({
  model: "m",
  stream,
  ...(stream ? { stream_options: { include_usage: true } } : {}),
  messages: [{ role: "user", content: "weather?" }],
  tools: [tool("get_weather"), tool("clock")],
});

/** The fields some code might set on Object.prototype that the answer was read through. */
const FIELDS: Record<string, unknown> = {
  // the chunks and tool calls the testkit builds
  name: "P0LLUTED",
  id: "P0LLUTED",
  role: "P0LLUTED",
  tool_calls: "P0LLUTED",
  choices: "P0LLUTED",
  // the usage and timings it computes
  prompt_tokens: "P0LLUTED",
  completion_tokens: "P0LLUTED",
  cached_tokens: "P0LLUTED",
  reasoning_tokens: "P0LLUTED",
  completion_tokens_details: "P0LLUTED",
  // hooks a personality leaves out, options its name leaves out
  checkReply: "P0LLUTED",
  toolCallId: "P0LLUTED",
  intercept: "P0LLUTED",
  streamsUsage: "P0LLUTED",
  completionBudget: "P0LLUTED",
  nCtx: "P0LLUTED",
  models: "P0LLUTED",
  contextWindow: "P0LLUTED",
  refuseUnknownModels: "P0LLUTED",
  LOOPWRIGHT_FIXTURES: "/nowhere",
};

/** A fresh server's status and raw body for `body`, `created` pinned (the one field that varies). */
async function answer(options: ServerOptions, body: object): Promise<string> {
  server = await startServer(options);
  const response = await fetch(`${server.baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = (await response.text()).replace(/"created":\d+/g, '"created":0');
  await server.close();
  return `${response.status} ${text}`;
}

const PERSONALITIES: (PersonalityName | undefined)[] = [
  "openai",
  "llamacpp",
  "vllm",
  "lmstudio",
  "mistral",
  undefined,
];

describe("the answer the server writes, under a polluted Object.prototype", () => {
  for (const personality of PERSONALITIES) {
    it(`${personality ?? "no personality"}: the stream and the plain completion are byte for byte as without it`, async () => {
      const options = { replies: [reply, reply], personality, prefixCache: true };
      for (const stream of [true, false]) {
        const clean = await answer(options, request(stream));
        const dirty = await polluted(FIELDS, () => answer(options, request(stream)));
        expect(dirty).not.toContain("P0LLUTED");
        expect(dirty).toBe(clean);
      }
    });
  }
});

describe("startServer options under a polluted Object.prototype", () => {
  it("port, scriptedModel, personality, prefixCache, replies, models, props, lmstudio are read where given", async () => {
    const fields = {
      port: "P0LLUTED",
      scriptedModel: "P0LLUTED",
      personality: "P0LLUTED",
      prefixCache: "P0LLUTED",
      replies: "P0LLUTED",
      models: "P0LLUTED",
      props: "P0LLUTED",
      lmstudio: "P0LLUTED",
    };
    const text = await polluted(fields, () => answer({ replies: [{ content: "noon" }] }, request(false)));
    expect(text).toMatch(/^200 /);
    expect(JSON.parse(text.slice(4)).choices[0].message.content).toBe("noon");
  });

  it("a class instance's getters are still read as its options", async () => {
    class Options {
      get replies(): Reply[] {
        return [{ content: "from a getter" }];
      }
      get personality(): PersonalityName {
        return "llamacpp";
      }
    }
    const text = await answer(new Options() as ServerOptions, request(false));
    const body = JSON.parse(text.slice(4));
    expect(body.choices[0].message.content).toBe("from a getter");
    expect(body.system_fingerprint).toBeTypeOf("string"); // llama.cpp's shape
  });
});

describe("hosts calling the scripted model and the renderer directly", () => {
  it("scriptedModel calls no tool only Object.prototype offers, and paces as told", async () => {
    const clock = [{ type: "function", function: { name: "clock", description: "time", parameters: {} } }];
    const turn = await polluted({ tools: clock, chunkChars: 1000 }, async () =>
      scriptedModel({ messages: [{ role: "user", content: "what time is it?" }] }),
    );
    expect(turn.toolCalls ?? []).toEqual([]);
    expect(turn.chunkChars).toBe(4);
  });

  it("renderPrompt renders no tools and no tool_call_id only Object.prototype holds", async () => {
    const body = { messages: [{ role: "tool", content: "12:00" }] };
    const clean = renderPrompt(body);
    const dirty = await polluted({ tools: [1], tool_call_id: "P0LLUTED" }, async () => renderPrompt(body));
    expect(dirty).toBe(clean);
  });

  it("fixturesDir reads LOOPWRIGHT_FIXTURES from the environment only", async () => {
    const clean = fixturesDir();
    expect(await polluted({ LOOPWRIGHT_FIXTURES: "/nowhere" }, async () => fixturesDir())).toBe(clean);
  });
});
