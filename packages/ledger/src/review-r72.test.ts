// Review r72 (ledger): a divisor so small its estimates overflow, roles that throw when read in the
// compaction functions, and an already-aborted signal given to runCompaction.

import { describe, expect, it } from "vitest";
import { createCalibration } from "./calibration.js";
import { estimateFrom, type LedgerEntry, tokensBetween } from "./ledger.js";
import type { MessageLike } from "./messages.js";
import { type CompactionPlan, planCompaction } from "./plan-compaction.js";
import { pruneToolResults } from "./prune.js";
import { applyCompaction, compactTranscript, runCompaction } from "./run-compaction.js";
import { messages, plan } from "./test-support/fold.js";
import { contextTokens, estimateTokens, messageTokens, requestTokens, toolTokens } from "./tokens.js";

const tools = [{ type: "function", function: { name: "read_file", parameters: { type: "object" } } }];
const ledger: LedgerEntry[] = [{ through: 1, prompt: 60, epoch: 0 }];

describe("R72L-1: a charsPerToken so small the estimates overflow is refused like 0 and NaN", () => {
  // 1e-320 is a denormal: 1 / 1e-320 is Infinity. 1e-306 gives a finite count per text but sums past
  // Number.MAX_VALUE. 1e-9 counts a thousand million tokens a character: no tokenizer does.
  const estimators: [string, (charsPerToken: number) => unknown][] = [
    ["estimateTokens", (charsPerToken) => estimateTokens("abc", { charsPerToken })],
    ["messageTokens", (charsPerToken) => messageTokens(messages[1] as MessageLike, { charsPerToken })],
    ["toolTokens", (charsPerToken) => toolTokens(tools, { charsPerToken })],
    ["requestTokens", (charsPerToken) => requestTokens({ messages, tools }, { charsPerToken })],
    ["contextTokens", (charsPerToken) => contextTokens({ messages, tools }, { charsPerToken })],
    ["tokensBetween", (charsPerToken) => tokensBetween(ledger, 0, 4, messages, { charsPerToken })],
    [
      "estimateFrom",
      (charsPerToken) => estimateFrom(ledger, messages, { charsPerToken })(messages[3] as MessageLike, 3),
    ],
    ["planCompaction", (charsPerToken) => planCompaction(messages, { limit: 100, charsPerToken })],
  ];
  for (const [name, run] of estimators) {
    for (const charsPerToken of [1e-320, Number.MIN_VALUE, 1e-306, 1e-9]) {
      it(`${name} refuses charsPerToken ${charsPerToken} as invalid-option naming it`, () => {
        expect(() => run(charsPerToken)).toThrow(
          expect.objectContaining({
            name: "LedgerError",
            code: "invalid-option",
            message: expect.stringMatching(/charsPerToken must be .*, and was/),
          }),
        );
      });
    }
    it(`${name} still takes a divisor of a hundredth and one under a character (0.3)`, () => {
      expect(() => run(0.01)).not.toThrow();
      expect(() => run(0.3)).not.toThrow();
    });
  }
  it("counts 0.01 characters a token as a hundred tokens a character", () => {
    expect(estimateTokens("abc", { charsPerToken: 0.01 })).toBe(300);
  });
});

describe("R72L-2: a message whose role or content throws when read, in the compaction functions", () => {
  const throwing = (field: "role" | "content") => {
    const message: Record<string, unknown> = { role: "assistant", content: "Done." };
    Object.defineProperty(message, field, {
      enumerable: true,
      get() {
        throw new Error("boom");
      },
    });
    return message as unknown as MessageLike;
  };
  const calls: [string, (messages: MessageLike[]) => unknown][] = [
    ["pruneToolResults", (m) => pruneToolResults(m, { keepLast: 0, maxChars: 0 })],
    ["planCompaction", (m) => planCompaction(m, { limit: 10 })],
    ["applyCompaction", (m) => applyCompaction(m, { summary: "s", through: 3, at: 0 })],
    ["runCompaction", (m) => runCompaction(m, plan as CompactionPlan, () => "s")],
    ["compactTranscript", (m) => compactTranscript(m, plan as CompactionPlan, () => "s")],
  ];
  for (const field of ["role", "content"] as const) {
    for (const [name, call] of calls) {
      it(`${name} throws LedgerError invalid-messages naming the message whose ${field} threw`, async () => {
        const transcript = [messages[0], messages[1], throwing(field), messages[3]] as MessageLike[];
        let caught: unknown;
        try {
          await call(transcript);
        } catch (error) {
          caught = error;
        }
        expect(caught).toMatchObject({
          name: "LedgerError",
          code: "invalid-messages",
          message: expect.stringContaining(`messages[2]`),
        });
        expect((caught as Error).message).toContain(field);
        expect((caught as Error).cause).toEqual(new Error("boom"));
      });
    }
  }
});

describe("R72L-3: runCompaction with a signal already aborted", () => {
  for (const honourVeto of [true, false]) {
    it(`runs no hook and no summariser, and rejects with LedgerError aborted (honourVeto ${honourVeto})`, async () => {
      const ran: string[] = [];
      const reason = new Error("user pressed stop");
      const controller = new AbortController();
      controller.abort(reason);
      const run = runCompaction(
        messages,
        plan as CompactionPlan,
        () => {
          ran.push("summarise");
          return "a summary";
        },
        {
          signal: controller.signal,
          hooks: {
            honourVeto,
            run: () => {
              ran.push("hooks");
              return [];
            },
          },
        },
      );
      await expect(run).rejects.toMatchObject({ name: "LedgerError", code: "aborted", cause: reason });
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(ran).toEqual([]);
    });
  }

  it("compactTranscript rejects the same way, and a signal-like { aborted: true } counts", async () => {
    let summarised = false;
    const summarise = () => {
      summarised = true;
      return "a summary";
    };
    await expect(
      compactTranscript(messages, plan as CompactionPlan, summarise, { signal: { aborted: true } }),
    ).rejects.toMatchObject({ name: "LedgerError", code: "aborted" });
    expect(summarised).toBe(false);
  });

  it("does not call the summariser when the signal is aborted while honoured hooks run", async () => {
    const controller = new AbortController();
    let summarised = false;
    const run = runCompaction(
      messages,
      plan as CompactionPlan,
      () => {
        summarised = true;
        return "a summary";
      },
      {
        signal: controller.signal,
        hooks: {
          honourVeto: true,
          run: async () => {
            controller.abort();
            return [];
          },
        },
      },
    );
    await expect(run).rejects.toMatchObject({ name: "LedgerError", code: "aborted" });
    expect(summarised).toBe(false);
  });

  it("still folds with a signal that is not aborted", async () => {
    const fold = await runCompaction(messages, plan as CompactionPlan, () => "a summary", {
      signal: new AbortController().signal,
    });
    expect(fold).toMatchObject({ summary: "a summary", through: 3 });
  });
});

describe("R72L-4: planCompaction and runCompaction take no number that is no token count and no previous that is no text", () => {
  const long: MessageLike[] = [{ role: "system", content: "sys" }];
  for (let i = 0; i < 20; i++) {
    long.push({ role: "user", content: "q".repeat(100) }, { role: "assistant", content: "a".repeat(100) });
  }

  for (const cost of [1e308, 2 ** 60]) {
    it(`an estimate answering ${cost} (past 2^53 - 1) is refused, not summed to a plan of Infinity and NaN`, () => {
      expect(() => planCompaction(long, { limit: 500, target: 0.5, estimate: () => cost })).toThrow(
        expect.objectContaining({
          code: "invalid-option",
          message: expect.stringContaining("estimate answered"),
        }),
      );
    });
  }

  it("an estimate of whole token counts still plans", () => {
    const plan = planCompaction(long, { limit: 500, target: 0.5, estimate: () => 100 });
    expect(plan).toMatchObject({ from: 1, through: 39, used: 4100, folded: 3800, kept: 200 });
  });

  for (const previous of [42, {}, ["notes"]]) {
    it(`planCompaction refuses a previous of ${JSON.stringify(previous)} (it went into the plan and on to the summariser)`, () => {
      expect(() => planCompaction(long, { limit: 500, previous } as never)).toThrow(
        expect.objectContaining({ code: "invalid-option", message: expect.stringContaining("previous") }),
      );
    });

    it(`runCompaction refuses a plan whose previous is ${JSON.stringify(previous)} before the summariser is called`, async () => {
      let handed: unknown = "not called";
      const plan = { from: 1, through: 39, previous } as unknown as CompactionPlan;
      await expect(
        runCompaction(long, plan, (_stretch, earlier) => {
          handed = earlier;
          return "s";
        }),
      ).rejects.toMatchObject({ code: "invalid-option", message: expect.stringContaining("previous") });
      expect(handed).toBe("not called");
    });
  }

  it("a previous summary as text is handed on", async () => {
    let handed: unknown;
    await runCompaction(
      long,
      { from: 1, through: 39, previous: "earlier notes" } as CompactionPlan,
      (_s, earlier) => {
        handed = earlier;
        return "s";
      },
    );
    expect(handed).toBe("earlier notes");
    expect(planCompaction(long, { limit: 500, previous: "earlier notes" })?.previous).toBe("earlier notes");
  });

  it("a previous of null (a plan stored as a row) is none", async () => {
    let handed: unknown = "not called";
    await runCompaction(
      long,
      { from: 1, through: 39, previous: null } as unknown as CompactionPlan,
      (_s, earlier) => {
        handed = earlier;
        return "s";
      },
    );
    expect(handed).toBeUndefined();
    expect(planCompaction(long, { limit: 500, previous: null } as never)).not.toHaveProperty("previous");
  });
});

describe("R72L-5: a calibration model that is not a name", () => {
  const body = { messages: [{ role: "user", content: "x".repeat(300) }] as MessageLike[] };
  for (const model of [42, { id: "qwen3" }, ["qwen3"], true]) {
    it(`calibrate and charsPerTokenFor refuse model ${JSON.stringify(model)} (a reading no name could find)`, () => {
      const store = createCalibration();
      expect(() => store.calibrate("http://127.0.0.1:8080/v1", model as never, body, 100)).toThrow(
        expect.objectContaining({ code: "invalid-option", message: expect.stringContaining("model") }),
      );
      expect(() => store.charsPerTokenFor("http://127.0.0.1:8080/v1", model as never)).toThrow(
        expect.objectContaining({ code: "invalid-option", message: expect.stringContaining("model") }),
      );
    });
  }

  it("a name, none or null reads back what was taken under it", () => {
    const store = createCalibration();
    expect(store.calibrate("e", "qwen3", body, 100)).toBe(3);
    expect(store.charsPerTokenFor("e", "qwen3")).toBe(3);
    expect(store.calibrate("e", undefined, body, 50)).toBe(6);
    expect(store.charsPerTokenFor("e", null as never)).toBe(6);
    expect(store.charsPerTokenFor("e")).toBe(6);
  });
});
