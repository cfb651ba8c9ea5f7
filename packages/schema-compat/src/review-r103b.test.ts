/**
 * Round 103b: isGrammarError read against a polluted `Object.prototype` — what a refusal says is
 * what its body holds, never what some code in the host's process set on every object.
 */
import { readFixture, startServer, withPollutedPrototype } from "@loopwright/testkit";
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { isGrammarError } from "./grammar-error.js";

/** What the real client rejects with when a server answers `status` with the recorded `fixture`. */
async function refusedWith(status: number, fixture: string): Promise<unknown> {
  const body = JSON.parse(readFixture(fixture));
  const server = await startServer({ replies: () => ({ type: "error" as const, status, body }) });
  try {
    await new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 }).chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "x" }],
    });
  } catch (error) {
    return error;
  } finally {
    await server.close();
  }
  throw new Error("the request was not refused");
}

describe("isGrammarError with Object.prototype polluted", () => {
  it("reads OpenAI's unknown-argument 400 as no grammar failure, where a polluted detail, body, data or cause read it as one", async () => {
    // Before: true under each of these — negotiate then latched strictSchemas off for an unknown
    // parameter and never dropped it, and the README's loop relaxed its tools on every 400.
    const unknown = await refusedWith(
      400,
      "errors/openai/unrecognized-argument-reasoning-effort-gpt-4o-mini.json",
    );
    expect(isGrammarError(unknown)).toBe(false);
    for (const polluted of [
      { detail: "invalid grammar" },
      { body: "Grammar error: x" },
      { data: "JSON schema conversion failed" },
      { cause: "invalid grammar" },
    ]) {
      expect(
        withPollutedPrototype(polluted, () => isGrammarError(unknown)),
        JSON.stringify(polluted),
      ).toBe(false);
    }
  });

  it("reads the same body as a fetch client keeps it ({ status, body }) as none, where a polluted code read it as one", () => {
    const body = JSON.parse(
      readFixture("errors/openai/unrecognized-argument-reasoning-effort-gpt-4o-mini.json"),
    );
    delete body.error.code;
    const error = { status: 400, body };
    expect(isGrammarError(error)).toBe(false);
    expect(withPollutedPrototype({ code: "invalid_json_schema" }, () => isGrammarError(error))).toBe(false);
  });

  it("reads llama.cpp's recorded conversion failure as one, where a polluted status or type hid it", async () => {
    const failed = await refusedWith(
      400,
      "errors/llamacpp/json-schema-conversion-failed-unrecognized-schema.json",
    );
    expect(isGrammarError(failed)).toBe(true);
    for (const polluted of [
      { statusCode: 503 },
      { type: "context_length_exceeded" },
      { code: "tool_use_failed" },
    ]) {
      expect(
        withPollutedPrototype(polluted, () => isGrammarError(failed)),
        JSON.stringify(polluted),
      ).toBe(true);
    }
  });
});
