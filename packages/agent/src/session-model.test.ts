// A session is what it was told: a fast-check model of `Session` and its file. Random sequences of
// user actions on a session over one directory — prompts (text, empty, huge, Unicode with lone
// surrogates) answered by a scripted server over HTTP with text, reasoning, tool calls (a tool that
// returns, one that throws, one that hangs until stopped), an HTTP error or a cut stream; stops at
// once, mid-stream and mid-tool; `agent.continue()`; notices; a close and reopen from the file; an
// open while the session holds the lock; the file cut at a random byte (a crash mid-write) or a
// line corrupted, then reopened. The model is the list of prompts a user would expect to see.
// After every action: the timeline shows each kept prompt once, in order, with the cards its run
// gave; snapshots handed out never change; every request the server received is one a strict
// endpoint takes; a reopened session shows what the live one did and holds the same transcript;
// what a reopen did not keep is in `<file>.dropped` under its line number; no credential anywhere.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Reply, startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import {
  AgentError,
  type AgentTool,
  type ChatMessageLike,
  createSession,
  readSessionFile,
  type Session,
  type SessionEvent,
  type SessionView,
  type TimelineEvent,
} from "./test-exports.js";
import { requestFaults } from "./test-support/strict-endpoint.js";
import { useTempDirs } from "./test-support/temp-dirs.js";

const tempDir = useTempDirs("agent-session-model");
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** The credential the endpoint is given; it must reach no file, timeline entry or event. */
const SECRET = "sk-r91f-do-not-store-4f2a9c";

/** How the model answers one prompt. */
type Plan =
  | { kind: "text"; reasoning: boolean; answer: string }
  | { kind: "tool"; tool: "look" | "boom" }
  | { kind: "hang" }
  | { kind: "error" }
  | { kind: "cut" }
  | { kind: "stopStream"; reasoning: boolean }
  | { kind: "errorMidStream" }
  | { kind: "stopAtOnce" };

type Action =
  | { a: "prompt"; text: string; plan: Plan }
  | { a: "continue" }
  | { a: "notice"; text: string }
  | { a: "other"; text: string }
  | { a: "reopen" }
  | { a: "reload"; midTool: boolean; text: string }
  | { a: "second" }
  | { a: "cut"; at: number }
  | { a: "corrupt"; at: number; how: "json" | "record" | "header" };

const textArb = fc.oneof(
  { weight: 5, arbitrary: fc.string({ minLength: 1, maxLength: 20 }).filter((s) => s.trim() !== "") },
  { weight: 1, arbitrary: fc.constant("") },
  { weight: 1, arbitrary: fc.constant(`${"long words ".repeat(12_000)}end`) },
  {
    weight: 2,
    arbitrary: fc
      .array(fc.constantFrom("é", "日本", "🙂", "\ud800", "\udc00", "a", " ", "\n", "\u0000", "\u2028"), {
        minLength: 1,
        maxLength: 8,
      })
      .map((parts) => `u${parts.join("")}`),
  },
);
const planArb: fc.Arbitrary<Plan> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("text" as const),
      reasoning: fc.boolean(),
      // "": a model that answers nothing (the session keeps the empty answer; the loop never sends it).
      answer: fc.constantFrom(
        "",
        "Plain answer.",
        "Unicode \ud83d answer \udc00 é 🙂.",
        `Long ${"answer ".repeat(5000)}end.`,
      ),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("tool" as const),
      tool: fc.constantFrom("look" as const, "boom" as const),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "hang" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "error" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "cut" as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("stopStream" as const), reasoning: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ kind: "errorMidStream" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "stopAtOnce" as const }) },
);
const actionArb: fc.Arbitrary<Action> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ a: fc.constant("prompt" as const), text: textArb, plan: planArb }) },
  { weight: 1, arbitrary: fc.constant({ a: "continue" as const }) },
  {
    weight: 1,
    arbitrary: fc.record({ a: fc.constant("notice" as const), text: fc.string({ maxLength: 10 }) }),
  },
  { weight: 2, arbitrary: fc.constant({ a: "reopen" as const }) },
  {
    weight: 1,
    arbitrary: fc.record({ a: fc.constant("reload" as const), midTool: fc.boolean(), text: textArb }),
  },
  { weight: 1, arbitrary: fc.record({ a: fc.constant("other" as const), text: textArb }) },
  { weight: 1, arbitrary: fc.constant({ a: "second" as const }) },
  {
    weight: 2,
    arbitrary: fc.record({ a: fc.constant("cut" as const), at: fc.double({ min: 0, max: 1, noNaN: true }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      a: fc.constant("corrupt" as const),
      at: fc.double({ min: 0, max: 1, noNaN: true }),
      how: fc.constantFrom("json" as const, "record" as const, "header" as const),
    }),
  },
);

/** The entries a resumed session rebuilds from its transcript (notices, errors and stops are the live run's). */
function kept(timeline: readonly TimelineEvent[]): unknown[] {
  return withoutTakenOut(timeline)
    .filter((e) => e.type === "user" || e.type === "assistant" || e.type === "tool")
    .map((e) =>
      e.type === "tool"
        ? { type: "tool", id: e.id, name: e.name, result: e.result, isError: e.isError ?? false }
        : e,
    );
}
/** Live only: a prompt the run took back out stays shown, followed by the notice saying so. */
const TAKEN_OUT = /the prompt was not kept in the conversation/i;
function withoutTakenOut(timeline: readonly TimelineEvent[]): TimelineEvent[] {
  const out: TimelineEvent[] = [];
  let start = -1;
  for (const e of timeline) {
    if (e.type === "user") start = out.length;
    if (e.type === "notice" && TAKEN_OUT.test(e.text) && start >= 0) {
      out.length = start;
      start = -1;
      continue;
    }
    out.push(e);
  }
  return out;
}
const usersOf = (timeline: readonly TimelineEvent[]) =>
  timeline.filter((e) => e.type === "user").map((e) => (e as { text: string }).text);

/** The JSON lines of a session file, each parsed or undefined. */
function linesOf(path: string): { text: string; record: Record<string, unknown> | undefined }[] {
  const raw = readFileSync(path, "utf8");
  const parts = raw.split("\n");
  if (parts.at(-1) === "") parts.pop();
  return parts.map((text) => {
    try {
      return { text, record: JSON.parse(text) as Record<string, unknown> };
    } catch {
      return { text, record: undefined };
    }
  });
}
/**
 * Where roles do not alternate as a chat template that makes them (Gemma's, Mistral's) requires, in
 * messages as the loop sends them (user messages side by side joined, empty answers left out): the
 * first message after the system prompt an answer, or an answer right after another.
 */
function alternationFaults(messages: readonly ChatMessageLike[]): string[] {
  const faults: string[] = [];
  let before: string | undefined;
  messages.forEach((m, at) => {
    if (m.role === "system") return;
    const says =
      m.role !== "assistant" ||
      (m.tool_calls?.length ?? 0) > 0 ||
      (typeof m.content === "string" && m.content.trim() !== "");
    if (!says) return;
    if (m.role === "assistant" && before === undefined)
      faults.push(`the transcript opens with an answer (message ${at})`);
    if (m.role === "assistant" && before === "assistant") faults.push(`answer ${at} follows another answer`);
    before = m.role;
  });
  return faults;
}
/** The transcript as the loop sends it: empty answers left out, user messages side by side joined. */
function asSent(messages: readonly ChatMessageLike[]): ChatMessageLike[] {
  const out: ChatMessageLike[] = [];
  for (const m of messages) {
    const empty =
      m.role === "assistant" &&
      (m.tool_calls?.length ?? 0) === 0 &&
      (typeof m.content !== "string" || m.content.trim() === "");
    if (empty) continue;
    const before = out.at(-1);
    if (before?.role === "user" && m.role === "user")
      out[out.length - 1] = { role: "user", content: `${before.content}\n\n${m.content}` };
    else out.push(m);
  }
  return out;
}
const isUserLine = (r: Record<string, unknown> | undefined) =>
  r?.type === "message" && (r.message as { role?: unknown } | undefined)?.role === "user";

async function runActions(actions: Action[]): Promise<void> {
  const dir = tempDir();
  const queue: Reply[] = [];
  server = await startServer({ replies: () => queue.shift() ?? { content: "Fallback answer." } });
  const s = server;
  let hangStarted: (() => void) | undefined;
  const tools: AgentTool[] = [
    { name: "look", description: "Looks", parameters: { type: "object" }, execute: () => "looked" },
    {
      name: "boom",
      description: "Fails",
      parameters: { type: "object" },
      execute: () => {
        // A tool whose failure echoes the endpoint's key (a client that prints its config).
        throw new Error(`boom failed with key ${SECRET}`);
      },
    },
    {
      name: "hang",
      description: "Waits until stopped",
      parameters: { type: "object" },
      execute: (_args, { signal }) =>
        new Promise((resolve) => {
          hangStarted?.();
          signal?.addEventListener("abort", () => resolve("stopped waiting"));
        }),
    },
  ];
  const options = {
    config: { baseUrl: s.baseUrl, model: "sim", apiKey: SECRET },
    tools,
    sessionDir: dir,
    sessionId: "chat",
  };
  const file = join(dir, "chat.jsonl");
  const events: SessionEvent[] = [];
  let onDelta: (() => void) | undefined;
  /** Every snapshot handed out, with what it held then. */
  const handed = new Map<SessionView, string>();
  const hand = (view: SessionView) => {
    if (!handed.has(view)) handed.set(view, JSON.stringify(view));
  };
  const open = async (): Promise<Session> => {
    const session = await createSession(options);
    // What a UI reads after every change: each snapshot handed out, kept to check it never changes.
    session.subscribe(() => hand(session.getSnapshot()));
    session.onEvent((e) => {
      events.push(e);
      if (e.type === "assistant_delta" || e.type === "thinking_delta") onDelta?.();
    });
    return session;
  };
  let session = await open();
  /** The prompts a user expects in the timeline, in order. */
  let expected: string[] = [];
  /** The prompts the timeline shows: those kept, and those taken out again (with a notice). */
  let shown: string[] = [];
  let calls = 0;

  const check = (where: string) => {
    const view = session.getSnapshot();
    hand(view);
    for (const [was, json] of handed)
      expect(JSON.stringify(was), `${where}: a snapshot handed out changed`).toBe(json);
    expect(usersOf(view.timeline), `${where}: the prompts shown`).toEqual(shown);
    expect(usersOf(withoutTakenOut(view.timeline)), `${where}: the prompts kept`).toEqual(expected);
    s.chatRequests.forEach((request, index) => {
      const messages = (request.body as { messages: unknown[] }).messages;
      expect(requestFaults(messages), `${where}: request ${index}`).toEqual([]);
      expect(alternationFaults(messages as ChatMessageLike[]), `${where}: request ${index}`).toEqual([]);
    });
    // The transcript the next request sends answers every call and holds the prompts shown.
    const transcript = session.messages as ChatMessageLike[];
    expect(
      requestFaults(asSent([...transcript, { role: "user", content: "next" }])),
      `${where}: the next request`,
    ).toEqual([]);
    expect(alternationFaults(transcript), `${where}: the next request`).toEqual([]);
    expect(
      transcript.filter((m) => m.role === "user").map((m) => m.content),
      `${where}: the transcript's prompts`,
    ).toEqual(expected);
    const stored = readFileSync(file, "utf8");
    expect(stored.includes(SECRET), `${where}: the file holds the key`).toBe(false);
    expect(JSON.stringify(view).includes(SECRET), `${where}: the timeline holds the key`).toBe(false);
    expect(JSON.stringify(events).includes(SECRET), `${where}: an event holds the key`).toBe(false);
  };

  /** Closes the live session, lets `edit` change the file, reopens it; checks what the reopen did not keep was set aside. */
  const reopen = async (edit?: (raw: Buffer) => Buffer, reloaded = false) => {
    const liveKept = kept(session.getSnapshot().timeline);
    const liveMessages = JSON.stringify(session.messages);
    await session.close();
    const before = linesOf(file);
    let edited = reloaded;
    if (edit) {
      const raw = readFileSync(file);
      const next = edit(raw);
      edited = !next.equals(raw);
      writeFileSync(file, next);
    }
    const cutLines = linesOf(file);
    session = await open();
    const resumed = session.getSnapshot().timeline;
    const now = JSON.parse(JSON.stringify(session.messages)) as ChatMessageLike[];
    // What the file says is what the session holds.
    expect(JSON.stringify(readSessionFile(file).messages)).toBe(JSON.stringify(session.messages));
    if (!edited) {
      expect(kept(resumed), "a reopened session shows what the live one did").toEqual(liveKept);
      expect(JSON.stringify(session.messages), "a reopened session holds the live transcript").toBe(
        liveMessages,
      );
      shown = [...expected];
      return;
    }
    // Each prompt line of the file before the edit the reopen did not keep is in `.dropped` under its line.
    const droppedRaw = (() => {
      try {
        return readFileSync(`${file}.dropped`, "utf8");
      } catch {
        return "";
      }
    })();
    const blocks = droppedRaw
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const lastOpen = blocks.map((b) => b.type).lastIndexOf("open");
    const droppedLines = new Set(blocks.slice(lastOpen + 1).map((b) => b.line as number));
    const users = now.filter((m) => m.role === "user").map((m) => m.content);
    let next = 0;
    cutLines.forEach((line, index) => {
      const record = before[index]?.record;
      if (!record || !isUserLine(record)) return;
      const text = (record.message as { content: unknown }).content;
      if (line.record && isUserLine(line.record) && users[next] === text) {
        next++;
        return;
      }
      expect(droppedLines.has(index + 1), `the lost prompt of line ${index + 1} is in .dropped`).toBe(true);
    });
    // Lines the edit took away entirely (after the cut) are gone with the crash, as they would be.
    expect(next, "every prompt kept is one the file held, in order").toBe(users.length);
    expected = users as string[];
    shown = [...expected];
  };

  for (const [step, action] of actions.entries()) {
    const where = `action ${step} ${action.a}`;
    if (action.a === "prompt") {
      const { plan, text } = action;
      const id = `c${++calls}`;
      const stop = () => session.abort();
      onDelta = undefined;
      hangStarted = undefined;
      let stopAtOnce = false;
      if (plan.kind === "text")
        queue.push({
          content: plan.answer === "" ? "" : `${plan.answer} ${id}`,
          ...(plan.reasoning ? { reasoning: `Thinking ${id}.` } : {}),
        });
      else if (plan.kind === "tool")
        queue.push({ toolCalls: [{ id, name: plan.tool, arguments: "{}" }] }, { content: `After ${id}.` });
      else if (plan.kind === "hang") {
        queue.push({ toolCalls: [{ id, name: "hang", arguments: "{}" }] }, { content: `After ${id}.` });
        hangStarted = stop;
      } else if (plan.kind === "error")
        queue.push({
          type: "error",
          status: 400,
          body: { error: { message: `Incorrect API key provided: ${SECRET}` } },
        });
      else if (plan.kind === "cut")
        queue.push({ content: `Cut answer ${id} goes on.`, chunkChars: 4, dropAfterChunk: 3 });
      else if (plan.kind === "stopStream") {
        queue.push({
          content: `Streamed ${id} then silence.`,
          ...(plan.reasoning ? { reasoning: `Thinking about ${id} for a while.` } : {}),
          chunkChars: 4,
          silentAfterChunk: 3,
        });
        onDelta = () => {
          onDelta = undefined;
          stop();
        };
      } else if (plan.kind === "errorMidStream")
        queue.push({
          content: `Half an answer ${id} and`,
          chunkChars: 4,
          errorMidStream: { afterChunk: 3, error: { message: `overloaded (key ${SECRET})` } },
        });
      else {
        queue.push({ content: `Never seen ${id}.` });
        stopAtOnce = true;
      }
      const keptBefore = expected.length;
      const eventsBefore = events.length;
      const timelineBefore = session.getSnapshot().timeline;
      const pending = session.prompt(text);
      if (stopAtOnce) session.abort();
      let result: Awaited<typeof pending> | undefined;
      // check-tests: allow a model: a prompt may be refused (empty text) or run; both are checked
      try {
        result = await pending;
      } catch (error) {
        // Only an empty prompt may be refused, and then nothing is added.
        expect(error, where).toBeInstanceOf(AgentError);
        expect(text, `${where}: refused ${String(error)}`).toBe("");
        expect(session.getSnapshot().timeline, `${where}: a refused prompt shows nothing`).toBe(
          timelineBefore,
        );
      }
      queue.length = 0;
      onDelta = undefined;
      hangStarted = undefined;
      // check-tests: allow a model: a refused prompt was checked in the catch; an answered one here
      if (result) {
        const tail = session.getSnapshot().timeline;
        const users = usersOf(tail);
        expect(users, `${where}: each prompt shown once`).toEqual([...shown, text]);
        shown.push(text);
        if (usersOf(withoutTakenOut(tail)).length === expected.length + 1) expected.push(text);
        // A prompt the model answered is kept, with its cards as the run had them.
        if (plan.kind === "text" || plan.kind === "tool") {
          expect(result.status, `${where}: ${result.error}`).toBe("ok");
          expect(expected.at(-1), where).toBe(text);
          const after = tail.slice(tail.findLastIndex((e) => e.type === "user") + 1);
          if (plan.kind === "text")
            expect(
              after.filter((e) => e.type === "assistant"),
              where,
            ).toEqual(plan.answer === "" ? [] : [{ type: "assistant", text: `${plan.answer} ${id}` }]);
          else {
            const card = after.find((e) => e.type === "tool");
            expect(card, where).toMatchObject({ id, name: plan.tool, isError: plan.tool === "boom" });
            expect(after.at(-1), where).toEqual({ type: "assistant", text: `After ${id}.` });
          }
        } else if (plan.kind === "hang") {
          expect(result.status, where).toBe("aborted");
          expect(expected.at(-1), `${where}: a finished tool step keeps its prompt`).toBe(text);
          expect(
            tail.find((e) => e.type === "tool" && e.id === id),
            `${where}: no card left spinning`,
          ).toMatchObject({ result: expect.any(String) });
        } else if (plan.kind === "error" || plan.kind === "stopAtOnce") {
          expect(result.status, where).toBe(plan.kind === "error" ? "error" : "aborted");
          // Not kept, and said so.
          expect(expected.length, `${where}: an unanswered prompt is taken out`).toBe(keptBefore);
          expect(tail.at(-1), where).toMatchObject({
            type: "notice",
            text: expect.stringMatching(TAKEN_OUT),
          });
        } else {
          // Stopped or failed mid-stream: the answer text the user saw is kept, with its prompt;
          // none seen, the prompt is taken out and a notice says so. Never a question left open.
          expect(result.status, where).toBe(plan.kind === "stopStream" ? "aborted" : "error");
          const transcript = session.messages as ChatMessageLike[];
          if (expected.length > keptBefore) {
            expect(transcript.at(-1), `${where}: the kept prompt ends in an answer`).toMatchObject({
              role: "assistant",
              content: result.reply,
            });
            expect(result.reply, where).not.toBe("");
          } else {
            expect(tail.at(-1), where).toMatchObject({
              type: "notice",
              text: expect.stringMatching(TAKEN_OUT),
            });
          }
        }
        // A stopped run is marked stopped where the user looks: after its prompt.
        // check-tests: allow a model: only a stopped run has a stop to show
        if (result.status === "aborted") {
          const after = tail.slice(tail.findLastIndex((e) => e.type === "user"));
          expect(
            after.some((e) => e.type === "interrupted"),
            `${where}: the stop is shown`,
          ).toBe(true);
        }
        // Each tool card the run started ended.
        const starts = events
          .slice(eventsBefore)
          .filter((e) => e.type === "tool_start")
          .map((e) => (e as { id: string }).id);
        const ends = events
          .slice(eventsBefore)
          .filter((e) => e.type === "tool_end")
          .map((e) => (e as { id: string }).id);
        expect(ends.sort(), `${where}: every tool_start has its tool_end`).toEqual(starts.sort());
      }
    } else if (action.a === "continue") {
      // check-tests: allow a model: continue() may run or be refused; what it left is checked after every action
      try {
        await session.agent.continue();
      } catch (error) {
        expect(error, where).toBeInstanceOf(AgentError);
      }
      queue.length = 0;
      expected = usersOf(withoutTakenOut(session.getSnapshot().timeline));
      shown = usersOf(session.getSnapshot().timeline);
    } else if (action.a === "notice") {
      session.addNotice(action.text);
      expect(session.getSnapshot().timeline.at(-1), where).toEqual({ type: "notice", text: action.text });
    } else if (action.a === "reopen") await reopen();
    else if (action.a === "reload") {
      // A UI reload while the answer streams or a tool runs: close() during the run, then open again.
      const id = `c${++calls}`;
      let closing: Promise<void> | undefined;
      const reload = () => {
        closing ??= session.close();
      };
      if (action.midTool) {
        queue.push({ toolCalls: [{ id, name: "hang", arguments: "{}" }] }, { content: `After ${id}.` });
        hangStarted = reload;
      } else {
        queue.push({ content: `Streamed ${id} then silence.`, chunkChars: 4, silentAfterChunk: 3 });
        onDelta = reload;
      }
      const settled = await session.prompt(action.text).then(
        () => undefined,
        (error: unknown) => error,
      );
      // check-tests: allow a model: only an empty prompt may be refused; an accepted one is checked below
      if (settled !== undefined) {
        expect(settled, where).toBeInstanceOf(AgentError);
        expect(action.text, `${where}: refused ${String(settled)}`).toBe("");
      } else shown.push(action.text);
      await closing;
      queue.length = 0;
      onDelta = undefined;
      hangStarted = undefined;
      // What the file holds now is all that came of the prompt: checked as an edited file is.
      await reopen(undefined, true);
    } else if (action.a === "other") {
      // A second session over the same directory: its own file, never a line in this one.
      const bytes = readFileSync(file);
      queue.push({ content: "The other answer." });
      const other = await createSession({ ...options, sessionId: "other" });
      try {
        await other.prompt(action.text).catch((error: unknown) => {
          expect(error, where).toBeInstanceOf(AgentError);
        });
      } finally {
        await other.close();
      }
      queue.length = 0;
      expect(readFileSync(file).equals(bytes), `${where}: another session wrote into this one's file`).toBe(
        true,
      );
      expect(readFileSync(join(dir, "other.jsonl"), "utf8").includes(SECRET), where).toBe(false);
      // check-tests: allow a model: one branch per action, each asserting what that action must leave
    } else if (action.a === "second") {
      const bytes = readFileSync(file);
      const error = await createSession(options).then(
        (other) => {
          void other.close();
          return undefined;
        },
        (e: unknown) => e,
      );
      expect(error, where).toBeInstanceOf(AgentError);
      expect((error as AgentError).code, where).toBe("locked");
      expect(readFileSync(file).equals(bytes), `${where}: the refused open wrote`).toBe(true);
    } else if (action.a === "cut") await reopen((raw) => raw.subarray(0, Math.floor(action.at * raw.length)));
    else {
      await reopen((raw) => {
        const lines = raw.toString("utf8").split("\n");
        const index = action.how === "header" ? 0 : 1 + Math.floor(action.at * Math.max(0, lines.length - 2));
        if (index >= lines.length - 1) return raw;
        // Not JSON (a torn sector); JSON but no record a session writes (a message without its role).
        lines[index] =
          action.how === "record"
            ? `{"type":"message","message":{"content":${JSON.stringify(lines[index]?.slice(0, 9) ?? "")}}}`
            : `{"type":"message","message":${lines[index]?.slice(0, 5) ?? ""}`;
        return Buffer.from(lines.join("\n"));
      });
    }
    check(where);
  }
  await session.close();
}

describe("Session model (r91)", () => {
  it(
    "shows every prompt it kept, resumes what it showed, and never loses a turn silently",
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(actionArb, { minLength: 3, maxLength: 15 }), async (actions) => {
          try {
            await runActions(actions);
          } finally {
            await server?.close();
            server = undefined;
          }
        }),
        propertyRuns(Number(process.env.R91_SESSION_RUNS ?? 30), {
          ...(process.env.R91_SESSION_SEED ? { seed: Number(process.env.R91_SESSION_SEED) } : {}),
        }),
      );
    },
    propertyTimeout(120_000),
  );
});
