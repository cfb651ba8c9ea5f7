import { describe, expect, it, vi } from "vitest";
import { LedgerError } from "./errors.js";
import type { MessageLike } from "./messages.js";
import { type CompactionPlan, planCompaction, SUMMARY_LEAD } from "./plan-compaction.js";
import {
  applyCompaction,
  type CompactionHookRunner,
  compactTranscript,
  requestIndex,
  runCompaction,
  vetoedBy,
  vetoNote,
} from "./run-compaction.js";

const say = (role: string, text: string): MessageLike => ({ role, content: text });
const transcript = [
  say("system", "Be brief."),
  say("user", "first question"),
  say("assistant", "first answer"),
  say("user", "second question"),
  say("assistant", "second answer"),
  say("user", "third question"),
];
const plan: CompactionPlan = {
  from: 1,
  through: 3,
  limit: 100,
  used: 90,
  folded: 10,
  kept: 10,
  after: 30,
  summaryTokens: 10,
};

describe("runCompaction", () => {
  it("answers the fold to store, handing the summariser the stretch and leaving the messages alone", async () => {
    const summarise = vi.fn(async () => "  They asked twice.  ");
    const before = JSON.stringify(transcript);
    const fold = await runCompaction(transcript, plan, summarise);
    expect(fold).toMatchObject({ summary: "They asked twice.", through: 3 });
    expect(typeof fold?.at).toBe("number");
    expect(summarise).toHaveBeenCalledWith(transcript.slice(1, 3), undefined, undefined);
    expect(JSON.stringify(transcript)).toBe(before);
  });

  it("answers nothing when the summary comes back empty, and says so", async () => {
    const onNote = vi.fn();
    const fold = await runCompaction(transcript, plan, () => " ", { hooks: { run: () => [], onNote } });
    expect(fold).toBeUndefined();
    expect(onNote).toHaveBeenCalledWith(expect.stringMatching(/empty/));
  });

  it("honours a veto from a hook that ran, naming it, when asked to", async () => {
    const onNote = vi.fn();
    const summarise = vi.fn(async () => "s");
    const run: CompactionHookRunner = async () => [{ name: "keep-everything", ok: true, veto: true }];
    const fold = await runCompaction(transcript, plan, summarise, {
      hooks: { run, onNote, honourVeto: true },
    });
    expect(fold).toBeUndefined();
    expect(summarise).not.toHaveBeenCalled();
    expect(onNote).toHaveBeenCalledWith(expect.stringMatching(/keep-everything/));
  });

  it("names a vetoing hook in one short line, however long or many-lined its name", async () => {
    for (const forced of [false, true]) {
      const notes: string[] = [];
      const run: CompactionHookRunner = async () => [{ name: `guard\n${"g".repeat(1_000_000)}`, veto: true }];
      await runCompaction(transcript, plan, () => "s", {
        hooks: { run, onNote: (note) => notes.push(note), honourVeto: true },
        forced,
      });
      expect(notes).toHaveLength(1);
      expect(notes[0]?.length).toBeLessThan(200);
      expect(notes[0]).toMatch(
        forced
          ? /^guard g+… vetoed the compaction, but it was forced/
          : /^Compaction skipped: guard g+… vetoed it\.$/,
      );
    }
    expect(vetoNote("Guard")).toBe("Compaction skipped: Guard vetoed it.");
  });

  it("lets no veto stop it by default: the hooks run beside the summary and nobody waits", async () => {
    let release: () => void = () => {};
    const run: CompactionHookRunner = () =>
      new Promise((resolve) => {
        release = () => resolve([{ name: "slow", ok: true, veto: true }]);
      });
    const fold = await runCompaction(transcript, plan, () => "s", { hooks: { run } });
    expect(fold?.summary).toBe("s");
    release();
  });

  it("ignores a veto from a hook that failed", async () => {
    const run: CompactionHookRunner = async () => [{ name: "broken", ok: false, veto: true, error: "boom" }];
    const fold = await runCompaction(transcript, plan, () => "s", { hooks: { run, honourVeto: true } });
    expect(fold?.summary).toBe("s");
  });

  it("goes ahead when forced, noting the veto it overrode", async () => {
    const onNote = vi.fn();
    const run: CompactionHookRunner = async () => [{ id: "guard", veto: true }];
    const fold = await runCompaction(transcript, plan, () => "s", {
      hooks: { run, onNote, honourVeto: true },
      forced: true,
    });
    expect(fold?.summary).toBe("s");
    expect(onNote).toHaveBeenCalledWith(expect.stringMatching(/guard.*forced/));
  });

  it("notes a runner that throws outright and folds anyway", async () => {
    const onNote = vi.fn();
    const fold = await runCompaction(transcript, plan, () => "s", {
      hooks: {
        run: () => {
          throw new Error("runner down");
        },
        onNote,
        honourVeto: true,
      },
    });
    expect(fold?.summary).toBe("s");
    expect(onNote).toHaveBeenCalledWith(expect.stringMatching(/runner down/));
  });

  it("tells the hooks what is going, by stored index", async () => {
    const run = vi.fn<CompactionHookRunner>(async () => []);
    await runCompaction(transcript, { ...plan, previous: "old" }, () => "s", {
      hooks: { run, context: { session: "s1" }, honourVeto: true },
    });
    expect(run).toHaveBeenCalledWith(
      "beforeCompact",
      { messages: transcript.slice(1, 3), from: 1, through: 3, previous: "old" },
      { session: "s1" },
    );
  });

  it("wraps a summariser failure in a typed error carrying the cause", async () => {
    const cause = new Error("model offline");
    const failure = await runCompaction(transcript, plan, () => Promise.reject(cause)).catch(
      (e: unknown) => e,
    );
    expect(LedgerError.isInstance(failure)).toBe(true);
    expect((failure as LedgerError).code).toBe("summary-failed");
    expect((failure as LedgerError).cause).toBe(cause);
  });

  it("wraps a summariser that throws something unwritable in the same typed error", async () => {
    const unwritable = Object.create(null) as object; // no toString: String() of it throws
    const failure = await runCompaction(transcript, plan, () => {
      throw unwritable;
    }).catch((error: unknown) => error);
    expect(LedgerError.isInstance(failure)).toBe(true);
    expect((failure as LedgerError).code).toBe("summary-failed");
    expect((failure as LedgerError).cause).toBe(unwritable);
  });

  it("notes a runner that rejects with something unwritable, and waits on it as asked", async () => {
    const notes: string[] = [];
    const fold = await runCompaction(transcript, plan, () => "notes", {
      hooks: {
        run: () => Promise.reject(Object.create(null)),
        onNote: (n) => notes.push(n),
        honourVeto: true,
      },
    });
    expect(fold?.summary).toBe("notes");
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatch(/^The beforeCompact hooks could not be run: /);
  });

  it("refuses options that are not an object with a typed error naming them", async () => {
    const failure = await runCompaction(transcript, plan, () => "s", null as never).catch((e: unknown) => e);
    expect(LedgerError.isInstance(failure), String(failure)).toBe(true);
    expect((failure as LedgerError).message).toMatch(/options/);
  });

  it("folds beside its hooks without an unhandled rejection when the host's onNote throws", async () => {
    const unhandled: unknown[] = [];
    const listen = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", listen);
    try {
      const fold = await runCompaction(transcript, plan, () => "s", {
        hooks: {
          run: () => {
            throw new Error("runner down");
          },
          onNote: () => {
            throw new Error("the host's log is closed");
          },
        },
      });
      expect(fold?.summary).toBe("s");
      await new Promise((resolve) => setTimeout(resolve, 20));
    } finally {
      process.off("unhandledRejection", listen);
    }
    expect(unhandled).toEqual([]);
  });

  it("refuses a plan that does not fit the transcript", async () => {
    await expect(runCompaction(transcript, { ...plan, through: 99 }, () => "s")).rejects.toThrow(/plan/);
  });
});

describe("applyCompaction and compactTranscript", () => {
  it("puts the summary after the system prompt, then everything from through", async () => {
    const compacted = await compactTranscript(transcript, plan, () => "notes");
    expect(compacted).toEqual([
      transcript[0],
      { role: "system", content: `${SUMMARY_LEAD}\n\nnotes` },
      ...transcript.slice(3),
    ]);
  });

  it("refuses a plan or fold whose kept part would start on an answer rather than a question", async () => {
    const withTools: MessageLike[] = [
      say("system", "Be brief."),
      say("user", "read it"),
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c1", function: { name: "read", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "c1", content: "the file" },
      say("assistant", "done"),
      say("user", "next"),
    ];
    // A cut at index 3 would send the tool result without the call that asked for it.
    const cut = { ...plan, from: 1, through: 3 };
    const summarise = vi.fn(() => "s");
    const failure = await compactTranscript(withTools, cut, summarise).catch((e: unknown) => e);
    expect(LedgerError.isInstance(failure), String(failure)).toBe(true);
    expect((failure as LedgerError).message).toMatch(/user message/);
    expect(summarise).not.toHaveBeenCalled();
    expect(() => applyCompaction(withTools, { summary: "s", through: 3, at: 0 })).toThrow(/user message/);
    // A fold past the end of the messages it is applied to belongs to another transcript.
    expect(() => applyCompaction(withTools, { summary: "s", through: 9, at: 0 })).toThrow(LedgerError);
    // On a question, or on the end of the array (nothing kept yet), it applies.
    expect(applyCompaction(withTools, { summary: "s", through: 5, at: 0 }).map((m) => m.role)).toEqual([
      "system",
      "system",
      "user",
    ]);
    expect(applyCompaction(withTools, { summary: "s", through: 6, at: 0 })).toHaveLength(2);
  });

  it("hands back the messages themselves when nothing was folded", async () => {
    expect(applyCompaction(transcript, undefined)).toBe(transcript);
    expect(await compactTranscript(transcript, plan, () => "")).toBe(transcript);
  });

  it("continues rather than stacks: the next plan reads the summary back, and the next fold replaces it", async () => {
    const once = applyCompaction(transcript, { summary: "first notes", through: 3, at: 0 });
    const next = planCompaction([...once, say("assistant", "x".repeat(400)), say("user", "again")], {
      limit: 100,
      used: 99,
      keepRatio: 0.2,
    });
    expect(next).toMatchObject({ from: 2, previous: "first notes" });
    const twice = applyCompaction(once, { summary: "second notes", through: 4, at: 0 });
    expect(
      twice.filter((m) => typeof m.content === "string" && m.content.startsWith(SUMMARY_LEAD)),
    ).toHaveLength(1);
    expect(twice[0]).toBe(transcript[0]);
  });
});

describe("requestIndex", () => {
  const fold = { summary: "s", through: 10, at: 0 };

  it("maps a stored index onto the folded request", () => {
    expect(requestIndex(4, undefined)).toBe(4);
    expect(requestIndex(4, fold)).toBeUndefined();
    expect(requestIndex(10, fold)).toBe(1);
    expect(requestIndex(12, fold)).toBe(3);
    expect(requestIndex(0, fold, 1)).toBe(0);
    expect(requestIndex(10, fold, 1)).toBe(2);
  });

  it("refuses an index that is not a whole number", () => {
    expect(() => requestIndex(-1, fold)).toThrow(LedgerError);
  });

  it("refuses a lead or a fold of the wrong type by name, rather than answering a string or NaN", () => {
    expect(() => requestIndex(12, fold, "1" as never)).toThrow(/lead/);
    expect(() => requestIndex(12, fold, -1)).toThrow(/lead/);
    expect(() => requestIndex(12, 5 as never)).toThrow(/fold/);
    expect(() => requestIndex(12, { through: "10" } as never)).toThrow(/fold/);
    expect(requestIndex(12, fold, 1)).toBe(4);
  });
});

describe("vetoedBy", () => {
  it("names the first hook that ran and vetoed: its name, else its id, else a generic name", () => {
    expect(vetoedBy([{ name: "keep", veto: true }])).toBe("keep");
    expect(vetoedBy([{ id: "guard", name: "", veto: true }])).toBe("guard");
    expect(vetoedBy([{ veto: true }])).toBe("a beforeCompact hook");
    expect(
      vetoedBy([
        { name: "broken", ok: false, veto: true },
        { name: "second", veto: true },
      ]),
    ).toBe("second");
    expect(vetoedBy([{ name: "threw", error: "x", veto: true }])).toBeUndefined();
  });

  it("answers undefined for no veto and for junk, without throwing", () => {
    expect(vetoedBy([{ name: "fine", ok: true }])).toBeUndefined();
    expect(vetoedBy([null, 3, "veto", { veto: "yes" }])).toBeUndefined();
    expect(vetoedBy({ veto: true })).toBeUndefined();
    expect(vetoedBy(undefined)).toBeUndefined();
  });

  it("skips an outcome that throws when read, as the hook runner's junk it is", () => {
    const unreadable = Object.defineProperty({ name: "proxy" }, "veto", {
      enumerable: true,
      get() {
        throw new Error("revoked");
      },
    });
    expect(vetoedBy([unreadable])).toBeUndefined();
    expect(vetoedBy([unreadable, { name: "keeper", veto: true }])).toBe("keeper");
  });
  it("reads error: null (JSON's no error) as no failure, so the veto stands", () => {
    const wire = JSON.parse('[{"name":"Guard","ok":true,"error":null,"veto":true}]') as unknown;
    expect(vetoedBy(wire)).toBe("Guard");
  });

  it("reads a list whose entry or length throws up to there, never throwing", () => {
    const list: unknown[] = [{ name: "first", veto: false }];
    Object.defineProperty(list, 1, {
      enumerable: true,
      get() {
        throw new Error("index getter");
      },
    });
    list.push({ name: "late", veto: true });
    expect(vetoedBy(list)).toBeUndefined();
    // A place the list does not list as its own (a non-enumerable getter) is passed over as a hole,
    // as hooks' consult passes it: the veto after it holds.
    const hidden: unknown[] = [{ name: "first", veto: false }];
    Object.defineProperty(hidden, 1, {
      get() {
        throw new Error("index getter");
      },
    });
    hidden.push({ name: "late", veto: true });
    expect(vetoedBy(hidden)).toBe("late");
    const early: unknown[] = [{ name: "early", veto: true }];
    Object.defineProperty(early, 1, {
      enumerable: true,
      get() {
        throw new Error("index getter");
      },
    });
    expect(vetoedBy(early)).toBe("early");
    const trap = new Proxy([], {
      get(target, key) {
        if (key === "length") throw new Error("length trap");
        return Reflect.get(target, key);
      },
    });
    expect(vetoedBy(trap)).toBeUndefined();
  });
});
