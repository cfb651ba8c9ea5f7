/**
 * r68 review, over HTTP against the testkit: no half of a surrogate pair alone (a host's cut inside
 * an emoji) reaches the server in a side task's body. llama.cpp refuses such a request whole with a
 * 500, so a summary or a title was lost over one character (live.test.ts shows the real server).
 */
import { type MessageLike, planCompaction, runCompaction } from "@loopwright/ledger";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { bodies, isolated, systemContent, userContent } from "../test/wire.js";
import { ask, askJson } from "./ask.js";
import { SideTaskError } from "./errors.js";
import { summariser } from "./summariser.js";
import { taskCall } from "./task-call.js";

let server: TestServer | undefined;
afterEach(() => server?.close());

const HALF = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Every string and key of a JSON value. */
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

describe("a lone surrogate in a side task's text is sent as U+FFFD (r68)", () => {
  it("ask: in the system prompt, the user turn and its text parts; a whole emoji is kept", async () => {
    server = await startServer({ replies: [{ content: "ok" }, { content: "ok" }] });
    const endpoint = { baseUrl: server.baseUrl };
    await ask(endpoint, "small", "Be brief \uDE00.", "Title 🙂 this \uD83D", isolated());
    await ask(
      endpoint,
      "small",
      "",
      [
        { type: "text", text: "cut \uD83D" },
        { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
      ],
      isolated(),
    );
    const [first, second] = bodies(server);
    expect(systemContent(first as Record<string, unknown>)).toBe("Be brief \uFFFD.");
    expect(userContent(first as Record<string, unknown>)).toBe("Title 🙂 this \uFFFD");
    expect(userContent(second as Record<string, unknown>)).toEqual([
      { type: "text", text: "cut \uFFFD" },
      { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
    ]);
  });

  it("askJson and the summariser: nothing in the body holds a lone half", async () => {
    server = await startServer({
      replies: [{ content: '{"a":"x"}' }, { content: "Notes: the user said hi." }],
    });
    const endpoint = { baseUrl: server.baseUrl };
    const schema = { type: "object", properties: { a: { type: "string", description: "cut \uD83D" } } };
    expect(await askJson(endpoint, "small", "Answer \uDE00", "q \uD83D", schema, isolated())).toEqual({
      a: "x",
    });
    const summarise = summariser(endpoint, "small", isolated());
    const long = `${"word ".repeat(2000)}\uD83D`;
    await summarise(
      [
        { role: "user", content: `hi \uD83D ${long}` },
        { role: "assistant", content: "", tool_calls: [{ function: { name: "f\uDE00", arguments: "{}" } }] },
        { role: "tool", content: "\uDE00 done", tool_call_id: "1" },
      ],
      "earlier \uD83D",
    );
    const sent = bodies(server);
    expect(sent).toHaveLength(2);
    for (const body of sent) {
      const lone = strings(body).filter((s) => HALF.test(s));
      expect(lone).toEqual([]);
    }
    expect(strings(sent[1]).some((s) => s.includes("\uFFFD"))).toBe(true);
  });
});

describe("taskCall's hint for an endpoint written as a string (r68)", () => {
  it.each([
    ["a password in the URL", "http://user:s3cret-key@llm.internal:8080/v1", "s3cret-key"],
    ["a key in the query", "https://llm.example/v1?api_key=sk-live-abcdef123456", "sk-live-abcdef123456"],
    [
      "a key cut at the 80 characters shown",
      `https://llm.example/${"v".repeat(40)}?key=sk-live-abcdef123456`,
      "sk-live",
    ],
  ])("never shows %s", (_, url, secret) => {
    let message = "";
    try {
      taskCall({ endpoint: url as never }, {}, { baseUrl: "http://127.0.0.1:8080/v1" });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/was a string\. Write it as \{ baseUrl: "http/);
    expect(message).not.toContain(secret);
  });

  it("still shows a URL without credentials as written", () => {
    expect(() => taskCall({ endpoint: "http://127.0.0.1:8080/v1" as never })).toThrow(
      'Write it as { baseUrl: "http://127.0.0.1:8080/v1" }.',
    );
  });
});

describe("the summariser honours the compaction's signal in the shape it is typed as (r68)", () => {
  /** A run long enough that planCompaction folds a stretch of it. */
  function run(): MessageLike[] {
    const messages: MessageLike[] = [{ role: "system", content: "You are a build assistant." }];
    for (let i = 0; i < 6; i++) {
      messages.push({ role: "user", content: `Question ${i}: check the log of job ${i}.` });
      messages.push({ role: "assistant", content: `Job ${i}: ${"ok ".repeat(300)}` });
    }
    return messages;
  }

  it("sends nothing for a signal { aborted: true } that is not an AbortSignal, as for one that is", async () => {
    server = await startServer({ replies: [{ content: "Notes." }, { content: "Notes." }] });
    const notices: string[] = [];
    const summarise = summariser({ baseUrl: server.baseUrl }, "small", {
      ...isolated(),
      onNotice: (m) => notices.push(m),
    });
    const messages = run();
    const plan = planCompaction(messages, { limit: 4000, used: 3900 }) as NonNullable<
      ReturnType<typeof planCompaction>
    >;
    // runCompaction itself now stops before the summariser for a signal already aborted (ledger
    // r72: LedgerError "aborted"), so the summariser is handed the signal directly here.
    await expect(
      runCompaction(messages, plan, summarise, { signal: { aborted: true } }),
    ).rejects.toMatchObject({ code: "aborted" });
    const stretch = messages.slice(plan.from, plan.through);
    await expect(summarise(stretch, plan.previous, { aborted: true })).resolves.toBeUndefined();
    expect(server.chatRequests).toHaveLength(0);
    expect(notices).toEqual([expect.stringMatching(/abandoned by the caller's signal/)]);
  });

  it("asks no second time once such a signal has fired during the first request", async () => {
    server = await startServer({
      replies: [
        {
          type: "error",
          status: 400,
          body: {
            error: {
              code: 400,
              message: "the request exceeds the available context size, try increasing it",
              type: "exceed_context_size_error",
              n_prompt_tokens: 5000,
              n_ctx: 4096,
            },
          },
        },
        { content: "Notes." },
      ],
    });
    const summarise = summariser({ baseUrl: server.baseUrl }, "small", isolated());
    // Fires once the first request has reached the server.
    const signal = {
      get aborted() {
        return (server?.chatRequests.length ?? 0) > 0;
      },
    };
    await expect(summarise(run(), undefined, signal)).resolves.toBeUndefined();
    expect(server.chatRequests).toHaveLength(1);
  });
});

describe("taskCall refuses an extraBody that is not an object (r68)", () => {
  it.each([
    // negotiate's checkExtraBody's words (r101d: one rule), after the side task's own name.
    [
      { extraBody: "seed=4" },
      {},
      /^taskCall: the task's extraBody must be a plain object of body fields .* was given the string "seed=4"\. Nothing was sent\.$/,
    ],
    [{ extraBody: ["top_k", 40] }, {}, /the task's extraBody must be a plain object .* was given an array/],
    [{}, { extraBody: "x" }, /options\.extraBody must be a plain object .* was given the string "x"/],
    [
      { extraBody: { seed: 4 } },
      { extraBody: 5 },
      /options\.extraBody must be a plain object .* was given the number 5/,
    ],
  ])("%o over %o", (task, options, message) => {
    let error: unknown;
    try {
      taskCall(task as never, options as never, { baseUrl: "http://127.0.0.1:8080/v1" });
    } catch (caught) {
      error = caught;
    }
    expect(SideTaskError.isInstance(error) && error.code).toBe("invalid-input");
    expect((error as Error).message).toMatch(message);
  });

  it("still lays an object over the host's, key by key", () => {
    const call = taskCall(
      { extraBody: { seed: 4 } },
      { extraBody: { top_k: 40, seed: 1 } },
      { baseUrl: "http://h/v1" },
    );
    expect(call.options.extraBody).toEqual({ top_k: 40, seed: 4 });
  });
});
