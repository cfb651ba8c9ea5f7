/**
 * The patterns sanitizeSchema writes, against a real llama.cpp server (b9749, the tiny model): its
 * converter copies a pattern's escapes into the grammar as they stand, and its grammar parser
 * refuses every escape but `\x`, `\u`, `\t`, `\n`, `\r` and a few brackets with a 400 "failed to
 * parse grammar" — `\v`, `\f`, `\0`, `\b`, `\cJ`, `\-`, `\/`, and `\d`, `\w`, `\s` too — and it splits
 * `\x..`, `\u....` or a raw `é` before a count (`\u00e9{2}` repeats the `9`), a 400 as well. Each kind
 * of escape goes through sanitizeSchema and must be accepted; the source patterns themselves, sent
 * as they are, are refused, so the check can tell the two apart. The same for what r9 found: a lone
 * half of a surrogate pair written raw (its JSON parser refuses the request, a 500), an emoji before
 * a count (a 400), and a lazy quantifier the grammar reads as optional (`a+?` as `(a+)?`).
 * Skipped with a message where LOOPWRIGHT_LIVE_LLAMA names no live server.
 */
import { type LiveServer, liveServerPath, startLive } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LONE_HALVES } from "../test-support/lone-halves.js";
import { isGrammarError } from "./grammar-error.js";
import { sanitizeSchema } from "./sanitize-schema.js";

if (!liveServerPath)
  console.warn(
    "schema-compat live tests skipped: set LOOPWRIGHT_LIVE_LLAMA to a folder holding llama-server and tiny.gguf to run them.",
  );

/** Patterns with each escape the sanitizer used to write as it stood, all refused by the server raw. */
const REFUSED_RAW = [
  "^a\\0b$",
  "^a\\vb$",
  "^a\\fb$",
  "^a\\cJb$",
  "^a\\-b$",
  "^a\\/b$",
  "^a\\ b$",
  "^\\d{3}-\\d{4}$",
  "^\\w+$",
  "^\\s+$",
  "^\\S+$",
  "^[\\0]$",
  "^[\\v\\f]$",
  "^[\\b]$",
  "^[a\\-z]$",
  "^[\\cJ]$",
  "^[\\d]$",
  "^[a\\s]$",
  "^[\\^a]$",
  "^[\\.\\/]$",
  "^é+$",
  "^a\\x0B+$",
  "^\\u00e9{2}$",
  "^a{b$",
  "^\\😀$",
];

/** Patterns the server took before and must still take once rewritten (`.` now leaves out line breaks). */
const ACCEPTED_RAW = [
  "^a\\tb$",
  "^a\\x41b$",
  "^a\\.b\\*$",
  "^[\\t\\n\\r]$",
  "^[\\]\\[]$",
  "^a.b$",
  "^.+$",
  "abc",
];

/**
 * r9's patterns and what sanitizeSchema makes of them: kept rewritten, or (undefined) moved to the
 * description. Each sanitized schema must be taken.
 */
const R9: [source: string, kept: string | undefined][] = [
  ["^\\uD83D$", "^[\\uD83D]$"],
  ["^a\\uDE00b$", "^a[\\uDE00]b$"],
  ["^[\\uD800a]$", "^[\\uD800a]$"],
  ["^\\uD83D\\uDE00$", "^😀$"],
  ["^[^\\uD800-\\uDFFF]+$", undefined],
  ["^(?:[\\uD83C-\\uDBFF][\\uDC00-\\uDFFF])+$", undefined],
  ["^🙂+$", undefined],
  ["^a🙂{2}$", undefined],
  ["^\\uD83D\\uDE00+$", undefined],
  ["^(🙂)+$", "^(🙂)+$"],
  ["^a+?$", "^a+$"],
  ["^(ab)+?$", "^(ab)+$"],
  ["^x{2}?$", "^x{2}$"],
];

(liveServerPath ? describe : describe.skip)(
  "sanitizeSchema's patterns, against a live llama.cpp server",
  { timeout: 120_000 },
  () => {
    let server: LiveServer;
    beforeAll(async () => {
      server = await startLive({ contextSize: 2048 });
    }, 90_000);
    afterAll(() => server?.stop(), 20_000);

    /** The status and error message of a tool call request whose one parameter has this schema. */
    async function send(parameters: unknown): Promise<{ status: number; message: string }> {
      const response = await fetch(`${server.baseUrl}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: "tiny",
          messages: [{ role: "user", content: "Call the tool." }],
          tools: [{ type: "function", function: { name: "t", parameters } }],
          tool_choice: "required",
          // The server builds (or refuses) the grammar before it generates anything, so one token
          // is enough to see the answer; 20 made this file 30 s of CI time instead of 3.
          max_tokens: 1,
          temperature: 0,
        }),
      });
      const body = (await response.json()) as { error?: { message?: string } };
      return { status: response.status, message: body.error?.message ?? "" };
    }

    const schema = (pattern: string) => ({
      type: "object",
      properties: { v: { type: "string", pattern } },
      required: ["v"],
    });

    it("refuses the source patterns as they stand (the escapes its grammar parser does not know)", async () => {
      for (const pattern of REFUSED_RAW) {
        const { status, message } = await send(schema(pattern));
        expect({ pattern, status, message }).toEqual({
          pattern,
          status: 400,
          message: expect.stringMatching(/failed to parse grammar|curly brackets/),
        });
      }
    });

    it("accepts every one of them, and the ones it took before, once sanitizeSchema has rewritten them", async () => {
      for (const pattern of [...REFUSED_RAW, ...ACCEPTED_RAW]) {
        const sanitized = sanitizeSchema(schema(pattern));
        const kept = (sanitized.properties as Record<string, { pattern?: string }>).v?.pattern;
        expect(kept, pattern).toBeTypeOf("string");
        const { status, message } = await send(sanitized);
        expect({ pattern, kept, status, message }).toEqual({ pattern, kept, status: 200, message: "" });
      }
    });

    it("refuses a raw lone half of a surrogate pair (500) and an emoji before a count (400), as the sanitizer wrote them before", async () => {
      for (const pattern of ["^\uD83D$", "^[^\uD800-\uDFFF]+$"]) {
        const { status, message } = await send(schema(pattern));
        expect({ pattern, status, message }).toEqual({
          pattern,
          status: 500,
          message: expect.stringMatching(/surrogate/),
        });
      }
      for (const pattern of ["^🙂+$", "^a🙂{2}$"]) {
        const { status, message } = await send(schema(pattern));
        expect({ pattern, status, message }).toEqual({
          pattern,
          status: 400,
          message: expect.stringMatching(/failed to parse grammar/),
        });
      }
    });

    it("takes integer bounds of sixteen digits and more once sanitizeSchema has written them in words (r68)", async () => {
      // Sent as keywords, the first two hung the server (a core busy past the request's end), the
      // next two killed it, the last was a 400; none may reach it as a keyword.
      const bounds = [
        { minimum: 1e16 },
        { maximum: -1e16 },
        { maximum: -9007199254740991 },
        { maximum: 1e19 },
        { minimum: 1e300 },
      ];
      for (const bound of bounds) {
        const sanitized = sanitizeSchema({
          type: "object",
          properties: { v: { type: "integer", ...bound } },
          required: ["v"],
        });
        const answer = await Promise.race([
          send(sanitized),
          new Promise((resolve) => setTimeout(() => resolve("no answer in 15 s"), 15_000)),
        ]);
        expect({ bound, answer }).toEqual({ bound, answer: { status: 200, message: "" } });
      }
      // Sent raw, the one that does not hang or kill the server is refused as a grammar error.
      const raw = { type: "object", properties: { v: { type: "integer", minimum: 1e300 } }, required: ["v"] };
      const { status, message } = await send(raw);
      expect(status).toBe(400);
      expect(isGrammarError({ status, error: { message } })).toBe(true);
    });

    it("holds an integer to its fractional bounds as the whole ones they mean (r68; it wrote 1 for minimum 1.5)", async () => {
      const schema = sanitizeSchema({
        type: "object",
        properties: { v: { type: "integer", minimum: 1.5, maximum: 2.5 } },
        required: ["v"],
      });
      const written: unknown[] = [];
      for (let seed = 0; seed < 10; seed++) {
        const response = await fetch(`${server.baseUrl}/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            model: "tiny",
            messages: [{ role: "user", content: "Give v." }],
            response_format: { type: "json_schema", json_schema: { name: "a", schema } },
            max_tokens: 40,
            temperature: 1,
            seed,
          }),
        });
        const body = (await response.json()) as { choices?: { message?: { content?: string } }[] };
        try {
          written.push((JSON.parse(body.choices?.[0]?.message?.content ?? "") as { v: unknown }).v);
        } catch {
          // Cut off at the ceiling: nothing to read.
        }
      }
      expect(written.length).toBeGreaterThan(2);
      expect(written.filter((v) => v !== 2)).toEqual([]);
    });

    it("takes text holding a lone surrogate once sanitizeSchema has written it (r68); raw, a 500", async () => {
      for (const [where, v] of LONE_HALVES) {
        const raw = { type: "object", properties: { v }, required: ["v"], additionalProperties: false };
        expect({ where, raw: await send(raw) }).toEqual({
          where,
          raw: { status: 500, message: expect.stringMatching(/surrogate/) },
        });
        expect({ where, sanitized: await send(sanitizeSchema(raw)) }).toEqual({
          where,
          sanitized: { status: 200, message: "" },
        });
      }
    });

    it("takes a property name holding a lone surrogate once sanitizeSchema has written it (r70); raw, a 500", async () => {
      const raw = { type: "object", properties: { "q\uD83D": { type: "string" } }, required: ["q\uD83D"] };
      expect(await send(raw)).toEqual({ status: 500, message: expect.stringMatching(/surrogate/) });
      expect(await send(sanitizeSchema(raw))).toEqual({ status: 200, message: "" });
    });

    it("takes r9's patterns once sanitizeSchema has rewritten them (or moved them to the description)", async () => {
      for (const [pattern, expected] of R9) {
        const sanitized = sanitizeSchema(schema(pattern));
        const v = (sanitized.properties as Record<string, { pattern?: string; description?: string }>).v;
        expect({ pattern, kept: v?.pattern }).toEqual({ pattern, kept: expected });
        if (expected === undefined) expect(v?.description, pattern).toContain(pattern);
        const { status, message } = await send(sanitized);
        expect({ pattern, status, message }).toEqual({ pattern, status: 200, message: "" });
      }
    });
  },
);
