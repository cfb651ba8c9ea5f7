/**
 * Round 104d: a refusal naming several fields the caller allowed dropping is answered in one
 * re-send dropping them all, where each cost a send of its own.
 */
import { streamTurn } from "@loopwright/stream";
import { countWork, readFixture, startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { tenantOf } from "../test/wire.js";
import { createCapabilityStore, type EndpointCapabilities } from "./capabilities.js";
import { negotiate } from "./negotiate.js";
import { readRefusal } from "./refusal.js";
import { buildBody } from "./request-body.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

type ErrorReply = { type: "error"; status: number; body: unknown };

/**
 * OpenAI's recorded "Unrecognized request argument supplied: reasoning_effort" 400, naming `names`
 * in its plural form ("Unrecognized request arguments supplied: min_p, top_k"), with a relay's
 * "(request id: …)" after it when `relayed`.
 */
function unrecognized(names: readonly string[], relayed = false): ErrorReply {
  const body = JSON.parse(
    readFixture("errors/openai/unrecognized-argument-reasoning-effort-gpt-4o-mini.json"),
  );
  body.error.message = body.error.message
    .replace("argument", names.length > 1 ? "arguments" : "argument")
    .replace("reasoning_effort", names.join(", "));
  if (relayed) body.error.message += " (request id: 20240806214436917505976hvsFC5y2)";
  return { type: "error", status: 400, body };
}

/**
 * Mistral's recorded 422 (pydantic's `extra_forbidden` detail list, inside an object `message`),
 * with one entry for each of `names` in place of its one for `stream_options.include_usage`.
 */
function extraForbidden(names: readonly string[]): ErrorReply {
  const body = JSON.parse(
    readFixture("errors/mistral/422-stream-options-extra-forbidden-message-is-object.json"),
  );
  const [entry] = body.message.detail;
  body.message.detail = names.map((name) => ({ ...entry, loc: ["body", name], input: 1 }));
  return { type: "error", status: 422, body };
}

/** Gemini's OpenAI-compatible endpoint: an `Unknown name "X": Cannot find field.` line for each name. */
function unknownNames(names: readonly string[]): ErrorReply {
  const message = `Invalid JSON payload received. ${names.map((n) => `Unknown name "${n}": Cannot find field.`).join("\n")}`;
  return { type: "error", status: 400, body: { error: { code: 400, message, status: "INVALID_ARGUMENT" } } };
}

/** Which of `fields` each request the server was sent carried. */
const carried = (on: TestServer, fields: readonly string[]) =>
  on.chatRequests.map((r) => fields.filter((f) => f in (r.body as object)));

/**
 * A server refusing every request that carries any of `fields` with `refuse` (given the fields the
 * request carried), answering "fine" to one that carries none.
 */
async function refusingServer(fields: readonly string[], refuse: (sent: string[]) => ErrorReply) {
  return startServer({
    replies: (request) => {
      const sent = fields.filter((f) => f in (request.body as object));
      return sent.length > 0 ? refuse(sent) : { content: "fine" };
    },
  });
}

/** One turn through negotiate with `extraBody`, every key droppable: its content and the notices told. */
async function turn(
  supports: EndpointCapabilities,
  client: OpenAI,
  extraBody: Record<string, unknown>,
  options: { droppable?: readonly string[] } = {},
) {
  const notices: string[] = [];
  const config = { model: "m", extraBody };
  const done = await negotiate(
    supports,
    (supports, produced, model) =>
      streamTurn(client, buildBody(config, supports, model, [{ role: "user", content: "hi" }]), { produced }),
    { model: "m", droppable: options.droppable ?? Object.keys(extraBody), onNotice: (n) => notices.push(n) },
  );
  return { content: done.content, notices };
}

describe("a refusal naming several droppable fields", () => {
  it("drops both fields of OpenAI's plural 'Unrecognized request arguments' in one re-send, where each cost a send", async () => {
    // Before: [["min_p", "top_k"], ["top_k"], []] — three sends for two fields.
    server = await refusingServer(["min_p", "top_k"], (sent) => unrecognized(sent, true));
    const { supports, client } = tenantOf(server);
    const { content, notices } = await turn(supports, client, { min_p: 0.05, top_k: 20 });
    expect(content).toBe("fine");
    expect(carried(server, ["min_p", "top_k"])).toEqual([["min_p", "top_k"], []]);
    expect(notices).toEqual([
      "m refused the field min_p; sending min_p no more for this model.",
      "m refused the field top_k; sending top_k no more for this model.",
    ]);
  });

  it("drops all three fields of a pydantic extra_forbidden list in one re-send, and the latch holds on the next request", async () => {
    // Before: four sends for Mistral's list of three, each re-send dropping the first it named.
    const fields = ["min_p", "top_k", "repetition_penalty"];
    server = await refusingServer(fields, extraForbidden);
    const store = createCapabilityStore();
    const { supports, client } = tenantOf(server, store);
    const extraBody = { min_p: 0.05, top_k: 20, repetition_penalty: 1.1, seed: 7 };
    const first = await turn(supports, client, extraBody);
    expect(first.content).toBe("fine");
    expect(carried(server, fields)).toEqual([fields, []]);
    expect(first.notices).toHaveLength(3);
    expect(store.modelCapabilitiesFor(supports, "m").droppedFields).toEqual(fields);
    // The next request goes without them at once, and a field nobody refused is still sent.
    const second = await turn(supports, client, extraBody);
    expect(second).toEqual({ content: "fine", notices: [] });
    expect(server.chatRequests).toHaveLength(3);
    expect(carried(server, [...fields, "seed"])[2]).toEqual(["seed"]);
  });

  it("drops every field Gemini's 'Unknown name' lines name in one re-send", async () => {
    server = await refusingServer(["top_k", "min_p"], unknownNames);
    const { supports, client } = tenantOf(server);
    const { content } = await turn(supports, client, { top_k: 20, min_p: 0.05 });
    expect(content).toBe("fine");
    expect(server.chatRequests).toHaveLength(2);
  });

  it("passes on a list holding a field not droppable as it passes on that field alone: nothing dropped, nothing re-sent", async () => {
    // `messages` is the loop's own: no refusal of it is answered by dropping. Before, the droppable
    // min_p named first was latched off and the request re-sent, to be refused again for messages.
    for (const names of [["messages"], ["min_p", "messages"], ["messages", "min_p"]]) {
      server = await startServer({ replies: () => unrecognized(names) });
      const store = createCapabilityStore();
      const { supports, client } = tenantOf(server, store);
      const failed = await turn(supports, client, { min_p: 0.05 }).catch((error: unknown) => error);
      expect(failed, names.join(", ")).toMatchObject({ status: 400 });
      expect(server.chatRequests, names.join(", ")).toHaveLength(1);
      expect(store.modelCapabilitiesFor(supports, "m").droppedFields).toEqual([]);
      await server.close();
      server = undefined;
    }
  });

  it("keeps the first name in field and name, and each other top-level field once in more", () => {
    const refusal = readRefusal({
      status: 400,
      error: {
        message:
          "Unrecognized request arguments supplied: chat_template_kwargs.enable_thinking, min_p, chat_template_kwargs.x, top_k",
      },
    });
    expect(refusal).toEqual({
      kind: "unknown-field",
      field: "chat_template_kwargs",
      name: "chat_template_kwargs.enable_thinking",
      more: [
        { field: "min_p", name: "min_p" },
        { field: "top_k", name: "top_k" },
      ],
    });
    // A field another latch answers on its own is left for the request re-sent to draw alone.
    expect(
      readRefusal({
        status: 400,
        error: { message: "Unrecognized request arguments supplied: min_p, stream_options" },
      }),
    ).toEqual({ kind: "unknown-field", field: "min_p", name: "min_p" });
  });
});

describe("the fields a refusal names, read off whatever a server writes", () => {
  it("are each a name the server's words hold, the relay's notes left out (property)", () => {
    // As r103b holds the first name: every name in `more` too is one the body holds as JSON writes
    // it, and never a "(request id: …)" note a relay appended.
    const piece = fc.oneof(
      fc.string({ unit: "binary", maxLength: 12 }),
      fc.stringMatching(/^[a-z_]{1,8}$/),
      fc.constantFrom(", ", " and ", " (request id: 2024x)", "Unrecognized request arguments supplied: "),
    );
    const list = fc.array(piece, { maxLength: 10 }).map((parts) => parts.join(""));
    const body = fc.oneof(
      list.map((words) => ({ error: { message: `Unrecognized request arguments supplied: ${words}` } })),
      fc
        .array(list, { maxLength: 6 })
        .map((locs) => ({ detail: locs.map((loc) => ({ type: "extra_forbidden", loc: ["body", loc] })) })),
    );
    fc.assert(
      fc.property(body, (sent) => {
        const refusal = readRefusal({ status: 400, body: sent, error: (sent as { error?: unknown }).error });
        if (refusal?.kind !== "unknown-field") return;
        const text = JSON.stringify(sent);
        for (const { name } of [refusal, ...(refusal.more ?? [])]) {
          expect(text).toContain(JSON.stringify(name).slice(1, -1));
          // A note is never read as a name from the sentence (a pydantic loc is the server's own).
          if ("error" in sent) expect(name).not.toMatch(/request id/);
        }
      }),
      propertyRuns(300),
    );
  });
});

describe("any subset of droppable fields, refused in any wording (property)", () => {
  const pool = ["min_p", "top_k", "repetition_penalty", "seed", "id_slot", "cache_prompt", "typical_p"];
  const wordings = { unrecognized, extraForbidden, unknownNames };
  it("is answered in exactly one re-send with every named field dropped and every other one still sent", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.subarray(pool, { minLength: 1 }),
        fc.subarray(pool),
        fc.constantFrom(...(Object.keys(wordings) as (keyof typeof wordings)[])),
        async (refused, more, wording) => {
          const sentFields = [...new Set([...refused, ...more])];
          const extraBody = Object.fromEntries(sentFields.map((f) => [f, 1]));
          const on = await refusingServer(refused, wordings[wording]);
          try {
            const { supports, client } = tenantOf(on);
            const { content, notices } = await turn(supports, client, extraBody);
            expect(content).toBe("fine");
            expect(on.chatRequests).toHaveLength(2);
            const kept = sentFields.filter((f) => !refused.includes(f));
            expect(carried(on, sentFields)[1]).toEqual(kept);
            expect(notices).toHaveLength(refused.length);
          } finally {
            await on.close();
          }
        },
      ),
      propertyRuns(20),
    );
  });
});

describe("a 64 KiB list of names", () => {
  // Counted, not timed (testkit's countWork), so the load of the machine does not enter it: the
  // words readRefusal reads are cut at 64 KiB (MAX_ERROR_TEXT), and a list of that many names, every
  // one droppable, is read and answered in steps linear in the names — a search of the dropped
  // fields for each name (droppedFields.includes) put back makes it quadratic, past the limit of
  // 200 steps a name.
  const names = (n: number) => Array.from({ length: n }, (_, i) => `f${i}`);
  const refusedFor = async (list: string[]) => {
    server = await startServer({ replies: () => unrecognized(list) });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    const error = await client.chat.completions
      .create({ model: "m", messages: [{ role: "user", content: "x" }] })
      .catch((e: unknown) => e);
    await server.close();
    server = undefined;
    return error;
  };
  /** The steps of one negotiate call answering `error` (a re-send that succeeds), and the fields it dropped. */
  const answered = async (list: string[], error: unknown) => {
    const supports = createCapabilityStore().capabilitiesFor("http://127.0.0.1:1/v1", "k");
    let sends = 0;
    let dropped: string[] = [];
    const { total } = await countWork(async () => {
      await negotiate(
        supports,
        async (_supports, _produced, model) => {
          sends++;
          if (sends === 1) throw error;
          dropped = [...(model?.droppedFields ?? [])];
          return "fine";
        },
        { model: "m", droppable: list },
      );
    }, 200 * list.length);
    return { total, sends, dropped };
  };

  it("is read and answered in one re-send, in steps that grow with the names and not their square", {
    timeout: 120_000,
  }, async () => {
    const full = names(8_000); // "f0, f1, …": 46 KB of names, all inside the 64 KiB read
    const half = full.slice(0, 4_000);
    const big = await answered(full, await refusedFor(full));
    const small = await answered(half, await refusedFor(half));
    expect(big.sends).toBe(2);
    expect(big.dropped).toEqual(full);
    expect(small.dropped).toEqual(half);
    expect(big.total / small.total).toBeLessThan(3);
  });
});
