import { ContextOverflow } from "@loopwright/negotiate";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { AgentLoopError, AgentLoopOverflow, errorMessage, failedRun, ToolIterationLimit } from "./errors.js";
import { createRuntime } from "./index.js";

const ZERO = { prompt: 0, completion: 0, total: 0, cached: 0 };
const NO_SIDE = { ...ZERO, summary: { ...ZERO }, preselect: { ...ZERO } };

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("errorMessage", () => {
  it("puts an API error's status first and a connection failure's system code after", () => {
    expect(errorMessage(Object.assign(new Error("Bad request"), { status: 400 }))).toBe("400 Bad request");
    expect(errorMessage(Object.assign(new Error("400 Bad request"), { status: 400 }))).toBe(
      "400 Bad request",
    );
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" });
    const wrapped = new Error("Connection error.", {
      cause: new TypeError("fetch failed", { cause: refused }),
    });
    expect(errorMessage(wrapped)).toBe("Connection error. (ECONNREFUSED)");
    const bad = new Error("Connection error.", {
      cause: new TypeError("fetch failed", { cause: new Error("bad port") }),
    });
    expect(errorMessage(bad)).toBe("Connection error. (bad port)");
    // A cause whose words the message happens to contain once its status is taken off still shows.
    const short = new Error("Connection error.", {
      cause: Object.assign(new Error("500 error"), { status: 500 }),
    });
    expect(errorMessage(short)).toBe("Connection error. (500 error)");
  });

  it("says llama.cpp's overflow once, as sentences: no run-on and no status-prefixed copy of it in brackets", async () => {
    server = await startServer({
      personality: { name: "llamacpp", nCtx: 64 },
      replies: [{ content: "never" }],
    });
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "tiny" },
        messages: [{ role: "user", content: "word ".repeat(400) }],
        tools: [],
        dispatch: () => "unused",
      })
      .catch((e: unknown) => e);
    const line = errorMessage(error);
    // llama.cpp's own words end without a full stop ("…try increasing it").
    expect(line).toMatch(
      /^The request does not fit the model's context window: request \(\d+ tokens\) exceeds the available context size \(64 tokens\), try increasing it\. Of the 64-token window, the transcript takes about \d+ tokens \(the loop's estimate\)\. Shorten the transcript/,
    );
    expect(line).not.toMatch(/\(400 /);
    expect(line.match(/exceeds the available context size/g)).toHaveLength(1);
  });

  it("turns strings, nullish and plain objects into one line", () => {
    expect(errorMessage("plain")).toBe("plain");
    expect(errorMessage(undefined)).toBe("undefined");
    expect(errorMessage({ error: { message: "x" } })).toBe('{"error":{"message":"x"}}');
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(errorMessage(circular)).toBe("[object Object]");
  });
});

describe("failedRun", () => {
  it("reads the run off anything the loop throws and nothing else", () => {
    const run = {
      messages: [],
      usage: { prompt: 1, completion: 2, total: 3, cached: 0 },
      sideUsage: NO_SIDE,
      toolCalls: [],
      loaded: [],
      preselected: [],
      used: [],
    };
    expect(failedRun(new AgentLoopError(new Error("x"), run))).toBe(run);
    expect(failedRun(new ToolIterationLimit(3, run))).toBe(run);
    expect(failedRun(new Error("x"))).toBeUndefined();
    expect(failedRun({ run })).toBeUndefined();
    expect(new AgentLoopError(new Error("boom"), run).message).toBe("boom");
  });

  it("tells the loop's overflow apart from a bare ContextOverflow, while a catch for either still matches", () => {
    const run = {
      messages: [],
      usage: { prompt: 0, completion: 0, total: 0, cached: 0 },
      sideUsage: NO_SIDE,
      toolCalls: [],
      loaded: [],
      preselected: [],
      used: [],
    };
    const bare = new ContextOverflow("too long");
    const loop = new AgentLoopOverflow(bare, run);
    expect(ContextOverflow.isInstance(loop)).toBe(true);
    expect(AgentLoopOverflow.isInstance(loop)).toBe(true);
    expect(AgentLoopOverflow.isInstance(bare)).toBe(false);
    expect(loop.serverMessage).toBe("too long");
    expect(loop.cause).toBe(bare);
  });
});
