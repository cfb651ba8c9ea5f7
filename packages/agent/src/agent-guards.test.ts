// The Agent's guards, over HTTP with the testkit: a stop that lands while a tool hook is pending,
// a fold that keeps the agent's own messages, input checked before it is stored, and options checked
// when the agent is built.
import { SPEC_TOKEN } from "@loopwright/spec";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import {
  Agent,
  AgentError,
  type AgentMessage,
  type AgentTool,
  answeredPrefix,
  type ChatMessageLike,
  createSession,
  defaultConvertToLlm,
} from "./test-exports.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function tool(name: string, execute: AgentTool["execute"]): AgentTool {
  return {
    name,
    description: `The ${name} tool`,
    parameters: { type: "object", properties: { n: { type: "number" } } },
    execute,
  };
}

function sentMessages(s: TestServer, index: number): ChatMessageLike[] {
  return (s.chatRequests[index]!.body as { messages: ChatMessageLike[] }).messages;
}

/**
 * What `call` rejected with, for a look at its code and message: it must return a rejected promise,
 * never throw (a host's `void agent.prompt(text).catch(show)` would miss a throw).
 */
async function rejected(call: () => Promise<unknown>): Promise<AgentError> {
  let promise: Promise<unknown>;
  try {
    promise = call();
  } catch (error) {
    throw new Error(`threw instead of rejecting: ${String(error)}`);
  }
  try {
    await promise;
  } catch (error) {
    expect(AgentError.isInstance(error)).toBe(true);
    return error as AgentError;
  }
  throw new Error("expected a rejection");
}

/** What `fn` threw, for a look at its code and message. */
function thrown(fn: () => unknown): AgentError {
  try {
    fn();
  } catch (error) {
    expect(AgentError.isInstance(error)).toBe(true);
    return error as AgentError;
  }
  throw new Error("expected a throw");
}

describe("a stop while a tool hook is pending", () => {
  it("never starts the tool (or the dispatch) once the run was aborted, however late the approval comes", async () => {
    server = await startServer({
      replies: [
        {
          toolCalls: [
            { id: "c1", name: "rm", arguments: '{"n":1}' },
            { id: "c2", name: "remote", arguments: '{"n":2}' },
          ],
        },
        { content: "never asked" },
      ],
    });
    const ran: string[] = [];
    const approvals: Array<() => void> = [];
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim" },
      tools: [
        tool("rm", () => {
          ran.push("rm");
          return "removed";
        }),
      ],
      dispatch: (request) => {
        ran.push(request.name);
        return "done";
      },
      // An approval step a person answers: pending until they click.
      beforeToolCall: () =>
        new Promise((resolve) => {
          approvals.push(() => resolve(undefined));
        }),
    });
    const running = agent.prompt("Clean up");
    while (approvals.length < 2) await sleep(5);
    agent.abort();
    const result = await running;
    expect(result.status).toBe("aborted");
    // The person approves after the stop: nothing runs.
    for (const approve of approvals) approve();
    await sleep(50);
    expect(ran).toEqual([]);
    const answers = agent.messages.filter((m) => (m as ChatMessageLike).role === "tool");
    expect(answers).toHaveLength(2);
    expect(server.chatRequests).toHaveLength(1);
  });

  it("does not run the tool when its beforeToolCall itself stopped the run and let the call through", async () => {
    server = await startServer({
      replies: [{ toolCalls: [{ id: "c1", name: "deploy", arguments: "{}" }] }, { content: "never asked" }],
    });
    const ran: string[] = [];
    let agent: Agent | undefined;
    agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim" },
      tools: [
        tool("deploy", () => {
          ran.push("deploy");
          return "deployed";
        }),
      ],
      // The person pressed Stop in the approval dialog; the hook returns without a block.
      beforeToolCall: async () => {
        agent?.abort();
        await sleep(5);
        return undefined;
      },
    });
    const result = await agent.prompt("Deploy");
    await sleep(30);
    expect(result.status).toBe("aborted");
    expect(ran).toEqual([]);
  });
});

// About 300 tokens of tool output per call at four characters a token: a few calls fill a 1,200-token window.
const LONG_RESULT = "z ".repeat(600);

describe("a fold under a transformContext that prunes by copying (autoCompact)", () => {
  it("keeps the agent's own tool results, so every later prompt still runs", async () => {
    let calls = 0;
    server = await startServer({
      replies: (request) => {
        const body = request.body as { model: string; messages: ChatMessageLike[] };
        if (body.model === "summariser") return { content: "SUMMARY of the earlier work." };
        if (body.messages.at(-1)?.role === "user") {
          calls++;
          return { toolCalls: [{ id: `read_${calls}`, name: "read", arguments: `{"n":${calls}}` }] };
        }
        return { content: `The answer after read ${calls}: ${"y ".repeat(200)}` };
      },
    });
    const compacted: AgentMessage[][] = [];
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim", contextLength: 1200 },
      autoCompact: { model: "summariser" },
      tools: [tool("read", () => LONG_RESULT)],
      // Each request carries the tool results cut short; the transcript keeps them whole.
      transformContext: (messages) =>
        messages.map((m) =>
          (m as ChatMessageLike).role === "tool"
            ? {
                ...(m as ChatMessageLike & { role: "tool" }),
                content: String((m as { content: unknown }).content).slice(0, 40),
              }
            : m,
        ),
    });
    agent.subscribe((event) => {
      if (event.type === "compacted") compacted.push(event.messages);
    });
    for (const prompt of ["first", "second", "third", "fourth", "fifth"]) {
      const result = await agent.prompt(prompt);
      expect(result.error).toBeUndefined();
      expect(result.status).toBe("ok");
    }
    expect(compacted.length).toBeGreaterThan(0);
    for (const messages of compacted) {
      const llm = defaultConvertToLlm(messages);
      expect(answeredPrefix(llm)).toBe(llm.length);
    }
    const transcript = agent.messages as ChatMessageLike[];
    expect(answeredPrefix(transcript)).toBe(transcript.length);
    // The tool results kept are the agent's own, whole: not the request's shortened copies.
    const results = transcript.filter((m) => m.role === "tool");
    expect(results.length).toBeGreaterThan(0);
    for (const m of results) expect(m.content).toBe(LONG_RESULT);
    // A request after a fold carried the summary and the pairs.
    const last = sentMessages(server, server.chatRequests.length - 1);
    expect(JSON.stringify(last)).toContain("SUMMARY of the earlier work.");
  });

  it("keeps an app-only message that lies after the folded stretch", async () => {
    let answers = 0;
    server = await startServer({
      replies: (request) => {
        if ((request.body as { model: string }).model === "summariser") return { content: "SUMMARY." };
        answers++;
        return { content: `Answer ${answers}: ${"x ".repeat(400)}` };
      },
    });
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim", contextLength: 1000 },
      autoCompact: { model: "summariser" },
    });
    await agent.prompt("first");
    await agent.prompt("second");
    const note = { role: "notification", text: "Deployed build #42" } as unknown as AgentMessage;
    agent.messages = [...agent.messages, note];
    const result = await agent.prompt("third");
    expect(result.status).toBe("ok");
    const roles = agent.messages.map((m) => (m as { role: string }).role);
    // The fold took the first exchanges; the note after them stays, in its place.
    expect(JSON.stringify(agent.messages)).toContain("SUMMARY.");
    expect(agent.messages).toContain(note);
    expect(roles.slice(roles.indexOf("notification"))).toEqual(["notification", "user", "assistant"]);
  });
});

describe("what prompt, steer and followUp take", () => {
  const history = (): AgentMessage[] => [
    { role: "user", content: "hi" },
    { role: "assistant", content: "hello" },
  ];

  it.each([
    ["null", [null], /message 0 .*not a message/],
    ["a number", [42], /message 0 .*not a message/],
    ["a user message with numeric content", [{ role: "user", content: 42 }], /message 0 .*content/],
    ["a message without a role", [{ content: "x" }], /message 0 .*role/],
    [
      "a tool message that answers no call",
      [{ role: "tool", tool_call_id: "x", content: "y" }],
      /message 0 answers no open tool call .*"x"/,
    ],
    [
      "an app-only message alone",
      [{ role: "notification", text: "x" }],
      /ends in an assistant reply|nothing for the model to answer/,
    ],
    [
      "a good message, then a bad one",
      [
        { role: "user", content: "fine" },
        { role: "user", content: { text: "no" } },
      ],
      /message 1 .*content/,
    ],
  ])(
    "refuses %s with invalid-input, nothing sent and the transcript untouched",
    async (_name, input, pattern) => {
      server = await startServer({ replies: [{ content: "one" }, { content: "two" }] });
      const agent = new Agent({ config: { baseUrl: server.baseUrl, model: "sim" }, messages: history() });
      const error = await rejected(() => agent.prompt(input as AgentMessage[]));
      expect(error.code).toBe("invalid-input");
      expect(error.message).toMatch(pattern);
      expect(agent.messages).toEqual(history());
      expect(agent.isRunning).toBe(false);
      expect(server.chatRequests).toHaveLength(0);
      // The agent still works.
      expect((await agent.prompt("hello again")).status).toBe("ok");
    },
  );

  it("refuses a stray tool message when a convertToLlm copies every message, naming the messages given", async () => {
    const agent = new Agent({
      config: { baseUrl: "http://127.0.0.1:9/v1", model: "sim" },
      messages: history(),
      convertToLlm: (messages) => messages.map((m) => ({ ...(m as ChatMessageLike) })),
    });
    const error = await rejected(() => agent.prompt([{ role: "tool", tool_call_id: "x", content: "y" }]));
    expect(error.code).toBe("invalid-input");
    expect(error.message).toMatch(/a message given answers no open tool call/);
    expect(agent.messages).toEqual(history());
  });

  it("refuses a transcript assigned that is not a list of messages, keeping the one it had", () => {
    const agent = new Agent({
      config: { baseUrl: "http://127.0.0.1:9/v1", model: "sim" },
      messages: history(),
    });
    for (const bad of ["hi", [{ role: "user", content: "ok" }, 7]]) {
      const error = thrown(() => {
        agent.messages = bad as unknown as AgentMessage[];
      });
      expect(error.code).toBe("invalid-input");
      expect(error.message).toMatch(/^Agent\.messages/);
    }
    expect(agent.messages).toEqual(history());
  });

  it("refuses a stored call whose type is neither function nor custom, as the loop would at every prompt", () => {
    const config = { baseUrl: "http://127.0.0.1:9/v1", model: "sim" };
    for (const type of ["tool", "function_call", "", 7]) {
      const stored = [
        { role: "user", content: "add" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1", type, function: { name: "add", arguments: "{}" } }],
        },
        { role: "tool", tool_call_id: "c1", content: "3" },
      ] as unknown as AgentMessage[];
      const error = thrown(() => new Agent({ config, messages: stored }));
      expect(error.code).toBe("invalid-input");
      expect(error.message).toMatch(
        /with (type "[^"]*"|a type that is no string) \(a call's type is "function" or "custom"\)/,
      );
      const agent = new Agent({ config });
      expect(() => {
        agent.messages = stored;
      }).toThrow(/a call's type is "function" or "custom"/);
      expect(agent.messages).toEqual([]);
    }
    // Absent or null is a function call, as the loop reads it.
    for (const type of [undefined, null, "function"]) {
      const stored = [
        { role: "user", content: "add" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1", type, function: { name: "add", arguments: "{}" } }],
        },
        { role: "tool", tool_call_id: "c1", content: "3" },
      ] as unknown as AgentMessage[];
      expect(new Agent({ config, messages: stored }).messages).toHaveLength(3);
    }
  });

  it("refuses a bad steer or followUp before it is queued", () => {
    const agent = new Agent({ config: { baseUrl: "http://127.0.0.1:9/v1", model: "sim" } });
    for (const queue of ["steer", "followUp"] as const) {
      for (const bad of [null, 42, { role: "user", content: 42 }, { text: "no role" }, ""]) {
        const error = thrown(() => agent[queue](bad as unknown as AgentMessage));
        expect(error.code).toBe("invalid-input");
        expect(error.message).toContain(`Agent.${queue}`);
      }
    }
    expect(agent.hasQueuedMessages()).toBe(false);
  });

  it("still takes a tool message that answers the assistant's call before it, and app-only messages beside a user turn", async () => {
    server = await startServer({ replies: [{ content: "Thanks." }] });
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: [
        { role: "user", content: "Look it up" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1", type: "function", function: { name: "look", arguments: "{}" } }],
        },
      ],
    });
    const result = await agent.prompt([
      { role: "tool", tool_call_id: "c1", content: "found" },
      { role: "notification", text: "UI only" } as unknown as AgentMessage,
      { role: "user", content: [{ type: "text", text: "And now?" }] },
    ]);
    expect(result.status).toBe("ok");
    expect(sentMessages(server, 0).map((m) => m.role)).toEqual(["user", "assistant", "tool", "user"]);
  });
});

describe("what new Agent takes", () => {
  const config = { baseUrl: "http://127.0.0.1:9/v1", model: "sim" };
  it.each([
    ["tools", { tools: {} }, /tools .*list of tools or a ToolRegistry.*an object/],
    ["tools", { tools: "x" }, /tools .*string/],
    ["system", { system: 42 }, /system .*string.*a number/],
    ["toolExecution", { toolExecution: "fast" }, /toolExecution .*"parallel" or "sequential".*"fast"/],
    ["steeringMode", { steeringMode: "bogus" }, /steeringMode .*"one-at-a-time" or "all"/],
    ["followUpMode", { followUpMode: 1 }, /followUpMode .*a number/],
    ["messages", { messages: "hi" }, /messages .*list.*a string/],
    ["messages", { messages: [null] }, /messages\[0\]/],
    ["config", { config: "x" }, /config .*an object.*a string/],
    ["spec", { config: undefined, spec: 42 }, /spec .*a number/],
    ["spec", { config: undefined, spec: {} }, /spec: .*not a parsed agent spec/],
    ["tools", { tools: [{ name: "t" }] }, /tools\[0\] .*execute function.*an object/],
    [
      "autoCompact",
      { autoCompact: "yes", config: { ...config, contextLength: 100 } },
      /autoCompact .*a string/,
    ],
    [
      "autoCompact",
      { autoCompact: { model: 3 }, config: { ...config, contextLength: 100 } },
      /autoCompact\.model/,
    ],
    ["transformContext", { transformContext: 1 }, /transformContext .*function.*a number/],
    ["convertToLlm", { convertToLlm: 1 }, /convertToLlm .*function/],
    ["beforeToolCall", { beforeToolCall: 1 }, /beforeToolCall .*function.*a number/],
    ["afterToolCall", { afterToolCall: "x" }, /afterToolCall .*function.*a string/],
    ["toolChoice", { toolChoice: "none" }, /toolChoice .*function.*a string \("none"\)/],
    ["shouldStopAfterTurn", { shouldStopAfterTurn: true }, /shouldStopAfterTurn .*function/],
    ["dispatch", { dispatch: 1 }, /dispatch .*function/],
    ["dedupeToolCalls", { dedupeToolCalls: "yes" }, /dedupeToolCalls .*true, false or a function/],
    ["backend", { backend: {} }, /backend .*run function/],
  ])("refuses a bad %s with invalid-input naming it and what it got", (_name, options, pattern) => {
    const error = thrown(() => new Agent({ config, ...(options as object) }));
    expect(error.code).toBe("invalid-input");
    expect(error.message).toMatch(pattern);
  });

  it("refuses system together with config.prompt or a spec's prompt entries, naming both, before anything is sent", () => {
    const withPrompt = { ...config, prompt: [{ id: "role", text: "Be brief." }] };
    const both = thrown(() => new Agent({ config: withPrompt, system: "You are helpful." }));
    expect(both.code).toBe("invalid-input");
    expect(both.message).toMatch(
      /^new Agent: the system prompt was given twice, as system and as the config's prompt \(config\.prompt\)/,
    );
    const spec = {
      spec: SPEC_TOKEN,
      model: { name: "sim", endpoint: { baseUrl: config.baseUrl } },
      prompt: [{ id: "role", text: "You add numbers." }],
    };
    const fromSpec = thrown(() => new Agent({ spec, system: "You are helpful." } as never));
    expect(fromSpec.code).toBe("invalid-input");
    expect(fromSpec.message).toMatch(/as system and as the spec's prompt entries/);
    // Prompt entries with no text are no system prompt: the loop sends system alone, and so it is taken.
    expect(new Agent({ config: { ...config, prompt: [{ id: "x", text: "" }] }, system: "S" }).system).toBe(
      "S",
    );
  });

  it("refuses a system assigned that is not text, or that config.prompt already gives, keeping the one it had", async () => {
    server = await startServer({ replies: [{ content: "ok" }] });
    const plain = new Agent({ config: { baseUrl: server.baseUrl, model: "sim" }, system: "One." });
    const wrong = thrown(() => {
      plain.system = 42 as never;
    });
    expect(wrong.code).toBe("invalid-input");
    expect(wrong.message).toMatch(/^Agent\.system must be a string; got a number/);
    expect(plain.system).toBe("One.");
    plain.system = "Two.";
    expect(plain.system).toBe("Two.");
    plain.system = null as never; // absent, as the option reads it
    expect(plain.system).toBeUndefined();

    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim", prompt: [{ id: "role", text: "Be brief." }] },
    });
    const twice = thrown(() => {
      agent.system = "You are helpful.";
    });
    expect(twice.code).toBe("invalid-input");
    expect(twice.message).toMatch(/^Agent\.system: .*config\.prompt/);
    expect(agent.system).toBeUndefined();
    expect(agent.messages).toEqual([]);
    // The agent still answers, with the prompt entries as its system prompt.
    expect((await agent.prompt("hi")).status).toBe("ok");
    expect(sentMessages(server, 0)).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: "hi" },
    ]);
    // Prompt entries put into the config after system was set: refused at the prompt, nothing kept.
    const late = new Agent({ config: { baseUrl: server.baseUrl, model: "sim" }, system: "One." });
    (late.config as { prompt?: unknown }).prompt = [{ id: "role", text: "Be brief." }];
    const refused = await rejected(() => late.prompt("hi"));
    expect(refused.code).toBe("invalid-input");
    expect(refused.message).toMatch(/^Agent\.prompt: the system prompt was given twice/);
    expect((await rejected(() => late.continue())).message).toMatch(
      /^Agent\.continue: the system prompt was given twice/,
    );
    expect(late.messages).toEqual([]);
    expect(server.chatRequests).toHaveLength(1);
  });

  it("reads null as absent, as createSession does (a nullable field read back from JSON)", async () => {
    server = await startServer({ replies: [{ content: "ok" }] });
    const names = [
      "system",
      "tools",
      "messages",
      "dispatch",
      "dedupeToolCalls",
      "backend",
      "toolExecution",
      "steeringMode",
      "followUpMode",
      "transformContext",
      "convertToLlm",
      "beforeToolCall",
      "afterToolCall",
      "shouldStopAfterTurn",
      "toolChoice",
      "autoCompact",
      "spec",
    ];
    const nulls = Object.fromEntries(names.map((name) => [name, null]));
    const agent = new Agent({ config: { baseUrl: server.baseUrl, model: "sim" }, ...nulls } as never);
    expect([agent.system, agent.transformContext, agent.beforeToolCall, agent.toolChoice]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect([agent.toolExecution, agent.steeringMode, agent.followUpMode]).toEqual([
      "parallel",
      "one-at-a-time",
      "one-at-a-time",
    ]);
    expect(agent.messages).toEqual([]);
    expect(agent.config.compact).toBeUndefined();
    expect((await agent.prompt("hi")).status).toBe("ok");
    expect(sentMessages(server, 0).map((m) => m.role)).toEqual(["user"]);
    // A null config is absent too: a spec alone is enough, and neither is still refused.
    const spec = { spec: SPEC_TOKEN, model: { name: "sim", endpoint: { baseUrl: server.baseUrl } } };
    expect(new Agent({ config: null, spec } as never).config.model).toBe("sim");
    expect(thrown(() => new Agent({ config: null } as never)).message).toMatch(
      /give exactly one of config .* and spec/,
    );
  });

  it("says a window given as text was text", () => {
    const error = thrown(
      () => new Agent({ config: { ...config, contextLength: "1200" as never }, autoCompact: true }),
    );
    expect(error.code).toBe("invalid-input");
    expect(error.message).toMatch(/contextLength/);
    expect(error.message).toMatch(/a string \("1200"\)/);
  });

  it("still takes every option in its documented form", async () => {
    server = await startServer({ replies: [{ content: "ok" }] });
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim" },
      system: "Be brief.",
      tools: [tool("t", () => "r")],
      messages: [],
      toolExecution: "sequential",
      steeringMode: "all",
      followUpMode: "one-at-a-time",
      dedupeToolCalls: false,
      dispatch: () => "d",
      transformContext: (m) => m,
      convertToLlm: defaultConvertToLlm,
      beforeToolCall: () => undefined,
      afterToolCall: () => undefined,
      toolChoice: () => undefined,
      shouldStopAfterTurn: () => false,
      autoCompact: false,
    });
    expect((await agent.prompt("hi")).status).toBe("ok");
  });
});

describe("option keys a call does not read", () => {
  it("refuses them in new Agent and createSession, naming the key and the one likely meant", async () => {
    const config = { baseUrl: "http://127.0.0.1:9/v1", model: "sim" };
    const misspelt = (() => {
      try {
        new Agent({ config, sytem: "Be brief." } as never);
      } catch (error) {
        return error as AgentError;
      }
      throw new Error("expected a throw");
    })();
    expect(misspelt.code).toBe("invalid-input");
    expect(misspelt.message).toMatch(
      /^new Agent does not know the option "sytem" \(did you mean "system"\?\)/,
    );
    // Passed through a spread, which the compiler does not check: the history is refused, not dropped.
    const agentOptions = { config, messages: [{ role: "user" as const, content: "earlier" }] };
    const session = await createSession({ ...agentOptions, maxTurns: 10 }).then(
      () => undefined,
      (error: unknown) => error as AgentError,
    );
    expect(session?.code).toBe("invalid-input");
    expect(session?.message).toMatch(
      /^createSession does not know the option "messages": a session's transcript is its file's/,
    );
    await expect(createSession({ config, bogus: 1 } as never)).rejects.toThrow(
      /does not know the option "bogus"; the options it reads are config, spec/,
    );
  });
});
