// A host's hands on runs, in combination: a fast-check model of an Agent or a session driven by a
// random host against a testkit server over HTTP that refuses what a strict endpoint refuses
// (STRICT_ENDPOINT), with random scripted turns — text (some streamed slowly, with reasoning), tool
// calls under given, missing and repeated ids, unknown tools, unreadable arguments, tools that
// throw, return huge text, report progress or end the run, AskUser and TodoWrite, a model that
// repeats itself, a server that fails — random options (sequential tools, queue modes, an approval
// hook that blocks and redacts, the host's shouldStopAfterTurn, a small maxTurns), and random host
// actions at random points (while a tool runs, while its approval is pending, while a question
// waits, while the answer streams): steer, follow-up, abort, a tool registered or unregistered, a
// close and reopen (a UI reload), changes a run refuses. Between runs: a new prompt, continue(), a
// queued message, the transcript cut back, save(), clear(), a resume from the session file in a new
// session object (for an Agent, a new Agent given its transcript).
// What a user would notice must hold after every run: each request one a strict endpoint takes,
// declaring the tools the agent holds; every message the host queued in the transcript once, in the
// order given, or said to be dropped; a steer given while a tool ran in the next request, a
// follow-up not before the model answered; each tool start with one end, and the end's result what
// the model reads; the events in lifecycle order; the transcript after a run what the next request
// sends; the file read back equal to the session's transcript, and a reopened session showing what
// the closed one showed; no tool or question left spinning; nothing but an AgentError thrown.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Reply, startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import {
  type AfterToolCallContext,
  Agent,
  AgentError,
  type AgentEvent,
  type AgentMessage,
  type AgentRunResult,
  type AgentTool,
  type BeforeToolCallContext,
  type ChatMessageLike,
  createSession,
  readSessionFile,
  type Session,
  type SessionEvent,
} from "./test-exports.js";
import { requestFaults, STRICT_ENDPOINT } from "./test-support/strict-endpoint.js";

type CallKind =
  | "echo"
  | "slow"
  | "boom"
  | "huge"
  | "unknown"
  | "bad-json"
  | "ask"
  | "extra"
  | "todo-open"
  | "todo-done"
  | "finish";
type IdKind = "given" | "none" | "dup";
interface CallSpec {
  kind: CallKind;
  id: IdKind;
}
/** `again`: the calls of the turn before, as a model that repeats itself (the session's stall check). */
/** `fail`: the server answers 500 (no retries: the run fails). */
type Turn = { text: "short" | "slow" } | { calls: CallSpec[] } | { again: true } | { fail: true };
/** `reload`: the session is closed while its run goes (a UI reload), and opened again once it settled. */
/** `meddle`: what a run refuses while it goes (a second prompt, an edit of the transcript, reset()). */
type Act = "steer" | "followUp" | "abort" | "addTool" | "removeTool" | "reload" | "meddle";
/** Where a host's hand falls: when the n-th tool call starts to run, or at the n-th streamed delta. */
type Point = { tool: number } | { stream: number } | { hook: number };
interface Hand {
  at: Point;
  act: Act;
}
/** `resume`: a new session object on the file; for an Agent, a new Agent given the transcript. */
/**
 * `rewind`: the transcript is cut back to before its last question (a host's "edit and resend");
 * `save`, `clear`: the session's (an Agent's `reset()`).
 */
type Between = "prompt" | "continue" | "resume" | "steer" | "followUp" | "rewind" | "save" | "clear";
interface Case {
  session: boolean;
  sequential: boolean;
  steeringMode: "one-at-a-time" | "all";
  followUpMode: "one-at-a-time" | "all";
  /** What the person does with an AskUser question: answer at once, a moment later, skip it, stop, reload. */
  ask: "answer" | "late" | "skip" | "abort" | "reload";
  /** beforeToolCall blocks `boom`; afterToolCall replaces what `huge` returned. */
  hooks: boolean;
  maxTurns: number;
  /**
   * autoCompact over a small window, for an Agent and a session alike (a session's in-band budget
   * note goes as the step's requestOnly, never the fold's cut): a huge result makes the next request fold.
   */
  compact: boolean;
  /** The host's shouldStopAfterTurn: true after this many tool steps of a run (0: never). */
  stopAfter: number;
  turns: Turn[];
  hands: Hand[];
  between: Between[];
}

const callSpec: fc.Arbitrary<CallSpec> = fc.record({
  kind: fc.constantFrom<CallKind>(
    "echo",
    "slow",
    "boom",
    "huge",
    "unknown",
    "bad-json",
    "ask",
    "extra",
    "todo-open",
    "todo-done",
    "finish",
  ),
  id: fc.constantFrom<IdKind>("given", "none", "dup"),
});
const turn: fc.Arbitrary<Turn> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ calls: fc.array(callSpec, { minLength: 1, maxLength: 3 }) }) },
  { weight: 2, arbitrary: fc.record({ text: fc.constantFrom<"short" | "slow">("short", "slow") }) },
  { weight: 1, arbitrary: fc.constant({ again: true as const }) },
  { weight: 1, arbitrary: fc.constant({ fail: true as const }) },
);
const point: fc.Arbitrary<Point> = fc.oneof(
  fc.record({ tool: fc.integer({ min: 1, max: 6 }) }),
  fc.record({ stream: fc.integer({ min: 1, max: 12 }) }),
  fc.record({ hook: fc.integer({ min: 1, max: 4 }) }),
);
const caseArb: fc.Arbitrary<Case> = fc.record({
  session: fc.boolean(),
  sequential: fc.boolean(),
  steeringMode: fc.constantFrom<"one-at-a-time" | "all">("one-at-a-time", "all"),
  followUpMode: fc.constantFrom<"one-at-a-time" | "all">("one-at-a-time", "all"),
  ask: fc.constantFrom<Case["ask"]>("answer", "late", "skip", "abort", "reload"),
  hooks: fc.boolean(),
  maxTurns: fc.integer({ min: 1, max: 8 }),
  compact: fc.boolean(),
  stopAfter: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 3 })),
  turns: fc.array(turn, { minLength: 1, maxLength: 8 }),
  hands: fc.array(
    fc.record({
      at: point,
      act: fc.constantFrom<Act>("steer", "followUp", "abort", "addTool", "removeTool", "reload", "meddle"),
    }),
    { maxLength: 4 },
  ),
  between: fc.array(
    fc.constantFrom<Between>("prompt", "continue", "resume", "steer", "followUp", "rewind", "save", "clear"),
    { maxLength: 4 },
  ),
});

const QUESTIONS = JSON.stringify({
  questions: [{ question: "Which colour?", options: [{ label: "red" }, { label: "blue" }] }],
});

function wireCall(spec: CallSpec, turnAt: number, at: number) {
  const id = spec.id === "given" ? `c${turnAt}_${at}` : spec.id === "dup" ? "dup" : "";
  switch (spec.kind) {
    case "bad-json":
      return { id, name: "echo", arguments: '{"n": 1,,' };
    case "unknown":
      return { id, name: "nope", arguments: "{}" };
    case "ask":
      return { id, name: "AskUser", arguments: QUESTIONS };
    case "todo-open":
    case "todo-done":
      return {
        id,
        name: "TodoWrite",
        arguments: JSON.stringify({
          todos: [
            { content: "Check the numbers", status: spec.kind === "todo-open" ? "pending" : "completed" },
          ],
        }),
      };
    default:
      return { id, name: spec.kind, arguments: JSON.stringify({ n: at }) };
  }
}

function reply(turns: readonly Turn[], index: number): Reply {
  let t = turns[index];
  if (t === undefined) return { content: `Answer ${index}.` };
  if ("fail" in t) return { type: "error", status: 500, body: { error: { message: "The server broke." } } };
  if ("again" in t) {
    // The calls of the nearest call turn before, arguments and all (ids made fresh).
    let from = index - 1;
    while (from >= 0 && !("calls" in (turns[from] as Turn))) from--;
    const before = turns[from];
    if (before === undefined || !("calls" in before)) return { content: `Answer ${index}.` };
    t = before;
    return {
      toolCalls: before.calls.map((call, at) => ({
        ...wireCall(call, from, at),
        ...(call.id === "given" ? { id: `r${index}_${at}` } : {}),
      })),
    };
  }
  if ("text" in t) {
    return t.text === "short"
      ? { content: `Answer ${index}.` }
      : {
          reasoning: "Let me think.",
          content: `A slow answer ${index}, ${"word ".repeat(20)}end.`,
          chunkChars: 4,
          chunkDelayMs: 2,
        };
  }
  return { toolCalls: t.calls.map((call, at) => wireCall(call, index, at)) };
}

type Body = { messages: ChatMessageLike[] };
const chatOnly = (messages: readonly unknown[]) =>
  (messages as ChatMessageLike[]).filter((m) => m.role !== "system");
const isChat = (m: AgentMessage) =>
  ["user", "assistant", "tool"].includes(String((m as { role?: unknown }).role));
const textOf = (m: AgentMessage) =>
  typeof (m as { content?: unknown }).content === "string" ? (m as { content: string }).content : "";

/**
 * The transcript as the loop puts it on the wire (its README): an assistant message that says
 * nothing is left out, and user messages side by side go as one, a blank line between.
 */
function onTheWire(messages: readonly ChatMessageLike[]): ChatMessageLike[] {
  const out: ChatMessageLike[] = [];
  for (const m of messages) {
    const calls = (m as { tool_calls?: unknown[] }).tool_calls ?? [];
    if (m.role === "assistant" && calls.length === 0 && textOf(m as AgentMessage).trim() === "") continue;
    const last = out.at(-1);
    if (m.role === "user" && last?.role === "user" && typeof last.content === "string") {
      out[out.length - 1] = { ...last, content: `${last.content}\n\n${textOf(m as AgentMessage)}` };
    } else out.push(m);
  }
  return out;
}

/** What is out of order in one run's events (empty when nothing is). */
function eventFaults(events: readonly AgentEvent[], status: string): string[] {
  const faults: string[] = [];
  if (events[0]?.type !== "agent_start") faults.push(`the first event is ${events[0]?.type}`);
  const last = events.at(-1);
  if (last?.type !== "agent_end") faults.push(`the last event is ${last?.type}`);
  // A session tells a run that ended `terminated` as `ok`, and names its own ends (maxTurns, stalled).
  else if (
    last.status !== status &&
    !(status === "maxTurns" || status === "stalled" || (status === "ok" && last.status === "terminated"))
  ) {
    faults.push(`agent_end says ${last.status}, the run ${status}`);
  }
  let turn = false;
  let open: AgentMessage | undefined;
  const running = new Set<string>();
  for (const [at, e] of events.entries()) {
    if ((e.type === "agent_start" && at > 0) || (e.type === "agent_end" && at < events.length - 1)) {
      faults.push(`${e.type} at ${at}`);
    }
    if (e.type === "turn_start") {
      if (turn) faults.push(`turn_start at ${at} inside a turn`);
      turn = true;
    } else if (e.type === "turn_end") {
      if (!turn) faults.push(`turn_end at ${at} outside a turn`);
      turn = false;
    } else if (e.type === "message_start") {
      if (open) faults.push(`message_start at ${at} inside another message`);
      open = e.message;
    } else if (e.type === "message_end") {
      const role = (m: AgentMessage | undefined) => (m as { role?: unknown } | undefined)?.role;
      if (!open || role(open) !== role(e.message))
        faults.push(`message_end at ${at} closes no ${String(role(e.message))} message`);
      open = undefined;
    } else if (e.type === "message_update" || e.type === "message_retract") {
      if (!open || (open as { role?: unknown }).role !== "assistant")
        faults.push(`${e.type} at ${at} outside an assistant message`);
    } else if (e.type === "tool_execution_start") {
      running.add(e.toolCallId);
    } else if (e.type === "tool_execution_end") {
      if (!running.delete(e.toolCallId))
        faults.push(`tool_execution_end at ${at} for ${e.toolCallId}, not started`);
    } else if (e.type === "tool_execution_update") {
      if (!running.has(e.toolCallId)) faults.push(`tool_execution_update at ${at} outside its call`);
    }
  }
  if (turn) faults.push("a turn left open");
  if (open) faults.push("a message left open");
  return faults;
}

/** What went wrong that a user would notice, thrown as a plain failure fast-check shrinks on. */
function fail(what: string): never {
  throw new Error(what);
}

async function runCase(c: Case): Promise<void> {
  let mainIndex = 0;
  let currentAgent: Agent | undefined;
  const mismatches: string[] = [];
  let failures = 0;
  let summaries = 0;
  const server: TestServer = await startServer({
    personality: STRICT_ENDPOINT,
    replies: (request) => {
      // A compaction's summary is a side request, not streamed where every turn is.
      if ((request.body as { stream?: boolean }).stream !== true) {
        summaries++;
        return { content: "Summary: the user asked questions and the tools answered." };
      }
      // Each request declares the tools the agent holds as it is sent (a change lands on the next step).
      const declared = ((request.body as { tools?: Array<{ function: { name: string } }> }).tools ?? [])
        .map((t) => t.function.name)
        .sort();
      const held = currentAgent
        ? currentAgent.tools
            .list()
            .map((t) => t.name)
            .sort()
        : declared;
      if (JSON.stringify(declared) !== JSON.stringify(held)) {
        mismatches.push(
          `request ${mainIndex} declared ${declared.join(",")} while the agent held ${held.join(",")}`,
        );
      }
      if (c.turns[mainIndex] !== undefined && "fail" in (c.turns[mainIndex] as Turn)) failures++;
      return reply(c.turns, mainIndex++);
    },
  });
  const dir = mkdtempSync(join(tmpdir(), "agent-combos-"));
  const sessions: Session[] = [];
  try {
    let toolRuns = 0;
    let deltas = 0;
    const hands = c.hands.map((hand) => ({ ...hand, done: false }));
    /** Every message the host queued and the agent took, by kind, in the order given. */
    const queued: Array<{ kind: "steer" | "followUp"; text: string }> = [];
    const notices: string[] = [];
    let given = 0;
    let reloading: Promise<void> | undefined;
    let edited = false;
    const meddled: string[] = [];
    const lateErrors: string[] = [];
    let agent: Agent;
    let session: Session | undefined;
    const typed = (error: unknown, where: string) => {
      if (!AgentError.isInstance(error)) fail(`${where} threw an untyped error: ${String(error)}`);
    };

    const delivered = (text: string) =>
      [...agent.messages].some((m) => (m as { role?: unknown }).role === "user" && textOf(m) === text);
    /** Messages queued while a tool of the run ran, with how many requests had gone by then. */
    const duringTool: Array<{ kind: "steer" | "followUp"; text: string; requests: number; run: number }> = [];
    let toolRunning = 0;
    const queue = (kind: "steer" | "followUp") => {
      const text = `${kind === "steer" ? "Steer" : "Follow-up"} message ${++given}.`;
      try {
        agent[kind](text);
        queued.push({ kind, text });
        if (toolRunning > 0) duringTool.push({ kind, text, requests: server.chatRequests.length, run: runs });
      } catch (error) {
        typed(error, kind);
      }
    };
    const act = (what: Act) => {
      if (what === "steer" || what === "followUp") queue(what);
      else if (what === "abort") (session ?? agent).abort();
      else if (what === "meddle") {
        const before = [...agent.messages];
        const tries: Array<[string, () => unknown]> = [
          ["prompt", () => (session ?? agent).prompt("Meanwhile, this.")],
          ["push", () => agent.messages.push({ role: "user", content: "Pushed in." })],
          ["assign", () => (agent.messages = [])],
          ["reset", () => agent.reset()],
        ];
        for (const [name, attempt] of tries) {
          try {
            const out = attempt();
            if (out instanceof Promise) {
              out.then(
                () => meddled.push(`${name} was taken while a run went`),
                (error) => AgentError.isInstance(error) || meddled.push(`${name}: ${String(error)}`),
              );
            } else meddled.push(`${name} was taken while a run went`);
          } catch (error) {
            if (!AgentError.isInstance(error)) meddled.push(`${name}: ${String(error)}`);
          }
        }
        // Checked with the run's other invariants once it settled.
        if (JSON.stringify([...agent.messages]) !== JSON.stringify(before))
          meddled.push("a refused change changed the transcript");
      } else if (what === "reload") {
        if (session && reloading === undefined) reloading = session.close();
      } else if (what === "addTool") {
        try {
          agent.tools.register(extra, { replace: true });
        } catch (error) {
          typed(error, "register");
        }
      } else agent.tools.unregister("echo");
    };
    const reach = (which: "tool" | "stream" | "hook", count: number) => {
      for (const hand of hands) {
        if (hand.done || !(which in hand.at)) continue;
        if ((hand.at as Record<string, number>)[which] !== count) continue;
        hand.done = true;
        act(hand.act);
      }
    };

    const tool = (name: string, execute: AgentTool["execute"]): AgentTool => ({
      name,
      description: `The ${name} tool`,
      parameters: { type: "object", properties: { n: { type: "number" } } },
      execute: async (args, context) => {
        toolRunning++;
        executed.add(`${runs}:${context.toolCallId}`);
        try {
          reach("tool", ++toolRuns);
          // Yield so a stop or a queued message lands while the call is still running.
          await new Promise((resolve) => setTimeout(resolve, 1));
          return await execute(args, context);
        } finally {
          toolRunning--;
        }
      },
    });
    const extra = tool("extra", () => "extra ran");
    const tools: AgentTool[] = [
      tool("echo", ({ n }) => `echo ${String(n)}`),
      tool(
        "slow",
        (_args, { signal, onUpdate }) =>
          new Promise((resolve) => {
            onUpdate("halfway");
            const timer = setTimeout(() => {
              resolve("slow done");
              // Reported after it settled: never told (no update after the call's end).
              setTimeout(() => onUpdate("late"), 0);
            }, 20);
            signal?.addEventListener("abort", () => {
              clearTimeout(timer);
              onUpdate("stopping");
              resolve("slow stopped");
            });
          }),
      ),
      tool("boom", () => {
        boomRuns++;
        throw new Error("boom failed");
      }),
      tool("huge", () => "x".repeat(200_000)),
      tool("finish", (_args, { terminate }) => {
        terminate();
        return "finished";
      }),
    ];

    /** Tool starts and ends of the current run, by id, from the agent's events and the session's. */
    let starts: string[] = [];
    let ends: string[] = [];
    let results = new Map<string, string>();
    let events: AgentEvent[] = [];
    let sessionStarts: string[] = [];
    let sessionEnds: string[] = [];
    const watchAgent = (a: Agent) =>
      a.subscribe((event: AgentEvent) => {
        events.push(event);
        if (event.type === "compacted") {
          const kept = new Set(event.messages.map(textOf));
          for (const q of queued) if (!kept.has(q.text)) notices.push(`folded: ${q.text}`);
        }
        if (event.type === "tool_execution_start") starts.push(event.toolCallId);
        else if (event.type === "tool_execution_end") {
          ends.push(event.toolCallId);
          results.set(event.toolCallId, event.result);
        } else if (event.type === "message_update") reach("stream", ++deltas);
        else if (event.type === "notice") notices.push(event.text);
      });
    let boomRuns = 0;
    let hookRuns = 0;
    const executed = new Set<string>();
    /** Calls whose approval was pending when the host stopped the run: their tools never start. */
    const stoppedInHook = new Set<string>();
    let steps = 0;
    const compact = c.compact;
    const window = compact ? { contextLength: 4000 } : {};
    const stopper =
      c.stopAfter > 0
        ? {
            shouldStopAfterTurn: ({ toolResults }: { toolResults: unknown[] }) =>
              toolResults.length > 0 && ++steps >= c.stopAfter,
          }
        : {};
    const hooks = c.hooks
      ? {
          // An approval step that takes a moment, the host's hands free meanwhile.
          beforeToolCall: async ({ toolCall }: BeforeToolCallContext, signal?: AbortSignal) => {
            reach("hook", ++hookRuns);
            // The run this call belongs to: a stopped run ends without waiting for its hook.
            const key = `${runs}:${toolCall.id}`;
            if (signal?.aborted) stoppedInHook.add(key);
            await new Promise((resolve) => setTimeout(resolve, 1));
            if (signal?.aborted) stoppedInHook.add(key);
            return toolCall.name === "boom"
              ? { block: true, reason: "The host does not allow boom." }
              : undefined;
          },
          afterToolCall: ({ toolCall }: AfterToolCallContext) =>
            toolCall.name === "huge" ? { result: "[huge result withheld by the host]" } : undefined,
        }
      : {};
    const open = async () => {
      const s = await createSession({
        config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0, ...window },
        tools,
        ...hooks,
        ...stopper,
        maxTurns: c.maxTurns,
        ...(compact ? { autoCompact: true } : {}),
        builtInTools: { askUser: true, todoWrite: true },
        sessionDir: dir,
        sessionId: "combo",
        toolExecution: c.sequential ? "sequential" : "parallel",
        steeringMode: c.steeringMode,
        followUpMode: c.followUpMode,
      });
      sessions.push(s);
      // What opening the file said (a dropped line, a question the model never answered).
      for (const e of s.getSnapshot().timeline) if (e.type === "notice") notices.push(e.text);
      s.onEvent((event: SessionEvent) => {
        if (event.type === "tool_start") sessionStarts.push(event.id);
        else if (event.type === "tool_end") sessionEnds.push(event.id);
        else if (event.type === "notice") notices.push(event.text);
        else if (event.type === "question") {
          // AskUser is a call running too: the host's hands may fall while the question waits.
          toolRunning++;
          reach("tool", ++toolRuns);
          toolRunning--;
          if (c.ask === "abort") s.abort();
          else if (c.ask === "reload") reloading ??= s.close();
          else if (c.ask === "late") {
            setTimeout(() => {
              try {
                s.submitAnswer(event.id, ["blue"]);
              } catch (error) {
                // The run may have been stopped meanwhile (a hand's abort): the question is gone.
                if (!AgentError.isInstance(error)) lateErrors.push(String(error));
              }
            }, 3);
          } else s.submitAnswer(event.id, [c.ask === "answer" ? "red" : ""]);
        }
      });
      watchAgent(s.agent);
      return s;
    };
    if (c.session) {
      session = await open();
      agent = session.agent;
      currentAgent = agent;
    } else {
      agent = newAgent([]);
      watchAgent(agent);
      currentAgent = agent;
    }
    function newAgent(messages: AgentMessage[]): Agent {
      return new Agent({
        config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0, ...window },
        tools,
        messages,
        ...(compact ? { autoCompact: true } : {}),
        ...hooks,
        ...stopper,
        toolExecution: c.sequential ? "sequential" : "parallel",
        steeringMode: c.steeringMode,
        followUpMode: c.followUpMode,
      });
    }

    /** What a UI renders of the conversation: the timeline's user, assistant and tool entries. */
    const rendered = (s: Session) =>
      s
        .getSnapshot()
        .timeline.flatMap((e) =>
          e.type === "user" || e.type === "assistant"
            ? [`${e.type}: ${e.text}`]
            : e.type === "tool"
              ? [`tool ${e.id} ${e.name}: ${e.result}`]
              : [],
        );
    /** Closes the session (when not yet closed) and opens its file in a new session object. */
    const reopen = async () => {
      const old = session as Session;
      await (reloading ?? old.close());
      reloading = undefined;
      const before = rendered(old);
      // A transcript the host edited reaches the file at the session's next write, not at close().
      const transcript = edited ? readSessionFile(old.filePath as string).messages : [...old.messages];
      edited = false;
      session = await open();
      agent = session.agent;
      currentAgent = agent;
      // Questions at the end that the model never answered (a run the host started on the agent
      // keeps them, as an Agent does) are dropped on opening, with a notice quoting them.
      while (transcript.length > 0 && (transcript.at(-1) as { role?: unknown }).role === "user") {
        const text = textOf(transcript.pop() as AgentMessage);
        if (!notices.some((n) => n.includes(text.slice(0, 40))))
          fail(`the resumed session dropped ${text} without a word`);
      }
      expect([...session.messages], "the resumed transcript").toEqual(transcript);
      // What the resumed session shows, the closed one showed, in the same order (it may have shown
      // more: a prompt it took out, with a notice, when its run failed before any answer).
      const after = rendered(session);
      let at = 0;
      for (const entry of before) if (entry === after[at]) at++;
      expect(after.slice(at), `the resumed timeline, beyond ${JSON.stringify(before)}`).toEqual([]);
    };

    /** The transcript the last run left, which the next request must begin with. */
    let expected: ChatMessageLike[] = [];
    let runs = 0;
    const run = async (how: "prompt" | "continue") => {
      runs++;
      starts = [];
      ends = [];
      results = new Map();
      events = [];
      sessionStarts = [];
      sessionEnds = [];
      const from = server.chatRequests.length;
      const summariesBefore = summaries;
      // What the run added, by identity: a fold mid-run shortens the transcript, so no index holds.
      const before = new Set(agent.messages);
      steps = 0;
      const failedBefore = failures;
      const question = `Question ${runs}.`;
      let status: string;
      let reply: string | undefined;
      try {
        if (how === "continue") status = (await agent.continue()).status;
        else if (session) ({ status, reply } = await session.prompt(question));
        else status = ((await agent.prompt(question)) as AgentRunResult).status;
      } catch (error) {
        typed(error, how);
        if (how === "prompt") fail(`prompt rejected: ${(error as Error).message}`);
        return;
      }
      edited = false;
      // A message queued while a tool ran: a steer goes with the run's next request (the step's
      // answers), a follow-up only once the model has answered — when it is the only one queued.
      const ran = server.chatRequests.slice(from);
      const once = (kind: "steer" | "followUp") => queued.filter((q) => q.kind === kind).length === 1;
      for (const q of duringTool.filter((d) => d.run === runs && once(d.kind))) {
        const next = server.chatRequests
          .slice(q.requests)
          .find((r) => (r.body as { stream?: boolean }).stream === true);
        if (next === undefined || !ran.includes(next)) continue;
        const has = chatOnly((next.body as Body).messages).some(
          (m) => m.role === "user" && String(m.content).includes(q.text),
        );
        if (q.kind === "steer" && !has && status !== "aborted")
          fail(`${q.text}, given while a tool ran, missed the next request`);
        if (q.kind === "followUp" && has) {
          const last = chatOnly((next.body as Body).messages).at(-2);
          if (last?.role === "tool")
            fail(`${q.text}, given while a tool ran, went before the model answered`);
        }
      }
      // A closed session drops its listeners (dispose()): its stream events stop there.
      const reloaded = reloading !== undefined;
      if (reloading) await reopen();
      const requests = server.chatRequests.slice(from);
      for (const [at, request] of requests.entries()) {
        const faults = requestFaults((request.body as Body).messages);
        if (faults.length > 0) fail(`run ${runs} request ${at} refused: ${faults.join("; ")}`);
      }
      // A run the host starts on a session's agent has the session's turn budget; the Agent tells its
      // end as the loop's step limit, an error of that name.
      const budget =
        session !== undefined && how === "continue" && /maxToolIterations/.test(agent.errorMessage ?? "");
      const broke = failures > failedBefore && /500|server broke/i.test(agent.errorMessage ?? "");
      // Compacting, a window that even a fold cannot make room in is an end the README names.
      const overflow = compact && /does not fit the model's context window/.test(agent.errorMessage ?? "");
      if (status === "error" && !budget && !broke && !overflow)
        fail(`run ${runs} ended in error: ${agent.errorMessage}`);
      // The next request begins with what the run left.
      // (A fold before the first request sends the summary and what follows it instead.)
      const first = requests.find((r) => (r.body as { stream?: boolean }).stream === true);
      const foldedFirst = summaries > summariesBefore && requests[0] !== first;
      if (first !== undefined && !foldedFirst) {
        const sent = chatOnly((first.body as Body).messages);
        const want = onTheWire(expected);
        // The run's own first message may go joined onto the transcript's last question.
        const head = sent.slice(0, want.length);
        const last = want.at(-1);
        if (last?.role === "user" && head.at(-1)?.role === "user") {
          const tail = String(head.at(-1)?.content);
          expect(tail.startsWith(String(last.content)), `run ${runs}'s first request: ${tail}`).toBe(true);
          expect(head.slice(0, -1), `run ${runs}'s first request`).toEqual(want.slice(0, -1));
        } else expect(head, `run ${runs}'s first request`).toEqual(want);
      }
      // Every tool start has exactly one end.
      expect([...ends].sort(), `run ${runs}'s tool ends`).toEqual([...starts].sort());
      if (session && !reloaded) expect([...sessionEnds].sort()).toEqual([...sessionStarts].sort());
      expect(mismatches, "the tools each request declared").toEqual([]);
      expect(meddled, "what a run refuses while it goes").toEqual([]);
      // A session's reply is the run's last answer ("" when it gave none), and what the timeline
      // shows last when it gave one.
      if (session && reply !== undefined && status === "ok" && !reloaded) {
        const answers = [...agent.messages].filter(
          (m) => !before.has(m) && (m as { role?: unknown }).role === "assistant" && textOf(m).trim() !== "",
        );
        const last = answers.at(-1);
        expect(reply, `run ${runs}'s reply`).toBe(last === undefined ? "" : textOf(last));
        const shown = session
          .getSnapshot()
          .timeline.filter((e) => e.type === "assistant")
          .at(-1);
        if (last !== undefined)
          expect(
            shown && shown.type === "assistant" ? shown.text : undefined,
            `run ${runs}'s last answer shown`,
          ).toBe(reply);
      }
      // The lifecycle a UI renders from: agent_start first, agent_end last and once, turns and
      // messages opened and closed in turn, streamed deltas inside an open assistant message.
      const sequence = eventFaults(events, status);
      if (sequence.length > 0) fail(`run ${runs}'s events: ${sequence.join("; ")}`);
      expect(lateErrors, "a late answer").toEqual([]);
      expect(agent.isRunning || session?.running, "still running after the run settled").toBeFalsy();
      // What a tool's end event showed is what the model reads for that call.
      const transcript = [...agent.messages] as ChatMessageLike[];
      for (const [id, result] of results) {
        const answers = transcript.filter((m) => m.role === "tool" && m.tool_call_id === id);
        if (answers.length > 0)
          expect(
            answers.map((m) => m.content),
            `the answer to ${id}`,
          ).toEqual([result]);
      }
      if (session) {
        // No tool left spinning, no question left open in what a UI renders.
        const { timeline } = session.getSnapshot();
        for (const entry of timeline) {
          if (entry.type === "tool" && entry.result === null) fail(`tool ${entry.id} still shows as running`);
          if (entry.type === "question" && entry.questions.some((q) => q.answer === null)) {
            fail(`question ${entry.id} still shows as unanswered`);
          }
        }
        expect(session.pendingQuestion, "a question still pending").toBeUndefined();
      }
      expected = [...agent.messages].filter(isChat) as ChatMessageLike[];
      if (session) {
        const file = readSessionFile(session.filePath as string);
        expect(file.messages, `run ${runs}: the file read back`).toEqual([...session.messages]);
      }
    };

    await run("prompt");
    for (const step of c.between) {
      if (step === "steer" || step === "followUp") queue(step);
      else if (step === "resume" && session) {
        await reopen();
        // What the next request begins with: the questions dropped on opening are no longer in it.
        expected = [...(session as Session).messages].filter(isChat) as ChatMessageLike[];
        await run("prompt");
      } else if (step === "rewind") {
        const list = [...agent.messages];
        let at = list.length - 1;
        while (at >= 0 && (list[at] as { role?: unknown }).role !== "user") at--;
        if (at >= 0) {
          // Queued messages the cut takes out were the host's to take.
          const gone = new Set(list.slice(at).map(textOf));
          for (let i = queued.length - 1; i >= 0; i--)
            if (gone.has((queued[i] as { text: string }).text)) queued.splice(i, 1);
          agent.messages = list.slice(0, at);
          edited = true;
          expected = list.slice(0, at).filter(isChat) as ChatMessageLike[];
        }
      } else if (step === "save") {
        if (session) await session.save();
        edited = false;
      } else if (step === "clear") {
        if (session) session.clear();
        else agent.reset();
        expected = [];
        // What was queued is gone with it.
        for (const q of queued.splice(0)) notices.push(`cleared: ${q.text}`);
      } else if (step === "resume") {
        // A host that keeps the transcript and makes a new Agent from it (a restart); what the old one
        // still had queued is the host's to carry over, so it is given again.
        const carried = agent.hasQueuedMessages();
        agent = newAgent([...agent.messages]);
        watchAgent(agent);
        currentAgent = agent;
        if (carried) {
          for (const q of queued) if (!delivered(q.text)) agent[q.kind](q.text);
        }
        await run("prompt");
      } else await run(step === "continue" ? "continue" : "prompt");
    }
    // A last prompt delivers whatever is still queued (an Agent keeps what a stopped run left queued
    // for the next; each hand falls once, so a second prompt is not stopped again).
    await run("prompt");
    // (A session's prompt the host's shouldStopAfterTurn stopped leaves them queued too.)
    for (let tries = 0; agent.hasQueuedMessages() && tries < c.turns.length + 2; tries++) await run("prompt");
    expect(agent.hasQueuedMessages(), "messages left queued").toBe(false);

    if (c.hooks) expect(boomRuns, "a blocked tool ran").toBe(0);
    for (const id of stoppedInHook)
      expect(executed.has(id), `${id} ran though stopped at its approval`).toBe(false);
    // Every message the host queued is in the transcript once, in the order given, or a notice says
    // it was dropped.
    const users = [...agent.messages].filter((m) => (m as { role?: unknown }).role === "user").map(textOf);
    for (const kind of ["steer", "followUp"] as const) {
      const mine = queued.filter((q) => q.kind === kind);
      const kept = mine.filter((q) => users.includes(q.text));
      for (const q of mine) {
        const times = users.filter((u) => u === q.text).length;
        if (times > 1) fail(`${q.text} is in the transcript ${times} times`);
        if (times === 0 && !notices.some((n) => n.includes(q.text))) {
          fail(`${q.text} is neither in the transcript nor said to be dropped`);
        }
      }
      const order = users.filter((u) => kept.some((q) => q.text === u));
      expect(order, `${kind} messages in the order given`).toEqual(kept.map((q) => q.text));
    }
  } finally {
    for (const s of sessions) await s.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("a host's hands on runs, in combination, against a strict endpoint", () => {
  it(
    "any mix of turns and host actions leaves sendable requests, every queued message accounted for, and a file that resumes",
    async () => {
      await fc.assert(
        fc.asyncProperty(caseArb, runCase),
        propertyRuns(Number(process.env.AGENT_COMBOS_RUNS ?? 60), {
          ...(process.env.AGENT_COMBOS_SEED ? { seed: Number(process.env.AGENT_COMBOS_SEED) } : {}),
          // A failure's `path` with its seed replays just the shrunk case.
          ...(process.env.AGENT_COMBOS_PATH ? { path: process.env.AGENT_COMBOS_PATH } : {}),
        }),
      );
    },
    propertyTimeout(300_000),
  );
});
