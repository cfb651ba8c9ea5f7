import { type CompactionPlan, type MessageLike, runCompaction, vetoedBy } from "@loopwright/ledger";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import {
  configureHooks,
  consult,
  createHooks,
  gather,
  HOOK_PREFACE,
  type HookEvent,
  type HookInput,
  type HookOutcome,
  type HookRunner,
  HooksError,
  notify,
  resetHooks,
} from "./index.js";
import { countedPlaces } from "./test-support/counted-places.js";

afterEach(() => {
  resetHooks();
});

interface Session {
  session: { id: string };
}
const SESSION: Session = { session: { id: "s-1" } };
const INPUT: HookInput = { prompt: "What did we decide about the release?", turn: 3 };

/** A runner that answers each event from a table, and records what it was handed. */
function tableRunner(table: Partial<Record<HookEvent, () => unknown>>) {
  const calls: { event: HookEvent; input: HookInput; context: Session; signal?: AbortSignal }[] = [];
  const run: HookRunner<Session> = (event, input, context, signal) => {
    calls.push({ event, input, context, ...(signal ? { signal } : {}) });
    const answer = table[event];
    return answer ? (answer() as readonly HookOutcome[]) : [];
  };
  return { run, calls };
}

describe("gather", () => {
  it("hands the runner the event, the input and the host's context, and puts what the hooks said in blocks", async () => {
    const { run, calls } = tableRunner({
      beforeTurn: () => [
        { id: "memory", ok: true, context: "We agreed to ship on Friday." },
        { id: "tickets", ok: true, context: "" },
      ],
    });
    const gathered = await gather(run, "beforeTurn", INPUT, SESSION);
    expect(calls).toEqual([
      { event: "beforeTurn", input: INPUT, context: SESSION, signal: expect.anything() },
    ]);
    expect(gathered.context).toBe('<context hook="memory">\nWe agreed to ship on Friday.\n</context>');
    expect(gathered.preface).toBe(HOOK_PREFACE);
    expect(gathered.outcomes).toHaveLength(2);
    expect(gathered.notes).toEqual([]);
  });

  it("turns a runner that throws into a note, not a failure", async () => {
    const gathered = await gather(
      () => {
        throw new Error("pool is closed");
      },
      "beforeTurn",
      INPUT,
      SESSION,
    );
    expect(gathered.context).toBe("");
    expect(gathered.notes).toEqual([
      "The beforeTurn hooks could not be run: the runner threw: pool is closed.",
    ]);
  });

  it("turns a runner that rejects into a note", async () => {
    const gathered = await gather(
      async () => Promise.reject(new Error("server gone")),
      "beforeTurn",
      INPUT,
      SESSION,
    );
    expect(gathered.context).toBe("");
    expect(gathered.notes).toEqual([
      "The beforeTurn hooks could not be run: the runner failed: server gone.",
    ]);
  });

  it("stops waiting on a runner that hangs past the timeout, and aborts the signal it handed it", async () => {
    let handed: AbortSignal | undefined;
    const gathered = await gather(
      (_event, _input, _context, signal) => {
        handed = signal;
        return new Promise(() => {});
      },
      "beforeTurn",
      INPUT,
      SESSION,
      { timeoutMs: 20 },
    );
    expect(gathered.context).toBe("");
    expect(gathered.notes).toEqual([
      "The beforeTurn hooks could not be run: they did not answer within 20 ms.",
    ]);
    expect(handed?.aborted).toBe(true);
  });

  it("waits out a timeout longer than a timer can hold instead of giving up at once", async () => {
    // 2^32 ms is about 50 days: past what setTimeout takes, which would fire it after 1 ms instead.
    const late: HookRunner<Session> = () =>
      new Promise((resolve) => setTimeout(() => resolve([{ id: "memory", context: "late but here" }]), 30));
    const gathered = await gather(late, "beforeTurn", INPUT, SESSION, { timeoutMs: 2 ** 32 });
    expect(gathered.notes).toEqual([]);
    expect(gathered.context).toBe('<context hook="memory">\nlate but here\n</context>');
    const configured = createHooks({ timeoutMs: Number.MAX_SAFE_INTEGER });
    const told = await configured.notify(late, "afterTurn", INPUT, SESSION);
    expect(told.notes).toEqual([]);
    expect(told.outcomes).toEqual([{ id: "memory", context: "late but here" }]);
  });

  it("takes the timeout from configureHooks when the call gives none", async () => {
    configureHooks({ timeoutMs: 15 });
    const gathered = await gather(() => new Promise(() => {}), "beforeTurn", INPUT, SESSION);
    expect(gathered.notes).toEqual([
      "The beforeTurn hooks could not be run: they did not answer within 15 ms.",
    ]);
  });

  it("notes junk and keeps what is usable", async () => {
    const { run } = tableRunner({
      beforeTurn: () => [
        1,
        null,
        { id: "numbers", context: 42 },
        { id: "broken", ok: false, error: new Error("db down"), context: "stale text" },
        { id: "slow", ok: false, timedOut: true },
        { id: "fine", context: "usable" },
      ],
    });
    const gathered = await gather(run, "beforeTurn", INPUT, SESSION);
    expect(gathered.context).toBe('<context hook="fine">\nusable\n</context>');
    expect(gathered.notes).toEqual([
      "Outcome 1 of the beforeTurn hooks is the number 1, not an outcome; it was ignored.",
      "Outcome 2 of the beforeTurn hooks is null, not an outcome; it was ignored.",
      "Hook numbers (beforeTurn) answered context that is not text (the number 42); it was ignored.",
      "Hook broken (beforeTurn) added nothing: it failed: db down.",
      "Hook slow (beforeTurn) added nothing: it timed out.",
    ]);
    const odd = await gather(() => "not a list" as never, "beforeTurn", INPUT, SESSION);
    expect(odd.notes).toEqual([
      'The beforeTurn hook runner answered the string "not a list" instead of a list of outcomes; it was ignored.',
    ]);
  });

  it("notes an outcome that is still a promise, naming the likely cause, and a rejected one costs nothing more", async () => {
    // `hooks.map(async (hook) => …)` without Promise.all: each entry is a promise. Read as an object
    // it was an outcome with no fields — the hook's context dropped without a word — and a promise
    // that rejected was left unhandled, which ends a Node process.
    const run: HookRunner<Session> = async () =>
      [
        Promise.resolve({ id: "memory", context: "recalled" }),
        Promise.reject(new Error("recall server down")),
        { id: "fine", context: "usable" },
      ] as never;
    const gathered = await gather(run, "beforeTurn", INPUT, SESSION);
    expect(gathered.context).toBe('<context hook="fine">\nusable\n</context>');
    expect(gathered.outcomes).toEqual([{ id: "fine", context: "usable" }]);
    expect(gathered.notes).toEqual([
      "Outcome 1 of the beforeTurn hooks is a promise, not an outcome (the runner should wait for its hooks, with Promise.all, and answer what they gave); it was ignored.",
      "Outcome 2 of the beforeTurn hooks is a promise, not an outcome (the runner should wait for its hooks, with Promise.all, and answer what they gave); it was ignored.",
    ]);
    const consulted = await consult(
      async () => [Promise.resolve({ id: "guard", veto: true })] as never,
      {},
      SESSION,
    );
    expect(consulted.proceed).toBe(true);
    expect(consulted.notes[0]).toMatch(/^Outcome 1 of the beforeCompact hooks is a promise/);
    // A turn later: nothing left unhandled by the rejected one.
    await new Promise((resolve) => setTimeout(resolve, 10));
  });

  it("runs several events into one budget, and a runner that fails one costs only that event's context", async () => {
    const { run, calls } = tableRunner({
      sessionStart: () => {
        throw new Error("no profile");
      },
      beforeTurn: () => [{ id: "memory", context: "recalled" }],
    });
    const gathered = await gather(run, ["sessionStart", "beforeTurn"], INPUT, SESSION);
    expect(calls.map((call) => call.event)).toEqual(["sessionStart", "beforeTurn"]);
    expect(gathered.context).toBe('<context hook="memory">\nrecalled\n</context>');
    expect(gathered.notes).toEqual([
      "The sessionStart hooks could not be run: the runner threw: no profile.",
    ]);
  });

  it("adds nothing once the run's signal aborts, and passes the abort on to the runner", async () => {
    const controller = new AbortController();
    let handed: AbortSignal | undefined;
    const pending = gather(
      (_e, _i, _c, signal) => {
        handed = signal;
        return new Promise(() => {});
      },
      "beforeTurn",
      INPUT,
      SESSION,
      { signal: controller.signal },
    );
    controller.abort(new Error("user stopped"));
    const gathered = await pending;
    expect(gathered.context).toBe("");
    expect(gathered.notes).toEqual([
      "The beforeTurn hooks could not be run: the run was stopped while they ran.",
    ]);
    expect(handed?.aborted).toBe(true);
    const late = await gather(() => [{ id: "m", context: "x" }], "beforeTurn", INPUT, SESSION, {
      signal: controller.signal,
    });
    expect(late.context).toBe("");
  });

  it("says the preface it used: the configured one, the call's own over it, and an empty one as none", async () => {
    const { run } = tableRunner({ beforeTurn: () => [{ id: "m", context: "x" }] });
    expect((await gather(run, "beforeTurn", INPUT, SESSION)).preface).toBe(HOOK_PREFACE);
    configureHooks({ preface: "Added by acme's hooks:" });
    expect((await gather(run, "beforeTurn", INPUT, SESSION)).preface).toBe("Added by acme's hooks:");
    expect((await gather(run, "beforeTurn", INPUT, SESSION, { preface: "" })).preface).toBe("");
    expect((await gather(run, "beforeTurn", INPUT, SESSION, { preface: 7 as never })).preface).toBe(
      "Added by acme's hooks:",
    );
    expect(configureHooks({ preface: null as never }).preface).toBe("Added by acme's hooks:");
    expect(createHooks().settings().preface).toBe(HOOK_PREFACE);
  });

  it("holds the context to the call's budget over the configured one", async () => {
    const { run } = tableRunner({ beforeTurn: () => [{ id: "m", context: "word ".repeat(500) }] });
    const small = await gather(run, "beforeTurn", INPUT, SESSION, { maxTokens: 30 });
    expect(small.context.length).toBeLessThanOrEqual(120);
    expect(small.notes).toEqual([
      expect.stringMatching(/Hook m's context was cut .* the 30-token hook budget/),
    ]);
    const whole = await gather(run, "beforeTurn", INPUT, SESSION, { maxTokens: 0 });
    expect(whole.notes).toEqual([]);
  });

  it("reads null options as none given, as notify does, rather than rejecting", async () => {
    const { run } = tableRunner({
      beforeTurn: () => [{ id: "memory", context: "Friday." }],
      beforeCompact: () => [{ id: "pin", veto: true }],
    });
    const gathered = await gather(run, "beforeTurn", INPUT, SESSION, null as never);
    expect(gathered.context).toBe('<context hook="memory">\nFriday.\n</context>');
    expect(gathered.preface).toBe(HOOK_PREFACE);
    const consulted = await consult(run, { messages: [], from: 0, through: 1 }, SESSION, null as never);
    expect(consulted).toMatchObject({ proceed: false, vetoedBy: "pin" });
  });

  it("reads null in each option as none given: the configured budget, preface and timeout hold", async () => {
    const { run, calls } = tableRunner({
      beforeTurn: () => [{ id: "memory", context: "Friday." }],
      afterTurn: () => [{ id: "log" }],
      beforeCompact: () => [{ id: "pin", veto: true }],
    });
    const row = { maxTokens: null, preface: null, signal: null, timeoutMs: null, charsPerToken: null };
    const gathered = await gather(run, "beforeTurn", INPUT, SESSION, row);
    expect(gathered.context).toBe('<context hook="memory">\nFriday.\n</context>');
    expect(gathered.preface).toBe(HOOK_PREFACE);
    expect(gathered.notes).toEqual([]);
    const told = await notify(run, "afterTurn", INPUT, SESSION, { timeoutMs: null });
    expect(told).toEqual({ outcomes: [{ id: "log" }], notes: [] });
    await expect(notify(run, "afterTurn", INPUT, SESSION, null)).resolves.toMatchObject({ notes: [] });
    const input = { messages: [], from: 0, through: 1 };
    const consulted = await consult(run, input, SESSION, { forced: null, signal: null, timeoutMs: null });
    expect(consulted).toMatchObject({ proceed: false, vetoedBy: "pin" });
    // A null signal is no signal: the runner is handed one of its own (the timeout's), never null.
    expect(calls.map((c) => c.signal instanceof AbortSignal)).toEqual([true, true, true, true]);
  });

  it("turns an outcome that throws when read into a note, and keeps the others", async () => {
    const unreadable = Object.defineProperty({ id: "proxy" }, "context", {
      enumerable: true,
      get() {
        throw new Error("revoked");
      },
    });
    const run: HookRunner<Session> = () => [unreadable, { id: "memory", context: "Friday." }];
    const gathered = await gather(run, "beforeTurn", INPUT, SESSION);
    expect(gathered.context).toBe('<context hook="memory">\nFriday.\n</context>');
    expect(gathered.outcomes).toEqual([{ id: "memory", context: "Friday." }]);
    expect(gathered.notes).toEqual([
      "Outcome 1 of the beforeTurn hooks could not be read (revoked); it was ignored.",
    ]);
    const vetoing = Object.defineProperty({ ok: true }, "veto", {
      enumerable: true,
      get() {
        throw new Error("revoked");
      },
    });
    const consulted = await consult(() => [vetoing], { messages: [], from: 0, through: 1 }, SESSION);
    expect(consulted.proceed).toBe(true);
    expect(consulted.notes).toEqual([
      "Outcome 1 of the beforeCompact hooks could not be read (revoked); it was ignored.",
    ]);
  });

  it("keeps an outcome that holds a field named unreadable, and one whose unread field throws", async () => {
    const debug = Object.defineProperty({ id: "recall", ok: true, context: "Tuesday." }, "debug", {
      enumerable: true,
      get() {
        throw new Error("released");
      },
    });
    const gathered = await gather(
      () => [{ id: "memory", ok: true, context: "Friday.", unreadable: false }, debug],
      "beforeTurn",
      INPUT,
      SESSION,
    );
    expect(gathered.context).toBe(
      '<context hook="memory">\nFriday.\n</context>\n\n<context hook="recall">\nTuesday.\n</context>',
    );
    expect(gathered.notes).toEqual([]);
    expect(gathered.outcomes).toEqual([
      { id: "memory", ok: true, context: "Friday.", unreadable: false },
      { id: "recall", ok: true, context: "Tuesday." },
    ]);
    const consulted = await consult(
      () => [{ id: "pin", veto: true, unreadable: "no" }],
      { messages: [], from: 0, through: 1 },
      SESSION,
    );
    expect(consulted).toMatchObject({
      proceed: false,
      vetoedBy: "pin",
      notes: ["Compaction skipped: pin vetoed it."],
    });
  });

  it("reads an outcome once: a getter that throws on a second read cannot break the call later", async () => {
    /** An outcome whose fields answer once, then throw (a Proxy over a hook result that was released). */
    const once = (fields: Record<string, unknown>) => {
      const outcome = {};
      for (const [key, value] of Object.entries(fields)) {
        let reads = 0;
        Object.defineProperty(outcome, key, {
          enumerable: true,
          get() {
            if (++reads > 1) throw new Error(`${key} read twice`);
            return value;
          },
        });
      }
      return outcome;
    };
    const gathered = await gather(
      () => [once({ id: "memory", ok: true, context: "Friday." })],
      "beforeTurn",
      INPUT,
      SESSION,
    );
    expect(gathered.context).toBe('<context hook="memory">\nFriday.\n</context>');
    expect(gathered.notes).toEqual([]);
    expect(gathered.outcomes).toEqual([{ id: "memory", ok: true, context: "Friday." }]);
    const consulted = await consult(
      () => [once({ id: "pin", ok: true, veto: true })],
      { messages: [], from: 0, through: 1 },
      SESSION,
    );
    expect(consulted).toMatchObject({ proceed: false, vetoedBy: "pin" });
    const failing = await notify(
      () => [once({ id: "log", ok: false, error: "disk full" })],
      "afterTurn",
      INPUT,
      SESSION,
    );
    expect(failing.notes).toEqual(["Hook log (afterTurn) added nothing: it failed: disk full."]);
  });

  it("rejects a caller's mistake with a HooksError naming it", async () => {
    await expect(gather("run" as never, "beforeTurn", INPUT, SESSION)).rejects.toMatchObject({
      name: "HooksError",
      code: "invalid-runner",
    });
    const error = await gather(() => [], "afterTurn" as never, INPUT, SESSION).catch((e: unknown) => e);
    expect(HooksError.isInstance(error)).toBe(true);
    expect((error as HooksError).code).toBe("invalid-event");
    expect((error as Error).message).toMatch(/use notify for the others/);
  });
});

describe("a signal that is not one", () => {
  it("is refused by gather and consult with a HooksError naming the signal, before the runner is called", async () => {
    // The AbortController itself, passed where its signal was meant: before, a raw TypeError from
    // inside (\`signal?.addEventListener is not a function\`), with the runner never called and a
    // 30 s timer left running.
    const { run, calls } = tableRunner({ beforeTurn: () => [{ id: "memory", context: "recalled" }] });
    const controller = new AbortController();
    const gathered = await gather(run, "beforeTurn", INPUT, SESSION, {
      signal: controller as unknown as AbortSignal,
    }).catch((e: unknown) => e);
    expect(HooksError.isInstance(gathered)).toBe(true);
    expect(gathered).toMatchObject({ code: "invalid-option" });
    expect((gathered as Error).message).toMatch(/gather: signal must be an AbortSignal/);
    const consulted = await consult(run, {}, SESSION, { signal: "stop" as unknown as AbortSignal }).catch(
      (e: unknown) => e,
    );
    expect(consulted).toMatchObject({ code: "invalid-option" });
    expect((consulted as Error).message).toMatch(/consult: signal must be an AbortSignal.*the string "stop"/);
    expect(calls).toEqual([]);
  });

  it("still takes null, an AbortSignal, and any object shaped like one", async () => {
    const { run } = tableRunner({ beforeTurn: () => [{ id: "memory", context: "recalled" }] });
    const shaped = { aborted: false, addEventListener() {}, removeEventListener() {} };
    for (const signal of [null, new AbortController().signal, shaped]) {
      const gathered = await gather(run, "beforeTurn", INPUT, SESSION, {
        signal: signal as unknown as AbortSignal,
      });
      expect(gathered.context).toBe('<context hook="memory">\nrecalled\n</context>');
    }
  });
});

describe("notify", () => {
  it("tells the afterTurn hooks and resolves with their outcomes", async () => {
    const { run, calls } = tableRunner({ afterTurn: () => [{ id: "memory", ok: true }] });
    const input: HookInput = { prompt: "q", reply: "We ship Friday.", turn: 3 };
    const report = await notify(run, "afterTurn", input, SESSION);
    expect(calls[0]?.input).toBe(input);
    expect(report).toEqual({ outcomes: [{ id: "memory", ok: true }], notes: [] });
  });

  it("never rejects for a hook's sake: a throw, a failure or a hang is a note", async () => {
    const thrown = await notify(
      () => {
        throw new Error("x");
      },
      "sessionEnd",
      {},
      SESSION,
    );
    expect(thrown.notes).toEqual(["The sessionEnd hooks could not be run: the runner threw: x."]);
    const hung = await notify(() => new Promise(() => {}), "sessionDelete", {}, SESSION, { timeoutMs: 10 });
    expect(hung.notes).toEqual([
      "The sessionDelete hooks could not be run: they did not answer within 10 ms.",
    ]);
    const failed = await notify(() => [{ name: "Archive", error: "disk full" }], "afterTurn", {}, SESSION);
    expect(failed.notes).toEqual(["Hook Archive (afterTurn) added nothing: it failed: disk full."]);
  });

  it("refuses an event whose hooks add context", async () => {
    await expect(notify(() => [], "beforeTurn" as never, {}, SESSION)).rejects.toMatchObject({
      code: "invalid-event",
    });
  });
});

describe("consult", () => {
  const input = { messages: [], from: 0, through: 2 };

  it("does not proceed when a hook that ran vetoes, and names it", async () => {
    const result = await consult(
      () => [{ id: "guard", name: "Keep everything", veto: true }],
      input,
      SESSION,
    );
    expect(result.proceed).toBe(false);
    expect(result.vetoedBy).toBe("Keep everything");
    expect(result.notes).toEqual(["Compaction skipped: Keep everything vetoed it."]);
  });

  it("proceeds when forced, noting the veto it overrode", async () => {
    const result = await consult(() => [{ id: "guard", veto: true }], input, SESSION, { forced: true });
    expect(result.proceed).toBe(true);
    expect(result.vetoedBy).toBe("guard");
    expect(result.notes[0]).toMatch(/guard vetoed the compaction, but it was forced/);
  });

  it("lets no failed hook, thrown runner or hung runner veto", async () => {
    expect((await consult(() => [{ id: "g", ok: false, veto: true }], input, SESSION)).proceed).toBe(true);
    const thrown = await consult(
      () => {
        throw new Error("nope");
      },
      input,
      SESSION,
    );
    expect(thrown.proceed).toBe(true);
    expect(thrown.notes).toEqual(["The beforeCompact hooks could not be run: the runner threw: nope."]);
    const hung = await consult(() => new Promise(() => {}), input, SESSION, { timeoutMs: 10 });
    expect(hung.proceed).toBe(true);
  });

  it("reads a veto exactly as the ledger's compaction does, for any outcomes (fast-check)", async () => {
    const transcript: MessageLike[] = [
      { role: "user", content: "first" },
      { role: "assistant", content: "one" },
      { role: "user", content: "second" },
      { role: "assistant", content: "two" },
    ];
    const plan = { from: 0, through: 2 } as CompactionPlan;
    const outcome = fc.oneof(
      fc.record(
        {
          id: fc.constantFrom("a", "b", ""),
          name: fc.constantFrom("Alpha", "Beta", "", "Gu\nard", "g".repeat(100)),
          ok: fc.boolean(),
          // null, "", false and 0 are how runners relaying outcomes as JSON write "no error": both
          // read them as none; a message, an Error, an object or true is a failure in both.
          error: fc.constantFrom("boom", new Error("e"), null, "", false, 0, true, { code: 2 }, " "),
          veto: fc.oneof(fc.boolean(), fc.constantFrom(null, "true", 1)),
        },
        { requiredKeys: [] },
      ),
      fc.constantFrom(null, 3, "junk"),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.array(outcome, { maxLength: 5 }),
          // A sparse list: the same outcomes spread over places with holes between.
          fc.tuple(fc.array(outcome, { maxLength: 3 }), fc.integer({ min: 1, max: 4 })).map(([held, gap]) => {
            const sparse: unknown[] = [];
            held.forEach((entry, at) => {
              sparse[at * gap + gap - 1] = entry;
            });
            sparse.length += gap;
            return sparse;
          }),
        ),
        fc.boolean(),
        async (outcomes, forced) => {
          // One runner, typed for the host's context, handed to both packages as it is.
          const run: HookRunner<Session> = () => outcomes as HookOutcome[];
          const ledgerNotes: string[] = [];
          const fold = await runCompaction(transcript, plan, () => "summary", {
            hooks: { run, context: SESSION, honourVeto: true, onNote: (note) => ledgerNotes.push(note) },
            forced,
          });
          const consulted = await consult(
            run,
            { messages: transcript.slice(0, 2), from: 0, through: 2 },
            SESSION,
            {
              forced,
            },
          );
          expect(consulted.proceed).toBe(fold !== undefined);
          expect(consulted.notes.filter((note) => /vetoed/.test(note))).toEqual(ledgerNotes);
        },
      ),
    );
  });
});

describe("a runner written against neither package", () => {
  it("passes straight through to gather, consult and the ledger's compaction, its context typed as its own", async () => {
    // The shapes an MCP pool declares for itself, importing nothing from hooks or ledger.
    interface PoolContext {
      session: { id: string };
    }
    interface PoolOutcome {
      id: string;
      name: string;
      ok: boolean;
      context?: string;
      veto?: boolean;
      error?: string;
    }
    const seen: string[] = [];
    async function runHooks(
      event: string,
      _input: object,
      context: PoolContext,
      _signal?: AbortSignal,
    ): Promise<PoolOutcome[]> {
      seen.push(`${event}:${context.session.id}`);
      if (event === "beforeCompact") return [{ id: "pin", name: "Pinned notes", ok: true, veto: true }];
      return [{ id: "memory", name: "Memory", ok: true, context: "recalled" }];
    }
    const context: PoolContext = { session: { id: "s-9" } };
    const gathered = await gather(runHooks, "beforeTurn", INPUT, context);
    expect(gathered.context).toBe('<context hook="memory">\nrecalled\n</context>');
    expect((await consult(runHooks, { messages: [], from: 0, through: 1 }, context)).vetoedBy).toBe(
      "Pinned notes",
    );
    const transcript: MessageLike[] = [
      { role: "user", content: "a" },
      { role: "assistant", content: "b" },
      { role: "user", content: "c" },
    ];
    const fold = await runCompaction(transcript, { from: 0, through: 2 } as CompactionPlan, () => "s", {
      hooks: { run: runHooks, context, honourVeto: true },
    });
    expect(fold).toBeUndefined();
    expect(seen).toEqual(["beforeTurn:s-9", "beforeCompact:s-9", "beforeCompact:s-9"]);
  });
});

describe("hostile failures are notes, never a rejection or a wait", () => {
  /** A thrown value with no way to be written: no prototype, so no toString, and a toJSON that throws. */
  const unwritable = () =>
    Object.assign(Object.create(null), {
      toJSON() {
        throw new Error("no");
      },
    });
  /** An Error whose message throws when read. */
  const trap = () => {
    const error = new Error("x");
    Object.defineProperty(error, "message", {
      get() {
        throw new Error("trap");
      },
    });
    return error;
  };

  it("a runner that rejects or throws with a value that cannot be written is noted at once", async () => {
    for (const make of [unwritable, trap]) {
      // "At once": before a timeout that no test waits out (a run that waited for it instead of
      // noting the rejection would end at vitest's test timeout), rather than a bound in ms.
      const rejected = await gather(async () => Promise.reject(make()), "beforeTurn", INPUT, SESSION, {
        timeoutMs: 2 ** 40,
      });
      const thrown = await gather(
        () => {
          throw make();
        },
        "beforeTurn",
        INPUT,
        SESSION,
      );
      expect(rejected.notes).toHaveLength(1);
      expect(rejected.notes[0]).toMatch(/^The beforeTurn hooks could not be run: the runner failed: /);
      expect(thrown.notes[0]).toMatch(/^The beforeTurn hooks could not be run: the runner threw: /);
    }
  });

  it("an outcome whose error cannot be written is a note, and the other hooks' context is kept", async () => {
    for (const make of [unwritable, trap]) {
      const run: HookRunner<Session> = async () => [
        { id: "broken", error: make() },
        { id: "memory", context: "kept" },
      ];
      const gathered = await gather(run, "beforeTurn", INPUT, SESSION);
      expect(gathered.context).toContain("kept");
      expect(gathered.notes[0]).toMatch(/^Hook broken \(beforeTurn\) added nothing: it failed/);
      const told = await notify(run, "afterTurn", INPUT, SESSION);
      expect(told.notes[0]).toMatch(/^Hook broken \(afterTurn\) added nothing: it failed/);
    }
  });

  it("a hook's error of a megabyte is noted in at most a few hundred characters", async () => {
    const gathered = await gather(
      async () => [{ id: "chatty", error: "e".repeat(1_000_000) }],
      "beforeTurn",
      INPUT,
      SESSION,
    );
    expect(gathered.notes[0]?.length).toBeLessThan(600);
    expect(gathered.notes[0]).toMatch(/^Hook chatty \(beforeTurn\) added nothing: it failed: e+…\.$/);
  });
});

describe("how a note names a hook", () => {
  it("by its name, else its id, else its place, as a display name is meant to be preferred", async () => {
    const run: HookRunner<Session> = async () => [
      { id: "mem-7f3a", name: "Memory", ok: false, error: "db down" },
      { id: "log-2", error: "disk full" },
      { error: "boom" },
      { id: "guard-1", name: "Guard", veto: true },
    ];
    const gathered = await gather(run, "beforeTurn", INPUT, SESSION);
    expect(gathered.notes).toEqual([
      "Hook Memory (beforeTurn) added nothing: it failed: db down.",
      "Hook log-2 (beforeTurn) added nothing: it failed: disk full.",
      "Hook hook 3 (beforeTurn) added nothing: it failed: boom.",
      // The guard's veto, which beforeTurn does not read, is said too (r95c).
      "Hook Guard (beforeTurn) answered veto: true, which only a beforeCompact hook's answer is read for; nothing was stopped.",
    ]);
    const consulted = await consult(run, INPUT, SESSION);
    // A beforeCompact hook adds nothing when it works either: a failed one's veto is not read.
    expect(consulted.notes).toEqual([
      "Hook Memory (beforeCompact) vetoes nothing: it failed: db down.",
      "Hook log-2 (beforeCompact) vetoes nothing: it failed: disk full.",
      "Hook hook 3 (beforeCompact) vetoes nothing: it failed: boom.",
      "Compaction skipped: Guard vetoed it.",
    ]);
  });

  it("in a line however long its id or name, while the block it adds keeps the id whole", async () => {
    const long = "x".repeat(1_000_000);
    const run: HookRunner<Session> = async (event) =>
      event === "beforeCompact"
        ? [{ name: `guard-${long}`, veto: true }]
        : [
            { id: long, error: "boom" },
            { name: `${long}\nsecond line`, context: "what was decided", maxTokens: 1 },
            { id: `mem-${"y".repeat(100)}`, name: "Memory", context: "the release is on Friday" },
          ];
    const gathered = await gather(run, "beforeTurn", INPUT, SESSION);
    expect(gathered.notes).toHaveLength(2);
    for (const note of gathered.notes) {
      expect(note.length).toBeLessThan(200);
      expect(note).not.toContain("\n");
    }
    expect(gathered.notes[0]).toMatch(/^Hook x+… \(beforeTurn\) added nothing: it failed: boom\.$/);
    expect(gathered.context).toContain(`<context hook="mem-${"y".repeat(100)}">`);
    const consulted = await consult(run, INPUT, SESSION);
    expect(consulted.vetoedBy).toBe(`guard-${long}`);
    expect(consulted.notes[0]?.length).toBeLessThan(200);
    expect(consulted.notes[0]).toMatch(/^Compaction skipped: guard-x+… vetoed it\.$/);
  });
});

describe("outcomes as a runner relaying JSON writes them", () => {
  it("reads error: null as no error, in gather, notify and consult, and the ledger's fold agrees", async () => {
    // A successful outcome through a JSON bridge (an HTTP hook service, a worker thread).
    const wire = JSON.parse(
      JSON.stringify([{ id: "recall", ok: true, error: null, timedOut: false, context: "We ship Friday." }]),
    ) as HookOutcome[];
    const gathered = await gather(() => wire, "beforeTurn", INPUT, SESSION);
    expect(gathered.context).toContain("We ship Friday.");
    expect(gathered.notes).toEqual([]);
    const told = await notify(() => wire, "afterTurn", INPUT, SESSION);
    expect(told.notes).toEqual([]);
    const guard = JSON.parse(JSON.stringify([{ name: "Guard", veto: true, error: null }])) as HookOutcome[];
    const consulted = await consult(() => guard, { messages: [], from: 0, through: 1 }, SESSION);
    expect(consulted).toMatchObject({
      proceed: false,
      vetoedBy: "Guard",
      notes: ["Compaction skipped: Guard vetoed it."],
    });
    const fold = await runCompaction(
      [
        { role: "user", content: "a" },
        { role: "assistant", content: "b" },
        { role: "user", content: "c" },
      ],
      { from: 0, through: 2 } as CompactionPlan,
      () => "summary",
      { hooks: { run: () => guard, context: SESSION, honourVeto: true } },
    );
    expect(fold).toBeUndefined();
  });

  it('reads error "", false, 0 as no error (a Go runner writes "error": ""), and a message or object as one', async () => {
    for (const none of ["", false, 0, null, undefined]) {
      const wire = [{ id: "recall", error: none, context: "We ship Friday." }] as HookOutcome[];
      const gathered = await gather(() => wire, "beforeTurn", INPUT, SESSION);
      expect(gathered.context, String(none)).toContain("We ship Friday.");
      expect(gathered.notes, String(none)).toEqual([]);
      const guard = [{ name: "Guard", veto: true, error: none }] as HookOutcome[];
      const consulted = await consult(() => guard, { messages: [], from: 0, through: 1 }, SESSION);
      expect(consulted, String(none)).toMatchObject({ proceed: false, vetoedBy: "Guard" });
      expect(vetoedBy(guard), String(none)).toBe("Guard");
    }
    for (const some of ["disk full", new Error("db down"), { code: 2 }, true]) {
      const guard = [{ name: "Guard", veto: true, error: some }] as HookOutcome[];
      const consulted = await consult(() => guard, { messages: [], from: 0, through: 1 }, SESSION);
      expect(consulted.proceed, String(some)).toBe(true);
      expect(consulted.notes[0], String(some)).toMatch(
        /^Hook Guard \(beforeCompact\) vetoes nothing: it failed: \S/,
      );
      expect(vetoedBy(guard), String(some)).toBeUndefined();
    }
    // A reason of only spaces says nothing: no "it failed: ." with an empty reason.
    const blank = await gather(() => [{ name: "g", error: "  " }], "beforeTurn", INPUT, SESSION);
    expect(blank.notes).toEqual(["Hook g (beforeTurn) added nothing: it failed."]);
  });

  it("counts a sparse list's holes in one note, however long the list", async () => {
    // Each list behind a Proxy that counts the reads of its places: the walk costs what the entries
    // do, not four million holes (a count, where a bound in ms breaks on a loaded machine).
    const { list: sparse, reads: sparseReads } = countedPlaces<HookOutcome[]>([]);
    sparse[3] = { id: "recall", context: "We ship Friday." };
    sparse.length = 4_000_000;
    const gathered = await gather(() => sparse, "beforeTurn", INPUT, SESSION);
    expect(gathered.context).toContain("We ship Friday.");
    expect(gathered.notes).toEqual([
      "The beforeTurn hook runner's list has 3999999 holes (places with no entry at all); they were ignored.",
    ]);
    const { list: guard, reads: guardReads } = countedPlaces<HookOutcome[]>([]);
    guard[2_000_000] = { name: "Guard", veto: true };
    guard.length = 4_000_000;
    const consulted = await consult(() => guard, { messages: [], from: 0, through: 1 }, SESSION);
    expect(consulted).toMatchObject({ proceed: false, vetoedBy: "Guard" });
    expect(vetoedBy(guard)).toBe("Guard");
    expect(sparseReads()).toBeLessThan(20);
    expect(guardReads()).toBeLessThan(40);
    // An entry that is there but undefined is still named on its own.
    const held = await gather(() => [undefined] as never, "beforeTurn", INPUT, SESSION);
    expect(held.notes).toEqual([
      "Outcome 1 of the beforeTurn hooks is undefined, not an outcome; it was ignored.",
    ]);
  });

  it("notes ok, timedOut and veto that are not booleans, naming the hook and the field", async () => {
    const gathered = await gather(
      () =>
        [
          { name: "recall", timedOut: "true", context: "stale" },
          { id: "pins", ok: 1, context: "pinned" },
        ] as never,
      "beforeTurn",
      INPUT,
      SESSION,
    );
    expect(gathered.notes).toEqual([
      'Hook recall (beforeTurn) answered timedOut the string "true", not true or false; it was read as left out.',
      "Hook pins (beforeTurn) answered ok the number 1, not true or false; it was read as left out.",
    ]);
    const consulted = await consult(
      () => [{ name: "Guard", veto: "true" }] as never,
      { messages: [], from: 0, through: 1 },
      SESSION,
    );
    expect(consulted.proceed).toBe(true);
    expect(consulted.notes).toEqual([
      'Hook Guard (beforeCompact) answered veto the string "true", not true or false; it was read as left out.',
    ]);
    // null is left out, as JSON writes it: no note.
    const clean = await gather(
      () => [{ name: "recall", ok: null, timedOut: null, veto: null, error: null, context: "x" }] as never,
      "beforeTurn",
      INPUT,
      SESSION,
    );
    expect(clean.notes).toEqual([]);
  });
});

describe("a runner's list that throws while it is walked, or is long", () => {
  /** Two outcomes, the second a getter that throws. */
  function throwingList(): HookOutcome[] {
    const list: HookOutcome[] = [{ name: "first", context: "kept", veto: false }];
    Object.defineProperty(list, 1, {
      get() {
        throw new Error("index getter");
      },
      enumerable: true,
    });
    return list;
  }
  const lengthTrap = (): HookOutcome[] =>
    new Proxy([] as HookOutcome[], {
      get(target, key, receiver) {
        if (key === "length") throw new Error("length trap");
        return Reflect.get(target, key, receiver);
      },
    });

  it("becomes one note in gather, notify and consult, keeping what was read before", async () => {
    const gathered = await gather(throwingList, "beforeTurn", INPUT, SESSION);
    expect(gathered.context).toContain("kept");
    expect(gathered.notes).toEqual([
      "The beforeTurn hook runner's answer could not be read past outcome 1 (index getter); the rest was ignored.",
    ]);
    const told = await notify(lengthTrap, "afterTurn", INPUT, SESSION);
    expect(told).toEqual({
      outcomes: [],
      notes: [
        "The afterTurn hook runner's answer could not be read past outcome 0 (length trap); the rest was ignored.",
      ],
    });
    const consulted = await consult(throwingList, { messages: [], from: 0, through: 1 }, SESSION);
    expect(consulted.proceed).toBe(true);
    expect(consulted.notes).toHaveLength(1);
    // The ledger's rule reads it the same way, and never throws.
    const fold = await runCompaction(
      [
        { role: "user", content: "a" },
        { role: "assistant", content: "b" },
        { role: "user", content: "c" },
      ],
      { from: 0, through: 2 } as CompactionPlan,
      () => "summary",
      { hooks: { run: throwingList, context: SESSION, honourVeto: true } },
    );
    expect(fold).toMatchObject({ summary: "summary" });
  });

  // About 1 s idle, past vitest's 5 s under load (two busy cores): the list must stay past what a
  // spread's arguments take, so the timeout grows instead.
  it("reads a list of 150 000 outcomes without overflowing the stack", async () => {
    const many = Array.from({ length: 150_000 }, (_, place) => ({ id: `h${place}` }));
    const gathered = await gather(() => many, "beforeTurn", INPUT, SESSION);
    expect(gathered.outcomes).toHaveLength(150_000);
    const consulted = await consult(() => many, { messages: [], from: 0, through: 1 }, SESSION);
    expect(consulted).toMatchObject({ proceed: true, notes: [] });
  }, 30_000);
});
