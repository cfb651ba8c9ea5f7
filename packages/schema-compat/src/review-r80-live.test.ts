/**
 * r80 against a real llama.cpp server (b9749, the tiny model), `tool_choice: "required"`: what it
 * does with the shapes review-r80.test.ts sanitizes. An enum beside a bound it contradicts is
 * followed alone (`enum: [1, 2], minimum: 5` → the model writes 1); an empty class `[]` is read as
 * the empty string (`^[]$`, which ECMAScript matches with nothing, lets the model write `""`) or,
 * quantified, refuses the grammar (a 400). Sanitized, each is a call the schema's words describe.
 * Skipped with a message where LOOPWRIGHT_LIVE_LLAMA names no live server.
 */
import { type LiveServer, liveServerPath, startLive } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sanitizeTools } from "./sanitize-tools.js";

if (!liveServerPath)
  console.warn(
    "schema-compat live tests skipped: set LOOPWRIGHT_LIVE_LLAMA to a folder holding llama-server and tiny.gguf to run them.",
  );

(liveServerPath ? describe : describe.skip)(
  "r80 shapes, against a live llama.cpp server",
  { timeout: 240_000 },
  () => {
    let server: LiveServer;
    beforeAll(async () => {
      server = await startLive({ contextSize: 2048 });
    }, 90_000);
    afterAll(() => server?.stop(), 20_000);

    const tool = (v: unknown) => ({
      type: "function" as const,
      function: {
        name: "pick",
        parameters: { type: "object", properties: { v }, required: ["v"], additionalProperties: false },
      },
    });

    /** The status, and the value of `v` the model wrote (or the error's message). */
    async function call(declared: unknown): Promise<{ status: number; v?: unknown; message?: string }> {
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
        signal: AbortSignal.timeout(30_000),
      });
      const body = (await response.json()) as {
        error?: { message?: string };
        choices?: { message?: { tool_calls?: { function: { arguments: string } }[] } }[];
      };
      if (body.error) return { status: response.status, message: body.error.message ?? "" };
      const args = body.choices?.[0]?.message?.tool_calls?.[0]?.function.arguments ?? "{}";
      return { status: response.status, v: (JSON.parse(args) as { v?: unknown }).v };
    }

    it("raw, an enum beside a minimum it contradicts is followed alone; sanitized, an integer is written", async () => {
      const v = { type: "integer", enum: [1, 2], minimum: 5 };
      const [sanitized] = sanitizeTools([tool(v)]);
      expect(JSON.stringify(sanitized)).not.toContain('"enum"');
      // Side by side: the server batches them (one at a time took most of a minute in CI).
      const [raw, answer] = await Promise.all([call(tool(v)), call(sanitized)]);
      expect(raw.status).toBe(200);
      expect([1, 2]).toContain(raw.v);
      expect(answer.status).toBe(200);
      expect(Number.isInteger(answer.v)).toBe(true);
    });

    it("raw, ^[]$ lets the model write the empty string and ^[]?$ is a 400; sanitized, both are answered", async () => {
      const sanitized = ["^[]$", "^[]?$", "^(a|[])$"].map(
        (pattern) => sanitizeTools([tool({ type: "string", pattern })])[0],
      );
      for (const each of sanitized) expect(JSON.stringify(each)).not.toContain('"pattern"');
      // Side by side: the server batches them (one at a time took most of a minute in CI).
      const [empty, quantified, ...answers] = await Promise.all([
        call(tool({ type: "string", pattern: "^[]$" })),
        call(tool({ type: "string", pattern: "^[]?$" })),
        ...sanitized.map((each) => call(each)),
      ]);
      expect(empty).toEqual({ status: 200, v: "" });
      expect(quantified).toEqual({
        status: 400,
        message: expect.stringContaining("failed to parse grammar"),
      });
      for (const answer of answers) expect(answer.status).toBe(200);
    });
  },
);
