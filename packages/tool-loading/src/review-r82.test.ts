/**
 * Review r82 of tool loading: `heldDefinitions` kept what it read off a tool message only when its
 * content was a string, so a transcript whose `load_tools` answers are arrays of text parts (as a
 * host that stores every message's content as parts writes them) had every earlier answer split
 * and each definition line parsed again on every proxied load: a run's cost grew with the square of
 * its loads (10^3 loads of 200 tools: 2.6 ms a load in heldDefinitions, 0.9 ms with the answers kept).
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { heldDefinitions, holdsDefinitions, type MessageLike, proxyLoadResult } from "./load-result.js";
import { countEntries } from "./test-support/work.js";

const tools = Array.from({ length: 12 }, (_, i) => ({
  type: "function" as const,
  function: {
    name: `t${i}`,
    description: `tool ${i}`,
    parameters: { type: "object", properties: { a: { type: "string" } } },
  },
}));
const resolution = (names: string[]) => ({ names, unknown: [], overCap: [], cap: 50 });

/** A transcript of `loads` proxied loads, each answered with its text as one part (or `split` parts). */
const partsTranscript = (loads: number, split = false): MessageLike[] => {
  const messages: MessageLike[] = [{ role: "user", content: "go" }];
  for (let k = 0; k < loads; k++) {
    const id = `call_${k}`;
    messages.push({
      role: "assistant",
      content: null,
      tool_calls: [{ id, type: "function", function: { name: "load_tools", arguments: "{}" } }],
    });
    const text = proxyLoadResult(resolution([`t${k % tools.length}`]), tools, []);
    const cut = text.indexOf("\n") + 1;
    messages.push({
      role: "tool",
      tool_call_id: id,
      content: split
        ? [
            { type: "text", text: text.slice(0, cut) },
            { type: "text", text: text.slice(cut) },
          ]
        : [{ type: "text", text }],
    });
  }
  return messages;
};

afterEach(() => {
  vi.restoreAllMocks();
});

describe("r82-1: an answer written as parts is read once, not on every load", () => {
  it("parses no definition line again when the transcript is read again", () => {
    const messages = partsTranscript(40);
    expect([...heldDefinitions(messages, tools)].sort()).toEqual(tools.map((t) => t.function.name).sort());
    const parse = vi.spyOn(JSON, "parse");
    for (let i = 0; i < 5; i++) expect(heldDefinitions(messages, tools).size).toBe(tools.length);
    expect(heldDefinitions(messages).size).toBe(tools.length);
    // Before: every definition line of the 40 answers parsed on each of the six readings (240).
    expect(parse).toHaveBeenCalledTimes(0);
  });

  it("a long run (10^3 loads) parses each answer once", () => {
    const messages = partsTranscript(1000, true);
    const parse = vi.spyOn(JSON, "parse");
    const all = messages.slice(0, 1);
    for (let k = 1; k < messages.length; k++) {
      all.push(messages[k] as MessageLike);
      if (messages[k]?.role === "tool") heldDefinitions(all, tools);
    }
    // One definition line an answer: 10^3 parses, where each load read every answer before it (~5·10^5).
    expect(parse.mock.calls.length).toBe(1000);
  });
});

describe("r82-1: an answer changed after it was read is read again", () => {
  const oneLoad = () => partsTranscript(1).map((m) => ({ ...m })) as MessageLike[];
  const parts = (message: MessageLike) => message.content as { type: string; text: string }[];

  it("a part's text replaced in place", () => {
    const messages = oneLoad();
    const answer = messages[2] as MessageLike;
    expect([...heldDefinitions(messages, tools)]).toEqual(["t0"]);
    (parts(answer)[0] as { text: string }).text = "Compacted: the definitions were folded away.";
    expect([...heldDefinitions(messages, tools)]).toEqual([]);
    expect(holdsDefinitions(answer)).toBe(false);
  });

  it("a part added, a part removed, or the content replaced by another array or a string", () => {
    const messages = oneLoad();
    const answer = messages[2] as MessageLike;
    const text = (parts(answer)[0] as { text: string }).text;
    expect(heldDefinitions(messages).has("t0")).toBe(true);
    // A note after the hint: the answer no longer ends in it, so it hands over nothing.
    parts(answer).push({ type: "text", text: "\n(note)" });
    expect(heldDefinitions(messages).has("t0")).toBe(false);
    parts(answer).pop();
    expect(heldDefinitions(messages).has("t0")).toBe(true);
    // Another tool's definition in place of the first, as a new array and as a string.
    const other = text.replace(/"name":"t0"/, '"name":"t1"');
    answer.content = [{ type: "text", text: other }];
    expect([...heldDefinitions(messages)]).toEqual(["t1"]);
    answer.content = text;
    expect([...heldDefinitions(messages)]).toEqual(["t0"]);
    answer.content = [{ type: "text", text: other }];
    expect([...heldDefinitions(messages)]).toEqual(["t1"]);
  });

  it("a part with no text, a hole or null among the parts reads as no text, cached or not", () => {
    const messages = oneLoad();
    const answer = messages[2] as MessageLike;
    const text = (parts(answer)[0] as { text: string }).text;
    const cut = text.indexOf("\n") + 1;
    const content: unknown[] = [{ type: "text", text: text.slice(0, cut) }, null, { type: "image_url" }];
    content[4] = { type: "text", text: text.slice(cut) };
    answer.content = content;
    expect([...heldDefinitions(messages)]).toEqual(["t0"]);
    expect([...heldDefinitions(messages)]).toEqual(["t0"]);
    (content[2] as { text?: string }).text = "x";
    expect([...heldDefinitions(messages)]).toEqual([]);
  });
});

describe("r82-2: heldDefinitions and proxyLoadResult index the run's tools once, not on every call", () => {
  const N = 20_000;
  const many = () =>
    Array.from({ length: N }, (_, i) => ({
      type: "function" as const,
      function: { name: `tool_${i}`, description: `tool ${i}`, parameters: { type: "object" } },
    }));
  const transcript = (text: string): MessageLike[] => [
    {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "c", type: "function", function: { name: "load_tools", arguments: "{}" } }],
    },
    { role: "tool", tool_call_id: "c", content: text },
  ];

  it("twenty more calls on the same tools (20,000) walk less than one tool array", () => {
    // Counted, not timed (a ratio of two timings moved 3-4× on a loaded CI host): the first call on
    // a tool array puts each of its tools into a Map; twenty more on the same array only check it
    // holds the same tools. Before, each call built the map again (twenty arrays' worth).
    const firstAndMore = (call: (tools: ReturnType<typeof many>, i: number) => void) => {
      const same = many();
      const first = countEntries(() => call(same, 0)).total;
      const more = countEntries(() => {
        for (let i = 1; i <= 20; i++) call(same, i);
      }, 20 * N).total;
      return { first, more };
    };
    const messages = transcript(proxyLoadResult(resolution(["tool_7"]), many(), []));
    const held: string[][] = [];
    const reads = firstAndMore((big) => held.push([...heldDefinitions(messages, big)]));
    expect(held).toEqual(Array.from({ length: 21 }, () => ["tool_7"]));
    expect(reads.first).toBeGreaterThanOrEqual(N);
    expect(reads.more).toBeLessThan(N / 10);
    const answers: string[] = [];
    const loads = firstAndMore((other, i) =>
      answers.push(proxyLoadResult(resolution([`tool_${i}`]), other, [])),
    );
    for (const [i, answer] of answers.entries()) expect(answer).toContain(`"name":"tool_${i}"`);
    expect(loads.first).toBeGreaterThanOrEqual(N);
    expect(loads.more).toBeLessThan(N / 10);
  });

  it("a tool renamed, replaced or removed in place is read again", () => {
    const list = tools.map((tool) => ({ ...tool, function: { ...tool.function } }));
    const messages = transcript(proxyLoadResult(resolution(["t3"]), list, []));
    expect([...heldDefinitions(messages, list)]).toEqual(["t3"]);
    (list[3] as (typeof list)[number]).function.name = "t3_renamed";
    expect([...heldDefinitions(messages, list)]).toEqual([]);
    (list[3] as (typeof list)[number]).function.name = "t3";
    expect([...heldDefinitions(messages, list)]).toEqual(["t3"]);
    list[3] = {
      ...(list[3] as (typeof list)[number]),
      function: { ...tools[3]!.function, description: "changed" },
    };
    expect([...heldDefinitions(messages, list)]).toEqual([]);
    list.splice(3, 1);
    expect([...heldDefinitions(messages, list)]).toEqual([]);
    expect(proxyLoadResult(resolution(["t3"]), list, [])).toContain("No definition is available for: t3");
    // And a tool array made invalid in place is refused again, naming the function asked.
    (list as unknown[]).push({ type: "function" });
    expect(() => heldDefinitions(messages, list)).toThrow(/heldDefinitions: tool 11/);
  });
});
