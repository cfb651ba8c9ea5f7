/**
 * Review r74 of the testkit: what a hostile or careless test script does to the server and the
 * scripted model. Each block names the defect it pins down.
 */
import fc from "fast-check";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { countWork } from "./count-work.js";
import { TestkitError } from "./errors.js";
import { bestTimes } from "./growth.js";
import { createPrefixCache, renderPrompt } from "./prefix-cache.js";
import { validateReply } from "./replies.js";
import { extractExpression, extractPath, scriptedModel } from "./scripted-model.js";
import { startServer, type TestServer } from "./server.js";
import { limitTurn } from "./token-budget.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const client = (s: TestServer) => new OpenAI({ baseURL: s.baseUrl, apiKey: "k", maxRetries: 0 });

/**
 * Queues `reply` on a fresh server and returns the message of the `invalid-reply` error that refused
 * it, having checked nothing was queued.
 */
async function enqueueRefusal(reply: unknown): Promise<string> {
  server = await startServer();
  let error: unknown;
  try {
    server.enqueue(reply as never);
  } catch (e) {
    error = e;
  }
  expect(TestkitError.isInstance(error) && error.code).toBe("invalid-reply");
  expect(server.pending).toBe(0);
  return (error as Error).message;
}

/** The expression as the scripted model read it until r74 (a regular expression): the oracle. */
function expressionByRegExp(text: string): string | undefined {
  const runs = text.match(/[-(]*\s*\d[\d.,\s]*(?:\s*(?:[-+*/×÷^%x]|\*\*)\s*[(\s]*-?\d[\d.]*\s*\)*)+/g) ?? [];
  const best = runs.map((r) => r.trim()).sort((a, b) => b.length - a.length)[0];
  if (!best) return undefined;
  return best
    .replace(/×|(?<=\d\s*)x(?=\s*\d)/g, "*")
    .replace(/÷/g, "/")
    .replace(/,/g, "");
}

/** extractPath as it was until r74 (a regular expression trimmed each token): the oracle. */
function pathByRegExp(text: string): string | undefined {
  const version = /^[vV]?\d+(?:\.\d+)+(?:[-+][\w.-]*)?$/;
  const letterExtension = /(?:^|\/)[^/]*[^/.]\.[A-Za-z][A-Za-z0-9]{0,7}$/;
  let first: string | undefined;
  for (const raw of text.split(/\s+/)) {
    const token = raw.replace(/^[`'"(<[]+|[`'")>\].,;:!?]+$/g, "");
    if (/^https?:/i.test(token) || version.test(token)) continue;
    if (/^[\w.~-]*\/[\w./~-]*$/.test(token) || /^[\w.~/-]{2,}\.[a-z0-9]{1,8}$/.test(token)) {
      if (!/[A-Za-z]/.test(token)) continue;
      if (letterExtension.test(token)) return token;
      first ??= token;
    }
  }
  return first;
}

describe("the scripted model reads a long message in time linear in its length", () => {
  const calculator: OpenAI.ChatCompletionTool = {
    type: "function",
    function: {
      name: "calculator",
      description: "Evaluates arithmetic.",
      parameters: {
        type: "object",
        properties: { expression: { type: "string" } },
        required: ["expression"],
      },
    },
  };
  const lookup: OpenAI.ChatCompletionTool = {
    type: "function",
    function: {
      name: "lookup",
      description: "Looks a city up.",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    },
  };
  const reader: OpenAI.ChatCompletionTool = {
    type: "function",
    function: {
      name: "read_file",
      description: "Reads a file.",
      parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    },
  };
  // Each took seconds at 40,000 characters before r74 (digits and spaces: 6 s; a run of dots in
  // one token: 2 s; a long gap before a capitalised word: 2 s) and four times that at twice the
  // length; now each is a few milliseconds. A bound in ms can fail under load, so each is asked
  // against a message as long of plain words, over HTTP in the same run: about as long now
  // (measured 0.5 to 1.1 times). With the scripted model from before r74 each fails: the token of
  // dots at 820 times, the other three at the test's timeout (seconds a request). The work is in
  // one regular expression's backtracking, which no count of calls sees, so the bound sits near the
  // geometric middle of 1 and 820: 32, where 8 let a loaded host's 3-4 times drift come within reach.
  const messages: Record<string, string> = {
    "numbers with no operator (a pasted column)": "1 ".repeat(25_000),
    "a number, a long gap, an operator and no operand": `1${" ".repeat(50_000)}+`,
    "a token of dots": `${".".repeat(50_000)}x`,
    "a long gap before a name": `lookup x${" ".repeat(50_000)}Paris`,
  };
  for (const [what, content] of Object.entries(messages)) {
    it(`answers ${what} (50,000 characters) about as fast as plain words, over HTTP`, async () => {
      const s = await startServer({ scriptedModel: { chunkDelayMs: 0 } });
      server = s;
      const ask = (content: string) => async () => {
        const reply = await client(s).chat.completions.create({
          model: "sim",
          messages: [{ role: "user", content }],
          tools: [calculator, lookup, reader],
        });
        expect(reply.choices[0]?.finish_reason).toMatch(/^(stop|tool_calls)$/);
      };
      const plain = "word ".repeat(Math.ceil(content.length / 5)).slice(0, content.length);
      const [slow, baseline] = await bestTimes([ask(content), ask(plain)]);
      expect((slow as number) / (baseline as number)).toBeLessThan(32);
    }, 60_000);
  }

  it("still finds the city after the gap and the expression after the numbers", async () => {
    server = await startServer({ scriptedModel: { chunkDelayMs: 0 } });
    const ask = async (content: string) =>
      (
        await client(server as TestServer).chat.completions.create({
          model: "sim",
          messages: [{ role: "user", content }],
          tools: [calculator, lookup],
        })
      ).choices[0]?.message.tool_calls?.map((c) => (c.type === "function" ? c.function.arguments : ""));
    expect(await ask(`lookup x${" ".repeat(50_000)}Paris`)).toEqual([JSON.stringify({ city: "Paris" })]);
    expect(await ask(`${"7 ".repeat(25_000)}then 12 * 7`)).toEqual([
      JSON.stringify({ expression: "12 * 7" }),
    ]);
  });

  // /read.*file/ ran from each "read" to the end: 40 s for this description. Asked against one as
  // long whose words never start a match, over HTTP in the same run: measured 1.6 times
  // now; with /read.*file/ put back, the test times out (40 s a request, thousands of times the
  // baseline). Bound 32, well apart from both: 8 was within a loaded host's drift of 1.6.
  it("a tool description of 200,000 characters is judged about as fast as one of other words", async () => {
    const s = await startServer({ scriptedModel: { chunkDelayMs: 0 } });
    server = s;
    const ask = (description: string) => async () => {
      await client(s).chat.completions.create({
        model: "sim",
        messages: [{ role: "user", content: "hello" }],
        tools: [{ type: "function", function: { name: "thing", description } }],
      });
    };
    const [slow, baseline] = await bestTimes([ask("read ".repeat(40_000)), ask("rend ".repeat(40_000))]);
    expect((slow as number) / (baseline as number)).toBeLessThan(32);
  }, 60_000);

  it("extractExpression reads what the regular expression read (property, short texts)", () => {
    const char = fc.constantFrom(..."0 19.,-+*/x×÷^%()a\n");
    fc.assert(
      fc.property(fc.array(char, { maxLength: 40 }), (chars) => {
        const text = chars.join("");
        expect(extractExpression(text)).toBe(expressionByRegExp(text));
      }),
      propertyRuns(5000),
    );
  });

  it("extractPath trims a token as before (property, short texts)", () => {
    const char = fc.constantFrom(..."`'\"(<[)>].,;:!?a/.md1 ");
    fc.assert(
      fc.property(fc.array(char, { maxLength: 24 }), (chars) => {
        const text = chars.join("");
        expect(extractPath(text)).toBe(pathByRegExp(text));
      }),
      propertyRuns(3000),
    );
  });
});

describe("llamacpp personality: max_tokens -1 is llama-server's 'no limit'", () => {
  const ask = async (extra: Record<string, unknown>) => {
    server = await startServer({ personality: "llamacpp", replies: [{ content: "hello there, world" }] });
    const res = await fetch(`${server.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "tiny", messages: [{ role: "user", content: "hi" }], ...extra }),
    });
    const body = (await res.json()) as { choices: { finish_reason: string; message: { content: string } }[] };
    await server.close();
    server = undefined;
    return [body.choices[0]?.message.content, body.choices[0]?.finish_reason];
  };

  it("generates the whole scripted turn for max_tokens -1 (was: an empty answer cut for length)", async () => {
    expect(await ask({ max_tokens: -1 })).toEqual(["hello there, world", "stop"]);
    expect(await ask({ n_predict: -1, max_tokens: 1 })).toEqual(["hello there, world", "stop"]);
  });

  it("reads n_predict before max_tokens, as llama-server does", async () => {
    expect(await ask({ n_predict: 1, max_tokens: 100 })).toEqual(["hello", "length"]);
    expect(await ask({ max_tokens: 1 })).toEqual(["hello", "length"]);
  });
});

describe("a bad scripted reply is refused by a TestkitError naming its place, and queues nothing", () => {
  /** The error `run` throws. */
  const thrown = (run: () => unknown): unknown => {
    try {
      run();
    } catch (error) {
      return error;
    }
    return undefined;
  };

  it("enqueue with a bad second reply queues neither (was: the first stayed queued) and names reply #2", async () => {
    server = await startServer();
    const error = thrown(() => server?.enqueue({ content: "first" }, { content: 5 as never }));
    expect(TestkitError.isInstance(error) && error.code).toBe("invalid-reply");
    expect((error as Error).message).toBe("enqueue: reply #2: Reply field content must be a string.");
    expect(server.pending).toBe(0);
    // The next chat request finds the script empty, not the half-enqueued first reply.
    const res = await fetch(`${server.baseUrl}/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "m", messages: [] }),
    });
    expect(res.status).toBe(500);
  });

  it("startServer names the bad entry of replies", async () => {
    const error = await startServer({
      replies: [{ content: "a" }, { content: "b" }, { pause: 5 as never }],
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((error as Error).message).toBe(
      "startServer: replies[2]: Reply field pause must be { afterChunk, ms }, got number 5.",
    );
  });

  it.each<[string, unknown, string]>([
    [
      "tool-call arguments holding a bigint",
      { toolCalls: [{ name: "f", arguments: { n: 1n } }] },
      "toolCalls[0] needs a string name and a string arguments (JSON text), got an object JSON cannot write.",
    ],
    ["a bigint type", { type: 1n }, 'Unknown reply type 1n; use "turn", "error", "replay" or "raw".'],
    ["pause given as a number", { pause: 5 }, "Reply field pause must be { afterChunk, ms }, got number 5."],
    ["pause without afterChunk", { pause: { ms: 5 } }, "Reply field pause.afterChunk is missing."],
    [
      "errorMidStream without afterChunk",
      { errorMidStream: { error: "x" } },
      "Reply field errorMidStream.afterChunk is missing.",
    ],
  ])(
    "%s: invalid-reply with what was given (was: a TypeError from JSON, or 'got -1')",
    (_label, reply, message) => {
      const error = thrown(() => validateReply(reply));
      expect(TestkitError.isInstance(error) && error.code).toBe("invalid-reply");
      expect((error as Error).message).toBe(message);
    },
  );

  it("a cyclic tool call is named, not a TypeError", () => {
    const call: Record<string, unknown> = { name: "f" };
    call.arguments = call;
    const error = thrown(() => validateReply({ toolCalls: [call] }));
    expect(TestkitError.isInstance(error) && error.code).toBe("invalid-reply");
  });
});

describe("reply headers Node cannot send are refused when the reply is scripted", () => {
  it.each<[string, unknown, RegExp]>([
    [
      "an error reply with a newline in a header value",
      { type: "error", status: 429, body: "slow down", headers: { "retry-after": "1\nx" } },
      /^enqueue: reply #1: An error reply's header "retry-after" cannot be sent: /,
    ],
    [
      "a raw reply with a space in a header name",
      { type: "raw", chunks: ["data: x\n\n"], headers: { "content type": "text/plain" } },
      /^enqueue: reply #1: A raw reply's header "content type" cannot be sent: /,
    ],
    [
      "a replay reply whose headers are a string",
      { type: "replay", fixture: "wire/openai/gpt-4.1-nano-text-usage-chunk.sse", headers: "text/plain" },
      /^enqueue: reply #1: A replay reply's headers must be an object of header names and values, got string "text\/plain"\.$/,
    ],
  ])(
    "%s: enqueue throws invalid-reply (was: queued, then a 500 the script never asked for)",
    async (_label, reply, message) => {
      expect(await enqueueRefusal(reply)).toMatch(message);
    },
  );

  it("headers Node takes (numbers, lists) still go out", async () => {
    server = await startServer({
      replies: [
        {
          type: "error",
          status: 429,
          body: "slow",
          headers: { "retry-after": 2 as never, "x-a": ["1", "2"] as never },
        },
      ],
    });
    const res = await fetch(`${server.baseUrl}/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "m", messages: [] }),
    });
    expect([res.status, res.headers.get("retry-after"), res.headers.get("x-a")]).toEqual([429, "2", "1, 2"]);
  });
});

describe("startServer refuses a models listing whose entries are not objects", () => {
  it.each<[string, unknown[], string]>([
    [
      "ids given as strings",
      ["gpt-4o"],
      'models[0] must be an object such as { id: "gpt-4o" }, got "gpt-4o".',
    ],
    [
      "a null entry",
      [{ id: "a" }, null],
      'models[1] must be an object such as { id: "gpt-4o" }, got object null.',
    ],
  ])(
    '%s: invalid-option naming the entry (was: served as {"0":"g","1":"p",…})',
    async (_label, models, message) => {
      const error = await startServer({ models }).then(
        (s) => {
          server = s;
          return undefined;
        },
        (e: unknown) => e,
      );
      expect(TestkitError.isInstance(error) && error.code).toBe("invalid-option");
      expect((error as Error).message).toContain(message);
    },
  );

  it("entries without an id, and a whole listing, are still served as given", async () => {
    server = await startServer({ models: [{ key: "qwen/qwen3-4b" }] });
    const body = (await (await fetch(`${server.baseUrl}/models`)).json()) as { data: { key?: string }[] };
    expect(body.data[0]?.key).toBe("qwen/qwen3-4b");
    await server.close();
    server = await startServer({ models: { object: "list", data: ["odd"] } });
    expect(await (await fetch(`${server.baseUrl}/models`)).json()).toEqual({ object: "list", data: ["odd"] });
  });
});

describe("a reply field the testkit does not have is refused, not read as left out", () => {
  it.each<[string, unknown, string]>([
    [
      "tool_calls (the wire's name) on a turn",
      { tool_calls: [{ name: "clock", arguments: "{}" }] },
      'A turn reply has no field "tool_calls" (for tool_calls, use toolCalls)',
    ],
    [
      "finish_reason on a turn",
      { content: "cut", finish_reason: "length" },
      'A turn reply has no field "finish_reason" (for finish_reason, use finishReason)',
    ],
    [
      "a misspelt content",
      { contnet: "hi" },
      'A turn reply has no field "contnet"; its fields are type, content,',
    ],
    [
      "total_tokens in usage",
      { content: "hi", usage: { prompt_tokens: 3, total_tokens: 9 } },
      'Reply field usage has no field "total_tokens" (for total_tokens, use nothing: it is prompt_tokens + completion_tokens)',
    ],
    [
      "message on an error reply",
      { type: "error", status: 400, message: "bad" },
      'An error reply has no field "message"',
    ],
    [
      "delay on pause",
      { pause: { afterChunk: 1, ms: 5, delay: 5 } },
      'Reply field pause has no field "delay"',
    ],
  ])(
    "%s: enqueue throws invalid-reply naming it (was: queued, and sent without it)",
    async (_label, reply, message) => {
      expect(await enqueueRefusal(reply)).toContain(message);
    },
  );

  it("before: a turn with tool_calls went out as an empty answer; a reply function's is a 500 naming the field now", async () => {
    server = await startServer({
      replies: () => ({ tool_calls: [{ name: "clock", arguments: "{}" }] }) as never,
    });
    const res = await fetch(`${server.baseUrl}/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "m", messages: [] }),
    });
    expect(res.status).toBe(500);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain(
      'A turn reply has no field "tool_calls"',
    );
  });
});

describe("prefix cache: a request answered by an error reply was never processed", () => {
  it("the retry after a scripted 429 reports nothing cached (was: all but one token of it)", async () => {
    server = await startServer({
      prefixCache: true,
      replies: [
        {
          type: "error",
          status: 429,
          body: { error: { message: "slow down", type: "rate_limit", code: null } },
        },
        { content: "ok" },
        { content: "again" },
      ],
    });
    const ask = {
      model: "m",
      messages: [{ role: "user" as const, content: "a fairly long question about many things" }],
    };
    const openai = client(server);
    await expect(openai.chat.completions.create(ask)).rejects.toMatchObject({ status: 429 });
    const first = await openai.chat.completions.create(ask);
    expect(first.usage?.prompt_tokens_details).toEqual({ cached_tokens: 0 });
    // Once answered, the prompt is held: the same request again reports all but its last token.
    const second = await openai.chat.completions.create(ask);
    expect(second.usage?.prompt_tokens_details).toEqual({
      cached_tokens: (second.usage?.prompt_tokens ?? 0) - 1,
    });
  });

  it("a request the script ran out on is not held either", async () => {
    server = await startServer({ prefixCache: true });
    const ask = { model: "m", messages: [{ role: "user" as const, content: "hello there" }] };
    await expect(client(server).chat.completions.create(ask)).rejects.toMatchObject({ status: 500 });
    server.enqueue({ content: "ok" });
    expect((await client(server).chat.completions.create(ask)).usage?.prompt_tokens_details).toEqual({
      cached_tokens: 0,
    });
  });
});

describe("the scripted model answers a long run of tool results in time linear in its length", () => {
  // Each result was matched to its call with find + indexOf over the whole turn: 7 s over HTTP. A
  // bound in ms can fail under load, and over HTTP the request's own cost hides the matching (the
  // search put back took only 5 times as long there), so the turn is answered over HTTP once and
  // its work counted in-process against the same 30,000 results all answering its first call (a
  // search that stops at the first call is cheap in any version). Timed, the search put back read
  // 8 times the baseline against 0.74 now, under a bound of 3 a loaded host's drift could cross.
  it("30,000 results of one assistant turn: answered about as fast as 30,000 results of its first call", async () => {
    const calls = Array.from({ length: 30_000 }, (_, i) => ({
      id: `c${i}`,
      type: "function" as const,
      function: { name: "echo", arguments: "{}" },
    }));
    const turn = (of: (i: number) => string) => ({
      model: "sim",
      messages: [
        { role: "user" as const, content: "go" },
        { role: "assistant" as const, content: null, tool_calls: calls },
        // Out of order: each result is matched to its call by id.
        ...calls.map((_, i) => ({
          role: "tool" as const,
          tool_call_id: of(i),
          content: `r${(i * 7) % 30_000}`,
        })),
      ],
    });
    const matched = turn((i) => `c${(i * 7) % 30_000}`);
    const first = turn(() => "c0");
    server = await startServer({ scriptedModel: { chunkDelayMs: 0 } });
    const reply = await client(server).chat.completions.create(matched);
    const lines = reply.choices[0]?.message.content?.split("\n") ?? [];
    expect(lines.slice(0, 2)).toEqual(["The echo tool returned: r0", "The echo tool returned: r7"]);
    // Counted, not timed (a ratio of two timings moved 3-4 times on a loaded CI host): the array
    // elements walked and copied, Map and Set steps and regular-expression runs of the scripted
    // model's answer to 30,000 results out of order, against 30,000 that all name the first call
    // (each found at once by a search from the start). Each result is found by its id now, whatever
    // the order: the counts are alike (measured 570,142 each, 19 a result). With find put back,
    // the out-of-order results walk half the turn each, hundreds of millions of steps: the count
    // stops past 50 a result (at 1,409,454 elements walked by the 547th result).
    const counted = async (request: typeof matched) =>
      (
        await countWork(
          () =>
            expect(scriptedModel(request, { chunkDelayMs: 0 }).content).toMatch(
              /^The echo tool returned: r0\n/,
            ),
          30_000 * 50,
        )
      ).total;
    const [outOfOrder, atTheStart] = [await counted(matched), await counted(first)];
    expect(outOfOrder / atTheStart).toBeLessThan(2);
  }, 60_000);
});

describe("the scripted model keeps a parameter named __proto__", () => {
  it("fills a required __proto__ parameter (was: called with {}, the value set as the prototype and lost)", async () => {
    server = await startServer({ scriptedModel: { chunkDelayMs: 0 } });
    // Sent as text: JSON.parse makes "__proto__" an own key, as a server reading the body does.
    const res = await fetch(`${server.baseUrl}/chat/completions`, {
      method: "POST",
      body:
        '{"model":"m","messages":[{"role":"user","content":"use lookup with \\"x\\""}],"tools":[{"type":"function",' +
        '"function":{"name":"lookup","description":"d","parameters":{"type":"object","properties":' +
        '{"__proto__":{"type":"string"},"city":{"type":"string"}},"required":["__proto__"]}}}]}',
    });
    const body = (await res.json()) as {
      choices: { message: { tool_calls: { function: { arguments: string } }[] } }[];
    };
    const args = body.choices[0]?.message.tool_calls[0]?.function.arguments ?? "";
    expect(args).toBe('{"__proto__":"x"}');
    expect(Object.keys(JSON.parse(args))).toEqual(["__proto__"]);
  });
});

describe("public helpers a host calls with its own values", () => {
  it("limitTurn refuses NaN (was: the whole turn cut away, finish 'length')", () => {
    let error: unknown;
    try {
      limitTurn({ content: "hello world" }, Number.NaN);
    } catch (e) {
      error = e;
    }
    expect(TestkitError.isInstance(error) && error.code).toBe("invalid-option");
    expect(limitTurn({ content: "hello world" }, Number.POSITIVE_INFINITY)).toEqual({
      content: "hello world",
    });
  });

  it("a custom personality's completionBudget of NaN is a 500 naming it, not an empty answer", async () => {
    server = await startServer({
      personality: { name: "odd", completionBudget: () => Number.NaN },
      replies: [{ content: "hello world" }],
    });
    const res = await fetch(`${server.baseUrl}/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "m", messages: [] }),
    });
    expect(res.status).toBe(500);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain("got NaN");
  });

  it("renderPrompt, the prefix cache and scriptedModel never throw, as documented, on a request a host built", () => {
    const part: Record<string, unknown> = { type: "image" };
    part.self = part;
    const request = { tools: [{ limit: 10n }], messages: [{ role: "user", content: [part] }, 7n] };
    expect(renderPrompt(request)).toBe(
      '<|tools|>\n[{"limit":"10"}]\n<|user|>\n{"type":"image","self":"[Circular]"}\n<|unknown|>\n"7"\n<|assistant|>\n',
    );
    expect(createPrefixCache().process(request).promptTokens).toBeGreaterThan(0);
    expect(scriptedModel(request, { chunkDelayMs: 0 }).content).toMatch(/simulator/);
  });
});
