// The redactors are pure functions of the endpoint and the text: unit tests and properties here,
// and one pooled client over HTTP for the fetch that reads a server's error body piece by piece.

import { inspect } from "node:util";
import vm from "node:vm";
import { startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import OpenAI from "openai";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { createClientPool } from "./pool.js";
import {
  credentialRedactor,
  REDACTED,
  redactor,
  type SecretBearer,
  STRING_OBJECT_NAMES_UP_TO,
  unwrittenRedactions,
} from "./redact.js";

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
  it("takes out a run that begins the key and reaches 12 characters past its public prefix, or one of 12 or more that ends it", () => {
    // `sk-proj-` may be the key family's public prefix: a head piece must reach 12 characters past it.
    const head = "sk-proj-".length + 12;
    for (const [name, redact] of both({ apiKey: KEY })) {
      expect(redact(`invalid api key: ${KEY.slice(0, 32)}...`), name).toBe(`invalid api key: ${REDACTED}...`);
      expect(redact(`invalid api key: ${KEY.slice(0, head)}…`), name).toBe(`invalid api key: ${REDACTED}…`);
      expect(redact(`key ending …${KEY.slice(-14)} refused`), name).toBe(`key ending …${REDACTED} refused`);
      expect(redact(`key ending …${KEY.slice(-12)} refused`), name).toBe(`key ending …${REDACTED} refused`);
      // Shorter heads are what keys of the family share: left.
      expect(redact(`keys look like ${KEY.slice(0, head - 1)}…`), name).toBe(
        `keys look like ${KEY.slice(0, head - 1)}…`,
      );
      // A masked key keeps only what the server showed: the head goes, the four last characters stay.
      expect(redact(`key ${KEY.slice(0, head)}****${KEY.slice(-4)}`), name).toBe(
        `key ${REDACTED}****${KEY.slice(-4)}`,
      );
    }
  });

  it("leaves a key family's public prefix written alone or starting another key: sk-ant-api03-, github_pat_11, a JWT's header", () => {
    const families = [
      ["sk-ant-api03-", "sk-ant-api03-bIYQ7x2LmN0pQrStUvWxYz0123456789AbCdEfGhIjKlMnOpQrStUvWx-AAAA"],
      ["github_pat_11", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV"],
      [
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyLTQyIiwiaWF0IjoxNzAwMDAwMDAwfQ.Xq3v9mK2pL8rT1wY6zB0cN4dF7gH5jS",
      ],
    ] as const;
    for (const [prefix, key] of families) {
      for (const [name, redact] of both({ apiKey: key })) {
        const code = `if (!key.startsWith("${prefix}")) throw new Error("not a key");`;
        expect(redact(code), `${name} ${prefix}`).toBe(code);
        // Another key of the same family shares only the prefix (and a character or two by chance).
        const other = `${prefix}${"Zz9".repeat(10)}`;
        expect(redact(`another key: ${other}`), `${name} ${prefix}`).toBe(`another key: ${other}`);
        // This key cut short past its prefix, or whole, still goes.
        const cut = key.slice(0, prefix.length + 14);
        expect(redact(`invalid key ${cut}…`), `${name} ${prefix}`).toBe(`invalid key ${REDACTED}…`);
        expect(redact(`key ${key}.`), `${name} ${prefix}`).toBe(`key ${REDACTED}.`);
      }
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
      // Cut short too (20 characters: 12 past the key's public prefix).
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

/** A key's leading run of letters and separators in its first 16 characters, to its last separator (a JWT's first segment). */
const prefixOf = (key: string) =>
  (/^eyJ[A-Za-z0-9_-]*\./.exec(key) ?? /^[A-Za-z_-]{0,15}[-_]/.exec(key))?.[0].length ?? 0;

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

  it("takes the key out of Map keys and values, Set values and a URL object; a class instance's fields are reported, not written", () => {
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
    // A class instance may be live (an SDK client, a pool): read, what it would lose reported, never written.
    expect(error.request.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(unwrittenRedactions(error)).toEqual([
      { holder: error.request.headers, key: "authorization", redacted: `Bearer ${REDACTED}` },
    ]);
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

  it("takes the key out of symbol-keyed properties and String objects, so util.inspect shows none", () => {
    const request = Symbol("request");
    const hidden = Symbol("hidden");
    const box = Object.assign(new String(`key ${KEY}`), { note: `and ${KEY}` });
    const tagged = Object.assign([`a ${KEY}`], { [request]: `Bearer ${KEY}` });
    const error = Object.assign(new Error("x"), {
      [request]: { auth: `Bearer ${KEY}`, [hidden]: new String(KEY) },
      wrapped: box,
      again: box,
      list: tagged,
      map: new Map<unknown, unknown>([[new String(`k ${KEY}`), new String(`v ${KEY}`)]]),
      set: new Set([new String(`s ${KEY}`)]),
      foreign: vm.runInNewContext("new String(K)", { K: `Bearer ${KEY}` }) as object,
      short: new String("plain"),
    });
    Object.defineProperty(error, hidden, { value: `url ${KEY}`, enumerable: false, writable: true });
    expect(inspect(error, { showHidden: true, depth: null })).toContain("Abc123");
    expect(redact(error)).toBe(error);
    const shown = inspect(error, { showHidden: true, depth: null });
    expect(shown).not.toContain("Abc123");
    expect(shown).toContain("Symbol(request)");
    expect(unwrittenRedactions(error)).toEqual([]);
    // A String object stays a String object (one redacted copy for every holder), its other fields kept.
    expect(error.wrapped).toBeInstanceOf(String);
    expect(String(error.wrapped)).toBe(`key ${REDACTED}`);
    expect(error.again).toBe(error.wrapped);
    expect((error.wrapped as unknown as { note: string }).note).toBe(`and ${REDACTED}`);
    expect((error as unknown as Record<symbol, unknown>)[hidden]).toBe(`url ${REDACTED}`);
    expect((error.list as unknown as Record<symbol, unknown>)[request]).toBe(`Bearer ${REDACTED}`);
    expect(error.list[0]).toBe(`a ${REDACTED}`);
    expect(String(error.foreign)).toBe(`Bearer ${REDACTED}`);
    expect(error.short).toBeInstanceOf(String);
    // A String given alone is answered by a redacted String; the one given is reported unwritten.
    const alone = new String(`Bearer ${KEY}`);
    expect(String(redact(alone))).toBe(`Bearer ${REDACTED}`);
    expect(String(alone)).toBe(`Bearer ${KEY}`);
    expect(unwrittenRedactions(alone)).toEqual([{ holder: alone, key: "", redacted: `Bearer ${REDACTED}` }]);
  });

  it("reports a symbol-keyed property or a String object it could not write, under the symbol's name", () => {
    const request = Symbol("request");
    class Session {
      constructor(readonly label: object) {}
    }
    const label = new String(`session ${KEY}`);
    const error = Object.freeze(
      Object.assign(new Error("x"), {
        [request]: `Bearer ${KEY}`,
        wrapped: Object.assign(new String(`key ${KEY}`), { note: `and ${KEY}` }),
        session: new Session(label),
      }),
    );
    expect(() => redact(error)).not.toThrow();
    expect(String(error.wrapped)).toBe(`key ${KEY}`);
    expect(error.session.label).toBe(label);
    const left = unwrittenRedactions(error);
    expect(left).toEqual(
      expect.arrayContaining([
        { holder: error, key: "Symbol(request)", redacted: `Bearer ${REDACTED}` },
        { holder: error, key: "wrapped", redacted: `key ${REDACTED}` },
        { holder: error.wrapped, key: "note", redacted: `and ${REDACTED}` },
        { holder: error.session, key: "label", redacted: `session ${REDACTED}` },
      ]),
    );
    expect(left).toHaveLength(4);
    for (const entry of left) expect(entry.redacted).not.toContain("Abc123");
    // A String subclass's instance is a class instance: kept on its holder, its text reported.
    class Tagged extends String {}
    const tagged = new Tagged(`tag ${KEY}`);
    const holder = { tagged };
    redact(holder);
    expect(holder.tagged).toBe(tagged);
    expect(unwrittenRedactions(holder)).toEqual([{ holder, key: "tagged", redacted: `tag ${REDACTED}` }]);
  });

  it("moves a property named by the key to the redacted name, and reports a name it cannot change, redacted", () => {
    const cached = { model: "m" };
    const clients = { [KEY]: cached, [REDACTED]: "taken", plain: `Bearer ${KEY}` };
    const auth = Symbol(`auth ${KEY}`);
    class Cache {
      readonly byKey: Record<string, number> = { [`k ${KEY}`]: 1 };
    }
    const error = Object.assign(new Error("x"), {
      clients,
      [auth]: "set",
      frozen: Object.freeze({ [`token ${KEY}`]: `Bearer ${KEY}` }),
      cache: new Cache(),
    });
    Object.defineProperty(error, `hidden ${KEY}`, {
      value: 7,
      enumerable: false,
      writable: true,
      configurable: true,
    });
    expect(redact(error)).toBe(error);
    // A writable plain holder's key is renamed (`(2)` where the redacted name is taken), its value kept.
    expect(Object.keys(clients)).toEqual([REDACTED, "plain", `${REDACTED} (2)`]);
    expect((clients as Record<string, unknown>)[`${REDACTED} (2)`]).toBe(cached);
    expect(clients[REDACTED]).toBe("taken");
    expect(clients.plain).toBe(`Bearer ${REDACTED}`);
    const hidden = Object.getOwnPropertyDescriptor(error, `hidden ${REDACTED}`);
    expect(hidden).toEqual({ value: 7, enumerable: false, writable: true, configurable: true });
    // A symbol, a frozen holder and a live instance's field keep their names: reported, redacted.
    const frozen = error.frozen;
    const left = unwrittenRedactions(error);
    expect(left).toEqual(
      expect.arrayContaining([
        { holder: error, key: `Symbol(auth ${REDACTED})`, redacted: "set" },
        { holder: frozen, key: `token ${REDACTED}`, redacted: `Bearer ${REDACTED}` },
        { holder: error.cache.byKey, key: `k ${REDACTED}`, redacted: "1" },
      ]),
    );
    expect(left).toHaveLength(3);
    const shown = inspect(error, { showHidden: true, depth: null });
    // Only where it was reported: the symbol, the frozen holder's name and value, the instance's field.
    expect(shown.match(/Abc123/g)).toHaveLength(4);
    for (const { key, redacted } of left) expect(`${key} ${redacted}`).not.toContain("Abc123");
  });

  it("reads a long String object's text and symbols without listing its characters, and reports its named fields unread", () => {
    const note = Symbol("note");
    const text = `key ${KEY} ${"a".repeat(STRING_OBJECT_NAMES_UP_TO)}`;
    const big = Object.assign(new String(text), { field: `f ${KEY}`, [note]: `n ${KEY}` });
    const quiet = Object.assign(new String("a".repeat(STRING_OBJECT_NAMES_UP_TO + 1)), { field: "f" });
    const small = Object.assign(new String(`key ${KEY}`), { field: `f ${KEY}` });
    const holder = { big, quiet, small };
    const listed: object[] = [];
    const names = Object.getOwnPropertyNames;
    const spy = vi.spyOn(Object, "getOwnPropertyNames").mockImplementation((value: object) => {
      listed.push(value);
      return names(value);
    });
    try {
      redact(holder);
    } finally {
      spy.mockRestore();
    }
    expect(listed).not.toContain(big);
    expect(listed).not.toContain(quiet);
    expect(listed).toContain(small);
    // The holder takes a redacted String: its text and symbol-keyed fields redacted.
    expect(holder.big).not.toBe(big);
    expect(String(holder.big)).toBe(`key ${REDACTED} ${"a".repeat(STRING_OBJECT_NAMES_UP_TO)}`);
    expect((holder.big as unknown as Record<symbol, unknown>)[note]).toBe(`n ${REDACTED}`);
    expect(holder.quiet).toBe(quiet);
    expect((holder.small as unknown as { field: string }).field).toBe(`f ${REDACTED}`);
    // (Compared by identity: a deep comparison would list the long ones' characters.)
    const left = unwrittenRedactions(holder).map(({ holder: on, key, redacted }) => [
      on === big ? "big" : on === quiet ? "quiet" : on,
      key,
      redacted,
    ]);
    expect(left).toEqual(
      expect.arrayContaining([
        ["big", "", "[named properties not read]"],
        ["quiet", "", "[named properties not read]"],
      ]),
    );
    expect(left).toHaveLength(2);
  });

  it("reports on the String it answers for one given alone what that answer still reaches unwritten", () => {
    const detail = Object.freeze({ auth: `Bearer ${KEY}` });
    const info = { auth: `Bearer ${KEY}` };
    const given = Object.assign(new String(`key ${KEY}`), { detail, info });
    const answer = redact(given);
    expect(answer).not.toBe(given);
    expect((answer as unknown as { detail: object }).detail).toBe(detail);
    // What the answer shares with the one given and can be written is written, not only reported.
    expect((answer as unknown as { info: object }).info).toBe(info);
    expect(info.auth).toBe(`Bearer ${REDACTED}`);
    expect(unwrittenRedactions(answer)).toEqual([
      { holder: detail, key: "auth", redacted: `Bearer ${REDACTED}` },
    ]);
    expect(unwrittenRedactions(given)).toEqual(
      expect.arrayContaining([
        { holder: given, key: "", redacted: `key ${REDACTED}` },
        { holder: detail, key: "auth", redacted: `Bearer ${REDACTED}` },
      ]),
    );
    // So it is for a String on a frozen holder: its copy's walk writes what the two share.
    const shared = { auth: `Bearer ${KEY}` };
    const frozen = Object.freeze({ box: Object.assign(new String(`key ${KEY}`), { shared }) });
    const error = { frozen };
    redact(error);
    expect(shared.auth).toBe(`Bearer ${REDACTED}`);
    expect(unwrittenRedactions(error)).toEqual([{ holder: frozen, key: "box", redacted: `key ${REDACTED}` }]);
    // A String whose only unwritten part is the one given: its answer has nothing to report.
    const clean = new String(`key ${KEY}`);
    const first = redact(clean);
    expect(unwrittenRedactions(first)).toEqual([]);
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

  /** A run of 1 to 11 of the key's characters (its head, its tail or from inside) and where it goes in the text. */
  const nearMiss = fc.option(
    fc.record({
      from: fc.oneof(fc.constant("head" as const), fc.constant("tail" as const), fc.nat()),
      size: fc.integer({ min: 1, max: 11 }),
      at: fc.nat(),
    }),
  );
  const spliceNearMiss = (
    text: string,
    key: string,
    { from, size, at }: { from: "head" | "tail" | number; size: number; at: number },
  ) => {
    const start = from === "head" ? 0 : from === "tail" ? key.length - size : from % (key.length - size + 1);
    const cut = at % (text.length + 1);
    return `${text.slice(0, cut)}${key.slice(start, start + size)}${text.slice(cut)}`;
  };

  it("leaves text that holds no run of 12 of the key's characters as it was, and takes out a head or tail piece spliced into it", () => {
    fc.assert(
      fc.property(
        longKey,
        words,
        fc.nat(),
        fc.nat(),
        fc.boolean(),
        nearMiss,
        (key, prose, at, length, fromHead, near) => {
          const redact = credentialRedactor({ apiKey: key });
          // Random prose hardly ever holds even three of a random key's characters in a row, so
          // "no run of 12" was only checked far from 12: a run of 1 to 11 of them is put in.
          const text = near === null ? prose : spliceNearMiss(prose, key, near);
          fc.pre(!holdsPiece(text, key));
          expect(redact(text)).toBe(text);
          // A piece that begins the key and reaches 12 past its prefix, or one of 12 or more that ends it.
          const shortest = fromHead ? Math.min(key.length, prefixOf(key) + 12) : 12;
          const size = shortest + (length % (key.length - shortest + 1));
          const piece = fromHead ? key.slice(0, size) : key.slice(key.length - size);
          const cut = at % (text.length + 1);
          const spliced = `${text.slice(0, cut)}${piece}${text.slice(cut)}`;
          expect(holdsPiece(redact(spliced), key)).toBe(false);
        },
      ),
      propertyRuns(300),
    );
  });

  it("never leaves the key plain, cut short, wrapped, percent-encoded or in hex, and keeps the text around it", () => {
    const written = fc.oneof(
      fc.constant((key: string) => key),
      fc.nat().map((n) => (key: string) => {
        const shortest = Math.min(key.length, prefixOf(key) + 12);
        return key.slice(0, shortest + (n % (key.length - shortest + 1)));
      }),
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
      propertyRuns(300),
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

describe("the redactor never throws, and reads what it cannot write", () => {
  const redact = redactor({ apiKey: KEY });

  it("reports a revoked Proxy, a Proxy whose getPrototypeOf trap throws and a throwing getter as unreadable", () => {
    const { proxy: revoked, revoke } = Proxy.revocable({ k: KEY }, {});
    revoke();
    const trapped = new Proxy(
      { k: KEY },
      {
        getPrototypeOf() {
          throw new Error("trap");
        },
      },
    );
    const error = Object.assign(new Error(`bad ${KEY}`), { detail: revoked, trapped });
    // (Compared by hand: a test library's deep equality throws on a revoked Proxy too.)
    const named = (value: object) =>
      unwrittenRedactions(value).map(({ holder, key, redacted }) => [holder === value, key, redacted]);
    expect(() => redact(revoked)).not.toThrow();
    expect(named(revoked)).toEqual([[true, "", "[unreadable]"]]);
    expect(() => redact(error)).not.toThrow();
    expect(error.message).toBe(`bad ${REDACTED}`);
    expect(named(error)).toEqual(
      expect.arrayContaining([
        [true, "detail", "[unreadable]"],
        [true, "trapped", "[unreadable]"],
      ]),
    );
    const getter = {
      get g(): string {
        throw new Error("boom");
      },
      k: `x ${KEY}`,
    };
    expect(redact(getter).k).toBe(`x ${REDACTED}`);
    expect(unwrittenRedactions(getter)).toEqual([{ holder: getter, key: "g", redacted: "[unreadable]" }]);
  });

  it("reads a Map or Set subclass (whose set and delete may throw) without writing it, and reports it", () => {
    class ReadOnlyMap<K, V> extends Map<K, V> {
      sealed = false;
      override set(key: K, item: V): this {
        if (this.sealed) throw new Error("read-only");
        return super.set(key, item);
      }
      override delete(): boolean {
        throw new Error("read-only");
      }
    }
    class ReadOnlySet<T> extends Set<T> {
      override delete(): boolean {
        throw new Error("read-only");
      }
    }
    const map = new ReadOnlyMap<string, string>([["auth", `Bearer ${KEY}`]]);
    map.sealed = true;
    const set = new ReadOnlySet([`Bearer ${KEY}`]);
    const error = Object.assign(new Error("x"), { map, set });
    expect(() => redact(error)).not.toThrow();
    expect(map.get("auth")).toBe(`Bearer ${KEY}`);
    expect(unwrittenRedactions(error)).toEqual(
      expect.arrayContaining([
        { holder: map, key: "auth", redacted: `Bearer ${REDACTED}` },
        { holder: set, key: "", redacted: `Bearer ${REDACTED}` },
      ]),
    );
  });

  it("takes the key out of a Map and a Set made in another realm", () => {
    const map = vm.runInNewContext("new Map([['k', K], [K, 'v']])", { K: `Bearer ${KEY}` }) as Map<
      string,
      string
    >;
    const set = vm.runInNewContext("new Set([K])", { K: `Bearer ${KEY}` }) as Set<string>;
    const holder = { map, set };
    redact(holder);
    expect([...map]).toEqual([
      ["k", `Bearer ${REDACTED}`],
      [`Bearer ${REDACTED}`, "v"],
    ]);
    expect([...set]).toEqual([`Bearer ${REDACTED}`]);
    expect(unwrittenRedactions(holder)).toEqual([]);
  });

  it("keeps two Map keys that redact alike as two entries", () => {
    const map = new Map([
      [`key ${KEY}`, 1],
      [`key ${KEY.slice(0, 30)}`, 2],
      [`key ${REDACTED}`, 0],
    ]);
    redact(map);
    expect(map.size).toBe(3);
    expect(new Set(map.values())).toEqual(new Set([0, 1, 2]));
    for (const key of map.keys()) expect(key).not.toContain("Abc123");
  });
});

describe("redacting over HTTP: live clients, immutable headers, a key's tail in a stream, a title's words", () => {
  let server: TestServer;
  beforeEach(async () => {
    server = await startServer();
  });
  afterEach(() => server.close());

  it("never writes an object a class instance also holds, whichever way the walk meets it first", () => {
    class Session {
      constructor(readonly options: { apiKey: string }) {}
    }
    const redact = redactor({ apiKey: KEY });
    const first = { apiKey: KEY };
    const second = { apiKey: KEY };
    const before = Object.assign(new Error("x"), { options: first, session: new Session(first) });
    const after = Object.assign(new Error("x"), {
      session: new Session(second),
      nested: { options: second },
    });
    redact(before);
    redact(after);
    expect(first.apiKey).toBe(KEY);
    expect(second.apiKey).toBe(KEY);
    for (const [error, options] of [
      [before, first],
      [after, second],
    ] as const) {
      expect(unwrittenRedactions(error)).toEqual([{ holder: options, key: "apiKey", redacted: REDACTED }]);
    }
    // The error given is written even where an instance holds it back.
    const cyclic = Object.assign(new Error(`bad ${KEY}`), { session: undefined as unknown });
    cyclic.session = new Session({ apiKey: "x" });
    Object.assign(cyclic.session as object, { last: cyclic });
    redact(cyclic);
    expect(cyclic.message).toBe(`bad ${REDACTED}`);
  });

  it("replaces a fetched response's immutable Headers on the host's own SDK error with a redacted copy", async () => {
    const key = "sk-aa0-a0A-__Aa";
    server.enqueue({
      type: "error",
      status: 401,
      body: { error: { message: "denied" } },
      headers: { "x-echo": key, "x-other": "kept" },
    });
    const host = new OpenAI({ baseURL: server.baseUrl, apiKey: key, maxRetries: 0, logLevel: "off" });
    const error = await host.chat.completions
      .create({ model: "m", messages: [{ role: "user", content: "hi" }] })
      .then(
        () => undefined,
        (caught: unknown) => caught,
      );
    expect(error).toBeInstanceOf(OpenAI.APIError);
    const apiError = error as InstanceType<typeof OpenAI.APIError>;
    const fetched = apiError.headers;
    expect(fetched).toBeInstanceOf(Headers);
    // The response's own headers cannot be written.
    expect(() => fetched?.set("x-echo", "y")).toThrow();
    for (const redact of [redactor({ apiKey: key }), credentialRedactor({ apiKey: key })]) {
      expect(redact(apiError)).toBe(apiError);
      expect(apiError.headers?.get("x-echo")).toBe(REDACTED);
      expect(apiError.headers?.get("x-other")).toBe("kept");
      expect(unwrittenRedactions(apiError)).toEqual([]);
    }
    expect(apiError.headers).not.toBe(fetched);
  });

  it("reports, not writes, the key in an immutable Headers whose holder cannot be written", async () => {
    const key = "sk-aa0-a0A-__Aa";
    server.enqueue({ type: "error", status: 401, body: "denied", headers: { "x-echo": key } });
    const response = await fetch(`${server.baseUrl}/chat/completions`, { method: "POST", body: "{}" });
    await response.text();
    const holder = Object.freeze({ headers: response.headers });
    redactor({ apiKey: key })(holder);
    expect(holder.headers.get("x-echo")).toBe(key);
    expect(unwrittenRedactions(holder)).toEqual([
      { holder: response.headers, key: "x-echo", redacted: REDACTED },
    ]);
  });

  it("never writes into a pooled client an error holds: its next call still sends the real key", async () => {
    const endpoint = { baseUrl: server.baseUrl, apiKey: KEY };
    const client = createClientPool().getClient(endpoint);
    const error = Object.assign(new Error(`upstream failed for ${KEY}`), {
      client,
      options: { apiKey: KEY },
    });
    redactor(endpoint)(error);
    credentialRedactor(endpoint)(error);
    expect(error.message).toBe(`upstream failed for ${REDACTED}`);
    expect(error.options.apiKey).toBe(REDACTED);
    // Reported, so a host that shows the error knows what it still holds.
    expect(unwrittenRedactions(error).some((entry) => entry.redacted.includes(REDACTED))).toBe(true);
    server.enqueue({ content: "hi" });
    const reply = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "x" }],
    });
    expect(reply.choices[0]?.message.content).toBe("hi");
    expect(server.chatRequests.at(-1)?.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it("takes out a key's last characters when a stream's read is cut anywhere inside them", async () => {
    const client = createClientPool().getClient({ baseUrl: server.baseUrl, apiKey: KEY });
    const content = `key …${KEY.slice(-16)} done`;
    const event = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}\n\n`;
    const start = event.indexOf("…") + 1;
    const leaked: string[] = [];
    for (let cut = start; cut <= start + 16; cut++) {
      server.enqueue({
        type: "raw",
        chunks: [event.slice(0, cut), event.slice(cut), "data: [DONE]\n\n"],
        chunkDelayMs: 2,
      });
      let text = "";
      const stream = await client.chat.completions.create({ model: "m", messages: [], stream: true });
      for await (const part of stream) text += part.choices[0]?.delta.content ?? "";
      if (text !== `key …${REDACTED} done`) leaked.push(`cut at ${cut - start}: ${text}`);
    }
    expect(leaked).toEqual([]);
  });

  it("leaves the words of an X-Title that starts like an auth scheme in a reply and in credentialRedactor's text", async () => {
    const endpoint = {
      baseUrl: server.baseUrl,
      apiKey: KEY,
      headers: { "X-Title": "Bot Builder for Customer Support" },
    };
    const text =
      "Use the Bot Builder for your team. The Builder for Customer Success is different; see Customer Support docs.";
    expect(credentialRedactor(endpoint)(text)).toBe(text);
    // Logs lose the whole title, as a word of its own, and nothing else.
    expect(redactor(endpoint)(`${text} Bot Builder for Customer Support`)).toBe(`${text} ${REDACTED}`);
    server.enqueue({ content: text });
    const reply = await createClientPool()
      .getClient(endpoint)
      .chat.completions.create({ model: "m", messages: [{ role: "user", content: "x" }] });
    expect(reply.choices[0]?.message.content).toBe(text);
  });
});

describe("an array's named properties and a header's name are redacted too", () => {
  it("redacts a RegExp match's input and an array's named property, and moves a named key off the secret", () => {
    for (const [, redact] of both({ apiKey: KEY })) {
      const match = /Bearer (\S+)/.exec(`Authorization: Bearer ${KEY}`) as RegExpExecArray;
      const list = Object.assign(["a"], { note: `key ${KEY}`, [KEY]: 2 });
      const error = Object.assign(new Error("refused"), { match, list });
      redact(error);
      expect(match[1]).toBe(REDACTED);
      expect(match.input).toBe(`Authorization: Bearer ${REDACTED}`);
      expect(list.note).toBe(`key ${REDACTED}`);
      expect(Object.keys(list)).toEqual(["0", "note", REDACTED]);
      expect(inspect(error)).not.toContain(KEY);
      expect(unwrittenRedactions(error)).toEqual([]);
    }
  });

  it("reports an array's named property it cannot write", () => {
    const list = Object.freeze(Object.assign(["a"], { note: `key ${KEY}` }));
    redactor({ apiKey: KEY })({ list });
    expect(list.note).toBe(`key ${KEY}`);
    expect(unwrittenRedactions({ list })).toEqual([]);
    const holder = { list };
    redactor({ apiKey: KEY })(holder);
    expect(unwrittenRedactions(holder)).toEqual([{ holder: list, key: "note", redacted: `key ${REDACTED}` }]);
  });

  // `Headers` lowercase every name: a key with capitals (as most real keys have) stands in a name
  // lowercased, and is found there all the same.
  const names = [
    ["an all-lowercase secret", KEY.toLowerCase()],
    ["a secret with capitals", KEY],
  ] as const;

  it.each(names)("moves a header named by %s to a redacted name", (_, secret) => {
    const headers = new Headers({ [`x-${secret}`]: "1", "x-other": "kept" });
    const holder = { headers };
    redactor({ apiKey: secret })(holder);
    expect([...headers]).toEqual([
      ["x-other", "kept"],
      ["x-redacted", "1"],
    ]);
    expect(unwrittenRedactions(holder)).toEqual([]);
  });

  it.each(names)("reports a header named by %s under a live instance, never writing it", (_, secret) => {
    class Client {
      headers = new Headers({ [`x-cache-${secret}`]: "hit", "x-other": `v ${secret}` });
    }
    const client = new Client();
    const holder = { client };
    redactor({ apiKey: secret })(holder);
    expect([...client.headers]).toEqual([
      [`x-cache-${secret.toLowerCase()}`, "hit"],
      ["x-other", `v ${secret}`],
    ]);
    expect(unwrittenRedactions(holder)).toEqual([
      { holder: client.headers, key: "x-cache-redacted", redacted: "hit" },
      { holder: client.headers, key: "x-other", redacted: `v ${REDACTED}` },
    ]);
  });

  it.each(names)(
    "reports a header named by %s in fetched (immutable) Headers whose holder cannot be written",
    async (_, secret) => {
      const server = await startServer();
      try {
        server.enqueue({ type: "error", status: 401, body: "denied", headers: { [`x-${secret}`]: "1" } });
        const response = await fetch(`${server.baseUrl}/chat/completions`, { method: "POST", body: "{}" });
        await response.text();
        const frozen = Object.freeze({ headers: response.headers });
        redactor({ apiKey: secret })(frozen);
        expect(unwrittenRedactions(frozen)).toEqual([
          { holder: response.headers, key: "x-redacted", redacted: "1" },
        ]);
        const open = { headers: response.headers };
        redactor({ apiKey: secret })(open);
        expect(open.headers).not.toBe(response.headers);
        expect([...open.headers].filter(([name]) => name.startsWith("x-"))).toEqual([["x-redacted", "1"]]);
        expect(inspect(open).toLowerCase()).not.toContain(secret.toLowerCase());
      } finally {
        await server.close();
      }
    },
  );
});
