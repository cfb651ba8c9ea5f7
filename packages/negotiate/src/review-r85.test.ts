// Review round r85 (negotiate): options read through a polluted Object.prototype. Each test fails on
// the code before its fix.
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientFor, fixtureError, rejection, streamText } from "../test/wire.js";
import { createCapabilityStore, modelCapabilitiesFor } from "./capabilities.js";
import { ContextOverflow } from "./errors.js";
import { negotiate } from "./negotiate.js";
import { readRefusal } from "./refusal.js";
import { buildBody, type ToolDefinition } from "./request-body.js";
import { backoffMs, isModelLoading, isOverflow, isTransient, retryAfterMs } from "./retry.js";
import { shortToolCallIds } from "./tool-call-ids.js";

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

/** Sets `fields` on Object.prototype (enumerable, as `Object.prototype.name = value` does); answers what takes them off. */
function pollute(fields: Record<string, unknown>): () => void {
  const assigned = { configurable: true, writable: true, enumerable: true };
  for (const [name, value] of Object.entries(fields)) {
    Reflect.defineProperty(Object.prototype, name, { ...assigned, value });
  }
  return () => {
    for (const name of Object.keys(fields)) Reflect.deleteProperty(Object.prototype, name);
  };
}

/** Runs `body` polluted by `fields`, taken off again once it has settled. */
async function withPolluted<T>(fields: Record<string, unknown>, body: () => T | Promise<T>): Promise<T> {
  const clean = pollute(fields);
  try {
    return await body();
  } finally {
    clean();
  }
}

const messages = [{ role: "user", content: "hi" }];
const TOOLS: ToolDefinition[] = [
  { type: "function", function: { name: "clock", parameters: { type: "object", properties: {} } } },
];

describe("R85N-1: negotiate's options, never a polluted Object.prototype's", () => {
  /** One turn over the testkit server: a max_tokens refusal, answered, then the reply. */
  async function turn(options: Parameters<typeof negotiate>[2]): Promise<string> {
    server.enqueue(fixtureError("openai/max-tokens-unsupported-use-max-completion-tokens.json", 400), {
      type: "turn",
      content: "fine",
    });
    const supports = createCapabilityStore().capabilitiesFor(server.baseUrl, "sk-test");
    const client = clientFor(server.baseUrl);
    return negotiate(
      supports,
      (supports, produced, model) =>
        streamText(client, buildBody({ model: "m", maxTokens: 10 }, supports, model, messages), produced),
      options,
    );
  }

  it("an inherited maxAttempts neither refuses the call nor cuts its attempts", async () => {
    // Before: "negotiate: maxAttempts must be a whole number from 1." before anything was sent.
    await expect(withPolluted({ maxAttempts: true }, () => turn({ model: "m" }))).resolves.toBe("fine");
    // Before: one attempt, and the refusal the second would have answered thrown.
    await expect(withPolluted({ maxAttempts: 1 }, () => turn({ model: "m" }))).resolves.toBe("fine");
    // Before: "onNotice must be a function"; an options object given none, or none at all.
    await expect(withPolluted({ onNotice: "P0LLUTED" }, () => turn({ model: "m" }))).resolves.toBe("fine");
  });

  it("backoffMs and retryAfterMs take no inherited base, cap, random or clock", async () => {
    const clean = backoffMs(3, undefined, { random: () => 0.5 });
    expect(clean).toBe(6000);
    // Before: 1 (an inherited baseMs and maxMs), and "random is not a function".
    await expect(
      withPolluted({ baseMs: 1, maxMs: 1 }, () => backoffMs(3, undefined, { random: () => 0.5 })),
    ).resolves.toBe(clean);
    await expect(withPolluted({ random: "P0LLUTED" }, () => Number.isFinite(backoffMs(3)))).resolves.toBe(
      true,
    );
    // An HTTP-date retry-after on a response without a Date header is measured with `now`.
    server.enqueue({
      ...fixtureError("openai/429-request-too-large-tpm-gpt-4o.json", 429),
      headers: { "retry-after": new Date(Date.now() + 60_000).toUTCString() },
    });
    const refused = await rejection(
      clientFor(server.baseUrl).chat.completions.create({
        model: "m",
        messages: [{ role: "user", content: "x" }],
      }),
    );
    // Before: "now is not a function" from each.
    const waits = await withPolluted({ now: "P0LLUTED" }, () => [
      retryAfterMs(refused),
      backoffMs(0, refused),
    ]);
    for (const wait of waits) expect(wait).toBeGreaterThan(0);
  });
});

describe("R85N-2: a capability store's and buildBody's options, never a polluted Object.prototype's", () => {
  it("createCapabilityStore takes no inherited maxEndpoints", async () => {
    // Before: "createCapabilityStore: maxEndpoints must be a whole number from 1, got P0LLUTED."
    await expect(
      withPolluted({ maxEndpoints: "P0LLUTED" }, () => createCapabilityStore().size),
    ).resolves.toBe(0);
    // Before: a store of one endpoint, each lookup forgetting the one before (a's latches lost).
    const same = await withPolluted({ maxEndpoints: 1 }, () => {
      const store = createCapabilityStore({});
      const a = store.capabilitiesFor("http://a.example/v1", "k");
      store.capabilitiesFor("http://b.example/v1", "k");
      return store.capabilitiesFor("http://a.example/v1", "k") === a;
    });
    expect(same).toBe(true);
  });

  it("buildBody takes no inherited order or toolChoice", async () => {
    const supports = createCapabilityStore().capabilitiesFor("http://h.example/v1", "k");
    const build = () => buildBody({ model: "m" }, supports, undefined, messages, TOOLS, { order: false });
    const clean = build();
    expect(clean.tool_choice).toBeUndefined();
    // Before: an inherited toolChoice "none" went out as every request's tool_choice.
    await expect(withPolluted({ toolChoice: "none" }, build)).resolves.toEqual(clean);
    // Before: "buildBody: options.order must be true (by name), false (as given) or a comparator".
    await expect(
      withPolluted({ order: "P0LLUTED" }, () =>
        buildBody({ model: "m" }, supports, undefined, messages, TOOLS, {}),
      ),
    ).resolves.toEqual(clean);
  });

  it("a ContextOverflow takes no inherited window, prompt size or cause", async () => {
    const made = await withPolluted(
      { window: 1, promptTokens: 2, cause: "P0LLUTED" },
      () => new ContextOverflow("too long", {}),
    );
    // Before: window 1, promptTokens 2 and the cause "P0LLUTED" on every overflow made without them.
    expect([made.window, made.promptTokens, Object.hasOwn(made, "cause")]).toEqual([
      undefined,
      undefined,
      false,
    ]);
  });
});

describe("R85N-3: what a server sent and a host's messages, never a polluted Object.prototype's fields", () => {
  it("an error body's own words, status and wait: no inherited estimated_time, message or body", async () => {
    const files = [
      ["mistral/422-stream-options-extra-forbidden-message-is-object.json", 422],
      ["groq/404-model-not-found.json", 404],
      ["llamacpp/exceed-context-size-new-format-8708-of-8192.json", 400],
      ["moonshot/kimi-code-reasoning-effort-none-unsupported.json", 400],
    ] as const;
    const errors: unknown[] = [];
    for (const [file, status] of files) {
      const { body } = fixtureError(file, status);
      errors.push({ status, body }, { response: { status, data: body } });
      server.enqueue(fixtureError(file, status));
      const asked = clientFor(server.baseUrl).chat.completions.create({
        model: "m",
        messages: [{ role: "user", content: "x" }],
      });
      errors.push(await rejection(asked));
    }
    const read = () =>
      errors.map((error) => [
        readRefusal(error),
        isOverflow(error),
        isTransient(error),
        isModelLoading(error),
        retryAfterMs(error),
      ]);
    const clean = read();
    // Before: an inherited estimated_time was every error's wait (1000 ms) and made each a loading
    // model; an inherited `message` object named the field refused "P0LLUTED"; an inherited `body` or
    // `responseBody` was read as what the server said.
    for (const fields of [
      { estimated_time: 1 },
      { message: "P0LLUTED" },
      { msg: "Unknown parameter: 'polluted'" },
      { body: { error: { message: "Unsupported parameter: 'polluted'" } } },
      { responseBody: "Unsupported parameter: 'polluted'" },
    ]) {
      expect(await withPolluted(fields, read)).toEqual(clean);
    }
  });

  it("shortToolCallIds gives no message an inherited tool_call_id; buildBody takes no inherited role or parameters", async () => {
    const transcript = [
      { role: "user", content: "hi" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_abcdefghijklmnop", type: "function", function: { name: "clock", arguments: "{}" } },
        ],
      },
      { role: "tool", tool_call_id: "call_abcdefghijklmnop", content: "12:00" },
    ];
    const clean = shortToolCallIds(transcript);
    // Before: the user and assistant messages came back with a tool_call_id of their own.
    expect(await withPolluted({ tool_call_id: "P0LLUTED" }, () => shortToolCallIds(transcript))).toEqual(
      clean,
    );
    const supports = createCapabilityStore().capabilitiesFor("http://h.example/v1", "k");
    const bare: ToolDefinition[] = [{ type: "function", function: { name: "clock" } }];
    const build = () => buildBody({ model: "m" }, supports, undefined, messages, bare);
    // Before: "tools[0].function.parameters must be a JSON Schema object (or absent); got string".
    expect(await withPolluted({ parameters: "P0LLUTED" }, build)).toEqual(build());
    // Before: a message with no role was sent (and refused by the server) rather than named here.
    await expect(
      withPolluted({ role: "user" }, () =>
        buildBody({ model: "m" }, supports, undefined, [{ content: "x" }], []),
      ),
    ).rejects.toThrow("buildBody: messages[0].role must be the message's role");
  });
});

describe("R85N-4: a capability snapshot's own fields, never a polluted Object.prototype's", () => {
  it("a snapshot written before a latch existed imports it at its default", async () => {
    const store = createCapabilityStore();
    const supports = store.capabilitiesFor("http://h.example/v1", "k");
    modelCapabilitiesFor(supports, "m").legacyTokenLimit = false;
    const snapshot = JSON.parse(JSON.stringify(store.exportCapabilities()));
    for (const model of Object.values(snapshot.endpoints[0].models) as Record<string, unknown>[]) {
      delete model.toolChoice;
      delete model.anyToolCallIds;
      delete model.prefillEcho;
    }
    const imported = () => {
      const fresh = createCapabilityStore();
      fresh.importCapabilities(snapshot);
      return fresh.exportCapabilities();
    };
    const clean = imported();
    // Before: every model of the snapshot latched tool_choice, any tool-call id and the prefill echo
    // off; a string one ("P0LLUTED") refused the snapshot as malformed.
    expect(
      await withPolluted({ toolChoice: false, anyToolCallIds: false, prefillEcho: false }, imported),
    ).toEqual(clean);
    expect(await withPolluted({ toolChoice: "P0LLUTED" }, imported)).toEqual(clean);
  });
});
