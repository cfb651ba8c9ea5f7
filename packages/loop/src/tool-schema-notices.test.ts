import type { RunEvent } from "@loopwright/events";
import { startServer } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { createRuntime } from "./index.js";

// A tool whose schema no value satisfies (an integer at least 5 and at most 3): schema-compat sends
// the bounds as words (llama.cpp answers the grammar it would build with a 500) and tells onNotice.
// The loop passed no onNotice, so the host never heard its tool's schema was changed.
const PICK = {
  type: "function" as const,
  function: {
    name: "pick",
    description: "Pick a number.",
    parameters: {
      type: "object",
      properties: { v: { type: "integer", minimum: 5, maximum: 3 } },
      required: ["v"],
    },
  },
};

describe("a tool schema that sanitizing changes in a way the host should hear of", () => {
  it("is told as a notice naming the tool, once a run, however many steps declare it", async () => {
    const server = await startServer({
      replies: [{ toolCalls: [{ id: "c1", name: "pick", arguments: '{"v":4}' }] }, { content: "done" }],
    });
    try {
      const events: RunEvent[] = [];
      let plans = 0;
      await createRuntime().runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "m" },
        messages: [{ role: "user", content: "Pick one." }],
        tools: [PICK],
        dispatch: () => "4",
        // Each step declares the tools again (a host's step plan): the notice is not repeated.
        beforeStep: () => {
          plans++;
          return { tools: [PICK] };
        },
        onEvent: (event) => events.push(event),
      });
      expect(plans).toBe(2);
      const notices = events.flatMap((e) => (e.kind === "notice" ? [e.text] : []));
      expect(notices).toHaveLength(1);
      expect(notices[0]).toMatch(/^Tool "pick": /);
      const sent = server.requests.filter((r) => r.path.endsWith("/chat/completions"));
      expect(sent).toHaveLength(2);
      for (const request of sent) {
        const v = (
          request.body as {
            tools: { function: { parameters: { properties: { v: Record<string, unknown> } } } }[];
          }
        ).tools[0]?.function.parameters.properties.v;
        expect(v).not.toHaveProperty("minimum");
        expect(v).not.toHaveProperty("maximum");
        expect(String(v?.description)).toContain("At least 5");
      }
    } finally {
      await server.close();
    }
  });
});
