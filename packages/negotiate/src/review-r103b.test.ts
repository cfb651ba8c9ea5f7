/**
 * Round 103b: negotiate read against hostile refusals — a field's name as the server wrote it,
 * repeated in a notice.
 */
import { keepErrorBodies } from "@loopwright/client";
import { streamTurn } from "@loopwright/stream";
import { readFixture, startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { tenantOf } from "../test/wire.js";
import { ContextOverflow } from "./errors.js";
import { negotiate } from "./negotiate.js";
import { readRefusal } from "./refusal.js";
import { buildBody } from "./request-body.js";
import { isOverflow } from "./retry.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/**
 * new-api's recorded "Unknown parameter: 'stream_options'" 400, naming `name` instead: a relay
 * repeats the name it was sent, or what it made of it.
 */
const unknownParameter = (name: string) => {
  const body = JSON.parse(
    readFixture("errors/relay-new-api/unknown-parameter-stream-options-with-request-ids.json"),
  );
  body.error.message = body.error.message.replace("stream_options", name);
  body.error.param = name;
  return { type: "error" as const, status: 400, body };
};

/** C0/C1 controls, DEL, the line and paragraph separators, and the bidi marks and overrides. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const RAW_CONTROLS = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028-\u202e\u2066-\u2069]/;

/**
 * One turn against a server refusing, once, any request that carries `field` with `refusal`, and
 * answering the next: the notices it told.
 */
async function noticesFor(field: string, refusal: ReturnType<typeof unknownParameter>): Promise<string[]> {
  let refusedOnce = false;
  server = await startServer({
    replies: (request) => {
      if (field in (request.body as object) && !refusedOnce) {
        refusedOnce = true;
        return refusal;
      }
      return { content: "fine" };
    },
  });
  const { supports, client } = tenantOf(server);
  const config = { model: "m", extraBody: { min_p: 0.05 } };
  const notices: string[] = [];
  const turn = await negotiate(
    supports,
    (supports, produced, model, sent) => {
      const body = buildBody(config, supports, model, [{ role: "user", content: "hi" }]);
      sent.body = body;
      return streamTurn(client, body, { produced });
    },
    { model: "m", droppable: ["min_p", "response_format"], onNotice: (n) => notices.push(n) },
  );
  expect(turn.content).toBe("fine");
  await server.close();
  server = undefined;
  return notices;
}

describe("a refused field's name, as the server wrote it, in a notice", () => {
  it("has its terminal escapes, line breaks and right-to-left override written \\uXXXX, where they reached the notice raw", async () => {
    // Before: "m refused the field min_p.<ESC>[2J<RLO>txt.exe<LF>Done; sending min_p no more…" —
    // an ESC that clears the operator's terminal, a line that reads as a second notice, and
    // U+202E turning the rest of the line round, all from the server's words.
    const notices = await noticesFor("min_p", unknownParameter("min_p.\u001b[2J\u202etxt.exe\nDone"));
    expect(notices).toEqual([
      "m refused the field min_p.\\u001b[2J\\u202etxt.exe\\u000aDone; sending min_p no more for this model.",
    ]);
  });

  it("is cut at 60 characters with its length said, where a name of 10,000 was repeated whole", async () => {
    const long = `min_p.${"x".repeat(9_994)}`;
    const [notice] = await noticesFor("min_p", unknownParameter(long));
    expect(notice).toBe(
      `m refused the field min_p.${"x".repeat(54)}… (10000 characters); sending min_p no more for this model.`,
    );
  });

  it("is escaped in the structured-output notice too (response_format refused by name)", async () => {
    let refusedOnce = false;
    server = await startServer({
      replies: (request) => {
        if ("response_format" in (request.body as object) && !refusedOnce) {
          refusedOnce = true;
          return unknownParameter("response_format.\u2066\u0007x");
        }
        return { content: "fine" };
      },
    });
    const { supports, client } = tenantOf(server);
    const config = { model: "m", extraBody: { response_format: { type: "json_object" } } };
    const notices: string[] = [];
    await negotiate(
      supports,
      (supports, produced, model) =>
        streamTurn(client, buildBody(config, supports, model, [{ role: "user", content: "hi" }]), {
          produced,
        }),
      { model: "m", onNotice: (n) => notices.push(n) },
    );
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(
      /^m refused structured output \(response_format\.\\u2066\\u0007x, a field it does not take\)/,
    );
  });

  it("never reaches a notice raw, whatever the server writes after the field's name (property)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: "binary", maxLength: 200 }), async (tail) => {
        fc.pre(!/['"`]/.test(tail));
        const notices = await noticesFor("min_p", unknownParameter(`min_p.${tail}`));
        for (const notice of notices) {
          expect(notice).not.toMatch(RAW_CONTROLS);
          expect(notice.isWellFormed()).toBe(true);
          expect(notice.length).toBeLessThan(200);
        }
      }),
      propertyRuns(25),
    );
  });
});

/**
 * What the real client rejects with when a server answers OpenAI's recorded context_length_exceeded
 * 400 with `tail` after its message: a proxy that appends what it likes, or a server quoting the
 * prompt back.
 */
async function overflowWith(tail: string): Promise<unknown> {
  const body = JSON.parse(readFixture("errors/openai/context-length-exceeded-messages-resulted-in.json"));
  body.error.message += tail;
  server = await startServer({ replies: () => ({ type: "error" as const, status: 400, body }) });
  const client = new OpenAI({
    baseURL: server.baseUrl,
    apiKey: "k",
    maxRetries: 0,
    fetch: keepErrorBodies(),
  });
  try {
    await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "x" }] });
  } catch (error) {
    return error;
  } finally {
    await server.close();
    server = undefined;
  }
  throw new Error("the request was not refused");
}

describe("a context overflow's words, as ContextOverflow quotes them", () => {
  it("write a terminal escape, a NUL and a right-to-left override \\uXXXX, in the message and serverMessage, where they were carried raw", async () => {
    const error = await overflowWith(" \u001b[2J\u0000\u202e(cut)");
    expect(isOverflow(error)).toBe(true);
    const overflow = ContextOverflow.fromError(error);
    expect(overflow.serverMessage).toBe(
      "This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens. " +
        "Please reduce the length of the messages. \\u001b[2J\\u0000\\u202e(cut)",
    );
    expect(overflow.message).toContain("messages. \\u001b[2J\\u0000\\u202e(cut).");
    expect(overflow.window).toBe(4097);
    expect(overflow.cause).toBe(error);
  });

  it("are on one line whatever breaks it — a tab, a vertical tab, a form feed, NEL, U+2028, U+2029 — where only CR and LF were", async () => {
    const overflow = ContextOverflow.fromError(await overflowWith("\ta\u000bb\u000cc\u0085d\u2028e\u2029f"));
    expect(overflow.serverMessage.endsWith("messages. a b c d e f")).toBe(true);
    expect(overflow.message).not.toMatch(RAW_CONTROLS);
  });

  it("are cut at 300 characters, never inside an escape", () => {
    for (let at = 290; at < 300; at++) {
      const said = ContextOverflow.fromError({
        status: 400,
        error: { message: `${"a".repeat(at)}\u202e${"b".repeat(400)}` },
      });
      expect(said.serverMessage.length).toBeLessThanOrEqual(301);
      expect(said.serverMessage).toMatch(/^a+(?:\\u202eb*)?…$/);
    }
  });

  it("never reach a message raw, whatever the server wrote (property)", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 400 }), (words) => {
        const overflow = ContextOverflow.fromError({
          status: 400,
          error: { message: `context length exceeded ${words}` },
        });
        for (const text of [overflow.serverMessage, overflow.message]) {
          expect(text).not.toMatch(RAW_CONTROLS);
          expect(text.isWellFormed()).toBe(true);
        }
        expect(overflow.serverMessage.length).toBeLessThanOrEqual(301);
      }),
      propertyRuns(200),
    );
  });
});

/**
 * OpenAI's recorded "Unrecognized request argument supplied: reasoning_effort" 400, naming `names`
 * instead, as new-api relays it: its recorded body ends the upstream's words with a
 * "(request id: …)" for each hop.
 */
const relayedUnrecognized = (names: readonly string[], hops = 1) => {
  const body = JSON.parse(
    readFixture("errors/openai/unrecognized-argument-reasoning-effort-gpt-4o-mini.json"),
  );
  const ids = ["20240806214436917505976hvsFC5y2", "20240806214435144343103vXhjiHlZ"].slice(0, hops);
  body.error.message = body.error.message
    .replace("argument", names.length > 1 ? "arguments" : "argument")
    .replace("reasoning_effort", names.join(", "));
  for (const id of ids) body.error.message += ` (request id: ${id})`;
  return { type: "error" as const, status: 400, body };
};

describe("OpenAI's 'Unrecognized request argument supplied' passed on by a relay", () => {
  it("drops each field it names, where the appended '(request id: …)' left the refusal unread and the request failed", async () => {
    // Before: "…supplied: min_p (request id: …)" read "min_p (request id: …)" as the name, which is
    // no field's, so the refusal went to the caller as a 400 and min_p was sent on every request.
    server = await startServer({
      replies: (request) => {
        const sent = ["min_p", "top_k"].filter((field) => field in (request.body as object));
        return sent.length > 0 ? relayedUnrecognized(sent, 2) : { content: "fine" };
      },
    });
    const { supports, client } = tenantOf(server);
    const config = { model: "m", extraBody: { min_p: 0.05, top_k: 20 } };
    const notices: string[] = [];
    const turn = await negotiate(
      supports,
      (supports, produced, model) =>
        streamTurn(client, buildBody(config, supports, model, [{ role: "user", content: "hi" }]), {
          produced,
        }),
      { model: "m", droppable: Object.keys(config.extraBody), onNotice: (n) => notices.push(n) },
    );
    expect(turn.content).toBe("fine");
    // Both dropped in the one re-send (r104d: a send per field before).
    expect(server.chatRequests.map((r) => ["min_p", "top_k"].filter((f) => f in (r.body as object)))).toEqual(
      [["min_p", "top_k"], []],
    );
    expect(notices).toEqual([
      "m refused the field min_p; sending min_p no more for this model.",
      "m refused the field top_k; sending top_k no more for this model.",
    ]);
  });

  it("reads the first name of any list, after any number of appended notes (property)", () => {
    const name = fc
      .stringMatching(/^[a-z][a-z0-9_]{0,15}$/)
      .filter((n) => !["and", "max_tokens", "stream_options", "temperature", "response_format"].includes(n));
    const note = fc.string({ maxLength: 30 }).filter((text) => !/[()\n]/.test(text));
    fc.assert(
      fc.property(
        fc.uniqueArray(name, { minLength: 1, maxLength: 4 }),
        fc.array(note, { maxLength: 3 }),
        (names, notes) => {
          const message = `Unrecognized request argument${names.length > 1 ? "s" : ""} supplied: ${names.join(", ")}${notes.map((n) => ` (${n})`).join("")}`;
          const refusal = readRefusal({ status: 400, error: { message, type: "invalid_request_error" } });
          expect(refusal).toMatchObject({ name: names[0] });
        },
      ),
      propertyRuns(300),
    );
  });
});

describe("readRefusal over whatever a server writes", () => {
  it("never throws, and names only a field the words hold (property)", () => {
    // A body of any shape — nested, non-JSON text, a message that is itself JSON — read as the
    // server sent it: a name the refusal reports is one the server wrote (xAI's camelCase is read
    // snake_case; Gemini's nested name, joined from the two places it names, is not drawn here).
    const words = fc.oneof(
      fc.string({ unit: "binary", maxLength: 200 }),
      fc.constantFrom(
        "Unknown parameter: ",
        "Unrecognized request arguments supplied: ",
        "' is not supported",
        "(request id: x)",
      ),
    );
    const message = fc.array(words, { maxLength: 6 }).map((parts) => parts.join(""));
    const body = fc.oneof(
      message.map((m) => ({ error: { message: m } })),
      fc.jsonValue({ maxDepth: 4 }),
      message.map((m) => ({ detail: [{ type: "extra_forbidden", loc: ["body", m], msg: m }] })),
    );
    fc.assert(
      fc.property(fc.constantFrom(400, 404, 422, 500), body, (status, sent) => {
        const refusal = readRefusal({ status, body: sent, error: (sent as { error?: unknown })?.error });
        const text = JSON.stringify(sent) ?? "";
        const name = refusal && "name" in refusal ? refusal.name : undefined;
        // As JSON writes it (the body went as JSON); case and underscores aside for xAI's camelCase.
        const plain = (t: string) => t.toLowerCase().replaceAll("_", "");
        const written = name === undefined ? "" : plain(JSON.stringify(name).slice(1, -1));
        expect(plain(text)).toContain(written);
      }),
      propertyRuns(300),
    );
  });
});
