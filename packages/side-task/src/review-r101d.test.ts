// r101d: the side task holds an extraBody to negotiate's checkExtraBody, the rule buildBody holds a
// run's to, and says what it says: the two cannot drift.
import { checkExtraBody } from "@loopwright/negotiate";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { isolated } from "../test/wire.js";
import { ask } from "./ask.js";
import { SideTaskError } from "./errors.js";
import { taskCall } from "./task-call.js";

let servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

class Knobs {
  top_k = 20;
}

const cycle: Record<string, unknown> = { depth: 1 };
cycle.self = cycle;

/** Each extraBody the side task refuses, as negotiate's check does. */
const REFUSED: Array<[string, unknown]> = [
  ["an owned field", { model: "other" }],
  ["NaN, deep", { kwargs: { budget: [1, Number.NaN] } }],
  ["a BigInt", { seed: 7n }],
  ["a cycle", { grammar: cycle }],
  ["a Map below the top", { logit_bias: new Map([["50256", -100]]) }],
  // Before r101d each of these went out changed, unsaid: the side task's own copy of the rule
  // wrote undefined in an array as null, left a function's field out, sent a class's own fields
  // and set the body's prototype from a "__proto__" key.
  ["undefined in an array", { stop: ["\n", undefined] }],
  ["a function as a field", { chat_template_kwargs: { enable_thinking: () => false } }],
  ["a symbol in an array", { stop: [Symbol("stop")] }],
  ["a class's instance", new Knobs()],
  ["a __proto__ key", JSON.parse('{"__proto__": {"top_k": 1}}')],
  [
    "a Proxy whose trap throws",
    {
      kwargs: new Proxy(
        {},
        {
          ownKeys() {
            throw new Error("keys withheld");
          },
        },
      ),
    },
  ],
];

/** What `checkExtraBody` throws for `value` under `path`. */
function checked(value: unknown, path?: string): Error {
  try {
    checkExtraBody(value, path);
  } catch (error) {
    return error as Error;
  }
  throw new Error("checkExtraBody took it");
}

describe("a side task's extraBody, held to negotiate's checkExtraBody", () => {
  it("is refused as invalid-input in checkExtraBody's own words after the side task's name, before anything is sent", async () => {
    const server = await startServer({ replies: () => ({ content: "x" }) });
    servers.push(server);
    for (const [what, extraBody] of REFUSED) {
      const error = await ask({ baseUrl: server.baseUrl }, "m", "", "x", {
        ...isolated(),
        extraBody: extraBody as never,
      }).catch((e: unknown) => e);
      expect(SideTaskError.isInstance(error) && error.code, what).toBe("invalid-input");
      const rule = checked(extraBody);
      expect((error as Error).message, what).toBe(`ask: ${rule.message} Nothing was sent.`);
      expect(((error as Error).cause as Error).message, what).toBe(rule.message);
    }
    expect(server.chatRequests).toHaveLength(0);
  });

  it("is refused by taskCall in the same words, whichever side states it", () => {
    for (const [what, extraBody] of REFUSED) {
      for (const [task, options, path] of [
        [{ extraBody }, {}, "the task's extraBody"],
        [{}, { extraBody }, "options.extraBody"],
      ] as const) {
        let error: unknown;
        try {
          taskCall(task as never, options as never, { baseUrl: "http://127.0.0.1:1/v1" });
        } catch (caught) {
          error = caught;
        }
        expect(SideTaskError.isInstance(error) && error.code, what).toBe("invalid-input");
        // Checked alone, or once laid over the other side: either way in checkExtraBody's words.
        const message = (error as Error).message;
        expect(
          [checked(extraBody, path).message, checked(extraBody).message].map(
            (rule) => `taskCall: ${rule} Nothing was sent.`,
          ),
          what,
        ).toContain(message);
      }
    }
  });

  it("still sends a field set to undefined as left out, and the rest as written", async () => {
    const server = await startServer({ replies: () => ({ content: "x" }) });
    servers.push(server);
    const extraBody = { top_k: undefined, stop: ["\n"], chat_template_kwargs: { enable_thinking: true } };
    await ask({ baseUrl: server.baseUrl }, "m", "", "x", { ...isolated(), extraBody });
    const body = server.chatRequests[0]?.body as Record<string, unknown>;
    expect(body).not.toHaveProperty("top_k");
    expect(body).toMatchObject({ stop: ["\n"] });
  });
});
