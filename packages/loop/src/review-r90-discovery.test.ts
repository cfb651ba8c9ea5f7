/**
 * r90, found by the discovery model (discovery-model.test.ts): in a loading mode, a direct call to a
 * name outside the catalogue whose arguments cannot be read is answered about its arguments — "Call
 * it again with the arguments as one JSON object" — and never about its name. The model is invited
 * to call again a tool that does not exist (a step spent before it hears "not in the catalogue"), and
 * the name is missing from `metrics.unknownToolNames`. The same name with readable arguments, or
 * through call_tool with broken inner arguments, is answered as outside the catalogue and counted.
 *
 * Fixed in run-calls.ts: the loop's route gives runCalls an answer for a name alone
 * (`answeringNames`), asked of a call whose arguments cannot be read before the refusal of them.
 *
 * Fixed (R90-2, in tool-discovery's router): a name outside the catalogue called with a number JS
 * cannot hold (an id such as 12345678901234567891) — directly, or through call_tool with the inner
 * arguments as an object — was answered about the number ("past what a number can carry"), never
 * about the name, and went uncounted; the same call with the inner arguments as text was answered
 * "not in the catalogue" and counted. Both are now answered for the name, and counted.
 *
 * Fixed (R90-1, in tool-loading's route): a server's name or a pattern called as a tool was answered
 * "is not in the catalogue", though the catalogue text the model reads lists that server; it is now
 * answered with the tools it stands for, to call one by name.
 */
import { describe, expect, it } from "vitest";
import { call, discoveryServer } from "./test-support/discovery.js";

const server = discoveryServer();

/** One step of two calls in `mode`, then an answer: what each call was answered, nothing dispatched. */
async function twoCalls(
  mode: "ondemand" | "proxy",
  calls: { id: string; name: string; arguments: string }[],
) {
  const { result, dispatched } = await server.run([{ toolCalls: calls }, { content: "done" }], {
    toolDiscovery: mode,
  });
  expect(dispatched).toEqual([]);
  const answers = result.messages.filter((m) => m.role === "tool").map((m) => String(m.content));
  expect(answers).toHaveLength(calls.length);
  return { answers, unknown: result.metrics.unknownToolNames };
}

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

    it("is answered as outside the catalogue, not told to call it again, and counted", async () => {
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

describe.each(["ondemand", "proxy"] as const)("R90-1 %s: a server's name called as a tool", (mode) => {
  it("is answered with the server's tools to call by name, not 'not in the catalogue'; nothing runs", async () => {
    const { answers, unknown } = await twoCalls(mode, [
      { id: "c1", name: "files", arguments: '{"path":"a"}' },
      { id: "c2", name: "call_tool", arguments: '{"name":"files","arguments":{"path":"a"}}' },
    ]);
    for (const answer of answers) {
      expect(answer).not.toMatch(/not in the catalogue/);
      expect(answer).toMatch(/"files" stands for several tools of the catalogue.*: read_file, write_file\.$/);
    }
    expect(unknown).toEqual(["files"]);
  });
});

describe.each(["ondemand", "proxy"] as const)(
  "R90-2 %s: a made-up name called with a number JS cannot hold",
  (mode) => {
    it("is answered as outside the catalogue, not about the number, and counted", async () => {
      const big = "12345678901234567891";
      const { answers, unknown } = await twoCalls(mode, [
        { id: "c1", name: "made_up", arguments: `{"path":${big}}` },
        { id: "c2", name: "call_tool", arguments: `{"name":"invented","arguments":{"path":${big}}}` },
      ]);
      for (const answer of answers) {
        expect(answer).not.toMatch(/past what a number can carry/);
        expect(answer).toMatch(/is not in the catalogue/);
      }
      expect(unknown).toEqual(["made_up", "invented"]);
    });

    it("a catalogued tool's call with such a number in a place its schema takes no string is still refused for it", async () => {
      const { result, dispatched } = await server.run(
        [
          call("c1", "call_tool", '{"name":"read_file","arguments":{"path":"a"},"n":12345678901234567891}'),
          { content: "done" },
        ],
        { toolDiscovery: mode },
      );
      expect(dispatched).toEqual([]);
      expect(String(result.messages.find((m) => m.role === "tool")?.content)).toMatch(
        /past what a number can carry/,
      );
      expect(result.metrics.unknownToolNames).toEqual([]);
    });
  },
);
