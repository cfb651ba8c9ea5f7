// r99a: config.extraBody checked when the run starts; beforeStep's limit after a step routed to a
// model with a window of its own; the step model and body fields path reviewed. Over HTTP against
// the testkit.
import { countTokens, renderPrompt, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { AgentLoopError, LoopOptionError } from "./errors.js";
import { createRuntime } from "./index.js";
import { compactingConfig, llamaOverflow, oldThings } from "./test-support/llama-overflow.js";
import { ADD_TOOL } from "./test-support/transcript.js";

/** "small" is served with a 300-token window (llama.cpp's -c), under a contextLength of 4,000. */
const SMALL = 300;

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("config.extraBody, checked when the run starts", () => {
  it("is refused before the preselect side task is sent, naming the path, so nothing is sent or paid for", async () => {
    // Before: the preselection went out (and was paid for), and only the first step's body refused it.
    server = await startServer({ replies: () => ({ content: '{"tools":["add"]}' }) });
    const cycle: Record<string, unknown> = { depth: 1 };
    cycle.self = cycle;
    const cases: Array<[unknown, RegExp]> = [
      [{ model: "small" }, /^runAgentLoop: config\.extraBody sets "model", a field buildBody writes itself/],
      [{ top_p: Number.NaN }, /^runAgentLoop: config\.extraBody\.top_p is NaN, which JSON writes as null/],
      [
        { chat_template_kwargs: { top_k: Number.POSITIVE_INFINITY } },
        /^runAgentLoop: config\.extraBody\.chat_template_kwargs\.top_k is Infinity/,
      ],
      [{ stop: ["a", Number.NEGATIVE_INFINITY] }, /^runAgentLoop: config\.extraBody\.stop\[1\] is -Infinity/],
      [{ seed: 7n }, /^runAgentLoop: config\.extraBody\.seed is a BigInt/],
      [{ grammar: cycle }, /^runAgentLoop: config\.extraBody\.grammar\.self is a cycle/],
      [JSON.parse('{"__proto__": {"top_k": 1}}'), /config\.extraBody must not have a "__proto__" key/],
      [new Map([["top_k", 20]]), /config\.extraBody must be a plain object .*was given an instance of Map\./],
      [[1, 2], /config\.extraBody must be a plain object .*was given an array\./],
      ["top_k=20", /config\.extraBody must be a plain object .*was given the string "top_k=20"\./],
    ];
    for (const [extraBody, words] of cases) {
      const error = await createRuntime()
        .runAgentLoop({
          config: {
            baseUrl: server.baseUrl,
            model: "big",
            toolDiscovery: "ondemand",
            preselect: true,
            toolSelectModel: "selector",
            extraBody: extraBody as Record<string, unknown>,
          },
          messages: [{ role: "user", content: "Add 2 and 3." }],
          tools: [ADD_TOOL],
          dispatch: () => "5",
        })
        .catch((e: unknown) => e);
      // Not even the preselection went out.
      expect(server.chatRequests, String(words)).toHaveLength(0);
      expect(AgentLoopError.isInstance(error), String(words)).toBe(true);
      const cause = (error as AgentLoopError).cause;
      expect(LoopOptionError.isInstance(cause), String(words)).toBe(true);
      expect(cause).toMatchObject({ code: "invalid-option", option: "config.extraBody" });
      expect((cause as Error).message).toMatch(words);
    }
  });

  it("still lets a plain object on no prototype and a field set to undefined go", async () => {
    server = await startServer({ replies: [{ content: "5" }] });
    const extraBody = Object.assign(Object.create(null) as Record<string, unknown>, {
      top_k: 20,
      model: undefined,
    });
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "big", extraBody },
      messages: [{ role: "user", content: "Add 2 and 3." }],
    });
    expect(result.stopReason).toBe("answered");
    expect(server.chatRequests[0]?.body).toMatchObject({ model: "big", top_k: 20 });
  });
});

describe("a step routed to a model with a window of its own", () => {
  it("names that model's window, not contextLength, in the notice of a reply cut off with it full", async () => {
    let answered = 0;
    server = await startServer({
      replies: (request) => {
        const body = request.body as { model?: string; stream?: boolean };
        if (body.stream !== true) return { content: "Summary: the user asked about old things." };
        const tokens = countTokens(renderPrompt(body as never));
        if (body.model === "small" && tokens >= SMALL && answered === 0) {
          return llamaOverflow(tokens, SMALL);
        }
        answered++;
        // The folded request, answered until the window was full.
        return {
          content: "Old things are",
          finishReason: "length",
          usage: { prompt_tokens: 250, completion_tokens: 50 },
        };
      },
    });
    const notices: string[] = [];
    const result = await createRuntime().runAgentLoop({
      config: compactingConfig(server.baseUrl),
      messages: oldThings("What are old things?"),
      onEvent: (event) => {
        if (event.kind === "notice") notices.push(event.text);
      },
      beforeStep: () => ({ model: "small" }),
    });
    expect(result.turn.finishReason).toBe("length");
    // Before: "… took 300 of its 4000 tokens (contextLength)", a window 300 tokens do not fill.
    expect(notices.filter((text) => text.startsWith("The reply was cut off"))).toEqual([
      "The reply was cut off with the context window full: the prompt and the reply's answer took 300 of its 300 " +
        "tokens (the window the server named for small; contextLength is 4000); compact or shorten the transcript, or " +
        "raise the window.",
    ]);
  });
});

describe("tasks.compaction's extraBody", () => {
  it("is refused when the run starts, not at the first fold after steps were paid for", async () => {
    // Before: the run went on, and the first fold (possibly hours in) failed "Compaction failed",
    // leaving compaction off for the rest of the run.
    server = await startServer({ replies: () => ({ content: "3" }) });
    const error = await createRuntime()
      .runAgentLoop({
        config: {
          ...compactingConfig(server.baseUrl),
          tasks: { compaction: { model: "summ", extraBody: { top_p: Number.NaN } } },
        },
        messages: oldThings("What are old things?"),
      })
      .catch((e: unknown) => e);
    expect(server.chatRequests).toHaveLength(0);
    const cause = (error as AgentLoopError).cause;
    expect(LoopOptionError.isInstance(cause)).toBe(true);
    expect(cause).toMatchObject({ code: "invalid-option", option: "config.tasks.compaction" });
    expect((cause as Error).message).toMatch(/extraBody\.top_p is NaN, which JSON writes as null/);
  });
});

describe("a step re-sent after a forced fold on a model with a window of its own", () => {
  it("is held to the window the refusal named: a folded request still too big for it is not sent to be refused again", async () => {
    // The question alone is past "small"'s 300-token window: no fold brings the request under it.
    let streamed = 0;
    server = await startServer({
      replies: (request) => {
        const body = request.body as { model?: string; stream?: boolean };
        if (body.stream !== true) return { content: "Summary: the user asked about old things." };
        streamed++;
        const tokens = countTokens(renderPrompt(body as never));
        return body.model === "small" && tokens >= SMALL ? llamaOverflow(tokens, SMALL) : { content: "done" };
      },
    });
    const error = await createRuntime()
      .runAgentLoop({
        config: compactingConfig(server.baseUrl),
        messages: oldThings(`What are these? ${"an old thing, ".repeat(120)}`),
        beforeStep: () => ({ model: "small" }),
      })
      .catch((e: unknown) => e);
    expect((error as Error).name).toBe("AgentLoopOverflow");
    expect((error as Error).message).toMatch(
      /folded the transcript once, and the folded request was still too big for the window, so it was not sent again/,
    );
    // One request to "small", refused; the folded one is held to the 300 it named by the size guard
    // (before: held to contextLength's 4,000, sent, and refused a second time).
    expect(streamed).toBe(1);
  });
});
