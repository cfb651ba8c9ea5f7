// Features together, not one at a time: a fast-check model of runs over HTTP to a testkit server
// that refuses what a strict endpoint refuses (STRICT_TRANSCRIPT), with random scripted turns — tool
// calls under given, missing and repeated ids, unknown names, unreadable arguments, load_tools and
// call_tool, calls written as text — across random option combinations (tool discovery, renamed
// tools, parallel, dedupe, preselection, carried loads, a refusal answered by a re-send, pruning and
// compaction, hooks, a stop at a random point, the step limit). Every run must end with a transcript
// the strict server takes, the same calls seen by every watcher under the same ids and names, and
// metrics that count what happened.
import type { RunEvent } from "@loopwright/events";
import type { HookRunner } from "@loopwright/hooks";
import { pruneToolResults } from "@loopwright/ledger";
import { SUMMARISER_SYSTEM } from "@loopwright/side-task";
import { type Reply, readFixtureJson, startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import type { AgentLoopResult } from "./agent-loop.js";
import type { ChatMessage, ToolDefinition } from "./config.js";
import { AgentLoopError, AgentLoopOverflow, failedRun, ToolIterationLimit } from "./errors.js";
import type { CallResult, DispatchRequest } from "./run-calls.js";
import { createRuntime } from "./runtime.js";
import { ADD_TOOL, STRICT_TRANSCRIPT, transcriptFaults } from "./test-support/transcript.js";

/** A renamed tool (`fs.read` is `fs_read` on the wire) with an optional parameter. */
const READ_TOOL: ToolDefinition = {
  type: "function",
  function: {
    name: "fs.read",
    description: "Read a file",
    parameters: {
      type: "object",
      properties: { path: { type: "string" }, zone: { type: "string" } },
      required: ["path"],
    },
  },
};
const TOOLS = [ADD_TOOL, READ_TOOL];

type CallKind =
  | "add"
  | "add-bad-json"
  | "read"
  | "read-host-name"
  | "unknown"
  | "load"
  | "load-unknown"
  | "call-tool"
  | "call-tool-unknown";
type IdKind = "given" | "none" | "dup";
interface CallSpec {
  kind: CallKind;
  id: IdKind;
  n: number;
}
type TurnSpec =
  | { calls: CallSpec[]; finish?: "none" | "length" }
  | { recovered: number }
  | { empty: "content" | "reasoning" }
  | { cut: true };

interface Case {
  mode: "eager" | "ondemand" | "proxy";
  parallel: boolean;
  dedupe: boolean;
  preselect: "none" | "exclusive" | "append" | "auto";
  loaded: string[];
  limit: number;
  refusal: "none" | "stream-options" | "strict-schema";
  refusalAt: number;
  onMessageThrowsAt: number;
  continuations: number;
  beforeStep: "none" | "prune" | "identity";
  compact: boolean;
  hooks: boolean;
  stop: "none" | { atDispatch: number } | { atRequest: number };
  history: "none" | "calls" | "empty-answer";
  turns: TurnSpec[];
}

const callSpec: fc.Arbitrary<CallSpec> = fc.record({
  kind: fc.constantFrom<CallKind>(
    "add",
    "add-bad-json",
    "read",
    "read-host-name",
    "unknown",
    "load",
    "load-unknown",
    "call-tool",
    "call-tool-unknown",
  ),
  id: fc.constantFrom<IdKind>("given", "none", "dup"),
  n: fc.integer({ min: 0, max: 2 }),
});

const turnSpec: fc.Arbitrary<TurnSpec> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ calls: fc.array(callSpec, { minLength: 1, maxLength: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ recovered: fc.integer({ min: 0, max: 2 }) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      calls: fc.array(callSpec, { minLength: 1, maxLength: 2 }),
      finish: fc.constantFrom<"none" | "length">("none", "length"),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ empty: fc.constantFrom<"content" | "reasoning">("content", "reasoning") }),
  },
);

const caseArb: fc.Arbitrary<Case> = fc.record({
  mode: fc.constantFrom("eager", "ondemand", "proxy"),
  parallel: fc.boolean(),
  dedupe: fc.boolean(),
  preselect: fc.constantFrom("none", "exclusive", "append", "auto"),
  loaded: fc.constantFrom([], ["fs.read"], ["add", "gone"]),
  limit: fc.integer({ min: 1, max: 5 }),
  refusal: fc.constantFrom("none", "stream-options", "strict-schema"),
  refusalAt: fc.integer({ min: 1, max: 4 }),
  onMessageThrowsAt: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 8 })),
  continuations: fc.integer({ min: 0, max: 1 }),
  beforeStep: fc.constantFrom("none", "prune", "identity"),
  compact: fc.boolean(),
  hooks: fc.boolean(),
  stop: fc.oneof(
    { weight: 3, arbitrary: fc.constant("none" as const) },
    { weight: 1, arbitrary: fc.record({ atDispatch: fc.integer({ min: 1, max: 4 }) }) },
    { weight: 1, arbitrary: fc.record({ atRequest: fc.integer({ min: 1, max: 4 }) }) },
  ),
  history: fc.constantFrom("none", "calls", "empty-answer"),
  turns: fc.array(turnSpec, { minLength: 0, maxLength: 5 }),
});

/** What the model writes for one call spec. */
function wireCall(spec: CallSpec, turn: number, at: number): { id: string; name: string; arguments: string } {
  const id = spec.id === "given" ? `c${turn}_${at}` : spec.id === "dup" ? "dup" : "";
  const n = spec.n;
  switch (spec.kind) {
    case "add":
      return { id, name: "add", arguments: JSON.stringify({ a: n, b: 1 }) };
    case "add-bad-json":
      return { id, name: "add", arguments: "{{not json at all" };
    case "read":
      return { id, name: "fs_read", arguments: JSON.stringify({ path: `/f${n}`, zone: null }) };
    case "read-host-name":
      return { id, name: "fs.read", arguments: JSON.stringify({ path: `/f${n}`, zone: null }) };
    case "unknown":
      return { id, name: "nope", arguments: "{}" };
    case "load":
      return {
        id,
        name: "load_tools",
        arguments: JSON.stringify({ names: n === 0 ? ["fs_read"] : ["fs_read", "add"] }),
      };
    case "load-unknown":
      return { id, name: "load_tools", arguments: JSON.stringify({ names: ["nope"] }) };
    case "call-tool":
      return {
        id,
        name: "call_tool",
        arguments: JSON.stringify(
          n === 0
            ? { name: "fs_read", arguments: { path: "/p", zone: null } }
            : { name: "add", arguments: JSON.stringify({ a: n, b: 1 }) },
        ),
      };
    case "call-tool-unknown":
      return { id, name: "call_tool", arguments: JSON.stringify({ name: "nope", arguments: {} }) };
  }
}

function turnReply(turn: TurnSpec, index: number): Reply {
  if ("recovered" in turn) {
    return {
      content: `<tool_call>{"name": "add", "arguments": {"a": ${turn.recovered}, "b": 1}}</tool_call>`,
    };
  }
  if ("cut" in turn) return { content: "The sum is fo", finishReason: "length" };
  if ("empty" in turn)
    return turn.empty === "content" ? { content: "" } : { reasoning: "Thinking it over.", content: "" };
  const toolCalls = turn.calls.map((call, at) => wireCall(call, index, at));
  if (turn.finish === "none") return { toolCalls, finishReason: null };
  if (turn.finish === "length") {
    const last = toolCalls.at(-1) as { arguments: string };
    last.arguments = last.arguments.slice(0, Math.max(1, last.arguments.length - 3));
    return { toolCalls, finishReason: "length" };
  }
  return { toolCalls };
}

const HISTORY: ChatMessage[] = [
  { role: "user", content: `Earlier: what is 0 + 1? ${"context ".repeat(60)}` },
  {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "call_0", type: "function", function: { name: "add", arguments: '{"a":0,"b":1}' } }],
  },
  { role: "tool", tool_call_id: "call_0", content: `1 ${"padding ".repeat(80)}` },
  { role: "assistant", content: `It is 1. ${"lorem ".repeat(80)}` },
];

function isSummary(body: unknown): boolean {
  const messages = (body as { messages?: ChatMessage[] } | undefined)?.messages ?? [];
  return messages[0]?.content === SUMMARISER_SYSTEM;
}

const ids = (list: readonly { id: string }[]) => list.map((x) => x.id).sort();
const pairs = (list: readonly { id: string; name: string }[]) => list.map((x) => `${x.id}=${x.name}`).sort();

let strict: TestServer;
beforeAll(async () => {
  strict = await startServer({
    personality: STRICT_TRANSCRIPT,
    replies: () => ({ content: "Glad to help." }),
  });
});
afterAll(async () => {
  await strict.close();
});

async function runCase(c: Case): Promise<void> {
  const stop = new AbortController();
  const main: Reply[] = [...c.turns.map((t, i) => turnReply(t, i)), { content: "All done." }];
  let mainIndex = 0;
  let refused = false;
  const server = await startServer({
    personality: STRICT_TRANSCRIPT,
    replies: (request) => {
      if (isSummary(request.body)) return { content: "Summary: the user asked about sums earlier." };
      mainIndex++;
      if (c.refusal !== "none" && mainIndex === c.refusalAt && !refused) {
        refused = true;
        return {
          type: "error",
          status: 400,
          body: readFixtureJson(
            c.refusal === "stream-options"
              ? "errors/relay-new-api/unknown-parameter-stream-options-with-request-ids.json"
              : "errors/openai/strict-schema-root-additionalproperties-chat.json",
          ),
        };
      }
      const at = mainIndex - (refused ? 2 : 1);
      if (typeof c.stop === "object" && "atRequest" in c.stop && at + 1 === c.stop.atRequest) {
        setTimeout(() => stop.abort(new Error("stopped by the user")), 5);
        return { ...(main[Math.min(at, main.length - 1)] as object), firstByteDelayMs: 200 } as Reply;
      }
      return main[Math.min(at, main.length - 1)] as Reply;
    },
  });
  try {
    const events: RunEvent[] = [];
    const told: DispatchRequest[] = [];
    const results: CallResult[] = [];
    const dispatched: DispatchRequest[] = [];
    let stored = 0;
    const hookRun: HookRunner = (event) =>
      event === "beforeTurn" ? [{ id: "memory", context: "The user likes exact sums." }] : [];
    const history: ChatMessage[] =
      c.history === "calls"
        ? HISTORY
        : c.history === "empty-answer"
          ? [
              { role: "user", content: "Hello?" },
              { role: "assistant", content: "" },
            ]
          : [];
    const question: ChatMessage = { role: "user", content: "Add some numbers and read some files." };
    const messages = [...history, question];
    const discovery = c.mode !== "eager";
    let outcome: AgentLoopResult | unknown;
    try {
      outcome = await createRuntime().runAgentLoop({
        config: {
          baseUrl: server.baseUrl,
          model: "sim",
          toolDiscovery: c.mode,
          maxToolIterations: c.limit,
          maxRetries: 0,
          maxContinuations: c.continuations,
          ...(c.preselect === "auto" ? { preselectKeywords: true, toolSelectModel: "sim" } : {}),
          ...(c.compact
            ? { compact: true, contextLength: 1200, tasks: { compaction: { model: "sim" } } }
            : {}),
        },
        messages,
        tools: TOOLS,
        parallel: c.parallel,
        dedupeToolCalls: c.dedupe,
        ...(discovery && (c.preselect === "exclusive" || c.preselect === "append")
          ? { preselected: ["fs.read"], preselectRouting: c.preselect }
          : {}),
        ...(discovery && c.preselect === "auto" ? { preselect: true } : {}),
        loaded: c.loaded,
        signal: stop.signal,
        ...(c.hooks ? { hooks: { run: hookRun } } : {}),
        ...(c.beforeStep === "prune"
          ? {
              beforeStep: (m: readonly ChatMessage[]) =>
                pruneToolResults(m as Parameters<typeof pruneToolResults>[0], {
                  keepLast: 1,
                  maxChars: 10,
                }) as ChatMessage[],
            }
          : c.beforeStep === "identity"
            ? { beforeStep: (m: readonly ChatMessage[]) => [...m] }
            : {}),
        dispatch: (request) => {
          dispatched.push(request);
          if (
            typeof c.stop === "object" &&
            "atDispatch" in c.stop &&
            dispatched.length === c.stop.atDispatch
          ) {
            stop.abort(new Error("stopped by the user"));
          }
          if (request.name === "add") {
            if (request.args.a === 2) throw new Error("the adder is broken for 2");
            return Number(request.args.a) + Number(request.args.b);
          }
          if (request.name === "fs.read") {
            if ("zone" in request.args) throw new Error(`zone given as ${String(request.args.zone)}`);
            return `contents of ${String(request.args.path)}`;
          }
          throw new Error(`no tool named ${request.name}`);
        },
        onMessage: () => {
          stored++;
          if (stored === c.onMessageThrowsAt) throw new Error("the host's store failed");
        },
        onToolCall: (r) => told.push(r),
        onToolResult: (r) => results.push(r),
        onEvent: (e) => events.push(e),
      });
    } catch (error) {
      outcome = error;
    }
    const result = outcome as AgentLoopResult & Error;
    const run = "turn" in (result as object) ? result : failedRun(outcome);
    // The run ended in a way a host expects: an answer, the step limit, a stop, or (compacting) a
    // window too small — never a refusal of its own transcript, never a crash.
    if (!("turn" in (result as object))) {
      const reason = (result as Error).message;
      const expected =
        ToolIterationLimit.isInstance(outcome) ||
        AgentLoopOverflow.isInstance(outcome) ||
        (AgentLoopError.isInstance(outcome) &&
          (reason === "stopped by the user" || reason === "onMessage threw: the host's store failed"));
      expect(expected, `unexpected end: ${reason}`).toBe(true);
    }
    expect(run).toBeDefined();
    const state = run as NonNullable<typeof run>;
    // Every request the run sent, and the transcript it hands back, a strict endpoint takes.
    for (const request of server.chatRequests) {
      if (isSummary(request.body)) continue;
      expect(transcriptFaults((request.body as { messages: unknown[] }).messages)).toEqual([]);
    }
    // The transcript handed back: every call answered; an assistant message that said nothing is
    // left out of requests (checked below, where it is sent again).
    expect(
      transcriptFaults(state.messages).filter((f) => !/^assistant message at \d+ is empty$/.test(f)),
    ).toEqual([]);
    // The caller's messages are the start of the transcript, untouched, unless a fold replaced them.
    if (!c.compact && c.beforeStep === "none")
      expect(state.messages.slice(0, messages.length)).toEqual(messages);
    // The watchers, the events and the outcomes name the same calls, each once, by the same id and name.
    const callEvents = events.flatMap((e) => (e.kind === "tool-call" ? [{ id: e.id, name: e.name }] : []));
    const resultEvents = events.flatMap((e) =>
      e.kind === "tool-result" ? [{ id: e.id, name: e.name }] : [],
    );
    expect(new Set(ids(told)).size).toBe(told.length);
    expect(pairs(results)).toEqual(pairs(told));
    expect(pairs(state.toolCalls)).toEqual(pairs(told));
    expect(pairs(callEvents)).toEqual(pairs(told));
    expect(pairs(resultEvents)).toEqual(pairs(told));
    // What was dispatched was told under the same id and name, by the host's names, nulls dropped.
    const toldPairs = new Set(pairs(told));
    for (const request of dispatched) {
      expect(toldPairs.has(`${request.id}=${request.name}`), `${request.id}=${request.name}`).toBe(true);
      expect(request.name).not.toBe("fs_read");
      // Eager, the meta-tools are the host's to answer like any name; loading, the loop's own.
      if (discovery) expect(["call_tool", "load_tools"]).not.toContain(request.name);
    }
    expect(state.toolCalls.filter((t) => t.source === "dispatched").length).toBe(dispatched.length);
    // Each call the run answered (this run's, not the history's) has its result in the transcript
    // under that id — unless a fold took the exchange away.
    const answered = new Map(
      state.messages.flatMap((m) => (m.role === "tool" ? [[m.tool_call_id, m.content] as const] : [])),
    );
    if (!c.compact) {
      for (const call of state.toolCalls) expect(answered.has(call.id), call.id).toBe(true);
    }
    if (!c.compact && c.beforeStep === "none") {
      const asked = state.messages
        .slice(messages.length)
        .flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []).map((call) => call.id) : []));
      expect(asked.sort()).toEqual(ids(told));
    }
    // What comes back names tools as the host does (a run stopped before it opened hands back what
    // it was given to carry).
    for (const name of [...state.loaded, ...state.preselected])
      expect(["add", "fs.read", ...c.loaded]).toContain(name);
    for (const r of results) expect(r.content, "an optional null reached fs.read").not.toMatch(/zone given/);
    if ("turn" in (result as object)) {
      const { metrics } = result;
      expect(metrics.toolCalls).toBe(result.toolCalls.length);
      expect(metrics.toolErrors).toBe(result.toolCalls.filter((t) => !t.ok).length);
      expect(metrics.turns).toBe(result.steps);
      expect(result.steps).toBe(events.filter((e) => e.kind === "turn").length);
      // Two catalogued tools: each is newly loaded once at most while nothing is folded away.
      if (!c.compact) expect(metrics.toolsLoaded).toBeLessThanOrEqual(2);
      for (const name of metrics.unknownToolNames) expect(name).toBe("nope");
      // A made-up name is counted when, and only when, a load or call_tool the loop answered named it.
      const named = results.some((r) => r.source === "loop" && /nope/.test(r.content));
      expect(metrics.unknownToolNames.includes("nope")).toBe(named);
    }
    // The host's next turn, in the same mode with what this run loaded: the transcript sent again
    // to a strict endpoint is taken, and the tools it loaded are declared from the first step.
    const before = strict.chatRequests.length;
    const next = await createRuntime().runAgentLoop({
      config: { baseUrl: strict.baseUrl, model: "sim", toolDiscovery: c.mode },
      messages: [...state.messages, { role: "user", content: "Thanks. And then?" }],
      tools: TOOLS,
      loaded: state.loaded,
      dispatch: () => "unused",
    });
    expect(next.turn.content).toBe("Glad to help.");
    if (c.mode === "ondemand") {
      const declared = (
        (strict.chatRequests[before]?.body as { tools?: { function: { name: string } }[] } | undefined)
          ?.tools ?? []
      )
        .map((t) => t.function.name)
        .sort();
      const wire = state.loaded
        .filter((name) => name === "add" || name === "fs.read") // a name outside the catalogue is not carried
        .map((name) => (name === "fs.read" ? "fs_read" : name));
      expect(declared).toEqual(["load_tools", ...wire].sort());
    }
  } finally {
    await server.close();
  }
}

describe("features together, over HTTP, against a strict endpoint", () => {
  it(
    "any mix of options and scripted turns leaves a sendable transcript and one account of the calls",
    async () => {
      await fc.assert(
        fc.asyncProperty(caseArb, runCase),
        propertyRuns(Number(process.env.LOOP_COMBOS_RUNS ?? 50), {
          // A failure's seed and path replay it: LOOP_COMBOS_SEED=-1601569035 LOOP_COMBOS_PATH=8:1:1:…
          ...(process.env.LOOP_COMBOS_SEED ? { seed: Number(process.env.LOOP_COMBOS_SEED) } : {}),
          ...(process.env.LOOP_COMBOS_PATH ? { path: process.env.LOOP_COMBOS_PATH } : {}),
        }),
      );
    },
    propertyTimeout(600_000),
  );
});
