/**
 * r90, found by the discovery model (discovery-model.test.ts): in a loading mode, a direct call to a
 * name outside the catalogue whose arguments cannot be read is answered about its arguments — "Call
 * it again with the arguments as one JSON object" — and never about its name. The model is invited
 * to call again a tool that does not exist (a step spent before it hears "not in the catalogue"), and
 * the name is missing from `metrics.unknownToolNames`. The same name with readable arguments, or
 * through call_tool with broken inner arguments, is answered as outside the catalogue and counted.
 *
 * The refusal of unreadable arguments is made in run-calls.ts before the call is routed, outside
 * this review's files, so the repro stands as `it.fails` until the lead routes such a call there.
 */
import { describe, expect, it } from "vitest";
import { call, discoveryServer } from "./test-support/discovery.js";

const server = discoveryServer();

describe.each(["ondemand", "proxy"] as const)(
  "%s: a made-up name called with unreadable arguments",
  (mode) => {
    it("a readable call of it is refused as outside the catalogue and counted (as the model expects)", async () => {
      const { result, dispatched } = await server.run(
        [call("c1", "made_up", { path: "a" }), { content: "done" }],
        { toolDiscovery: mode },
      );
      expect(dispatched).toEqual([]);
      expect(String(result.messages.find((m) => m.role === "tool")?.content)).toMatch(/not in the catalogue/);
      expect(result.metrics.unknownToolNames).toEqual(["made_up"]);
    });

    it.fails("is answered as outside the catalogue, not told to call it again, and counted", async () => {
      const { result, dispatched } = await server.run(
        [call("c1", "made_up", "{{ not json"), { content: "done" }],
        { toolDiscovery: mode },
      );
      expect(dispatched).toEqual([]);
      const answer = String(result.messages.find((m) => m.role === "tool")?.content);
      expect(answer).not.toMatch(/Call it again/);
      expect(answer).toMatch(/not in the catalogue/);
      expect(result.metrics.unknownToolNames).toEqual(["made_up"]);
    });
  },
);
