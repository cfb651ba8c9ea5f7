/**
 * r104c: options the loop reads at the start that cannot be read — a revoked Proxy, a getter that
 * throws, on the option or a field of it — ended the run as an `AgentLoopError` carrying the run,
 * its message the engine's words ("Cannot perform 'get' on a proxy that has been revoked") or the
 * getter's, naming no option; a revoked `signal` or `client` got as far as the first step (under a
 * `runId`, a revoked `signal` threw the engine's `TypeError` raw as the run's done was written). Each is
 * now a `LoopOptionError` naming the option, before anything is sent. And a tool that threw an
 * object whose every reading throws was answered `Error: {}`; it now fails "with an error that
 * could not be read", each call answered once.
 */
import { createBus, type EventBus } from "@loopwright/events";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { AgentLoopError, failedRun, LoopOptionError } from "./errors.js";
import { createRuntime } from "./index.js";
import { ADD_TOOL, QUESTION } from "./test-support/transcript.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A Proxy of `target` already revoked: every reading of it throws. */
function revoked<T extends object>(target: T): T {
  const { proxy, revoke } = Proxy.revocable(target, {});
  revoke();
  return proxy;
}

/** `fields` with `name` a getter that throws "the <name> store is closed". */
function throwing<T extends object>(fields: T, name: string): T {
  return Object.defineProperty(fields, name, {
    enumerable: true,
    configurable: true,
    get(): never {
      throw new Error(`the ${name} store is closed`);
    },
  });
}

/** The options of a run against `baseUrl`, `change` applied to them. */
type Options = Record<string, unknown>;
const base = (baseUrl: string): Options => ({
  config: { baseUrl, model: "sim" },
  messages: QUESTION,
  tools: [ADD_TOOL],
  dispatch: () => 3,
});

describe("an option the loop reads at the start that cannot be read", () => {
  const cases: [string, string, (options: Options) => void, RegExp][] = [
    ["signal", "a revoked Proxy", (o) => Object.assign(o, { signal: revoked({}) }), /revoked/],
    ["signal", "a getter that throws", (o) => throwing(o, "signal"), /the signal store is closed/],
    [
      "signal",
      "an AbortSignal-like whose aborted getter throws",
      (o) =>
        Object.assign(o, {
          signal: throwing({ addEventListener() {}, removeEventListener() {} }, "aborted"),
        }),
      /the aborted store is closed/,
    ],
    ["hooks", "a revoked Proxy", (o) => Object.assign(o, { hooks: revoked({}) }), /revoked/],
    ["hooks", "a getter that throws", (o) => throwing(o, "hooks"), /the hooks store is closed/],
    [
      "hooks.run",
      "hooks whose run getter throws",
      (o) => Object.assign(o, { hooks: throwing({}, "run") }),
      /the run store is closed/,
    ],
    ["catalog", "a revoked Proxy", (o) => Object.assign(o, { catalog: revoked([]) }), /revoked/],
    ["catalog", "a getter that throws", (o) => throwing(o, "catalog"), /the catalog store is closed/],
    ["config", "a revoked Proxy", (o) => Object.assign(o, { config: revoked({}) }), /revoked/],
    ["config", "a getter that throws", (o) => throwing(o, "config"), /the config store is closed/],
    [
      "config.model",
      "a config whose model getter throws",
      (o) => Object.assign(o, { config: throwing({ baseUrl: (o.config as Options).baseUrl }, "model") }),
      /the model store is closed/,
    ],
    ["client", "a revoked Proxy", (o) => Object.assign(o, { client: revoked({}) }), /revoked/],
  ];
  it.each(cases)(
    "(%s: %s) ends the run with a LoopOptionError naming it, the server sent nothing",
    async (option, _, change, said) => {
      server = await startServer({ replies: [{ content: "never asked" }] });
      const options = base(server.baseUrl);
      change(options);
      const error = await createRuntime()
        .runAgentLoop(options as never)
        .catch((e: unknown) => e);
      expect(AgentLoopError.isInstance(error)).toBe(true);
      const cause = (error as Error).cause;
      expect(LoopOptionError.isInstance(cause), String(cause)).toBe(true);
      expect((cause as LoopOptionError).option).toBe(option);
      expect((cause as LoopOptionError).code).toBe("invalid-option");
      const message = (error as Error).message;
      expect(message.startsWith(`runAgentLoop: ${option} could not be read (`)).toBe(true);
      expect(message).toMatch(said);
      expect(server.chatRequests).toHaveLength(0);
      expect(failedRun(error)?.messages).toEqual(QUESTION);
    },
  );

  it("a revoked signal on a run under a runId (its bus claiming ids) is refused naming signal, the run's error and done emitted", async () => {
    server = await startServer({ replies: [{ content: "never asked" }] });
    const bus = createBus();
    const claimed: unknown[] = [];
    const shared: EventBus = {
      ...bus,
      emit: (runId, event) => bus.emit(runId, event),
      history: (runId) => bus.history(runId),
      async claimRun(_runId, signal) {
        claimed.push(signal);
      },
    };
    const error = await createRuntime({ stores: { bus: shared } })
      .runAgentLoop({ ...base(server.baseUrl), runId: "r1", signal: revoked({}) } as never)
      .catch((e: unknown) => e);
    expect((error as { cause?: LoopOptionError }).cause?.option).toBe("signal");
    expect((error as Error).message).toMatch(/^runAgentLoop: signal could not be read \(/);
    expect(claimed).toEqual([undefined]);
    expect(bus.history("r1").map((event) => event.kind)).toEqual(["error", "done"]);
    expect(server.chatRequests).toHaveLength(0);
  });

  it("a catalogue holding a revoked Proxy is refused naming the catalogue and its entry", async () => {
    server = await startServer({ replies: [{ content: "never asked" }] });
    const error = await createRuntime()
      .runAgentLoop({ ...base(server.baseUrl), catalog: [revoked({})] } as never)
      .catch((e: unknown) => e);
    expect((error as Error).message).toMatch(
      /^runAgentLoop: catalog: catalogue entry 0 could not be read \(Cannot perform 'get' on a proxy that has been revoked\)/,
    );
    expect((error as { cause?: LoopOptionError }).cause?.option).toBe("catalog");
    expect(server.chatRequests).toHaveLength(0);
  });

  it("a readable option the loop refuses is still refused in its own words", async () => {
    server = await startServer({ replies: [{ content: "never asked" }] });
    const error = await createRuntime()
      .runAgentLoop({ ...base(server.baseUrl), dispatch: "run it" } as never)
      .catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/^runAgentLoop: dispatch must be a function/);
    expect(server.chatRequests).toHaveLength(0);
  });
});

describe("a tool that throws an object none of whose parts can be read", () => {
  const boom = (): never => {
    throw new Error("unreadable");
  };
  const unreadable: [string, () => unknown][] = [
    [
      "its message, name, toString and Symbol.toPrimitive getters that throw",
      () =>
        Object.defineProperties(
          {},
          {
            message: { get: boom },
            name: { get: boom },
            toString: { get: boom },
            [Symbol.toPrimitive]: { get: boom },
          },
        ),
    ],
    [
      "those getters on its class",
      () => {
        class Unreadable {
          get message(): never {
            return boom();
          }
          get name(): never {
            return boom();
          }
          get toString(): never {
            return boom();
          }
          get [Symbol.toPrimitive](): never {
            return boom();
          }
        }
        return new Unreadable();
      },
    ],
  ];
  it.each(unreadable)(
    "(%s) is answered as failing with an error that could not be read, each call once",
    async (_, thrown) => {
      server = await startServer({
        replies: [
          {
            toolCalls: [
              { id: "u1", name: "add", arguments: '{"a":1,"b":2}' },
              { id: "u2", name: "add", arguments: '{"a":3,"b":4}' },
            ],
          },
          { content: "done" },
        ],
      });
      let ran = 0;
      const result = await createRuntime().runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: QUESTION,
        tools: [ADD_TOOL],
        dispatch: () => {
          ran++;
          throw thrown();
        },
      });
      expect(result.turn.content).toBe("done");
      expect(ran).toBe(2);
      const sent = (
        server.chatRequests[1]!.body as {
          messages: { role: string; tool_call_id?: string; content?: unknown }[];
        }
      ).messages.filter((m) => m.role === "tool");
      const answer = "Error: the add tool failed with an error that could not be read.";
      expect(sent).toEqual([
        { role: "tool", tool_call_id: "u1", content: answer },
        { role: "tool", tool_call_id: "u2", content: answer },
      ]);
      expect(result.toolCalls.map((call) => [call.id, call.ok])).toEqual([
        ["u1", false],
        ["u2", false],
      ]);
    },
  );

  it("an empty object thrown is still said as {}", async () => {
    server = await startServer({
      replies: [{ toolCalls: [{ id: "e1", name: "add", arguments: "{}" }] }, { content: "done" }],
    });
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: () => {
        throw {};
      },
    });
    expect(result.messages.find((m) => m.role === "tool")?.content).toBe("Error: {}");
  });
});
