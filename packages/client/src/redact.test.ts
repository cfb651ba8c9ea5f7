// The redactors are pure functions of the endpoint and the text: unit tests and properties here,
// and one pooled client over HTTP for the fetch that reads a server's error body piece by piece.
import { startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createClientPool } from "./pool.js";
import { credentialRedactor, REDACTED, redactor, type SecretBearer, unwrittenRedactions } from "./redact.js";

const KEY = "sk-proj-Abc123_Def456-Ghi789Jkl012Mno345";
const both = (endpoint: Parameters<typeof redactor>[0]) =>
  [
    ["redactor", redactor(endpoint)],
    ["credentialRedactor", credentialRedactor(endpoint)],
  ] as const;

const bytesHex = (value: string) => Buffer.from(value).toString("hex");
const everyBytePercent = (value: string) =>
  bytesHex(value).replace(/../g, (pair) => `%${pair.toUpperCase()}`);

describe("a long credential written cut short, wrapped, percent-encoded byte by byte or in hex", () => {
  it("takes out a run of 12 characters or more that begins or ends the key, not a shorter one", () => {
    for (const [name, redact] of both({ apiKey: KEY })) {
      expect(redact(`invalid api key: ${KEY.slice(0, 32)}...`), name).toBe(`invalid api key: ${REDACTED}...`);
      expect(redact(`invalid api key: ${KEY.slice(0, 12)}…`), name).toBe(`invalid api key: ${REDACTED}…`);
      expect(redact(`key ending …${KEY.slice(-14)} refused`), name).toBe(`key ending …${REDACTED} refused`);
      // Eleven characters are the prefix many keys share: left.
      expect(redact(`keys look like ${KEY.slice(0, 11)}…`), name).toBe(`keys look like ${KEY.slice(0, 11)}…`);
      // A masked key keeps only what the server showed: the head goes, the four last characters stay.
      expect(redact(`key ${KEY.slice(0, 12)}****${KEY.slice(-4)}`), name).toBe(
        `key ${REDACTED}****${KEY.slice(-4)}`,
      );
    }
  });

  it("takes out the key split by a line break and indentation inside it", () => {
    for (const [name, redact] of both({ headers: { "x-api-key": KEY } })) {
      for (const gap of ["\n    ", "\r\n\t", " \n", "\n\n  "]) {
        expect(redact(`header: x-api-key: ${KEY.slice(0, 20)}${gap}${KEY.slice(20)}\nnext`), name).toBe(
          `header: x-api-key: ${REDACTED}\nnext`,
        );
      }
      // Wrapped and cut short.
      expect(redact(`key ${KEY.slice(0, 9)}\n  ${KEY.slice(9, 25)}…`), name).toBe(`key ${REDACTED}…`);
      // Wrapped inside a JSON string, where the line break is written `\n`.
      const json = JSON.stringify(`key ${KEY.slice(0, 34)}\n    ${KEY.slice(34)}.`);
      expect(redact(json), name).toBe(`"key ${REDACTED}."`);
    }
  });

  it("takes out the key with every byte percent-encoded (either case), or only its dashes", () => {
    const lower = everyBytePercent(KEY).toLowerCase();
    for (const [name, redact] of both({ apiKey: KEY })) {
      for (const written of [
        everyBytePercent(KEY),
        lower,
        KEY.replace(/-/g, "%2D"),
        KEY.replace(/-/g, "%2d"),
      ]) {
        expect(redact(`GET /x?key=${written}&b=1`), name).toBe(`GET /x?key=${REDACTED}&b=1`);
      }
      // Cut short too.
      expect(redact(`GET /x?key=${everyBytePercent(KEY).slice(0, 60)}`), name).toBe(`GET /x?key=${REDACTED}`);
    }
  });

  it("takes out the key's bytes in hex, either case", () => {
    for (const [name, redact] of both({ apiKey: KEY })) {
      expect(redact(`body=${bytesHex(KEY)};`), name).toBe(`body=${REDACTED};`);
      expect(redact(`body=${bytesHex(KEY).toUpperCase()};`), name).toBe(`body=${REDACTED};`);
    }
  });

  it("does not cut a Bearer header's value at the scheme's space: the token goes, the words before it stay", () => {
    const token = "gw-token-0123456789abcdef";
    for (const [name, redact] of both({ headers: { authorization: `Bearer ${token}` } })) {
      expect(redact(`gateway: token ${token} is not valid`), name).toBe(
        `gateway: token ${REDACTED} is not valid`,
      );
    }
  });
});

describe("the host-facing redactor leaves placeholders and words; a short key goes only as a word of its own", () => {
  it("redactor leaves a local server's placeholder key, however it was given", () => {
    const text = "scandir '/home/ana/.ollama/models' failed (is ollama running? see lm-studio docs)";
    const endpoints: SecretBearer[] = [
      { apiKey: "ollama" },
      { apiKey: "lm-studio" },
      { headers: { Authorization: "Bearer ollama" } },
      { headers: { "api-key": "LM-Studio " } },
    ];
    for (const endpoint of endpoints) {
      expect(redactor(endpoint)(text), JSON.stringify(endpoint)).toBe(text);
    }
  });

  it("a key under 16 characters is replaced only where no letter or digit runs on from it", () => {
    for (const [name, redact] of both({ apiKey: "123456" })) {
      expect(redact("line 123456 of /tmp/a.log; pid 1234567; id 0123456; key=123456."), name).toBe(
        `line ${REDACTED} of /tmp/a.log; pid 1234567; id 0123456; key=${REDACTED}.`,
      );
    }
    for (const [name, redact] of both({ apiKey: "test-key" })) {
      expect(redact("AssertionError at /src/test-keys.ts:12 (mytest-key)"), name).toBe(
        "AssertionError at /src/test-keys.ts:12 (mytest-key)",
      );
      expect(redact('sent "test-key" as the key'), name).toBe(`sent "${REDACTED}" as the key`);
    }
  });

  it("another header's value is for logs only, and only as a word of its own", () => {
    const endpoint = {
      apiKey: KEY,
      headers: { "x-portkey-provider": "openai", "X-Timeout": "300000", "X-Title": "My Chat Application" },
    };
    const text = "openai: timeout 300000ms; openai-compatible; My Chat Applications; My Chat Appl";
    expect(redactor(endpoint)(text)).toBe(
      `${REDACTED}: timeout 300000ms; ${REDACTED}-compatible; My Chat Applications; My Chat Appl`,
    );
    expect(credentialRedactor(endpoint)(text)).toBe(text);
    expect(redactor(endpoint)("timeout 300000 ms")).toBe(`timeout ${REDACTED} ms`);
  });
});

class Request {
  headers = { authorization: `Bearer ${KEY}` };
}

describe("redactor's deep walk", () => {
  const redact = redactor({ apiKey: KEY, baseUrl: "http://127.0.0.1:9/v1" });

  it("takes the key out of AggregateError's errors, top-level and in a cause", () => {
    const top = new AggregateError([new Error(`inner ${KEY}`), `text ${KEY}`], "all failed");
    const outer = new Error("outer", { cause: new AggregateError([new Error(`deep ${KEY}`)], "agg") });
    redact(top);
    redact(outer);
    expect((top.errors[0] as Error).message).toBe(`inner ${REDACTED}`);
    expect(top.errors[1]).toBe(`text ${REDACTED}`);
    expect(((outer.cause as AggregateError).errors[0] as Error).message).toBe(`deep ${REDACTED}`);
  });

  it("takes the key out of Map keys and values, Set values, a URL object and a class instance's fields", () => {
    const error = Object.assign(new Error("x"), {
      meta: new Map<unknown, unknown>([
        ["auth", `Bearer ${KEY}`],
        [`key-${KEY}`, 1],
        ["nested", { list: [`key ${KEY}`] }],
      ]),
      tags: new Set([`Bearer ${KEY}`, "plain"]),
      url: new URL(`https://h.example/v1?key=${KEY}`),
      request: new Request(),
    });
    expect(redact(error)).toBe(error);
    expect(error.meta.get("auth")).toBe(`Bearer ${REDACTED}`);
    expect([...error.meta.keys()]).toContain(`key-${REDACTED}`);
    expect((error.meta.get("nested") as { list: string[] }).list[0]).toBe(`key ${REDACTED}`);
    expect([...error.tags]).toEqual(["plain", `Bearer ${REDACTED}`]);
    expect(error.url.href).not.toContain("Abc123");
    expect(error.url.searchParams.get("key")).toBe(REDACTED);
    expect(error.request.headers.authorization).toBe(`Bearer ${REDACTED}`);
    expect(unwrittenRedactions(error)).toEqual([]);
  });

  it("takes the key out of an error's own non-enumerable properties, read-only ones it can redefine included", () => {
    const error = new Error("x");
    Object.defineProperty(error, "hidden", { value: `url ${KEY}`, enumerable: false, writable: true });
    Object.defineProperty(error, "fixed", { value: `url ${KEY}`, enumerable: false, configurable: true });
    redact(error);
    expect((error as unknown as { hidden: string }).hidden).toBe(`url ${REDACTED}`);
    expect((error as unknown as { fixed: string }).fixed).toBe(`url ${REDACTED}`);
  });

  it("reports what it could not write (a frozen error), with the text to show instead", () => {
    const inner = Object.freeze(new Error(`key ${KEY}`));
    const error = new Error("request failed", { cause: inner });
    Object.defineProperty(error, "sealed", { value: `and ${KEY}` });
    expect(redact(error)).toBe(error);
    const left = unwrittenRedactions(error);
    expect(
      left.map(({ holder, key }) => [holder === inner ? "cause" : holder === error ? "error" : "?", key]),
    ).toEqual(
      expect.arrayContaining([
        ["cause", "message"],
        ["error", "sealed"],
      ]),
    );
    expect(left.find((entry) => entry.holder === inner && entry.key === "message")?.redacted).toBe(
      `key ${REDACTED}`,
    );
    for (const entry of left) expect(entry.redacted).not.toContain("Abc123");
    // A value never redacted, or no object, reports nothing.
    expect(unwrittenRedactions(new Error("x"))).toEqual([]);
    expect(unwrittenRedactions("text")).toEqual([]);
  });
});

describe("redaction, as properties", () => {
  const keyChar = fc.constantFrom(..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.");
  const longKey = fc.string({ unit: keyChar, minLength: 20, maxLength: 48 });
  const textChar = fc.constantFrom(
    ..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:;/-_()'\"=",
  );
  const words = fc.string({ unit: textChar, maxLength: 80 });
  const gap = fc.constantFrom("\n", "\r\n", "\n  ", "\n\t\t", " \n    ");

  /** True where `text` holds any run of 12 of `key`'s characters in order. */
  const holdsPiece = (text: string, key: string) => {
    for (let i = 0; i + 12 <= key.length; i++) if (text.includes(key.slice(i, i + 12))) return true;
    return false;
  };

  it("leaves text that holds no run of 12 of the key's characters as it was, and never lengthens a text", () => {
    fc.assert(
      fc.property(longKey, words, fc.nat(), fc.nat(), (key, text, at, length) => {
        const redact = credentialRedactor({ apiKey: key });
        if (!holdsPiece(text, key)) expect(redact(text)).toBe(text);
        // With a piece of the key spliced in, what comes back is never longer than what went in.
        const start = at % key.length;
        const spliced = text.slice(0, at % (text.length + 1)) + key.slice(start, start + 12 + (length % 30));
        expect(redact(spliced).length).toBeLessThanOrEqual(spliced.length);
      }),
      { numRuns: 300 },
    );
  });

  it("never leaves the key plain, cut short, wrapped, percent-encoded or in hex, and keeps the text around it", () => {
    const written = fc.oneof(
      fc.constant((key: string) => key),
      fc.nat().map((n) => (key: string) => key.slice(0, 12 + (n % (key.length - 11)))),
      fc.nat().map((n) => (key: string) => key.slice(key.length - 12 - (n % (key.length - 11)))),
      fc.tuple(fc.nat(), gap).map(([n, g]) => (key: string) => {
        const at = 1 + (n % (key.length - 1));
        return `${key.slice(0, at)}${g}${key.slice(at)}`;
      }),
      fc.constant(everyBytePercent),
      fc.constant((key: string) => everyBytePercent(key).toLowerCase()),
      fc.constant((key: string) => key.replace(/-/g, "%2D")),
      fc.constant(bytesHex),
      fc.constant((key: string) => bytesHex(key).toUpperCase()),
    );
    fc.assert(
      fc.property(longKey, written, words, words, (key, write, before, after) => {
        for (const redact of [redactor({ apiKey: key }), credentialRedactor({ apiKey: key })]) {
          fc.pre(redact(before) === before && redact(after) === after);
          const form = write(key);
          const out = redact(`${before} ${form} ${after}`);
          expect(out).toBe(`${before} ${REDACTED} ${after}`);
          expect(holdsPiece(out.replace(/\s+/g, ""), key)).toBe(false);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe("a pooled client reads a server's error body the same way", () => {
  let server: TestServer;
  beforeEach(async () => {
    server = await startServer();
  });
  afterEach(() => server.close());

  const ask = (endpoint: { apiKey: string }) =>
    createClientPool()
      .getClient({ baseUrl: server.baseUrl, ...endpoint })
      .chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] })
      .then(
        () => new Error("the request did not fail") as Error & { error?: unknown },
        (error: unknown) => error as Error & { error?: unknown },
      );

  it("takes out a long key the server cut short and leaves digits a short key is part of", async () => {
    server.enqueue({
      type: "error",
      status: 401,
      body: { error: { message: `invalid key ${KEY.slice(0, 24)}… (${everyBytePercent(KEY)})` } },
    });
    const long = await ask({ apiKey: KEY });
    expect(long.message).toContain(`invalid key ${REDACTED}… (${REDACTED})`);
    expect(JSON.stringify(long.error)).not.toContain(KEY.slice(0, 12));

    server.enqueue({
      type: "error",
      status: 401,
      body: { error: { message: "key 123456 refused; pid 1234567" } },
    });
    const short = await ask({ apiKey: "123456" });
    expect(short.message).toContain(`key ${REDACTED} refused; pid 1234567`);
  });

  it("takes out a key percent-encoded, wrapped or cut short when a stream's pieces are cut inside it", async () => {
    const dashes = KEY.replace(/-/g, "%2D");
    // The wrapped key's last part is too short to be taken out on its own: only as the rest of the key.
    const content = `a ${dashes} b ${KEY.slice(0, 34)}\n    ${KEY.slice(34)} c ${KEY.slice(0, 30)}… d`;
    const event = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}\n\n`;
    // Cut inside each form (in the wrapped one, inside its indentation): each piece a network read.
    const ends = [
      event.indexOf("%2DAbc") + 5,
      event.indexOf("\\n") + 3,
      event.lastIndexOf(KEY.slice(0, 12)) + 14,
      event.length,
    ];
    const chunks = ends.map((end, i) => event.slice(i === 0 ? 0 : ends[i - 1], end));
    server.enqueue({ type: "raw", chunks: [...chunks, "data: [DONE]\n\n"], chunkDelayMs: 5 });
    const client = createClientPool().getClient({ baseUrl: server.baseUrl, apiKey: KEY });
    let text = "";
    const stream = await client.chat.completions.create({ model: "m", messages: [], stream: true });
    for await (const part of stream) text += part.choices[0]?.delta.content ?? "";
    expect(text).toBe(`a ${REDACTED} b ${REDACTED} c ${REDACTED}… d`);
  });

  it("leaves a short key's digits inside a longer number a stream's pieces cut after them", async () => {
    const event = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: "pid 1234567, key 123456." } }] })}\n\n`;
    const cut = event.indexOf("1234567") + 6;
    server.enqueue({
      type: "raw",
      chunks: [event.slice(0, cut), event.slice(cut), "data: [DONE]\n\n"],
      chunkDelayMs: 5,
    });
    const client = createClientPool().getClient({ baseUrl: server.baseUrl, apiKey: "123456" });
    let text = "";
    const stream = await client.chat.completions.create({ model: "m", messages: [], stream: true });
    for await (const part of stream) text += part.choices[0]?.delta.content ?? "";
    expect(text).toBe(`pid 1234567, key ${REDACTED}.`);
  });
});
