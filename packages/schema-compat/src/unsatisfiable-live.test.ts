/**
 * Schemas no value satisfies (r78), against a real llama.cpp server (b9749, the tiny model) with
 * `tool_choice: "required"`. Sent as they stand, an integer's `minimum: 5, maximum: 3` (a bound pair
 * with no integer between, `enum: []`) is a 500 ("Unexpected empty grammar stack"), and a string's
 * `minLength: 5, maxLength: 3` is never answered: the grammar admits no string and the server's slot
 * spins on it, past the request and over every later one. Through sanitizeTools each is a tool the
 * server calls. Skipped with a message where LOOPWRIGHT_LIVE_LLAMA names no live server.
 */
import { type LiveServer, liveServerPath, startLive } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isGrammarError } from "./grammar-error.js";
import { sanitizeTools } from "./sanitize-tools.js";

if (!liveServerPath)
  console.warn(
    "schema-compat live tests skipped: set LOOPWRIGHT_LIVE_LLAMA to a folder holding llama-server and tiny.gguf to run them.",
  );

type Answer = { status: number; message: string; calls: number } | "no answer";

/**
 * Source shapes (the one parameter `v`), and the form of each the server cannot answer: the source
 * itself, or what sanitizeSchema made of it before (the allOf's merge; llama.cpp takes the raw allOf).
 */
const REFUSED: [name: string, v: Record<string, unknown>, before?: Record<string, unknown>][] = [
  ["integer minimum above maximum", { type: "integer", minimum: 5, maximum: 3 }],
  ["no integer strictly between 3 and 4", { type: "integer", exclusiveMinimum: 3, exclusiveMaximum: 4 }],
  [
    "bounds from two allOf parts",
    { allOf: [{ type: "integer", minimum: 5 }, { maximum: 3 }] },
    { type: "integer", minimum: 5, maximum: 3 },
  ],
  [
    "items no integer meets",
    { type: "array", items: { type: "integer", minimum: 5, maximum: 3 }, minItems: 1 },
  ],
  ["an empty enum", { type: "string", enum: [] }],
];

(liveServerPath ? describe : describe.skip)(
  "a schema no value satisfies, against a live llama.cpp server (r78)",
  { timeout: 180_000 },
  () => {
    let server: LiveServer;
    beforeAll(async () => {
      // Its own server: the last case leaves it spinning, and stop() ends it (SIGKILL after 3 s).
      server = await startLive({ contextSize: 2048 });
    }, 90_000);
    afterAll(() => server?.stop(), 20_000);

    const tool = (v: unknown) => ({
      type: "function" as const,
      function: { name: "pick", parameters: { type: "object", properties: { v }, required: ["v"] } },
    });

    /** The answer to a request offering this tool, or "no answer" when none came within `ms`. */
    async function call(declared: unknown, ms: number): Promise<Answer> {
      try {
        const response = await fetch(`${server.baseUrl}/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            model: "tiny",
            messages: [{ role: "user", content: "Call the tool." }],
            tools: [declared],
            tool_choice: "required",
            max_tokens: 60,
            temperature: 0,
          }),
          signal: AbortSignal.timeout(ms),
        });
        const body = (await response.json()) as {
          error?: { message?: string };
          choices?: { message?: { tool_calls?: unknown[] } }[];
        };
        return {
          status: response.status,
          message: body.error?.message ?? "",
          calls: body.choices?.[0]?.message?.tool_calls?.length ?? 0,
        };
      } catch (error) {
        if (error instanceof DOMException && error.name === "TimeoutError") return "no answer";
        throw error;
      }
    }

    it("answers each with a tool call once sanitizeTools has sent it; raw, a 500", async () => {
      // The shapes side by side (the server has four slots and batches them): none wedges it.
      const shape = async ([name, v, before]: (typeof REFUSED)[number]) => {
        const notices: string[] = [];
        const [sanitized] = sanitizeTools([tool(v)], { onNotice: (n) => notices.push(n) });
        expect({ name, notices: notices.length }).toEqual({ name, notices: 1 });
        expect({ name, answer: await call(sanitized, 30_000) }).toEqual({
          name,
          answer: { status: 200, message: "", calls: 1 },
        });
        const raw = await call(tool(before ?? v), 30_000);
        // A host sending it unsanitized can tell the refusal, and send relaxTools' form instead.
        expect({
          name,
          grammarError: isGrammarError({
            status: 500,
            error: { message: raw === "no answer" ? "" : raw.message },
          }),
        }).toEqual({
          name,
          grammarError: true,
        });
        expect({ name, raw }).toEqual({
          name,
          raw: {
            status: 500,
            message: expect.stringMatching(
              /empty grammar stack|does not match the expected peg-native format/,
            ),
            calls: 0,
          },
        });
      };
      await Promise.all(REFUSED.map(shape));
    });

    it("answers an integer between 1.2 and 1.7, which sanitizeSchema once sent as minimum 2, maximum 1 (a 500)", async () => {
      const [sanitized] = sanitizeTools([tool({ type: "integer", minimum: 1.2, maximum: 1.7 })]);
      expect(await call(sanitized, 30_000)).toEqual({ status: 200, message: "", calls: 1 });
      expect(await call(tool({ type: "integer", minimum: 2, maximum: 1 }), 30_000)).toEqual({
        status: 500,
        message: expect.stringContaining("empty grammar stack"),
        calls: 0,
      });
    });

    it("answers a string of at least 5 and at most 3 characters sanitized; raw, never (the last case: it leaves the server spinning)", async () => {
      const v = { type: "string", minLength: 5, maxLength: 3 };
      const [sanitized] = sanitizeTools([tool(v)]);
      expect(await call(sanitized, 30_000)).toEqual({ status: 200, message: "", calls: 1 });
      expect(await call(tool(v), 10_000)).toBe("no answer");
    });
  },
);
