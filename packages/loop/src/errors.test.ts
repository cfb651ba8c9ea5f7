import { ContextOverflow } from "@loopwright/negotiate";
import { describe, expect, it } from "vitest";
import { AgentLoopError, AgentLoopOverflow, errorMessage, failedRun, ToolIterationLimit } from "./errors.js";

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
    const run = { messages: [], usage: { prompt: 1, completion: 2, total: 3, cached: 0 }, toolCalls: [] };
    expect(failedRun(new AgentLoopError(new Error("x"), run))).toBe(run);
    expect(failedRun(new ToolIterationLimit(3, run))).toBe(run);
    expect(failedRun(new Error("x"))).toBeUndefined();
    expect(failedRun({ run })).toBeUndefined();
    expect(new AgentLoopError(new Error("boom"), run).message).toBe("boom");
  });

  it("tells the loop's overflow apart from a bare ContextOverflow, while a catch for either still matches", () => {
    const run = { messages: [], usage: { prompt: 0, completion: 0, total: 0, cached: 0 }, toolCalls: [] };
    const bare = new ContextOverflow("too long");
    const loop = new AgentLoopOverflow(bare, run);
    expect(ContextOverflow.isInstance(loop)).toBe(true);
    expect(AgentLoopOverflow.isInstance(loop)).toBe(true);
    expect(AgentLoopOverflow.isInstance(bare)).toBe(false);
    expect(loop.serverMessage).toBe("too long");
    expect(loop.cause).toBe(bare);
  });
});
