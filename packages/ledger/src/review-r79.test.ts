// Review r79 (ledger): a summary holding a lone surrogate, and a stop while the summary is written.

import { getEventListeners } from "node:events";
import { growth } from "@loopwright/testkit";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LedgerError } from "./errors.js";
import { canonicalJson, type MessageLike, sameMessage } from "./messages.js";
import { pruneToolResults } from "./prune.js";
import { applyCompaction, compactTranscript, runCompaction } from "./run-compaction.js";
import { messages, plan } from "./test-support/fold.js";

/** Rejects with a LedgerError of `code`, answering it. */
async function rejectsWith(work: Promise<unknown>, code: string): Promise<LedgerError> {
  const error = await work.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(LedgerError.isInstance(error)).toBe(true);
  expect((error as LedgerError).code).toBe(code);
  return error as LedgerError;
}

describe("R79L-1: a summary holding a lone surrogate", () => {
  it("runCompaction writes it U+FFFD: the fold rides on every later request, and llama.cpp refuses invalid UTF-8", async () => {
    const fold = await runCompaction(messages, plan, () => "Read NOTES.md \ud83d and stopped.");
    expect(fold?.summary).toBe("Read NOTES.md \ufffd and stopped.");
    expect(fold?.summary.isWellFormed()).toBe(true);
  });

  it("applyCompaction writes a stored fold's lone surrogate U+FFFD, and keeps a whole emoji", () => {
    const after = applyCompaction(messages, { summary: "cut \udc00 here, kept 😀", through: 3, at: 0 });
    const summary = after[1]?.content as string;
    expect(summary.isWellFormed()).toBe(true);
    expect(summary.endsWith("cut \ufffd here, kept 😀")).toBe(true);
  });
});

describe("R79L-2: a stop while the summary is written", () => {
  it("a summariser that gives up because the signal fired rejects as aborted, not summary-failed", async () => {
    const controller = new AbortController();
    const reason = new Error("the user stopped the run");
    const error = await rejectsWith(
      runCompaction(
        messages,
        plan,
        async () => {
          controller.abort(reason);
          throw new DOMException("This operation was aborted", "AbortError");
        },
        { signal: controller.signal },
      ),
      "aborted",
    );
    expect(error.cause).toBe(reason);
  });

  it("a summary that comes back after the stop is no fold: compactTranscript rejects as aborted", async () => {
    const controller = new AbortController();
    await rejectsWith(
      compactTranscript(
        messages,
        plan,
        async () => {
          controller.abort();
          return "The user asked twice.";
        },
        { signal: controller.signal },
      ),
      "aborted",
    );
  });

  it("a summariser that fails with the signal still live is summary-failed, and one that succeeds folds", async () => {
    const controller = new AbortController();
    await rejectsWith(
      runCompaction(
        messages,
        plan,
        () => {
          throw new Error("502 from the summary model");
        },
        { signal: controller.signal },
      ),
      "summary-failed",
    );
    const fold = await runCompaction(messages, plan, () => "The user asked twice.", {
      signal: controller.signal,
    });
    expect(fold?.summary).toBe("The user asked twice.");
  });
});

/** What `work` settled to within `ms`, or "still pending". */
async function within(work: Promise<unknown>, ms: number): Promise<unknown> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise((resolve) => {
    timer = setTimeout(() => resolve("still pending"), ms);
  });
  try {
    return await Promise.race([
      work.then(
        (value) => value,
        (error: unknown) => error,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

describe("R79L-3: a stop while a hook or the summariser never answers", () => {
  it("an honoured hook runner that never settles does not hold a stopped compaction: it rejects as aborted", async () => {
    const controller = new AbortController();
    let summarised = false;
    const work = runCompaction(
      messages,
      plan,
      () => {
        summarised = true;
        return "The user asked twice.";
      },
      { signal: controller.signal, hooks: { run: () => new Promise(() => {}), honourVeto: true } },
    );
    setTimeout(() => controller.abort(new Error("the user stopped the run")), 20);
    const error = await within(work, 2_000);
    expect(LedgerError.isInstance(error)).toBe(true);
    expect((error as LedgerError).code).toBe("aborted");
    expect(((error as LedgerError).cause as Error).message).toBe("the user stopped the run");
    expect(summarised).toBe(false);
  });

  it("a summariser that ignores the signal does not hold compactTranscript either", async () => {
    const controller = new AbortController();
    const work = compactTranscript(messages, plan, () => new Promise<string>(() => {}), {
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 20);
    const error = await within(work, 2_000);
    expect(LedgerError.isInstance(error)).toBe(true);
    expect((error as LedgerError).code).toBe("aborted");
  });

  it("nor one that fires the signal itself as it starts and never answers", async () => {
    const controller = new AbortController();
    const work = runCompaction(
      messages,
      plan,
      () => {
        controller.abort();
        return new Promise<string>(() => {});
      },
      { signal: controller.signal },
    );
    const error = await within(work, 2_000);
    expect(LedgerError.isInstance(error)).toBe(true);
    expect((error as LedgerError).code).toBe("aborted");
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("takes its listener off the signal once the fold is made", async () => {
    const controller = new AbortController();
    const fold = await runCompaction(messages, plan, async () => "The user asked twice.", {
      signal: controller.signal,
      hooks: { run: async () => [], honourVeto: true },
    });
    expect(fold?.summary).toBe("The user asked twice.");
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });
});

describe("R79L-4: a hook runner or summariser that throws a megabyte of text", () => {
  const page = `<html>\n${"x".repeat(1_000_000)}</html>`;

  it("costs a line in the summary-failed message, not the megabyte (a server's error page quoted whole)", async () => {
    const error = await rejectsWith(
      runCompaction(messages, plan, () => {
        throw new Error(page);
      }),
      "summary-failed",
    );
    expect(error.message.length).toBeLessThan(500);
    expect(error.message).toContain("<html> xxx");
    expect(error.message).not.toContain("\n");
    expect((error.cause as Error).message).toBe(page);
  });

  it("costs a line in the note a failed hook runner makes, written well-formed", async () => {
    const notes: string[] = [];
    await runCompaction(messages, plan, () => "The user asked twice.", {
      hooks: {
        run: () => {
          throw new Error(`\ud83d${page}\n    at runner (hooks.js:1:1)`);
        },
        honourVeto: true,
        onNote: (text) => notes.push(text),
      },
    });
    expect(notes).toHaveLength(1);
    expect(notes[0]?.length).toBeLessThan(400);
    expect(notes[0]?.isWellFormed()).toBe(true);
    expect(notes[0]).toContain("could not be run: \ufffd<html> xxx");
    expect(notes[0]).not.toContain("\n");
  });
});

describe("R79L-5: hooks that are not a runner", () => {
  for (const [label, hooks] of [
    ["no run (a misspelt runner)", { runner: () => [{ name: "Guard", veto: true }], honourVeto: true }],
    ["a run that is not a function", { run: "beforeCompact", honourVeto: true }],
    ["an onNote that is not a function", { run: () => [], onNote: { log: () => {} } }],
    ["a string", "guard"],
  ] as const) {
    it(`are refused as invalid-option before the summariser runs: ${label} (the fold went ahead unasked)`, async () => {
      let summarised = false;
      const error = await rejectsWith(
        runCompaction(
          messages,
          plan,
          () => {
            summarised = true;
            return "The user asked twice.";
          },
          { hooks: hooks as never },
        ),
        "invalid-option",
      );
      expect(error.message).toContain("runCompaction: hooks must be { run,");
      expect(summarised).toBe(false);
    });
  }

  it("none, null, and a runner with no onNote still fold", async () => {
    for (const hooks of [undefined, null, { run: () => [] }]) {
      const fold = await runCompaction(messages, plan, () => "The user asked twice.", {
        hooks: hooks as never,
      });
      expect(fold?.summary).toBe("The user asked twice.");
    }
  });
});

describe("R79L-6: a tool result carrying a screenshot", () => {
  const shot = (id: string): MessageLike => ({
    role: "tool",
    tool_call_id: id,
    content: [
      { type: "text", text: "Screenshot taken." },
      { type: "image_url", image_url: { url: `data:image/png;base64,${"A".repeat(200_000)}` } },
    ],
  });
  const transcript: MessageLike[] = [
    { role: "user", content: "Check the page after each click." },
    shot("1"),
    shot("2"),
    shot("3"),
  ];

  it("is cleared beyond keepLast however short its text (the image costs the server hundreds of tokens)", () => {
    const pruned = pruneToolResults(transcript, { keepLast: 1 });
    expect(pruned[1]).toEqual({
      role: "tool",
      tool_call_id: "1",
      content: "[result cleared, 17 chars, 1 media part]",
    });
    expect(pruned[2]?.content).toBe("[result cleared, 17 chars, 1 media part]");
    expect(pruned[3]).toBe(transcript[3]);
  });

  it("and pruning again changes nothing: the stub is known as one", () => {
    const once = pruneToolResults(transcript, { keepLast: 1 });
    const twice = pruneToolResults([...once, shot("4")], { keepLast: 1, maxChars: 0 });
    expect(twice.slice(0, 3)).toEqual(once.slice(0, 3));
    expect(twice[1]).toBe(once[1]);
    expect(twice[3]?.content).toBe("[result cleared, 17 chars, 1 media part]");
  });

  it("a short text-only result is still left alone", () => {
    const short: MessageLike = { role: "tool", tool_call_id: "9", content: [{ type: "text", text: "ok" }] };
    expect(pruneToolResults([short, shot("1")], { keepLast: 0 })[0]).toBe(short);
  });
});

describe("R79L-7: a message read back with its keys in another order, nested deep", () => {
  /** Tool-call arguments a host stored parsed, `depth` levels deep over `text`, keys in `order`. */
  const stored = (depth: number, text: string, reversed: boolean): MessageLike => {
    let value: Record<string, unknown> = { text };
    for (let level = 0; level < depth; level++)
      value = reversed ? { z: level, a: value } : { a: value, z: level };
    return {
      role: "assistant",
      content: "",
      tool_calls: [{ id: "c1", type: "function", function: { name: "save", arguments: value as never } }],
    };
  };

  it("is known again in time linear in its size (2,000 levels over 200 kB took 27 s: a copy of the whole per level)", async () => {
    /** The message sent and read back, `n` levels over 100n characters. */
    const pair = (n: number) =>
      [stored(n, "x".repeat(100 * n), false), stored(n, "x".repeat(100 * n), true)] as const;
    const pairs = new Map([125, 2_000].map((n) => [n, pair(n)]));
    // 2,000 levels over 200 kB against 125 over 12.5 kB, timed in the same run: linear work (levels
    // plus size) is about 16 times as long, a copy of the whole per level (levels times size) 256.
    // The bound sits between them, four times from each (a ratio of two timings moved 3 to 4 times
    // on a loaded CI host, so a factor of 8 against a bound of 30 left linear work little room).
    // Each side compares ten times over, so the smaller lasts some milliseconds (once, a third of
    // one, where a pause in the larger weighed more); 4,000 levels overflow the reader's stack.
    const compare = (n: number) => {
      const [sent, readBack] = pairs.get(n) as ReturnType<typeof pair>;
      for (let round = 0; round < 10; round++) expect(sameMessage(sent, readBack)).toBe(true);
    };
    expect(await growth(compare, 125, 16)).toBeLessThan(64);
    const [sent] = pair(2_000);
    expect(sameMessage(sent, stored(2_000, `${"x".repeat(200_000)}y`, true))).toBe(false);
  });

  it("property: writes any JSON value as JSON that reads back as the value, whatever its key order", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = canonicalJson(value);
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(value) ?? "null"));
        const reordered = JSON.parse(JSON.stringify(value), (_key, item: unknown) =>
          typeof item === "object" && item !== null && !Array.isArray(item)
            ? Object.fromEntries(Object.entries(item).reverse())
            : item,
        );
        expect(canonicalJson(reordered)).toBe(text);
      }),
    );
  });

  it("leaves out what JSON leaves out, and drops a top-level null only when asked", () => {
    const value = { b: undefined, a: [undefined, () => 1, 2], c: null, d: { e: undefined, f: 1 } };
    expect(canonicalJson(value)).toBe('{"a":[null,null,2],"c":null,"d":{"f":1}}');
    expect(canonicalJson(value, true)).toBe('{"a":[null,null,2],"d":{"f":1}}');
    expect(canonicalJson(undefined)).toBe("");
    expect(canonicalJson({ when: new Date(0) })).toBe('{"when":"1970-01-01T00:00:00.000Z"}');
  });
});
