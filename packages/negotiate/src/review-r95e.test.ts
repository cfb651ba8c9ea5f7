/**
 * Round 95 (e): a server's generic "does not support response_format" refusal of a request whose
 * response_format was a plain `{ type: "json_object" }` was told as "a JSON schema" refused. The
 * wording reads the refusal and the body that attempt sent, handed to `negotiate` by `send` itself
 * (its fourth argument), never a note kept beside the call.
 */
import { getClient } from "@loopwright/client";
import { streamTurn } from "@loopwright/stream";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { createCapabilityStore } from "./capabilities.js";
import { negotiate } from "./negotiate.js";
import { buildBody } from "./request-body.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const MESSAGES = [{ role: "user", content: "Answer in JSON." }];

/** The generic wording: names neither a schema nor the field as unknown. */
const GENERIC = {
  type: "error" as const,
  status: 400,
  body: { error: { message: "This model does not support response_format.", type: "invalid_request_error" } },
};

const TAIL =
  "; sending requests without one from now on: a response_format of the caller's own (extraBody) is " +
  "left out, and a side task asks for json_object, or for JSON in words.";

/**
 * One request through negotiate to `baseUrl` with `format` in extraBody, the body handed back as
 * sent unless `record` is false; `wait` lets another call send before this one's answer is read.
 */
async function notices(baseUrl: string, format: Record<string, unknown>, record = true, wait = 0) {
  const config = { baseUrl, model: "m", extraBody: { response_format: format } };
  const told: string[] = [];
  await negotiate(
    createCapabilityStore().capabilitiesFor(baseUrl),
    async (supports, produced, model, sent) => {
      const body = buildBody(config, supports, model, MESSAGES);
      // `sent` is absent on a negotiate before r95e: the notice is then what a user saw.
      if (record && sent) sent.body = body;
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      return streamTurn(getClient(config), body, { produced });
    },
    { model: config.model, onNotice: (text) => told.push(text) },
  );
  return told;
}

/** {@link notices} on a server of its own, and the response_format each request carried. */
async function ask(
  format: Record<string, unknown>,
  record = true,
): Promise<{ notices: string[]; formats: unknown[] }> {
  server = await startServer({ replies: [GENERIC, { content: "{}" }] });
  const told = await notices(server.baseUrl, format, record);
  return {
    notices: told,
    formats: server.chatRequests.map((r) => (r.body as { response_format?: unknown }).response_format),
  };
}

describe("R95e: a generically refused response_format is told as what was sent", () => {
  it("a plain json_object: the notice says json_object, not a JSON schema", async () => {
    const { notices, formats } = await ask({ type: "json_object" });
    expect(formats).toEqual([{ type: "json_object" }, undefined]);
    // Before: "m refused structured output (a JSON schema in response_format)…": none was sent.
    expect(notices).toEqual([`m refused structured output (json_object in response_format)${TAIL}`]);
  });

  it("a JSON schema refused alike: said as before", async () => {
    const format = { type: "json_schema", json_schema: { name: "c", schema: { type: "object" } } };
    const { notices, formats } = await ask(format);
    expect(formats).toEqual([format, undefined]);
    expect(notices).toEqual([`m refused structured output (a JSON schema in response_format)${TAIL}`]);
  });

  it("a send that does not hand back its body: said as before (nothing is guessed)", async () => {
    const { notices } = await ask({ type: "json_object" }, false);
    expect(notices).toEqual([`m refused structured output (a JSON schema in response_format)${TAIL}`]);
  });

  it("two calls side by side, one json_object and one schema: each told by its own body", async () => {
    // Separate endpoints, so neither finds the other's latch; interleaved, so a note kept beside
    // the calls (not handed through `send`) would tell one with the other's format.
    const schema = { type: "json_schema", json_schema: { name: "c", schema: { type: "object" } } };
    const servers = await Promise.all([
      startServer({ replies: [GENERIC, { content: "{}" }] }),
      startServer({ replies: [GENERIC, { content: "{}" }] }),
    ]);
    try {
      const told = await Promise.all(
        [{ type: "json_object" }, schema].map((format, i) =>
          notices((servers[i] as TestServer).baseUrl, format, true, 5),
        ),
      );
      expect(told).toEqual([
        [`m refused structured output (json_object in response_format)${TAIL}`],
        [`m refused structured output (a JSON schema in response_format)${TAIL}`],
      ]);
    } finally {
      await Promise.all(servers.map((s) => s.close()));
    }
  });
});
