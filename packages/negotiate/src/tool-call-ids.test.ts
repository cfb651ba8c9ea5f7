/**
 * A model that takes only nine-letter-and-digit tool-call ids (Mistral's API, its tokenizer behind
 * vLLM or oMLX, a Mistral v3 chat template) or caps their length (Azure, OpenAI): each recorded
 * refusal is latched for the model and answered over HTTP by re-sending the transcript with ids it
 * takes — the same ids on every step, each call still paired with its result, the caller's
 * transcript untouched.
 */
import { keepErrorBodies } from "@loopwright/client";
import { readFixture, recordedErrorBody, startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import OpenAI from "openai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { rejection, streamText } from "../test/wire.js";
import { createCapabilityStore } from "./capabilities.js";
import { negotiate } from "./negotiate.js";
import { buildBody } from "./request-body.js";
import { isTransient } from "./retry.js";
import { isShortToolCallId, shortToolCallIds } from "./tool-call-ids.js";

let server: TestServer;
beforeEach(async () => {
  server = await startServer();
});
afterEach(() => server.close());

const ok = { type: "turn", content: "fine" } as const;
const SHORT = /^[A-Za-z0-9]{9}$/;

/** A transcript with the ids the loop itself mints, and one carried over from OpenAI. */
const transcript = (): Record<string, unknown>[] => [
  { role: "user", content: "What is 1 + 2, and 3 + 4?" },
  {
    role: "assistant",
    content: null,
    tool_calls: [
      { id: "call_recovered_0", type: "function", function: { name: "add", arguments: '{"a":1,"b":2}' } },
      { id: "call_PTLP8xhu3uwZk4l3nlnrrJha", type: "function", function: { name: "add", arguments: "{}" } },
      { id: "gSIMJiOkT", type: "function", function: { name: "add", arguments: '{"a":3,"b":4}' } },
    ],
  },
  { role: "tool", tool_call_id: "call_recovered_0", content: "3" },
  { role: "tool", tool_call_id: "call_PTLP8xhu3uwZk4l3nlnrrJha", content: "error: missing a" },
  { role: "tool", tool_call_id: "gSIMJiOkT", content: "7" },
];

/** Each recorded wording, with the status its source reported. */
const RECORDED: [string, number, string][] = [
  ["Mistral API", 400, "mistral/400-tool-call-id-must-be-nine-alphanumerics.json"],
  ["vLLM (mistral_common)", 400, "vllm/tool-call-id-must-be-nine-alphanumerics-legacy-top-level.json"],
  ["vLLM (a Mistral v3 chat template)", 400, "vllm/tool-call-ids-alphanumeric-length-9-chat-template.json"],
  ["llama.cpp (a Mistral v3 chat template)", 400, "llamacpp/tool-call-ids-length-9-jinja-b9749.json"],
  ["oMLX (a 500)", 500, "omlx/500-tool-call-id-must-be-nine-alphanumerics.message.txt"],
  ["Azure OpenAI", 400, "azure-openai/tool-call-id-string-too-long-max-40.message.txt"],
  ["OpenAI", 400, "openai/400-tool-call-id-string-above-max-length.json"],
];
/** The body as served: JSON parsed, a message as its text. */
const WORDINGS: [string, number, unknown][] = RECORDED.map(([who, status, file]) => [
  who,
  status,
  file.endsWith(".json") ? recordedErrorBody(file) : readFixture(`errors/${file}`),
]);

/** The real client, with the fetch `@loopwright/client` gives it so a top-level error body survives. */
const client = (): OpenAI =>
  new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0, fetch: keepErrorBodies() });

function turn(
  store: ReturnType<typeof createCapabilityStore>,
  messages: readonly unknown[],
  options: { model?: string; notices?: string[] } = { model: "mistral-small-latest" },
): Promise<string> {
  const supports = store.capabilitiesFor(server.baseUrl, "k");
  const openai = client();
  const model = options.model ?? "mistral-small-latest";
  return negotiate(
    supports,
    (s, produced, caps) => streamText(openai, buildBody({ model }, s, caps, messages), produced),
    {
      ...(options.model !== undefined ? { model: options.model } : {}),
      onNotice: (t) => options.notices?.push(t),
    },
  );
}

type WireMessage = { tool_calls?: { id: string }[]; tool_call_id?: string };
const sentIds = (i: number): string[] =>
  ((server.chatRequests[i]?.body as { messages?: WireMessage[] } | undefined)?.messages ?? []).flatMap(
    (m) => [
      ...(m.tool_calls ?? []).map((c) => c.id),
      ...(m.tool_call_id !== undefined ? [m.tool_call_id] : []),
    ],
  );

describe("a refused tool-call id, in each recorded wording", () => {
  for (const [who, status, body] of WORDINGS) {
    it(`${who}: latched for the model and re-sent with nine-character ids, paired and stable`, async () => {
      const store = createCapabilityStore();
      const messages = transcript();
      const before = structuredClone(messages);
      const notices: string[] = [];
      server.enqueue({ type: "error", status, body }, ok, ok);
      await expect(turn(store, messages, { model: "mistral-small-latest", notices })).resolves.toBe("fine");
      expect(sentIds(0)).toEqual([
        "call_recovered_0",
        "call_PTLP8xhu3uwZk4l3nlnrrJha",
        "gSIMJiOkT",
        "call_recovered_0",
        "call_PTLP8xhu3uwZk4l3nlnrrJha",
        "gSIMJiOkT",
      ]);
      const wire = sentIds(1);
      expect(wire.every((id) => SHORT.test(id))).toBe(true);
      // Each result answers its own call; the valid id went as it was; two ids, two wire ids.
      expect(wire.slice(3)).toEqual(wire.slice(0, 3));
      expect(wire[2]).toBe("gSIMJiOkT");
      expect(new Set(wire.slice(0, 3)).size).toBe(3);
      // The caller's transcript keeps its ids.
      expect(messages).toEqual(before);
      expect(notices).toEqual([expect.stringMatching(/mistral-small-latest refused a tool-call id/)]);
      // The next request of the run sends the same wire ids without being refused first.
      await turn(store, messages);
      expect(sentIds(2)).toEqual(wire);
      expect(
        store.modelCapabilitiesFor(store.capabilitiesFor(server.baseUrl, "k"), "mistral-small-latest"),
      ).toMatchObject({ anyToolCallIds: false });
    });
  }

  it("latches per model: another model on the same endpoint still gets the ids as they are", async () => {
    const store = createCapabilityStore();
    server.enqueue({ type: "error", status: 400, body: WORDINGS[0]?.[2] }, ok, ok);
    await turn(store, transcript(), { model: "mistral-small-latest" });
    await turn(store, transcript(), { model: "gpt-4.1" });
    expect(sentIds(2)).toEqual(sentIds(0));
  });

  it("passes a 500 that does not say it on as it came, never latched", async () => {
    const store = createCapabilityStore();
    server.enqueue({ type: "error", status: 500, body: { error: { message: "Internal server error" } } }, ok);
    const error = await rejection(turn(store, transcript()));
    expect((error as { status?: number }).status).toBe(500);
    expect(isTransient(error)).toBe(true);
    expect(server.chatRequests.length).toBe(1);
  });

  it("hands the refusal to the caller when no model is named (the latch is the model's)", async () => {
    const store = createCapabilityStore();
    server.enqueue({ type: "error", status: 400, body: WORDINGS[0]?.[2] }, ok);
    const error = await rejection(turn(store, transcript(), {}));
    expect((error as Error).message).toMatch(/Tool call id was 2968-LWy3uasib but must be a-z/);
    expect(server.chatRequests.length).toBe(1);
  });

  it("reads the refusal whatever the length of the id it quotes (a host's own 400-character id)", async () => {
    const store = createCapabilityStore();
    const long = `host_${"x".repeat(400)}`;
    const message = `Tool call id was ${long} but must be a-z, A-Z, 0-9, with a length of 9.`;
    server.enqueue(
      { type: "error", status: 400, body: { object: "error", message, type: "invalid_function_call" } },
      ok,
    );
    await expect(turn(store, transcript(), { model: "mistral-small-latest" })).resolves.toBe("fine");
    expect(sentIds(1).every((id) => SHORT.test(id))).toBe(true);
    expect(isTransient({ status: 500, body: { object: "error", message } })).toBe(false);
  });

  it("does not retry oMLX's 500 for the id when the latch cannot answer it", () => {
    const error = { status: 500, body: WORDINGS[4]?.[2] };
    expect(isTransient(error)).toBe(false);
  });
});

describe("the latch in a snapshot", () => {
  it("is exported and imported, and a snapshot written before it reads as any id", () => {
    const store = createCapabilityStore();
    const supports = store.capabilitiesFor("https://api.mistral.ai/v1", "k");
    store.modelCapabilitiesFor(supports, "mistral-small-latest").anyToolCallIds = false;
    const snapshot = store.exportCapabilities();
    const again = createCapabilityStore();
    again.importCapabilities(JSON.parse(JSON.stringify(snapshot)));
    const restored = again.capabilitiesFor("https://api.mistral.ai/v1", "k");
    expect(again.modelCapabilitiesFor(restored, "mistral-small-latest").anyToolCallIds).toBe(false);
    // An older snapshot has no such field: nothing was refused then.
    const old = JSON.parse(JSON.stringify(snapshot));
    delete old.endpoints[0].models["mistral-small-latest"].anyToolCallIds;
    const third = createCapabilityStore();
    third.importCapabilities(old);
    const model = third.modelCapabilitiesFor(
      third.capabilitiesFor("https://api.mistral.ai/v1", "k"),
      "mistral-small-latest",
    );
    expect(model.anyToolCallIds).toBe(true);
  });
});

describe("shortToolCallIds", () => {
  /** Ids as hosts and servers write them: valid ones, near misses, the loop's own, anything. */
  const anyId = fc.oneof(
    fc.stringMatching(/^[A-Za-z0-9]{9}$/),
    fc.stringMatching(/^[A-Za-z0-9_-]{0,12}$/),
    fc.constantFrom("call_0", "call_recovered_0", "call_preselected_1", "", "gSIMJiOkT"),
    fc.string({ maxLength: 40 }),
  );
  /** A transcript: assistant messages with calls, each answered by a tool message. */
  const transcripts = fc
    .array(fc.uniqueArray(anyId, { minLength: 1, maxLength: 4 }), { maxLength: 5 })
    .map((turns) =>
      turns.flatMap((ids) => [
        { role: "assistant", content: null, tool_calls: ids.map((id) => ({ id, type: "function" })) },
        ...ids.map((id) => ({ role: "tool", tool_call_id: id, content: "ok" })),
      ]),
    );
  const idsIn = (messages: readonly unknown[]): string[] =>
    (messages as WireMessage[]).flatMap((m) => [
      ...(m.tool_calls ?? []).map((c) => c.id),
      ...(m.tool_call_id !== undefined ? [m.tool_call_id] : []),
    ]);

  it("gives only valid ids, the same every time, one per id, and keeps valid ids", () => {
    fc.assert(
      fc.property(transcripts, (messages) => {
        const before = structuredClone(messages);
        const out = shortToolCallIds(messages);
        expect(messages).toEqual(before);
        const original = idsIn(messages);
        const wire = idsIn(out);
        expect(wire.every(isShortToolCallId)).toBe(true);
        expect(shortToolCallIds(structuredClone(messages))).toEqual(out);
        // One original id, one wire id; two originals, two wire ids.
        const pairs = new Map<string, string>();
        const back = new Map<string, string>();
        original.forEach((id, i) => {
          const sent = wire[i] as string;
          expect(pairs.get(id) ?? sent).toBe(sent);
          expect(back.get(sent) ?? id).toBe(id);
          pairs.set(id, sent);
          back.set(sent, id);
          if (isShortToolCallId(id)) expect(sent).toBe(id);
        });
      }),
      propertyRuns(300),
    );
  });

  it("keeps the wire ids of earlier steps when the transcript grows", () => {
    fc.assert(
      fc.property(transcripts, transcripts, (first, later) => {
        const step1 = idsIn(shortToolCallIds(first));
        const step2 = idsIn(shortToolCallIds([...first, ...later]));
        // Only a later valid id equal to an earlier derived one could move it: 1 in 62^9.
        expect(step2.slice(0, step1.length)).toEqual(step1);
      }),
      propertyRuns(200),
    );
  });

  it("resolves a derived id that a valid id already holds by passing on to the next", () => {
    const [taken] = idsIn(shortToolCallIds([{ role: "tool", tool_call_id: "call_0" }]));
    const out = idsIn(
      shortToolCallIds([
        { role: "tool", tool_call_id: "call_0" },
        { role: "tool", tool_call_id: taken },
      ]),
    );
    expect(out[1]).toBe(taken);
    expect(out[0]).not.toBe(taken);
    expect(isShortToolCallId(out[0])).toBe(true);
  });
});
