import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage, ToolDefinition } from "./config.js";
import { AgentLoopError, LoopOptionError } from "./errors.js";
import { type AgentLoopOptions, runAgentLoop } from "./index.js";

const tool = (name: string): ToolDefinition => ({
  type: "function",
  function: { name, description: name, parameters: { type: "object", properties: {} } },
});
const question: ChatMessage[] = [{ role: "user", content: "go" }];

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/**
 * Runs the loop against a server that answers anything, with `extra` over the options and
 * `config` over the config; answers what it threw's cause and how many requests reached the server.
 */
async function refusal(
  extra: Record<string, unknown>,
  config: Record<string, unknown> = {},
): Promise<{ cause: unknown; sent: number }> {
  server ??= await startServer({ replies: () => ({ content: "never sent" }) });
  const before = server.chatRequests.length;
  const error = await runAgentLoop({
    config: { baseUrl: server.baseUrl, model: "sim", ...config },
    messages: question,
    tools: [tool("read_file")],
    dispatch: () => "x",
    ...extra,
  } as AgentLoopOptions).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(AgentLoopError.isInstance(error)).toBe(true);
  return { cause: (error as AgentLoopError).cause, sent: server.chatRequests.length - before };
}

describe("catalog and tools are checked before anything is sent", () => {
  const modes = ["eager", "ondemand", "proxy"] as const;

  it("names a catalogue given as a Promise (pool.servers() not awaited), in every mode", async () => {
    for (const toolDiscovery of modes) {
      const { cause, sent } = await refusal(
        { catalog: Promise.resolve([{ name: "files", tools: [{ name: "read_file" }] }]) },
        { toolDiscovery },
      );
      expect(sent).toBe(0);
      expect(LoopOptionError.isInstance(cause)).toBe(true);
      expect(cause).toMatchObject({ code: "invalid-option", option: "catalog" });
      expect((cause as Error).message).toMatch(/a Promise — await pool\.servers\(\)/);
    }
  });

  it("refuses a catalogue that checkCatalog refuses, in every mode, with its words", async () => {
    const bad: [unknown, RegExp][] = [
      [{ name: "files" }, /an array/],
      [[{ name: "files" }], /catalogue entry 0/],
      [[{ name: "files", tools: [null] }], /tool 0 of server "files"/],
      [[{ name: "files", tools: [{ name: "read_file", description: 5 }] }], /description of "read_file"/],
    ];
    for (const toolDiscovery of modes) {
      for (const [catalog, words] of bad) {
        const { cause, sent } = await refusal({ catalog }, { toolDiscovery });
        expect(sent).toBe(0);
        expect(LoopOptionError.isInstance(cause)).toBe(true);
        expect(cause).toMatchObject({ code: "invalid-option", option: "catalog" });
        expect((cause as Error).message).toMatch(words);
      }
    }
  });

  it("takes a catalogue left out or null as none", async () => {
    server = await startServer({ replies: () => ({ content: "fine" }) });
    for (const catalog of [undefined, null]) {
      const result = await runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim", toolDiscovery: "ondemand" },
        messages: question,
        tools: [tool("read_file")],
        dispatch: () => "x",
        catalog: catalog as never,
      });
      expect(result.turn.content).toBe("fine");
    }
  });

  it("refuses a tools entry with no function, or a function name that is not a string, naming its index", async () => {
    const bad: [unknown, RegExp][] = [
      [null, /tools entry 1 is null/],
      [{ type: "function" }, /tools entry 1 has no function/],
      [{ type: "function", function: { name: 5 } }, /tools entry 1's function\.name is a number/],
      [{ type: "function", function: {} }, /tools entry 1's function\.name is nothing/],
    ];
    for (const toolDiscovery of modes) {
      for (const [entry, words] of bad) {
        const { cause, sent } = await refusal({ tools: [tool("read_file"), entry] }, { toolDiscovery });
        expect(sent).toBe(0);
        expect(LoopOptionError.isInstance(cause)).toBe(true);
        expect(cause).toMatchObject({ code: "invalid-option", option: "tools" });
        expect((cause as Error).message).toMatch(words);
      }
    }
  });
});

describe("system, the flags and contextLength are checked before anything is sent", () => {
  it("refuses a system prompt that is not a string", async () => {
    for (const system of [5, { text: "be brief" }, ["a"]]) {
      const { cause, sent } = await refusal({ system });
      expect(sent).toBe(0);
      expect(LoopOptionError.isInstance(cause)).toBe(true);
      expect(cause).toMatchObject({ code: "invalid-option", option: "system" });
      expect((cause as Error).message).toMatch(/system must be a string/);
    }
  });

  it("refuses a flag that is not true or false, as an option and as a config field", async () => {
    const cases: [Record<string, unknown>, Record<string, unknown>, string, RegExp][] = [
      [{ parallel: "yes" }, {}, "parallel", /the string "yes"/],
      [{ recoverToolCalls: "no" }, {}, "recoverToolCalls", /the string "no"/],
      [{ dedupeToolCalls: 1 }, {}, "dedupeToolCalls", /the number 1/],
      [{}, { parallel: "yes" }, "config.parallel", /the string "yes"/],
      [{}, { recoverToolCalls: 0 }, "config.recoverToolCalls", /the number 0/],
      [{}, { dedupeToolCalls: "false" }, "config.dedupeToolCalls", /the string "false"/],
      [{}, { compact: "yes" }, "config.compact", /the string "yes"/],
    ];
    for (const [extra, config, option, words] of cases) {
      const { cause, sent } = await refusal(extra, config);
      expect(sent).toBe(0);
      expect(LoopOptionError.isInstance(cause)).toBe(true);
      expect(cause).toMatchObject({ code: "invalid-option", option });
      expect((cause as Error).message).toMatch(/true or false/);
      expect((cause as Error).message).toMatch(words);
    }
  });

  it("refuses a contextLength that is not a whole number of tokens, so the guard and compact read it alike", async () => {
    for (const contextLength of ["1000", -5, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      for (const compact of [false, true]) {
        const { cause, sent } = await refusal(
          {},
          { contextLength, compact, tasks: { compaction: { model: "sim" } } },
        );
        expect(sent).toBe(0);
        expect(LoopOptionError.isInstance(cause)).toBe(true);
        expect(cause).toMatchObject({ code: "invalid-option", option: "config.contextLength" });
        expect((cause as Error).message).toMatch(/whole number of tokens \(0, null or absent for none\)/);
      }
    }
  });

  it("takes null as absent, a function as dedupeToolCalls, and runs with the right types", async () => {
    server = await startServer({ replies: () => ({ content: "fine" }) });
    const base = { baseUrl: server.baseUrl, model: "sim" };
    const runs: [Record<string, unknown>, Record<string, unknown>][] = [
      [{ system: null, parallel: null, recoverToolCalls: null, dedupeToolCalls: null }, {}],
      [
        {},
        { parallel: null, recoverToolCalls: null, dedupeToolCalls: null, compact: null, contextLength: null },
      ],
      [{ system: "be brief", parallel: true, recoverToolCalls: false, dedupeToolCalls: () => false }, {}],
      [{}, { parallel: false, dedupeToolCalls: true, compact: false, contextLength: 8192 }],
      [{}, { contextLength: 0 }], // no window, as a spec's model.contextLength: 0 says
    ];
    for (const [extra, config] of runs) {
      const result = await runAgentLoop({
        config: { ...base, ...config },
        messages: question,
        tools: [tool("read_file")],
        dispatch: () => "x",
        ...extra,
      } as AgentLoopOptions);
      expect(result.turn.content).toBe("fine");
    }
    const sent = server.chatRequests[2]?.body as { messages: { role: string; content: unknown }[] };
    expect(sent.messages[0]).toEqual({ role: "system", content: "be brief" });
  });
});
