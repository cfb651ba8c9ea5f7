import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { Agent, AgentError, type ChatMessageLike, createSession } from "./test-exports.js";

// Review round r82 (agent): each test fails on the code before its fix.

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const look = {
  name: "look",
  description: "Looks",
  parameters: { type: "object" },
  execute: () => "seen",
};

describe("R82A-1: a session's message_end read the whole transcript per message", () => {
  it("reads a few entries per message of a 10,000-message session, not all of them twice", async () => {
    server = await startServer({
      replies: [
        { content: "Looking.", toolCalls: [{ id: "c1", name: "look", arguments: '{"n":1}' }] },
        { content: "Again.", toolCalls: [{ id: "c2", name: "look", arguments: '{"n":2}' }] },
        { content: "Done." },
      ],
    });
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim", toolTimeoutSeconds: 0 },
      tools: [look],
    });
    const history: ChatMessageLike[] = [];
    for (let i = 0; i < 5_000; i++) {
      history.push({ role: "user", content: `q${i}` }, { role: "assistant", content: `a${i}` });
    }
    session.agent.messages = history;
    // Every index the session reads of the transcript, counted.
    const accessor = Object.getOwnPropertyDescriptor(Agent.prototype, "messages") as PropertyDescriptor;
    const agent = session.agent;
    let reads = 0;
    Object.defineProperty(agent, "messages", {
      configurable: true,
      get() {
        const live = accessor.get?.call(agent) as ChatMessageLike[];
        return new Proxy(live, {
          get(target, key, receiver) {
            if (typeof key === "string" && /^\d+$/.test(key)) reads++;
            return Reflect.get(target, key, receiver);
          },
        });
      },
      set(value) {
        accessor.set?.call(agent, value);
      },
    });
    expect((await session.prompt("go")).status).toBe("ok");
    // Each answer's message_end read all 10,000 earlier messages, twice: 60,000 reads for three.
    expect(reads).toBeLessThan(1_000);
    expect(
      session
        .getSnapshot()
        .timeline.slice(-6)
        .map((e) => e.type),
    ).toEqual(["user", "assistant", "tool", "assistant", "tool", "assistant"]);
    await session.close();
  });
});

describe("R82A-2: submitAnswer echoed the id it was given whole", () => {
  it("cuts and escapes an id of a megabyte, control characters and a lone surrogate", async () => {
    const session = await createSession({ config: { baseUrl: "http://127.0.0.1:9", model: "sim" } });
    const id = `q\u0000\u001b[2J\ud800${"x".repeat(1_000_000)}`;
    let error: unknown;
    try {
      session.submitAnswer(id, []);
    } catch (caught) {
      error = caught;
    }
    expect(AgentError.isInstance(error) && error.code).toBe("unknown-question");
    const message = (error as Error).message;
    expect(message.length).toBeLessThan(200);
    // Half a surrogate pair written U+FFFD, as the echo rule (r104c) has it.
    expect(message).toContain("\\u0000\\u001b[2J\ufffdxx");
    expect([...message].some((c) => c.charCodeAt(0) < 0x20)).toBe(false);
    expect(message.isWellFormed()).toBe(true);
    // An id that is no string is named by its kind: a symbol threw a TypeError.
    expect(() => session.submitAnswer(Symbol("q") as never, [])).toThrow(AgentError);
    await session.close();
  });
});

describe("R82A-3: a tool's name echoed whole in the registry's errors", () => {
  const tool = (name: unknown) =>
    ({ name, description: "d", parameters: { type: "object" }, execute: () => "x" }) as never;

  it("a taken name of a megabyte with control characters and a lone surrogate is cut and escaped", () => {
    const agent = new Agent({ config: { baseUrl: "http://127.0.0.1:9", model: "sim" } });
    const name = `a\u0000\u001b[31m\ud800${"x".repeat(1_000_000)}`;
    agent.tools.register(tool(name));
    let error: unknown;
    try {
      agent.tools.register(tool(name));
    } catch (caught) {
      error = caught;
    }
    expect(AgentError.isInstance(error) && error.code).toBe("duplicate-tool");
    const message = (error as Error).message;
    expect(message.length).toBeLessThan(250);
    // Half a surrogate pair written U+FFFD, as the echo rule (r104c) has it.
    expect(message).toContain('"a\\u0000\\u001b[31m\ufffdxx');
    expect([...message].some((c) => c.charCodeAt(0) < 0x20)).toBe(false);
    expect(message.isWellFormed()).toBe(true);
  });

  it("a BigInt name is an AgentError naming its kind, not a TypeError from JSON", () => {
    const agent = new Agent({ config: { baseUrl: "http://127.0.0.1:9", model: "sim" } });
    expect(() => agent.tools.register(tool(10n))).toThrow(/a bigint \(10\)/);
  });
});
