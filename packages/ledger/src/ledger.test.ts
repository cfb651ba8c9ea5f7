import { countTokens, createPrefixCache, renderPrompt } from "@loopwright/testkit";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { LedgerError } from "./errors.js";
import { estimateFrom, type LedgerEntry, rebaseLedger, recordRequest, tokensBetween } from "./ledger.js";
import type { MessageLike } from "./messages.js";
import { messageTokens } from "./tokens.js";

/** What a stretch of messages really costs under the testkit's template and token rule. */
function trueCost(messages: readonly MessageLike[]): number {
  // renderPrompt ends every prompt with the generation prompt `<|assistant|>\n`: two tokens.
  return countTokens(renderPrompt({ messages })) - 2;
}

/** A conversation as the requests a loop would send: each request is a prefix of the transcript. */
interface Scripted {
  transcript: MessageLike[];
  /** The length of the transcript each request sent. */
  sends: number[];
}

const text = fc.string({ maxLength: 120 });

const conversation: fc.Arbitrary<Scripted> = fc
  .record({
    system: fc.option(text, { nil: undefined }),
    questions: fc.array(
      fc.record({
        question: text,
        steps: fc.array(
          fc.array(fc.tuple(fc.constantFrom("read", "grep"), text, text), { minLength: 1, maxLength: 3 }),
          {
            maxLength: 3,
          },
        ),
        answer: text,
      }),
      { minLength: 1, maxLength: 5 },
    ),
  })
  .map(({ system, questions }) => {
    const transcript: MessageLike[] = system === undefined ? [] : [{ role: "system", content: system }];
    const sends: number[] = [];
    let id = 0;
    for (const { question, steps, answer } of questions) {
      transcript.push({ role: "user", content: question });
      sends.push(transcript.length);
      for (const calls of steps) {
        const ids = calls.map(() => `call_${id++}`);
        transcript.push({
          role: "assistant",
          content: "",
          tool_calls: calls.map(([name, args], i) => ({
            id: ids[i] as string,
            type: "function",
            function: { name, arguments: JSON.stringify({ q: args }) },
          })),
        });
        calls.forEach(([, , result], i) => {
          transcript.push({ role: "tool", tool_call_id: ids[i] as string, content: result });
        });
        sends.push(transcript.length);
      }
      transcript.push({ role: "assistant", content: answer });
    }
    return { transcript, sends };
  });

/** Records a ledger the way a loop would, with the testkit's exact prompt counts. */
function recordAll({ transcript, sends }: Scripted, tools: unknown[] = []): LedgerEntry[] {
  const cache = createPrefixCache();
  let ledger: LedgerEntry[] = [];
  let previous: { messages: MessageLike[]; tools: unknown[] } | undefined;
  for (const length of sends) {
    const request = { messages: transcript.slice(0, length), tools };
    const { promptTokens, cachedTokens } = cache.process(request);
    ledger = recordRequest(ledger, previous, { ...request, prompt: promptTokens, cached: cachedTokens });
    previous = request;
  }
  return ledger;
}

describe("recordRequest", () => {
  const a: MessageLike = { role: "user", content: "one" };
  const b: MessageLike = { role: "assistant", content: "two" };
  const c: MessageLike = { role: "user", content: "three" };

  it("keeps the epoch while a request only appends, and starts one when it did more", () => {
    let ledger = recordRequest([], undefined, { messages: [a], prompt: 10 });
    ledger = recordRequest(ledger, { messages: [a] }, { messages: [a, b, c], prompt: 20 });
    expect(ledger).toEqual([
      { through: 0, prompt: 10, epoch: 0 },
      { through: 2, prompt: 20, epoch: 0 },
    ]);
    const rewritten = { role: "user", content: "ONE" };
    ledger = recordRequest(
      ledger,
      { messages: [a, b, c] },
      { messages: [rewritten, b, c, b, c], prompt: 30 },
    );
    expect(ledger[2]).toEqual({ through: 4, prompt: 30, epoch: 1 });
  });

  it("starts an epoch when the tools changed, though every message is the same", () => {
    let ledger = recordRequest([], undefined, { messages: [a], prompt: 10, tools: [] });
    ledger = recordRequest(
      ledger,
      { messages: [a] },
      { messages: [a, b, c], prompt: 40, tools: [{ name: "x" }] },
    );
    expect(ledger[1]?.epoch).toBe(1);
  });

  it("records nothing for an unreported prompt, or one smaller than its cache count", () => {
    const ledger = recordRequest([], undefined, { messages: [a], prompt: 10 });
    expect(recordRequest(ledger, { messages: [a] }, { messages: [a, b, c] })).toEqual(ledger);
    expect(recordRequest(ledger, { messages: [a] }, { messages: [a, b, c], prompt: 0 })).toEqual(ledger);
    expect(recordRequest(ledger, { messages: [a] }, { messages: [a, b, c], prompt: 5, cached: 9 })).toEqual(
      ledger,
    );
  });

  it("does not trust a prompt that did not grow: it goes into an epoch of its own", () => {
    let ledger = recordRequest([], undefined, { messages: [a], prompt: 10 });
    ledger = recordRequest(ledger, { messages: [a] }, { messages: [a, b, c], prompt: 10 });
    expect(ledger[1]?.epoch).toBe(1);
    expect(tokensBetween(ledger, 1, 3, [a, b, c])).toBe(messageTokens(b) + messageTokens(c));
  });

  it("leaves the ledger it was given unchanged, and refuses one that is not a ledger", () => {
    const ledger = Object.freeze([{ through: 0, prompt: 10, epoch: 0 }]);
    recordRequest(ledger, { messages: [a] }, { messages: [a, b], prompt: 12 });
    expect(ledger).toHaveLength(1);
    expect(() => recordRequest([{ through: "x" }] as never, undefined, { messages: [a], prompt: 1 })).toThrow(
      LedgerError,
    );
  });
});

describe("tokensBetween", () => {
  it("equals the true cost of any stretch between two boundaries of one epoch", () => {
    fc.assert(
      fc.property(conversation, fc.nat(), fc.nat(), (scripted, i, j) => {
        const ledger = recordAll(scripted);
        fc.pre(ledger.length >= 2);
        const x = ledger[i % ledger.length] as LedgerEntry;
        const y = ledger[j % ledger.length] as LedgerEntry;
        const [lo, hi] = x.through <= y.through ? [x, y] : [y, x];
        fc.pre(lo.epoch === hi.epoch && lo.through < hi.through);
        const { transcript } = scripted;
        expect(tokensBetween(ledger, lo.through + 1, hi.through + 1, transcript)).toBe(
          trueCost(transcript.slice(lo.through + 1, hi.through + 1)),
        );
      }),
      propertyRuns(300),
    );
  });

  it("is exact with a tool array in front, which cancels between two requests", () => {
    fc.assert(
      fc.property(conversation, (scripted) => {
        const ledger = recordAll(scripted, [
          { type: "function", function: { name: "read", parameters: {} } },
        ]);
        const first = ledger[0] as LedgerEntry;
        const last = ledger[ledger.length - 1] as LedgerEntry;
        fc.pre(last.through > first.through);
        expect(tokensBetween(ledger, first.through + 1, last.through + 1, scripted.transcript)).toBe(
          trueCost(scripted.transcript.slice(first.through + 1, last.through + 1)),
        );
      }),
    );
  });

  it("estimates what no pair of entries covers: before the first entry and after the last", () => {
    const transcript: MessageLike[] = [
      { role: "user", content: "x".repeat(40) },
      { role: "assistant", content: "y".repeat(40) },
      { role: "user", content: "z".repeat(40) },
    ];
    const ledger = [{ through: 0, prompt: 100, epoch: 0 }];
    expect(tokensBetween(ledger, 0, 3, transcript)).toBe(30);
  });

  it("shares a group's measured cost by characters for a stretch that ends inside it", () => {
    const transcript: MessageLike[] = [
      { role: "user", content: "q" },
      { role: "assistant", content: "a".repeat(30) },
      { role: "tool", tool_call_id: "1", content: "t".repeat(10) },
    ];
    const ledger = [
      { through: 0, prompt: 50, epoch: 0 },
      { through: 2, prompt: 90, epoch: 0 },
    ];
    expect(tokensBetween(ledger, 1, 2, transcript)).toBe(30);
    expect(tokensBetween(ledger, 2, 3, transcript)).toBe(10);
    expect(tokensBetween(ledger, 1, 3, transcript)).toBe(40);
  });

  it("refuses a range outside the transcript", () => {
    expect(() => tokensBetween([], 0, 2, [{ role: "user", content: "" }])).toThrow(/from and to/);
  });
});

describe("estimateFrom", () => {
  it("gives each message its measured share, adding up to what tokensBetween says", () => {
    fc.assert(
      fc.property(conversation, (scripted) => {
        const ledger = recordAll(scripted);
        const estimate = estimateFrom(ledger, scripted.transcript);
        const sum = scripted.transcript.reduce((total, message, i) => total + estimate(message, i), 0);
        expect(Math.round(sum)).toBe(
          tokensBetween(ledger, 0, scripted.transcript.length, scripted.transcript),
        );
      }),
    );
  });
});

describe("estimateFrom on a transcript read back from storage", () => {
  it("still measures messages that are equal rather than identical, and estimates a changed one", () => {
    fc.assert(
      fc.property(conversation, (scripted) => {
        const ledger = recordAll(scripted);
        const estimate = estimateFrom(ledger, scripted.transcript);
        const stored = JSON.parse(JSON.stringify(scripted.transcript)) as MessageLike[];
        stored.forEach((message, i) => {
          expect(estimate(message, i)).toBe(estimate(scripted.transcript[i] as MessageLike, i));
        });
      }),
    );
    const transcript: MessageLike[] = [
      { role: "user", content: "q" },
      { role: "assistant", content: "a" },
      { role: "user", content: "q2" },
    ];
    const ledger = [
      { through: 0, prompt: 10, epoch: 0 },
      { through: 2, prompt: 110, epoch: 0 },
    ];
    const estimate = estimateFrom(ledger, transcript);
    expect(estimate({ role: "assistant", content: "a" }, 1)).toBeCloseTo(100 / 3);
    expect(estimate({ role: "assistant", content: "changed since" }, 1)).toBe(4);
  });
});

describe("rebaseLedger", () => {
  it("gives back the same ledger when nothing moved", () => {
    fc.assert(
      fc.property(conversation, (scripted) => {
        const ledger = recordAll(scripted);
        expect(rebaseLedger(ledger, scripted.transcript, scripted.transcript)).toEqual(ledger);
      }),
    );
  });

  it("moves kept entries to their new indexes after a fold, and their differences stay exact", () => {
    fc.assert(
      fc.property(conversation, fc.nat(), (scripted, pick) => {
        const { transcript } = scripted;
        const ledger = recordAll(scripted);
        const users = transcript.flatMap((m, i) => (m.role === "user" && i > 0 ? [i] : []));
        fc.pre(users.length > 0);
        const cut = users[pick % users.length] as number;
        const folded = [{ role: "system", content: "summary" }, ...transcript.slice(cut)];
        const moved = rebaseLedger(ledger, transcript, folded);
        for (let k = 1; k < moved.length; k++) {
          const a = moved[k - 1] as LedgerEntry;
          const b = moved[k] as LedgerEntry;
          if (a.epoch !== b.epoch) continue;
          expect(tokensBetween(moved, a.through + 1, b.through + 1, folded)).toBe(
            trueCost(folded.slice(a.through + 1, b.through + 1)),
          );
        }
        for (const entry of moved) expect(entry.through).toBeLessThan(folded.length);
      }),
    );
  });

  it("splits an epoch where a message inside a group was rewritten", () => {
    const m = (content: string): MessageLike => ({ role: "user", content });
    const before = [m("a"), m("b"), m("c"), m("d")];
    const ledger = [
      { through: 0, prompt: 10, epoch: 0 },
      { through: 2, prompt: 20, epoch: 0 },
      { through: 3, prompt: 25, epoch: 0 },
    ];
    const after = [before[0], m("B"), before[2], before[3]] as MessageLike[];
    expect(rebaseLedger(ledger, before, after)).toEqual([
      { through: 0, prompt: 10, epoch: 0 },
      { through: 2, prompt: 20, epoch: 1 },
      { through: 3, prompt: 25, epoch: 1 },
    ]);
  });
});

/**
 * A transcript as a row store hands it back: one column per field, null where the message had
 * none, and every object's keys in the order Postgres' jsonb (and MySQL's JSON) keeps them —
 * shorter keys first — rather than the order they were written in.
 */
function readBackFromRows(messages: readonly MessageLike[]): MessageLike[] {
  const columns = ["role", "content", "name", "tool_calls", "tool_call_id", "reasoning_content"];
  const jsonb = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(jsonb);
    if (typeof value !== "object" || value === null) return value;
    const keys = Object.keys(value).sort((x, y) => x.length - y.length || (x < y ? -1 : x > y ? 1 : 0));
    return Object.fromEntries(keys.map((key) => [key, jsonb((value as Record<string, unknown>)[key])]));
  };
  return messages.map((message) => {
    const row: Record<string, unknown> = {};
    for (const column of columns)
      row[column] = (message as unknown as Record<string, unknown>)[column] ?? null;
    return jsonb(row) as MessageLike;
  });
}

describe("a transcript stored as rows and read back", () => {
  // Assistant turns that carry their reasoning beside their calls, and tool messages written
  // { role, tool_call_id, content } as the loop writes them: both come back in another key order.
  const withReasoning: fc.Arbitrary<Scripted> = conversation.map(({ transcript, sends }) => ({
    sends,
    transcript: transcript.map((message) =>
      message.role === "tool"
        ? { role: "tool", tool_call_id: message.tool_call_id as string, content: message.content as string }
        : message.tool_calls
          ? {
              role: "assistant",
              content: "",
              reasoning_content: "look it up",
              tool_calls: message.tool_calls,
            }
          : message,
    ),
  }));

  it("is still the transcript the ledger measured: rebasing onto it keeps every entry", () => {
    fc.assert(
      fc.property(withReasoning, (scripted) => {
        const ledger = recordAll(scripted);
        expect(rebaseLedger(ledger, scripted.transcript, readBackFromRows(scripted.transcript))).toEqual(
          ledger,
        );
      }),
    );
  });

  it("measures each message read back as it measured the one sent", () => {
    fc.assert(
      fc.property(withReasoning, (scripted) => {
        const ledger = recordAll(scripted);
        const estimate = estimateFrom(ledger, scripted.transcript);
        readBackFromRows(scripted.transcript).forEach((message, i) => {
          expect(estimate(message, i)).toBe(estimate(scripted.transcript[i] as MessageLike, i));
        });
      }),
    );
  });

  it("keeps the epoch when the next request is built from the rows: it only appended", () => {
    fc.assert(
      fc.property(withReasoning, ({ transcript, sends }) => {
        const rows = readBackFromRows(transcript);
        let ledger: LedgerEntry[] = [];
        let previous: MessageLike[] | undefined;
        sends.forEach((length, k) => {
          // A host whose every request is read back from its store, and whose ledger's previous
          // request is the one it sent.
          const messages = rows.slice(0, length);
          ledger = recordRequest(ledger, previous && { messages: previous }, {
            messages,
            prompt: 100 * (k + 1),
          });
          previous = transcript.slice(0, length);
        });
        expect(ledger.map((entry) => entry.epoch)).toEqual(sends.map(() => 0));
      }),
    );
  });
});

describe("recordRequest with tools read back from a store", () => {
  it("keeps the epoch for the same tools with their keys in another order, and starts one for other tools", () => {
    const q: MessageLike = { role: "user", content: "what is in a.txt?" };
    const call: MessageLike = {
      role: "assistant",
      content: "",
      tool_calls: [{ id: "c1", type: "function", function: { name: "read", arguments: '{"p":"a.txt"}' } }],
    };
    const answer: MessageLike = { role: "tool", tool_call_id: "c1", content: "hello" };
    const sent = [
      {
        type: "function",
        function: { name: "read", description: "Reads a file.", parameters: { type: "object" } },
      },
    ];
    // jsonb's order: shorter keys first.
    const stored = [
      {
        type: "function",
        function: { name: "read", parameters: { type: "object" }, description: "Reads a file." },
      },
    ];
    const other = [
      {
        type: "function",
        function: { name: "read", parameters: { type: "object" }, description: "Reads files." },
      },
    ];
    const first = { messages: [q], tools: sent };
    const ledger = recordRequest([], undefined, { ...first, prompt: 40 });
    const next = { messages: [q, call, answer] };
    expect(recordRequest(ledger, first, { ...next, tools: stored, prompt: 60 }).at(-1)?.epoch).toBe(0);
    expect(recordRequest(ledger, first, { ...next, tools: other, prompt: 60 }).at(-1)?.epoch).toBe(1);
  });
});
