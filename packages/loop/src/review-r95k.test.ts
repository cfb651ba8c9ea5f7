/**
 * r95k: a step limit spelled as another SDK spells it is refused as a top-level option (r95d), but
 * inside `config` it was dropped without a word: a config's unknown fields are the host's (often its
 * whole settings object), so `config: { maxSteps: 1 }` ran on to the default 50 tool steps while its
 * author believed the run limited. Such a field is still not refused, but the run now tells one
 * notice naming it and what limits a run here. Over HTTP against the testkit.
 */
import type { RunEvent } from "@loopwright/events";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { runAgentLoop } from "./index.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const call = (id: string) => ({ toolCalls: [{ id, name: "read", arguments: "{}" }] });

/** A run of three tool steps and an answer, its config the host's settings plus the endpoint. */
async function run(settings: Record<string, unknown>) {
  server = await startServer({ replies: [call("a"), call("b"), call("c"), { content: "Done." }] });
  // A variable, as a host's settings object reaches the loop: a literal would not type-check.
  const config = { baseUrl: server.baseUrl, model: "m", ...settings };
  const events: RunEvent[] = [];
  const result = await runAgentLoop({
    config,
    messages: [{ role: "user", content: "Read three times." }],
    tools: [{ type: "function", function: { name: "read" } }],
    dispatch: () => "page",
    onEvent: (event) => events.push(event),
  });
  const notices = events.flatMap((event) => (event.kind === "notice" ? [event.text] : []));
  return { result, notices, requests: server.chatRequests.length };
}

describe("another SDK's step limit inside config is told, not silently ignored", () => {
  it("config.maxSteps: the run is not limited by it and says so once, naming what limits it", async () => {
    const { result, notices, requests } = await run({ maxSteps: 1 });
    // Not refused, and not read: the run went on past one step.
    expect(result.turn.content).toBe("Done.");
    expect(result.steps).toBe(4);
    expect(requests).toBe(4);
    expect(notices).toHaveLength(1);
    const [text] = notices;
    expect(text).toContain("config.maxSteps");
    expect(text).toContain("does not read it");
    expect(text).toContain("50 tool steps (config.maxToolIterations's default)");
    expect(text).toContain("beforeStep returning { stop: true }");
  });

  it("several such fields: one notice naming each, and the limit the config does set", async () => {
    const { notices, requests } = await run({
      maxTurns: 1,
      stopWhen: () => true,
      maxToolIterations: 5,
    });
    expect(requests).toBe(4);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toContain("config.maxTurns, config.stopWhen are how another SDK spells a step limit");
    expect(notices[0]).toContain("this run allows 5 tool steps (config.maxToolIterations)");
  });

  it("the host's other fields, and a step limit left undefined or null, are told nothing", async () => {
    const { notices, requests } = await run({
      theme: "dark",
      maxHistory: 3,
      steps: 2,
      maxSteps: undefined,
      maxTurns: null,
    });
    expect(requests).toBe(4);
    expect(notices).toEqual([]);
  });
});
