/**
 * Input a host gets wrong, and replies a server gets wrong, over HTTP against the testkit: an
 * unreadable task endpoint, an endpoint the client cannot use, injected stores and pools, an
 * unsendable extraBody, option types, refusals, a summary longer than what it replaces, a
 * preselection list without names, and a long wait for a loading model.
 */
import { createClientPool, EndpointConfigError } from "@loopwright/client";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { isolated } from "../test/wire.js";
import { ask, askJson, askReply } from "./ask.js";
import type { SideTaskClient } from "./call.js";
import { SideTaskError } from "./errors.js";
import { preselect } from "./preselect.js";
import { summariser } from "./summariser.js";
import { taskCall } from "./task-call.js";

let servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

async function serve(options: Parameters<typeof startServer>[0] = {}): Promise<TestServer> {
  const server = await startServer(options);
  servers.push(server);
  return server;
}

/** A reply sent as the server wrote it: a whole chat.completion body. */
function completion(message: Record<string, unknown>, finish = "stop") {
  return {
    type: "raw" as const,
    headers: { "content-type": "application/json" },
    chunks: [
      JSON.stringify({
        id: "c",
        object: "chat.completion",
        created: 0,
        model: "m",
        choices: [{ index: 0, message: { role: "assistant", ...message }, finish_reason: finish }],
      }),
    ],
  };
}

function codeOf(error: unknown): string | undefined {
  return SideTaskError.isInstance(error) ? error.code : `not a SideTaskError: ${String(error)}`;
}

const catalog = [
  {
    name: "fs",
    tools: [
      { name: "read_file", description: "Read a file" },
      { name: "write_file", description: "Write a file" },
    ],
  },
];

describe("taskCall: a task endpoint it cannot read", () => {
  it("is refused naming what was wrong, and never sent to the agent's endpoint with the agent's key", async () => {
    const main = await serve({ replies: () => ({ content: "x" }) });
    const small = await serve({ replies: () => ({ content: "x" }) });
    const agent = { baseUrl: main.baseUrl, apiKey: "sk-MAIN" };
    const shapes: [unknown, RegExp][] = [
      [small.baseUrl, /was a string\. Write it as \{ baseUrl: "http/],
      [
        { baseURL: small.baseUrl, apiKey: "sk-small" },
        /names the URL as baseURL; the field is spelled baseUrl/,
      ],
      [{ url: small.baseUrl }, /names the URL as url/],
      [{ baseUrl: 42 }, /baseUrl that is number 42/],
      [{ baseUrl: "  " }, /had a blank baseUrl/],
      [{}, /had no baseUrl/],
      [42, /was number 42/],
    ];
    for (const [endpoint, why] of shapes) {
      let error: unknown;
      try {
        const call = taskCall({ model: "small", endpoint } as never, isolated(), agent);
        await ask(call.endpoint, call.model, "", "Name this chat.", call.options);
      } catch (caught) {
        error = caught;
      }
      expect(codeOf(error), JSON.stringify(endpoint)).toBe("invalid-input");
      expect((error as Error).message).toMatch(/taskCall: the task's endpoint must be \{ baseUrl/);
      expect((error as Error).message).toMatch(why);
    }
    expect(main.chatRequests).toHaveLength(0);
    expect(small.chatRequests).toHaveLength(0);
    // Absent or null still means the agent's endpoint.
    const call = taskCall({ model: "small", endpoint: null }, isolated(), agent);
    await ask(call.endpoint, call.model, "", "Name this chat.", call.options);
    expect(main.chatRequests[0]?.headers.authorization).toBe("Bearer sk-MAIN");
  });
});

describe("an endpoint the client cannot use", () => {
  it("is SideTaskError invalid-input (the client's error on cause) in ask and askJson, and passed through by preselect and summariser", async () => {
    const server = await serve({ replies: () => ({ content: '{"tools":["read_file"]}' }) });
    const endpoints = [
      { baseUrl: server.baseUrl, apiKey: "sk-SECRET\u2014x" },
      { baseUrl: server.baseUrl, requestTimeoutSeconds: -1 },
      { baseUrl: "ftp://127.0.0.1/v1" },
    ];
    for (const endpoint of endpoints) {
      const label = JSON.stringify(endpoint);
      const tries: (() => Promise<unknown>)[] = [
        () => ask(endpoint, "m", "", "x", isolated()),
        () => askJson(endpoint, "m", "", "x", { type: "object" }, isolated()),
        () => preselect(endpoint, "m", catalog, "read notes.txt", isolated()),
        () => summariser(endpoint, "m", isolated())([{ role: "user", content: "hello there" }], undefined),
      ];
      for (const attempt of tries) {
        const error = await attempt().then(
          (value) => `answered ${JSON.stringify(value)}`,
          (e: unknown) => e,
        );
        expect(codeOf(error), label).toBe("invalid-input");
        expect(EndpointConfigError.isInstance((error as Error).cause), label).toBe(true);
        expect((error as Error).message).toMatch(/Nothing was sent\.$/);
        expect((error as Error).message).not.toMatch(/SECRET/);
      }
    }
    expect(server.chatRequests).toHaveLength(0);
  });
});

describe("injected capabilities and clients", () => {
  it("are checked before anything is sent, with errors naming them", async () => {
    const server = await serve({ replies: () => ({ content: "x" }) });
    const endpoint = { baseUrl: server.baseUrl };
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [
        { capabilities: {} },
        "invalid-input",
        /capabilities must be a capability store with a capabilitiesFor function/,
      ],
      [{ capabilities: { capabilitiesFor: () => null } }, "invalid-input", /capabilitiesFor answered null/],
      [{ clients: {} }, "invalid-input", /clients must be a client pool with a getClient function/],
      [
        { clients: { getClient: () => ({}) } },
        "invalid-input",
        /getClient answered an object with no chat\.completions\.create/,
      ],
      [
        {
          clients: {
            getClient: () => {
              throw new Error("pool closed");
            },
          },
        },
        "request-failed",
        /clients\.getClient threw: pool closed/,
      ],
    ];
    for (const [given, code, why] of cases) {
      const error = await ask(endpoint, "m", "", "x", { ...isolated(), ...given }).catch((e: unknown) => e);
      expect(codeOf(error), why.source).toBe(code);
      expect((error as Error).message).toMatch(why);
    }
    expect(server.chatRequests).toHaveLength(0);
  });

  it("holds the time bound even when the client does not honour the signal it is handed", async () => {
    // The answer comes after 30 s: a wait the bound did not end would end at vitest's test timeout
    // (or with the answer), so no clock is read.
    const server = await serve({ replies: [{ content: "late", firstByteDelayMs: 30_000 }] });
    const pool = createClientPool();
    const deaf = {
      getClient(endpoint: { baseUrl: string }): SideTaskClient {
        const real = pool.getClient(endpoint);
        return {
          chat: {
            completions: {
              // Drops the signal: only the bound itself can end the wait.
              create: (body: never) => real.chat.completions.create(body, { timeout: 60_000 }) as never,
            },
          },
        };
      },
    };
    const error = await ask({ baseUrl: server.baseUrl }, "m", "", "x", {
      ...isolated(),
      clients: deaf,
      timeoutMs: 300,
    }).catch((e: unknown) => e);
    expect(codeOf(error)).toBe("timeout");
  });
});

/** That ask, preselect and summariser each refuse `extraBody` as invalid-input, in words `why` matches. */
async function refusedByEach(endpoint: { baseUrl: string }, extraBody: Record<string, unknown>, why: RegExp) {
  const error = await ask(endpoint, "m", "", "x", { ...isolated(), extraBody }).catch((e: unknown) => e);
  expect(codeOf(error), why.source).toBe("invalid-input");
  expect((error as Error).message).toMatch(why);
  const picked = await preselect(endpoint, "m", catalog, "read notes.txt", {
    ...isolated(),
    extraBody,
  }).catch((e: unknown) => e);
  expect(codeOf(picked), why.source).toBe("invalid-input");
  expect(() => summariser(endpoint, "m", { ...isolated(), extraBody })).toThrow(why);
}

describe("an extraBody JSON cannot write", () => {
  it("is invalid-input naming the field, before anything is sent, in every side task", async () => {
    const server = await serve({ replies: () => ({ content: '{"tools":["read_file"]}' }) });
    const endpoint = { baseUrl: server.baseUrl };
    const circular: Record<string, unknown> = { a: 1 };
    circular.self = circular;
    const bodies: [Record<string, unknown>, RegExp][] = [
      [{ seed: 12345678901234567890n }, /extraBody\.seed is a BigInt, which JSON cannot write/],
      [{ logit_bias: circular }, /extraBody\.logit_bias\.self is a cycle/],
      // Before: sent as null, the server's default, without a word.
      [{ temperature: Number.NaN }, /extraBody\.temperature is NaN, which JSON writes as null/],
      [
        { logit_bias: { "50256": -Infinity } },
        /extraBody\.logit_bias\["50256"\] is -Infinity, which JSON writes as null/,
      ],
      // Before: sent as {}, none of the entries in the request, without a word.
      [
        { logit_bias: new Map([["50256", -100]]) },
        /extraBody\.logit_bias is a Map, which JSON writes as \{\}/,
      ],
      [{ kwargs: { stop: new Set(["###"]) } }, /extraBody\.kwargs\.stop is a Set, which JSON writes as \{\}/],
      [
        Object.defineProperty({}, "top_k", {
          enumerable: true,
          get() {
            throw new Error("top_k getter");
          },
        }),
        /extraBody\.top_k could not be read \(Error: top_k getter\)/,
      ],
    ];
    for (const [extraBody, why] of bodies) await refusedByEach(endpoint, extraBody, why);
    expect(server.chatRequests).toHaveLength(0);
  });

  it("is invalid-input naming a field the side task writes itself (model, messages, stream, tools), before anything is sent", async () => {
    // Before: buildBody's refusal came out of the negotiation as request-failed, "m refused the side task".
    const server = await serve({ replies: () => ({ content: '{"tools":["read_file"]}' }) });
    const endpoint = { baseUrl: server.baseUrl };
    const bodies: [Record<string, unknown>, RegExp][] = [
      [
        { model: "other" },
        /extraBody sets "model", a field buildBody writes itself \(the request names the model it is built for: .*a side task's model argument\)/,
      ],
      [{ messages: [] }, /extraBody sets "messages", a field buildBody writes itself/],
      [
        { stream: true },
        /extraBody sets "stream", a field buildBody writes itself \(a run's requests are always streamed, a side task's never\)/,
      ],
      [{ tools: [] }, /extraBody sets "tools", a field buildBody writes itself/],
    ];
    for (const [extraBody, why] of bodies) await refusedByEach(endpoint, extraBody, why);
    expect(server.chatRequests).toHaveLength(0);
    // One set to undefined sends nothing, and is let be.
    await expect(
      ask(endpoint, "m", "", "x", { ...isolated(), extraBody: { model: undefined, top_k: 2 } }),
    ).resolves.toBeTypeOf("string");
    expect(server.chatRequests[0]?.body).toMatchObject({ model: "m", top_k: 2 });
    // A run's config may carry stream_options (vLLM's continuous_usage_stats): let through, and left
    // out of the unstreamed request (OpenAI refuses it there).
    await expect(
      ask(endpoint, "m", "", "x", {
        ...isolated(),
        extraBody: { stream_options: { include_usage: true, continuous_usage_stats: true }, top_k: 3 },
      }),
    ).resolves.toBeTypeOf("string");
    expect(server.chatRequests[1]?.body).toMatchObject({ model: "m", top_k: 3, stream: false });
    expect(server.chatRequests[1]?.body).not.toHaveProperty("stream_options");
  });

  it("sends each field as read once, through JSON", async () => {
    const server = await serve({ replies: () => ({ content: "x" }) });
    let reads = 0;
    const extraBody = Object.defineProperty({ min_p: 0.05 }, "top_k", {
      enumerable: true,
      get() {
        reads++;
        return 20;
      },
    });
    await ask({ baseUrl: server.baseUrl }, "m", "", "x", { ...isolated(), extraBody });
    expect(server.chatRequests[0]?.body).toMatchObject({ top_k: 20, min_p: 0.05 });
    // Once by checkOptions's look, once for the copy sent: never again per attempt.
    expect(reads).toBeLessThanOrEqual(2);
  });
});

describe("boolean options", () => {
  it("refuses a strict or keywords that is not a boolean, instead of reading it by truthiness", async () => {
    const server = await serve({ replies: () => ({ content: '{"a":"b"}' }) });
    const endpoint = { baseUrl: server.baseUrl };
    for (const strict of ["false", "no", 0, 1]) {
      const error = await askJson(
        endpoint,
        "m",
        "",
        "x",
        { type: "object" },
        {
          ...isolated(),
          strict: strict as never,
        },
      ).catch((e: unknown) => e);
      expect(codeOf(error), String(strict)).toBe("invalid-input");
      expect((error as Error).message).toMatch(/askJson: strict must be true or false/);
    }
    for (const keywords of ["false", 1]) {
      const error = await preselect(endpoint, "m", catalog, "read notes.txt", {
        ...isolated(),
        keywords: keywords as never,
      }).catch((e: unknown) => e);
      expect(codeOf(error), String(keywords)).toBe("invalid-input");
      expect((error as Error).message).toMatch(
        /preselect: keywords must be true, false or \{ minScore\?, dropoff\? \}/,
      );
    }
    expect(server.chatRequests).toHaveLength(0);
    await askJson(endpoint, "m", "", "x", { type: "object" }, { ...isolated(), strict: false });
    const sent = server.chatRequests[0]?.body as { response_format?: { json_schema?: object } };
    const format = sent.response_format;
    expect(format?.json_schema).not.toHaveProperty("strict");
  });
});

describe("a refusal in place of content", () => {
  const words = "I can't help with summarising this conversation.";
  it("is told, in the model's words, by ask and askReply, carried on askReply's reply, and quoted by the summariser", async () => {
    const server = await serve({ replies: () => completion({ content: null, refusal: words }) });
    const endpoint = { baseUrl: server.baseUrl };
    const notices: string[] = [];
    const onNotice = (m: string) => notices.push(m);
    expect(await ask(endpoint, "gpt", "Name this chat.", "hi", { ...isolated(), onNotice })).toBe("");
    expect(notices.splice(0)).toEqual([
      `gpt refused to answer: ${JSON.stringify(words)}. The answer is empty.`,
    ]);
    expect(await askReply(endpoint, "gpt", "Name this chat.", "hi", { ...isolated(), onNotice })).toEqual({
      text: "",
      finishReason: "stop",
      refusal: words,
    });
    expect(notices.splice(0)).toHaveLength(1);
    const summary = await summariser(endpoint, "gpt", { ...isolated(), onNotice })(
      [
        { role: "user", content: "hello" },
        { role: "assistant", content: "hi" },
      ],
      undefined,
    );
    expect(summary).toBeUndefined();
    expect(notices).toEqual([
      `gpt refused to write the summary: ${JSON.stringify(words)}; the transcript was left as it was.`,
    ]);
  });

  it("is quoted with its line separators and bidirectional controls escaped (r103d)", async () => {
    const server = await serve({
      replies: () => completion({ content: null, refusal: "No.\u2028\u202eSay yes" }),
    });
    const notices: string[] = [];
    await ask({ baseUrl: server.baseUrl }, "gpt", "", "hi", {
      ...isolated(),
      onNotice: (m) => notices.push(m),
    });
    expect(notices).toEqual([
      String.raw`gpt refused to answer: "No.\u2028\u202eSay yes". The answer is empty.`,
    ]);
  });

  it("is not mentioned where there is none", async () => {
    const server = await serve({ replies: [{ content: "Lisbon" }] });
    const reply = await askReply({ baseUrl: server.baseUrl }, "m", "", "x", isolated());
    expect(reply).toEqual({ text: "Lisbon", finishReason: "stop" });
  });
});

describe("a summariser's onNotice that throws", () => {
  it("changes nothing: a refused or empty summary is still undefined, never the host's error", async () => {
    const server = await serve({
      replies: [
        { type: "error", status: 500, body: { error: { message: "boom", type: "server_error" } } },
        { content: "" },
      ],
    });
    const told: string[] = [];
    const onNotice = (text: string) => {
      told.push(text);
      throw new Error("the log sink is down");
    };
    const summarise = summariser({ baseUrl: server.baseUrl }, "m", { ...isolated(), onNotice });
    const messages = [
      { role: "user", content: "hello" },
      { role: "assistant", content: "hi" },
    ];
    await expect(summarise(messages, undefined)).resolves.toBeUndefined();
    await expect(summarise(messages, undefined)).resolves.toBeUndefined();
    expect(told).toHaveLength(2);
    expect(told[1]).toMatch(/empty summary/);
  });
});

describe("a summary longer than what it replaces", () => {
  it("is not taken: undefined, with a notice giving both sizes", async () => {
    const long = `Notes: ${"the user asked about shipping dates. ".repeat(400)}`;
    const server = await serve({ replies: () => completion({ content: long }) });
    const notices: string[] = [];
    const summarise = summariser({ baseUrl: server.baseUrl }, "small", {
      ...isolated(),
      onNotice: (m) => notices.push(m),
    });
    const stretch = [
      { role: "user", content: "When does it ship?" },
      { role: "assistant", content: "On Monday." },
    ];
    expect(await summarise(stretch, undefined)).toBeUndefined();
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(
      /^The summary from small \(about \d+ tokens\) is longer than what it would replace \(about \d+ tokens\); the transcript was left as it was\.$/,
    );
  });

  it("is taken where it is shorter", async () => {
    const server = await serve({ replies: () => completion({ content: "Ships Monday." }) });
    const summarise = summariser({ baseUrl: server.baseUrl }, "small", isolated());
    const stretch = [
      { role: "user", content: "When does it ship? I need it before the trip on the 14th." },
      { role: "assistant", content: "It ships on Monday, in time for the trip." },
    ];
    expect(await summarise(stretch, undefined)).toBe("Ships Monday.");
  });
});

describe("a preselection list without names", () => {
  it("reads { name } entries as names and says what it left out", async () => {
    const server = await serve({
      replies: () => ({ content: '{"tools":[{"name":"read_file"},1,true,null,{"id":"x"}]}' }),
    });
    const notices: string[] = [];
    const picked = await preselect({ baseUrl: server.baseUrl }, "small", catalog, "read notes.txt", {
      ...isolated(),
      onNotice: (m) => notices.push(m),
    });
    expect(picked).toEqual(["read_file"]);
    expect(notices).toEqual([
      "small's list held 4 entries that are not a tool name (number 1, boolean true, null, an object); left out of the preselection.",
    ]);
  });
});

describe("waiting for a loading model", () => {
  it("sends each attempt with a signal of its own, so listeners do not pile up on one", async () => {
    const server = await serve({
      personality: { name: "llamacpp", loadingMs: 2500 },
      replies: [{ content: "Paris" }],
    });
    const pool = createClientPool();
    const signals: AbortSignal[] = [];
    const watching = {
      getClient(endpoint: { baseUrl: string }): SideTaskClient {
        const real = pool.getClient(endpoint);
        return {
          chat: {
            completions: {
              create: (body: never, options?: { signal?: AbortSignal; timeout?: number }) => {
                if (options?.signal) signals.push(options.signal);
                return real.chat.completions.create(body, options) as never;
              },
            },
          },
        };
      },
    };
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on("warning", onWarning);
    try {
      const answer = await ask({ baseUrl: server.baseUrl }, "small", "", "Capital of France?", {
        ...isolated(),
        clients: watching,
      });
      expect(answer).toBe("Paris");
    } finally {
      process.off("warning", onWarning);
    }
    expect(server.chatRequests.length).toBeGreaterThanOrEqual(3);
    expect(signals).toHaveLength(server.chatRequests.length);
    expect(new Set(signals).size).toBe(signals.length);
    expect(warnings.filter((w) => w.name === "MaxListenersExceededWarning")).toEqual([]);
  });
});

describe("waiting more than ten seconds for a loading model", () => {
  // About 11 s of the model loading, idle: the timeout leaves five times that.
  it("prints no MaxListenersExceededWarning over 11 and more attempts", { timeout: 60_000 }, async () => {
    // Asked again every second: 10.5 s of loading is the shortest wait that makes 11 attempts and
    // put the 11th listener on one shared signal (what the warning counts).
    const server = await serve({
      personality: { name: "llamacpp", loadingMs: 10_500 },
      replies: [{ content: "Paris" }],
    });
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on("warning", onWarning);
    try {
      const answer = await ask({ baseUrl: server.baseUrl }, "small", "", "Capital of France?", isolated());
      expect(answer).toBe("Paris");
      // A warning is emitted on the next tick.
      await new Promise((done) => setImmediate(done));
    } finally {
      process.off("warning", onWarning);
    }
    expect(server.chatRequests.length).toBeGreaterThanOrEqual(11);
    expect(warnings.map((w) => `${w.name}: ${w.message}`)).toEqual([]);
  });
});
