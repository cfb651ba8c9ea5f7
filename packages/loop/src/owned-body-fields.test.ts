// The body fields the loop writes itself are one list, negotiate's `OWNED_BODY_FIELDS`: buildBody
// (config.extraBody), a side task and a step plan read it, and the spec keeps its own copy
// (`RESERVED_BODY_FIELDS`: the spec depends on no other package), held to it here, where the two
// packages meet. `stream_options` is none of them: a document, a config and a plan may set it.
// Over HTTP against the testkit.
import { OWNED_BODY_FIELDS } from "@loopwright/negotiate";
import { parseSpec, RESERVED_BODY_FIELDS, resolveAgentSpec, SPEC_TOKEN } from "@loopwright/spec";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { createRuntime } from "./index.js";
import { ADD_TOOL, QUESTION } from "./test-support/transcript.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

type Body = Record<string, unknown>;
const bodies = (): Body[] => (server?.chatRequests ?? []).map((r) => r.body as Body);

/** vLLM's usage on every chunk, as its docs spell the field. */
const CONTINUOUS = { include_usage: true, continuous_usage_stats: true };

describe("the body fields the loop owns", () => {
  it("are the same list in the spec as in negotiate, which builds the body", () => {
    expect([...RESERVED_BODY_FIELDS].sort()).toEqual(Object.keys(OWNED_BODY_FIELDS).sort());
  });

  it("are dropped from a document's extraBody with a warning naming each, and a document may set stream_options", () => {
    for (const field of Object.keys(OWNED_BODY_FIELDS)) {
      const { spec, warnings } = parseSpec({
        spec: SPEC_TOKEN,
        model: { extraBody: { [field]: 1, top_k: 2 } },
      });
      expect(spec?.model?.extraBody, field).toEqual({ top_k: 2 });
      expect(
        warnings.map((w) => w.path),
        field,
      ).toEqual([`model.extraBody.${field}`]);
    }
    const { spec, errors, warnings } = parseSpec({
      spec: SPEC_TOKEN,
      model: { name: "big", extraBody: { stream_options: CONTINUOUS } },
    });
    expect([...errors, ...warnings]).toEqual([]);
    expect(spec?.model?.extraBody).toEqual({ stream_options: CONTINUOUS });
  });

  it("leave stream_options to a document and a step's plan: each is sent as given, for every step or the plan's one", async () => {
    let answered = 0;
    server = await startServer({
      replies: () => {
        answered++;
        return answered === 1
          ? { toolCalls: [{ id: "c1", name: "add", arguments: '{"a":1,"b":2}' }] }
          : { content: "3" };
      },
    });
    const { spec } = parseSpec({
      spec: SPEC_TOKEN,
      model: { name: "big", extraBody: { stream_options: CONTINUOUS, top_k: 20 } },
    });
    const config = { ...resolveAgentSpec([spec as NonNullable<typeof spec>]), baseUrl: server.baseUrl };
    const result = await createRuntime().runAgentLoop({
      config,
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: () => 3,
      // Step 2's plan: its own stream_options, and an owned field set to undefined, which sends nothing.
      beforeStep: (_messages, step) =>
        step === 2 ? { extraBody: { stream_options: { include_usage: true }, model: undefined } } : undefined,
    });
    expect(result.stopReason).toBe("answered");
    expect(bodies().map((b) => [b.model, b.stream_options, b.top_k])).toEqual([
      ["big", CONTINUOUS, 20],
      ["big", { include_usage: true }, 20],
    ]);
  });
});
