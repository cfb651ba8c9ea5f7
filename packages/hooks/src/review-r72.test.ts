// Review round r72: each test fails on the code before its fix.
import { startServer } from "@loopwright/testkit";
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import {
  assembleContext,
  consult,
  gather,
  type HookInput,
  type HookRunner,
  notify,
  turnMessages,
} from "./index.js";
import { countedPlaces } from "./test-support/counted-places.js";

const input = { messages: [], from: 0, through: 2 };

describe("r72: consult with a signal that has aborted", () => {
  it("does not proceed when the run was stopped before the hooks ran, and never calls the runner", async () => {
    // Before: { proceed: true } with a note, so a host compacting its own way folded a stopped run.
    let called = 0;
    const controller = new AbortController();
    controller.abort();
    const consulted = await consult(
      () => {
        called++;
        return [];
      },
      input,
      {},
      { signal: controller.signal },
    );
    expect(consulted).toMatchObject({ proceed: false, stopped: true });
    expect(consulted.vetoedBy).toBeUndefined();
    expect(consulted.notes.join("\n")).toMatch(/stopped/);
    expect(called).toBe(0);
  });

  it("does not proceed when forced either: a stopped run folds nothing", async () => {
    const consulted = await consult(() => [], input, {}, { forced: true, signal: AbortSignal.abort() });
    expect(consulted).toMatchObject({ proceed: false, stopped: true });
  });

  it("does not proceed when the run is stopped while the hooks run, and aborts the runner's signal", async () => {
    const controller = new AbortController();
    let runnerSignal: AbortSignal | undefined;
    const consulted = await consult(
      (_event, _input, _context, signal) => {
        runnerSignal = signal;
        // The stop comes once the hooks run (a timer from the test's start could fire before the
        // runner is called on a loaded machine, and the runner would then never see a signal).
        setTimeout(() => controller.abort(), 0);
        return new Promise(() => {});
      },
      input,
      {},
      { signal: controller.signal, timeoutMs: 5000 },
    );
    expect(consulted).toMatchObject({ proceed: false, stopped: true });
    expect(runnerSignal?.aborted).toBe(true);
  });

  it("still proceeds, with no stopped field, for a signal that never aborts", async () => {
    const consulted = await consult(
      () => [{ id: "ok" }],
      input,
      {},
      { signal: new AbortController().signal },
    );
    expect(consulted.proceed).toBe(true);
    expect("stopped" in consulted).toBe(false);
  });
});

describe("r72: a hook's own maxTokens that is not a whole number of tokens above 0", () => {
  const text = "x".repeat(400);
  const bad: [string, unknown][] = [
    ["NaN", Number.NaN],
    ["-1", -1],
    ["1.5", 1.5],
    ['"10"', "10"],
    ["Infinity", Number.POSITIVE_INFINITY],
  ];

  it.each(bad)(
    "maxTokens %s is read as left out, with a note naming the hook and the field",
    async (_, value) => {
      // Before: each was dropped (or, 1.5, read as a limit of 6 characters) without a word.
      const outcome = { id: "recall", name: "Recall", context: text, maxTokens: value as number };
      const gathered = await gather(() => [outcome], "beforeTurn", { prompt: "q", turn: 0 }, {});
      expect(gathered.context).toContain(text);
      expect(gathered.notes).toHaveLength(1);
      expect(gathered.notes[0]).toMatch(
        /^Hook Recall's maxTokens was .+, not a whole number of tokens above 0; it was read as left out\.$/,
      );
      const notes: string[] = [];
      expect(assembleContext([outcome], undefined, { onNote: (n) => notes.push(n) })).toContain(text);
      expect(notes).toEqual(gathered.notes);
    },
  );

  it("reads 0 and null as none given, without a note (JSON's 'no value'), and a whole number as the limit", async () => {
    for (const value of [0, null]) {
      const gathered = await gather(
        () => [{ id: "recall", context: text, maxTokens: value as never }],
        "beforeTurn",
        { prompt: "q", turn: 0 },
        {},
      );
      expect(gathered.context).toContain(text);
      expect(gathered.notes).toEqual([]);
    }
    const held = await gather(
      () => [{ id: "recall", context: text, maxTokens: 10 }],
      "beforeTurn",
      { prompt: "q", turn: 0 },
      {},
    );
    expect(held.context).not.toContain(text);
    expect(held.notes[0]).toMatch(/its own limit of 10 tokens/);
  });
});

/** A lone half of a surrogate pair anywhere in a string. */
const HALF = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Every string of a JSON-like value, keys included. */
function strings(value: unknown, into: string[] = []): string[] {
  if (typeof value === "string") into.push(value);
  else if (Array.isArray(value)) for (const v of value) strings(v, into);
  else if (typeof value === "object" && value !== null)
    for (const [k, v] of Object.entries(value)) {
      into.push(k);
      strings(v, into);
    }
  return into;
}

describe("r72: a lone surrogate in the text handed to hooks is written U+FFFD", () => {
  it("reaches a hook that asks a model as U+FFFD, so the request is not refused (over HTTP)", async () => {
    // A recall hook that asks a model about the question: the host's prompt was cut inside an emoji.
    // Before: the half went into the request body as it was (llama.cpp refuses such a body whole).
    const server = await startServer({ replies: [{ content: "Recalled." }] });
    try {
      const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
      const run: HookRunner<object> = async (_event, input) => {
        const prompt = "prompt" in input ? String(input.prompt) : "";
        const done = await client.chat.completions.create({
          model: "recall",
          messages: [{ role: "user", content: `What do we know about: ${prompt}` }],
        });
        return [{ id: "recall", context: done.choices[0]?.message.content ?? "" }];
      };
      const gathered = await gather(run, "beforeTurn", { prompt: "Plans for 🙂 the \uD83D", turn: 0 }, {});
      expect(gathered.context).toContain("Recalled.");
      const sent = JSON.parse((server.chatRequests[0] as { raw: string }).raw) as unknown;
      expect(strings(sent).some((text) => HALF.test(text))).toBe(false);
      expect(JSON.stringify(sent)).toContain("Plans for 🙂 the \uFFFD");
    } finally {
      await server.close();
    }
  });

  it("gather, notify and consult hand the runner well-formed text: prompt, reply, messages, parts and keys", async () => {
    const seen: HookInput[] = [];
    const run: HookRunner<object> = (_event, input) => {
      seen.push(input);
      return [];
    };
    await gather(run, "beforeTurn", { prompt: "a \uDE00", turn: 0, messages: turnMessages([], "s") }, {});
    await notify(run, "afterTurn", { prompt: "q", reply: "cut \uD83D", messages: [] }, {});
    const stretch = [
      { role: "user", content: [{ type: "text", text: "part \uDBFF" }] },
      {
        role: "assistant",
        content: "ok",
        tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: '{"k\uD800":1}' } }],
      },
    ];
    await consult(run, { messages: stretch, from: 0, through: 2, previous: "notes \uDC00" } as never, {});
    expect(seen).toHaveLength(3);
    for (const input of seen) expect(strings(input).filter((text) => HALF.test(text))).toEqual([]);
    expect((seen[0] as { prompt: string }).prompt).toBe("a \uFFFD");
    expect((seen[1] as { reply: string }).reply).toBe("cut \uFFFD");
    // The host's own objects are never written to.
    expect(stretch[0]?.content).toEqual([{ type: "text", text: "part \uDBFF" }]);
  });

  it("hands on the host's own input object, unchanged, where it holds no lone surrogate", async () => {
    let handed: unknown;
    const input = { prompt: "Plans for 🙂", turn: 3 };
    const run: HookRunner<object> = (_event, given) => {
      handed = given;
      return [];
    };
    await gather(run, "beforeTurn", input, {});
    expect(handed).toBe(input);
  });

  it("walks a key with a lone half, a cycle, a sparse list of 2^32 - 1 places and a revoked Proxy without failing", async () => {
    const seen: unknown[] = [];
    const run: HookRunner<object> = (_event, input) => {
      seen.push(input);
      return [];
    };
    const cyclic: Record<string, unknown> = { prompt: "x \uD800", extra: { "k\uDC00": "v" } };
    cyclic.self = cyclic;
    // The sparse list's cost, counted: four million places holding one are read at that one, not at
    // each hole (2^32 - 1 of them below would take minutes), a count where a bound in ms breaks on a
    // loaded machine.
    const { list: counted, reads } = countedPlaces<unknown[]>([]);
    counted.length = 4_000_000;
    counted[7] = { content: "far \uD83D" };
    await notify(run, "sessionEnd", { reason: "r", messages: counted } as never, {});
    expect(reads()).toBeLessThan(20);
    seen.length = 0;
    const sparse: unknown[] = [];
    sparse.length = 2 ** 32 - 1;
    sparse[7] = { content: "far \uD83D" };
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    await notify(run, "sessionEnd", cyclic as never, {});
    await notify(run, "sessionEnd", { reason: "r", messages: sparse } as never, {});
    await notify(run, "sessionEnd", { reason: "r \uD800", messages: proxy } as never, {});
    const [first, second, third] = seen as Record<string, unknown>[];
    expect(first?.prompt).toBe("x \uFFFD");
    expect(Object.keys(first?.extra as object)).toEqual(["k\uFFFD"]);
    const far = (second?.messages as unknown[] | undefined)?.[7] as { content?: string } | undefined;
    expect(far?.content).toBe("far \uFFFD");
    // Reading a revoked Proxy throws: the input goes on as it came, never failing the call.
    expect(third?.messages).toBe(proxy);
  });

  it("turnMessages writes a message's text, tool call and ids well-formed", () => {
    const [user, assistant] = turnMessages(
      [
        { role: "user", content: "half \uD83D" },
        {
          role: "assistant",
          content: "",
          tool_calls: [
            { id: "c\uDE00", type: "function", function: { name: "f\uD800", arguments: '{"a":"\uDBFF"}' } },
          ],
        },
      ],
      "s",
    );
    expect(user?.content).toBe("half \uFFFD");
    expect(assistant?.toolCalls).toEqual([{ id: "c\uFFFD", name: "f\uFFFD", arguments: '{"a":"\uFFFD"}' }]);
  });
});
