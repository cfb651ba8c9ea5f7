/**
 * Review r75 of the testkit: enum values the scripted model could not read (or read slowly), a
 * response left hanging by a client that stopped reading, and the llamacpp personality's budget.
 * Each block names the defect it pins down.
 */
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import { connect } from "node:net";
import fc from "fast-check";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { countWork } from "./count-work.js";
import { createResponder } from "./respond.js";
import { scriptedModel } from "./scripted-model.js";
import { startServer, type TestServer } from "./server.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const client = (s: TestServer) => new OpenAI({ baseURL: s.baseUrl, apiKey: "k", maxRetries: 0 });

const picker = (values: unknown[], description = "Picks a language."): OpenAI.ChatCompletionTool => ({
  type: "function",
  function: {
    name: "pick",
    description,
    parameters: {
      type: "object",
      properties: { lang: { type: "string", enum: values } },
      required: ["lang"],
    },
  },
});

/** The enum value the scripted model picks for `content`, over HTTP. */
async function picked(
  s: TestServer,
  content: string,
  values: unknown[],
  description?: string,
): Promise<unknown> {
  const reply = await client(s).chat.completions.create({
    model: "sim",
    messages: [{ role: "user", content }],
    tools: [picker(values, description)],
  });
  const call = reply.choices[0]?.message.tool_calls?.[0];
  return call?.type === "function" ? JSON.parse(call.function.arguments).lang : undefined;
}

describe("the scripted model reads an enum value the message names", () => {
  // Until r75 each value was a regular expression \bvalue\b: a value beginning or ending with a
  // character that is not a word character needed a word character next to it, so "C++" and
  // ".NET" were never named (the first value was sent), and `C` was named by "C++".
  it("picks C++, C#, .NET and F# when the message names them", async () => {
    server = await startServer({ scriptedModel: { chunkDelayMs: 0 } });
    const langs = ["C", "C++", "C#", ".NET", "F#", "Java"];
    expect(await picked(server, "pick the one for: I write C++", langs)).toBe("C++");
    expect(await picked(server, "pick C# please", langs)).toBe("C#");
    expect(await picked(server, "pick (.NET) for the port", langs)).toBe(".NET");
    expect(await picked(server, "pick F#.", langs)).toBe("F#");
    expect(await picked(server, "pick plain c, not java", langs)).toBe("C");
  });

  it("still does not read a value out of the middle of a word", async () => {
    server = await startServer({ scriptedModel: { chunkDelayMs: 0 } });
    expect(await picked(server, "pick: concatenate the dogs, then a dog", ["cat", "dog"])).toBe("dog");
    expect(await picked(server, "pick: scala or javascript", ["java", "scala"])).toBe("scala");
    expect(await picked(server, "pick: C++11", ["C++", "C"])).toBe("C++");
  });

  it("a value inside a longer value named there does not count", async () => {
    server = await startServer({ scriptedModel: { chunkDelayMs: 0 } });
    expect(await picked(server, "pick the office in New York", ["York", "New York"])).toBe("New York");
    // Both named on their own: the first declared wins, as before.
    expect(await picked(server, "pick York, not New York", ["New York", "York"])).toBe("New York");
  });

  // 100,000 values took 4.3 s in-process before r75 (a regular expression built and run per value);
  // now about 0.1 s in-process (the request itself is 1.2 MB). A bound in ms failed under load, and
  // so could a ratio of timings (1 to 1.5 times a baseline against 10 with the fault, under a bound
  // of 5 a loaded host's drift reached): the regular expressions built at run time are counted
  // instead, while the request is answered, against the same 100,000 strings carried in the tool's
  // description, where the request is as large but no value is looked for. The trie builds none
  // (measured 0 and 0); with a regular expression per value put back, 100,000 more.
  it("answers over an enum of 100,000 values and a 20,000-character message with no regular expression run per value, over HTTP", async () => {
    server = await startServer({ scriptedModel: { chunkDelayMs: 0 } });
    const s = server;
    const values = Array.from({ length: 100_000 }, (_, i) => `value${i}x`);
    values.push("kotlin");
    const content = `pick ${"some words ".repeat(2_000)} I write Kotlin`;
    const asked = await countWork(async () => expect(await picked(s, content, values)).toBe("kotlin"));
    const carried = await countWork(async () =>
      expect(await picked(s, content, ["kotlin"], values.join(" "))).toBe("kotlin"),
    );
    expect(asked.built - carried.built).toBeLessThan(1_000);
  }, 60_000);

  // A lookup per distinct value length (this round's first fix) took 28 s for 1,000 values of 1,000
  // different lengths: its work grew with the number of lengths. The trie's walk from each word
  // start is bounded by the longest value, the same here for 125 lengths as for 1,000 (values up to
  // 2,000 characters). Counted, not timed (the timing ratio, 1.5 to 3 against 8 with the fault,
  // under a bound of 5, was within a loaded host's drift): the Map and Set lookups and the elements
  // walked while both questions are answered, for 1,000 lengths against 125: measured 1.18 (the
  // walk is the same, eight times the values adds their trie); 7.76 with a lookup per length put
  // back (5.4 million steps against 42 million). Bound 3.
  it("answers over values of 1,000 different lengths and a 20,000-character message with work that barely grows with the lengths", async () => {
    server = await startServer({ scriptedModel: { chunkDelayMs: 0 } });
    const s = server;
    const ask = async (lengths: number) => {
      const values = Array.from(
        { length: lengths },
        (_, i) => `${"a ".repeat(Math.round(((i + 1) * 1_000) / lengths))}z`,
      );
      values.push("kotlin");
      const work = await countWork(async () => {
        expect(await picked(s, `pick ${"a ".repeat(10_000)}in kotlin`, values)).toBe("kotlin");
        expect(await picked(s, `pick ${values[0]}, not kotlin`, values)).toBe(values[0]);
      });
      return work.total;
    };
    const [few, many] = [await ask(125), await ask(1_000)];
    expect(many / few).toBeLessThan(3);
  }, 120_000);

  it("for values of word characters only, picks what \\bvalue\\b picked (property)", () => {
    const word = fc.stringMatching(/^[A-Za-z0-9_]{1,4}$/);
    fc.assert(
      fc.property(
        fc.array(word, { minLength: 1, maxLength: 6 }),
        fc.array(fc.oneof(word, fc.constantFrom(" ", ",", ".", "-", "+", "#", "'", "\n")), { maxLength: 20 }),
        (values, parts) => {
          const text = parts.join("");
          const oracle = values.find((v) =>
            new RegExp(`\\b${v.toLowerCase()}\\b`).test(`pick ${text}`.toLowerCase()),
          );
          const reply = scriptedModel({
            messages: [{ role: "user", content: `pick ${text}` }],
            tools: [picker(values)],
          });
          const got = JSON.parse(reply.toolCalls?.[0]?.arguments ?? "{}").lang;
          expect(got).toBe(oracle ?? values[0]);
        },
      ),
      propertyRuns(2000),
    );
  });
});

/** A client that asks for `path`, reads nothing of the answer, waits `ms`, then leaves. */
async function abandon(port: number, path: string, body: string, ms: number): Promise<void> {
  const socket = connect(port, "127.0.0.1");
  await once(socket, "connect");
  socket.pause();
  socket.write(
    `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  await new Promise((resolve) => setTimeout(resolve, ms));
  socket.destroy();
}

describe("a stream whose client stopped reading and left", () => {
  // Until r75 the frame writer awaited each write's callback only: a client that stopped reading
  // (the socket's buffer full) and then left made Node drop the callback of the next write (the
  // socket was destroyed, the response not yet closed), so the writer never returned although its
  // doc says it stops when the client goes away. close() did not wait on it and nothing leaked,
  // but anything awaiting the reply would have waited for ever.
  let http: Server | undefined;
  afterEach(async () => {
    http?.closeAllConnections();
    await new Promise((resolve) => http?.close(resolve) ?? resolve(undefined));
    http = undefined;
  });

  it("the writer returns once the client is gone", async () => {
    const stop = new AbortController();
    const respond = createResponder(stop.signal);
    const chunks = Array.from({ length: 100 }, () => new Uint8Array(1 << 20).fill(120));
    let writing: Promise<"returned"> | undefined;
    http = createServer((_req, res) => {
      writing = respond.raw(res, { type: "raw", chunks }).then(() => "returned" as const);
    });
    http.listen(0, "127.0.0.1");
    await once(http, "listening");
    const { port } = http.address() as { port: number };
    await abandon(port, "/", "{}", 300);
    expect(writing).toBeDefined();
    // The writer that never returned is told apart by a wait of 20 s: it returns within
    // milliseconds idle, so a loaded machine has room, and the test's timeout is above it.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<"still writing">((resolve) => {
      timer = setTimeout(() => resolve("still writing"), 20_000);
    });
    expect(await Promise.race([writing, timeout])).toBe("returned");
    clearTimeout(timer);
    stop.abort();
  }, 60_000);

  it("the server's close() returns at once after such a client, scripted or raw", async () => {
    server = await startServer({
      replies: [
        { type: "raw", chunks: Array.from({ length: 40 }, () => `data: ${"x".repeat(1 << 20)}\n\n`) },
        { content: "y".repeat(8_000_000), chunkChars: 1 << 20, chunkDelayMs: 0 },
      ],
    });
    const body = JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: "hi" }] });
    await abandon(server.port, "/v1/chat/completions", body, 300);
    await abandon(server.port, "/v1/chat/completions", body, 300);
    expect(server.pending).toBe(0);
    // close() waited on the writer that never returned, for ever: it returns within milliseconds
    // idle, so resolving within the test's timeout (30 s, for a loaded machine) tells them apart.
    await server.close();
  }, 30_000);
});

describe("the llamacpp personality reads the token budget as llama-server b9749 does", () => {
  // Probed on the live llama-server b9749 (live-llama-budget.test.ts, 2026-12-05): `n_predict`, then
  // `max_completion_tokens`, then `max_tokens` (null is absent; the first one present is the only
  // one read); a value that is not a number or is below -1 is a 400 naming the field; a fraction
  // is cut (1.7 -> 1), a boolean is 0 or 1, and 0 still generates one token ("length").
  interface Answer {
    status: number;
    body: {
      error?: { message?: string };
      choices?: { message?: { content?: string }; finish_reason?: string }[];
    };
  }
  /** Status and body of a plain request with `extra` fields, against a scripted 'hello there, world'. */
  async function ask(extra: Record<string, unknown>, content = "hi"): Promise<Answer> {
    server ??= await startServer({ personality: "llamacpp", scriptedModel: { chunkDelayMs: 0 } });
    server.enqueue({ content: "hello there, world" });
    const res = await fetch(`${server.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "tiny", messages: [{ role: "user", content }], ...extra }),
    });
    return { status: res.status, body: (await res.json()) as Answer["body"] };
  }
  const answer = (r: Answer) => [r.body.choices?.[0]?.message?.content, r.body.choices?.[0]?.finish_reason];

  it("reads max_completion_tokens after n_predict and before max_tokens, null as absent", async () => {
    expect(answer(await ask({ max_completion_tokens: 1, max_tokens: 3 }))).toEqual(["hello", "length"]);
    expect(answer(await ask({ n_predict: 1, max_completion_tokens: 3 }))).toEqual(["hello", "length"]);
    expect(answer(await ask({ max_completion_tokens: null, max_tokens: 1 }))).toEqual(["hello", "length"]);
    expect(answer(await ask({ max_completion_tokens: -1, max_tokens: 1 }))).toEqual([
      "hello there, world",
      "stop",
    ]);
    // Only the first one present is read: a bad max_tokens behind n_predict goes unnoticed.
    expect(answer(await ask({ n_predict: 1, max_tokens: "x" }))).toEqual(["hello", "length"]);
  });

  it("refuses a budget that is not a number with llama-server's 400 naming the field", async () => {
    for (const [extra, field, kind] of [
      [{ max_completion_tokens: "3", max_tokens: 2 }, "max_completion_tokens", "string"],
      [{ n_predict: "4" }, "n_predict", "string"],
      [{ max_tokens: [1] }, "max_tokens", "array"],
      [{ max_tokens: {}, stream: true }, "max_tokens", "object"],
    ] as const) {
      const r = await ask(extra);
      expect(r.status).toBe(400);
      expect(r.body).toEqual({
        error: {
          code: 400,
          message: `Field '${field}': [json.exception.type_error.302] type must be number, but is ${kind}`,
          type: "invalid_request_error",
        },
      });
    }
    expect(server?.pending).toBe(4); // a refused request takes no scripted reply
  });

  it("refuses a budget below -1 (and one that wraps below it as an int32), before the overflow check", async () => {
    for (const [extra, field, got] of [
      [{ max_tokens: -5 }, "max_tokens", -5],
      [{ max_completion_tokens: -2, stream: true }, "max_completion_tokens", -2],
      [{ max_tokens: 3_000_000_000 }, "max_tokens", -1294967296],
    ] as const) {
      const r = await ask(extra);
      expect(r.status).toBe(400);
      expect(r.body.error?.message).toBe(
        `Field '${field}': Value must be between -1 <= value <= 2147483647, but got ${got}`,
      );
    }
    const long = await ask({ max_tokens: -5 }, "word ".repeat(6000));
    expect(long.body.error?.message).toMatch(/^Field 'max_tokens': Value must be between/);
    // A bad response_format is refused first.
    const format = await ask({ max_tokens: -5, response_format: { type: "xml" } });
    expect(format.body.error?.message).toMatch(/^response_format type must be one of/);
  });

  it("cuts a fraction, reads a boolean as 0 or 1, and generates one token for a budget of 0", async () => {
    expect(answer(await ask({ max_completion_tokens: 1.7 }))).toEqual(["hello", "length"]);
    expect(answer(await ask({ max_tokens: 2.9 }))).toEqual(["hello ", "length"]);
    expect(answer(await ask({ max_tokens: true }))).toEqual(["hello", "length"]);
    expect(answer(await ask({ max_tokens: 0 }))).toEqual(["hello", "length"]);
    expect(answer(await ask({ n_predict: 0 }))).toEqual(["hello", "length"]);
    expect(answer(await ask({ max_tokens: false }))).toEqual(["hello", "length"]);
    expect(answer(await ask({ max_tokens: -1.5 }))).toEqual(["hello there, world", "stop"]);
  });
});
