// The Agent's host hooks read strictly, over HTTP with the testkit: a toolChoice or convertToLlm
// written async (refused by name, a rejection never unhandled), beforeToolCall answers of the wrong
// shape (fail closed), and a stop while transformContext is pending.
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import {
  type AfterToolCallResult,
  Agent,
  type AgentEvent,
  type AgentTool,
  type BeforeToolCallResult,
  type ChatMessageLike,
} from "./test-exports.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `body` with a spy on `unhandledRejection`, then answers what it caught (after a settle). */
async function unhandledDuring(body: () => Promise<void>): Promise<unknown[]> {
  const caught: unknown[] = [];
  const spy = (reason: unknown): void => {
    caught.push(reason);
  };
  process.on("unhandledRejection", spy);
  try {
    await body();
    await sleep(50);
  } finally {
    process.off("unhandledRejection", spy);
  }
  return caught;
}

describe("a hook that must answer synchronously, written async", () => {
  it("toolChoice: the run ends with an error naming it, and its rejection is never unhandled", async () => {
    server = await startServer({ replies: [{ content: "never asked" }] });
    let status: string | undefined;
    let error: string | undefined;
    const unhandled = await unhandledDuring(async () => {
      const agent = new Agent({
        config: { baseUrl: server!.baseUrl, model: "sim" },
        // A policy looked up in a store, and the store is down.
        toolChoice: (async () => {
          throw new Error("policy lookup failed");
        }) as never,
      });
      ({ status, error } = await agent.prompt("Hello"));
    });
    expect(unhandled).toEqual([]);
    expect(status).toBe("error");
    expect(error).toBe(
      'toolChoice returned a Promise; it must answer synchronously: "auto", "none", "required", { type: "function", function: { name } } or undefined.',
    );
    expect(server.chatRequests).toHaveLength(0);
  });

  it("convertToLlm: the run ends with an error naming it (a promise, or no array), never unhandled", async () => {
    server = await startServer({ replies: [{ content: "never asked" }] });
    const results: { status: string; error?: string | undefined }[] = [];
    const unhandled = await unhandledDuring(async () => {
      for (const convertToLlm of [
        async () => {
          throw new Error("store down");
        },
        async (messages: unknown) => messages,
        () => "not a list",
      ]) {
        const agent = new Agent({
          config: { baseUrl: server!.baseUrl, model: "sim" },
          convertToLlm: convertToLlm as never,
        });
        const { status, error } = await agent.prompt("Hello");
        results.push({ status, error });
      }
    });
    expect(unhandled).toEqual([]);
    expect(results).toEqual([
      {
        status: "error",
        error:
          "convertToLlm returned a Promise; it must answer synchronously, with the array of chat messages to send.",
      },
      {
        status: "error",
        error:
          "convertToLlm returned a Promise; it must answer synchronously, with the array of chat messages to send.",
      },
      {
        status: "error",
        error: 'convertToLlm must return an array of chat messages, and returned a string ("not a list").',
      },
    ]);
    expect(server.chatRequests).toHaveLength(0);
  });
});

describe("beforeToolCall answers of the wrong shape", () => {
  const cases: [string, unknown, RegExp][] = [
    ["a number", 42, /beforeToolCall answered a number \(42\)/],
    ["a string", "deny", /beforeToolCall answered a string \("deny"\)/],
    [
      "block: 1",
      { block: 1, reason: "no" },
      /Not run: beforeToolCall answered block: a number \(1\), not true or false, read as a block\./,
    ],
    [
      'block: "true"',
      { block: "true", reason: "no" },
      /block: a string \("true"\), not true or false, read as a block/,
    ],
    ["args as JSON text", { args: '{"path":"/tmp/safe"}' }, /args: a string .*not an object of arguments/],
    // A "no" in the host's own words, with a key the contract does not have: not run (r31 #4).
    [
      "{ blocked: true, reason }",
      { blocked: true, reason: "not allowed" },
      /Not run: beforeToolCall answered an object with "blocked", not a field it reads \(block, reason, terminate, args; did you mean "block"\?\)\.$/,
    ],
    [
      "{ Block: true }",
      { Block: true },
      /beforeToolCall answered an object with "Block", not a field it reads \(block, reason, terminate, args; did you mean "block"\?\)/,
    ],
    [
      "{ allow: false }",
      { allow: false },
      /beforeToolCall answered an object with "allow", not a field it reads \(block, reason, terminate, args\)/,
    ],
    [
      '{ decision: "deny" }',
      { decision: "deny", reason: "not allowed" },
      /beforeToolCall answered an object with "decision", not a field it reads \(block, reason, terminate, args\)/,
    ],
    // `{ block: false, ...verdict }` whose verdict says "no" in other words, or a yes to blocking or
    // arguments under a slip: the default's block: false is not read over it (r35 #3; they ran the
    // tool). The refusal names the key and its value's kind (r37 #3).
    [
      "{ block: false, Block: true, reason }",
      { block: false, Block: true, reason: "deploys need approval" },
      /Not run: beforeToolCall answered an object with "Block", not a field it reads \(block, reason, terminate, args; did you mean "block"\?\) beside block: false; "Block" is a boolean \(true\), a yes to blocking under what may be a misspelt "block", so block: false is not read over it\.$/,
    ],
    [
      "{ block: false, blocked: true }",
      { block: false, blocked: true },
      /Not run: beforeToolCall answered an object with "blocked", .* beside block: false; "blocked" is a boolean \(true\), a yes to blocking under what may be a misspelt "block", so block: false is not read over it\.$/,
    ],
    [
      '{ block: false, blocked: "yes" }',
      { block: false, blocked: "yes" },
      /beside block: false; "blocked" is a string \("yes"\), a yes to blocking under what may be a misspelt "block"/,
    ],
    [
      "{ block: false, allow: false }",
      { block: false, allow: false },
      /Not run: beforeToolCall answered an object with "allow", not a field it reads \(block, reason, terminate, args\) beside block: false; "allow" is a boolean \(false\), a verdict in other words that does not agree with it, so block: false is not read over it\.$/,
    ],
    [
      '{ block: false, allowed: "true" } (only true agrees)',
      { block: false, allowed: "true" },
      /beside block: false; "allowed" is a string \("true"\), a verdict in other words that does not agree with it/,
    ],
    [
      "{ block: false, denied: true }",
      { block: false, denied: true },
      /beside block: false; "denied" is a boolean \(true\), a verdict in other words that does not agree with it/,
    ],
    [
      '{ block: false, Decision: "deny", ruleId }',
      { block: false, Decision: "deny", ruleId: "r-1" },
      /Not run: beforeToolCall answered an object with "Decision", "ruleId", .* beside block: false; "Decision" is a string \("deny"\), a verdict in other words that does not agree with it, so block: false is not read over it\.$/,
    ],
    [
      '{ block: false, decision: "review" }',
      { block: false, decision: "review" },
      /beside block: false; "decision" is a string \("review"\), a verdict in other words that does not agree with it/,
    ],
    // Arguments confined by the policy, under a slip in their key: the model's own are never run.
    [
      "{ block: false, arg: { path } }",
      { block: false, arg: { path: "/tmp/sandbox" } },
      /Not run: beforeToolCall answered an object with "arg", .*did you mean "args"\?\) beside block: false; "arg" is an object, which may be arguments under a misspelt "args", so block: false is not read over it\.$/,
    ],
    [
      "{ block: false, agrs: { path } }",
      { block: false, agrs: { path: "/tmp/sandbox" } },
      /beside block: false; "agrs" is an object, which may be arguments under a misspelt "args", so block: false is not read over it\.$/,
    ],
    [
      "{ block: false, arguments: JSON text of arguments }",
      { block: false, arguments: '{"path":"/tmp/sandbox"}' },
      /beside block: false; "arguments" is a string \(.*\), which may be arguments under a misspelt "args"/,
    ],
    [
      "{ block: false, lock: true }",
      { block: false, lock: true },
      /beside block: false; "lock" is a boolean \(true\), a yes to blocking under what may be a misspelt "block", so block: false is not read over it\.$/,
    ],
  ];
  for (const [label, answer, reads] of cases) {
    it(`${label}: the call is answered, not run, and the host and the model are told why`, async () => {
      server = await startServer({
        replies: [
          { toolCalls: [{ id: "c1", name: "rm", arguments: '{"path":"/etc/passwd"}' }] },
          { content: "I could not delete it." },
        ],
      });
      const ran: unknown[] = [];
      const rm: AgentTool = {
        name: "rm",
        description: "Deletes a file",
        parameters: { type: "object", properties: { path: { type: "string" } } },
        execute: (args) => {
          ran.push(args);
          return "deleted";
        },
      };
      const agent = new Agent({
        config: { baseUrl: server.baseUrl, model: "sim" },
        tools: [rm],
        beforeToolCall: () => answer as never,
      });
      const notices: string[] = [];
      agent.subscribe((event: AgentEvent) => {
        if (event.type === "notice") notices.push(event.text);
      });
      const result = await agent.prompt("Delete /etc/passwd");
      expect(result.status).toBe("ok");
      expect(ran).toEqual([]);
      const sent = (server.chatRequests[1]!.body as { messages: ChatMessageLike[] }).messages;
      const toolMessage = sent.find((m) => m.role === "tool") as { content: string };
      expect(toolMessage.content).toMatch(reads);
      expect(toolMessage.content).toMatch(/^Error: Not run: beforeToolCall answered /);
      expect(notices.some((text) => reads.test(text))).toBe(true);
    });
  }

  it("still runs a call for undefined, null, block: false and { args } given as an object", async () => {
    server = await startServer({
      replies: [
        {
          toolCalls: [
            { id: "c1", name: "rm", arguments: '{"path":"a"}' },
            { id: "c2", name: "rm", arguments: '{"path":"b"}' },
            { id: "c3", name: "rm", arguments: '{"path":"c"}' },
            { id: "c4", name: "rm", arguments: '{"path":"d"}' },
          ],
        },
        { content: "Done." },
      ],
    });
    const ran: unknown[] = [];
    const answers: Record<string, unknown> = {
      c1: undefined,
      c2: null,
      // A policy engine's verdict spread in: its own `block` is read, its other keys named (r34 #4);
      // keys that are neither a slip for a field nor a verdict word do not stop it (r35 #3).
      // A verdict's `tags` (two edits from `args`) and a misspelt `reason` change nothing that runs.
      c3: {
        block: false,
        reason: "rule r-7 allows it",
        ruleId: "r-7",
        auditId: "a-9",
        tags: ["fs"],
        reasn: "x",
      },
      c4: { args: { path: "/tmp/safe" } },
    };
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim" },
      toolExecution: "sequential",
      tools: [
        {
          name: "rm",
          description: "Deletes a file",
          parameters: { type: "object", properties: { path: { type: "string" } } },
          execute: (args) => {
            ran.push(args);
            return "deleted";
          },
        },
      ],
      beforeToolCall: ({ toolCall }) => answers[toolCall.id] as never,
    });
    const notices: string[] = [];
    agent.subscribe((event: AgentEvent) => {
      if (event.type === "notice") notices.push(event.text);
    });
    const result = await agent.prompt("Delete them");
    expect(result.status).toBe("ok");
    expect(ran).toEqual([{ path: "a" }, { path: "b" }, { path: "c" }, { path: "/tmp/safe" }]);
    expect(notices).toEqual([
      'beforeToolCall answered an object with "ruleId", "auditId", "tags", "reasn", not fields it reads (block, reason, terminate, args; did you mean "args" for "tags", "reason" for "reasn"?); its block: false was read.',
    ]);
  });

  it("runs a call beside block: false whose other keys agree with it, are null/undefined, or are no verdict (r37 #3)", async () => {
    // A policy engine's allow verdict spread in (it agrees with block: false), a host's
    // `blockReason: blocked ? text : undefined`, a reason or an id under a `block…` key, an audit
    // digest under an `arg…` key: none says "no", so the call runs (before, each was refused).
    const answers: Record<string, unknown> = {
      c1: { block: false, allowed: true, reason: "policy p-7 allows rm in /tmp" },
      c2: { block: false, decision: "allow", ruleId: "r-1" },
      c3: { block: false, approved: true, approver: "ops" },
      c4: { block: false, blockedBy: null },
      c5: { block: false, blockReason: undefined },
      c6: { block: false, argsHash: "sha256:ab12" },
      c7: { block: false, Decision: "Approved", denied: false, blockReason: "would block on /etc" },
    };
    server = await startServer({
      replies: [
        {
          toolCalls: Object.keys(answers).map((id, at) => ({
            id,
            name: "rm",
            arguments: JSON.stringify({ path: `/tmp/${at + 1}` }),
          })),
        },
        { content: "Done." },
      ],
    });
    const ran: unknown[] = [];
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim" },
      toolExecution: "sequential",
      tools: [
        {
          name: "rm",
          description: "Deletes a file",
          parameters: { type: "object", properties: { path: { type: "string" } } },
          execute: (args) => {
            ran.push(args);
            return "deleted";
          },
        },
      ],
      beforeToolCall: ({ toolCall }) => answers[toolCall.id] as never,
    });
    const notices: string[] = [];
    agent.subscribe((event: AgentEvent) => {
      if (event.type === "notice") notices.push(event.text);
    });
    expect((await agent.prompt("Delete them")).status).toBe("ok");
    const sent = (server.chatRequests[1]!.body as { messages: ChatMessageLike[] }).messages;
    expect(sent.filter((m) => m.role === "tool").map((m) => (m as { content: string }).content)).toEqual(
      Array(7).fill("deleted"),
    );
    expect(ran).toEqual([1, 2, 3, 4, 5, 6, 7].map((n) => ({ path: `/tmp/${n}` })));
    const read = (keys: string) =>
      `beforeToolCall answered an object with ${keys}; its block: false was read.`;
    // The null/undefined keys are absent: no notice for c4 and c5.
    expect(notices).toEqual([
      read('"allowed", not a field it reads (block, reason, terminate, args)'),
      read('"decision", "ruleId", not fields it reads (block, reason, terminate, args)'),
      read('"approved", "approver", not fields it reads (block, reason, terminate, args)'),
      read('"argsHash", not a field it reads (block, reason, terminate, args)'),
      read('"Decision", "denied", "blockReason", not fields it reads (block, reason, terminate, args)'),
    ]);
  });

  it("blocks with the host's reason for block: true beside keys it does not read, naming them", async () => {
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "c1", name: "rm", arguments: '{"path":"/etc/passwd"}' }] },
        { content: "I could not delete it." },
      ],
    });
    const ran: unknown[] = [];
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim" },
      tools: [
        {
          name: "rm",
          description: "Deletes a file",
          parameters: { type: "object", properties: { path: { type: "string" } } },
          execute: (args) => {
            ran.push(args);
            return "deleted";
          },
        },
      ],
      beforeToolCall: () => ({ block: true, reason: "Policy forbids it.", auditId: "a-1" }) as never,
    });
    const notices: string[] = [];
    agent.subscribe((event: AgentEvent) => {
      if (event.type === "notice") notices.push(event.text);
    });
    expect((await agent.prompt("Delete /etc/passwd")).status).toBe("ok");
    expect(ran).toEqual([]);
    const sent = (server.chatRequests[1]!.body as { messages: ChatMessageLike[] }).messages;
    expect((sent.find((m) => m.role === "tool") as { content: string }).content).toBe(
      "Error: Policy forbids it.",
    );
    expect(notices).toEqual([
      'beforeToolCall answered an object with "auditId", not a field it reads (block, reason, terminate, args); its block: true was read.',
    ]);
  });
});

describe("afterToolCall answers with keys it does not read (r31 #4, r35 #5)", () => {
  it("uses a result given beside keys it does not read; withholds the tool's result for a misspelt result or a bare value (fail closed)", async () => {
    const answers: Record<string, unknown> = {
      // A redaction under a slip in its key, or returned bare: the raw result must not go (r35 #5).
      c1: { results: "REDACTED" },
      c2: { Result: "REDACTED", error: true },
      c3: "OPENAI_API_KEY=[redacted]",
      c4: 42,
      c5: ["REDACTED"],
      // A redacting hook with its own audit field: the result it gives is used (r34 #1).
      c6: { result: "REDACTED", auditId: "a-1" },
      // Only keys it does not read, none like `result`: the tool's result is sent, and the host told so.
      c7: { auditId: "a-2" },
    };
    server = await startServer({
      replies: [
        {
          toolCalls: Object.keys(answers).map((id, at) => ({
            id,
            name: "read_env",
            arguments: JSON.stringify({ n: at + 1 }),
          })),
        },
        { content: "Done." },
      ],
    });
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim" },
      tools: [
        {
          name: "read_env",
          description: "Reads the environment",
          parameters: { type: "object", properties: { n: { type: "number" } } },
          execute: (args) => `OPENAI_API_KEY=sk-live-RAWSECRET${(args as { n: number }).n}`,
        },
      ],
      afterToolCall: ({ toolCall }) => answers[toolCall.id] as never,
    });
    const notices: string[] = [];
    agent.subscribe((event: AgentEvent) => {
      if (event.type === "notice") notices.push(event.text);
    });
    const result = await agent.prompt("Read it");
    expect(result.status).toBe("ok");
    const sent = (server.chatRequests[1]!.body as { messages: ChatMessageLike[] }).messages;
    const results = sent.filter((m) => m.role === "tool").map((m) => (m as { content: string }).content);
    const withheld = (what: string) =>
      `afterToolCall answered ${what} for the call to read_env; the tool's result was withheld.`;
    const said = [
      withheld(
        'an object with "results", not a field it reads (result, isError, terminate; did you mean "result"?), and no result',
      ),
      withheld(
        'an object with "Result", "error", not fields it reads (result, isError, terminate; did you mean "result" for "Result", "isError" for "error"?), and no result',
      ),
      withheld("a string (25 characters), not undefined or { result, isError, terminate }"),
      withheld("a number (42), not undefined or { result, isError, terminate }"),
      withheld("a list (1 item), not undefined or { result, isError, terminate }"),
    ];
    expect(results).toEqual([
      ...said.map((text) => `Error: ${text}`),
      "REDACTED",
      "OPENAI_API_KEY=sk-live-RAWSECRET7",
    ]);
    expect(JSON.stringify(server.chatRequests[1]!.body)).not.toMatch(/RAWSECRET[1-6]/);
    expect(notices).toEqual([
      ...said,
      'afterToolCall answered an object with "auditId", not a field it reads (result, isError, terminate) for the call to read_env; its result was read.',
      'afterToolCall answered an object with "auditId", not a field it reads (result, isError, terminate) for the call to read_env; it gives no result, isError or terminate, so the tool\'s result was sent as it was.',
    ]);
  });
});

describe("afterToolCall redactions under another name (r37 #6)", () => {
  it("withholds the tool's result for an answer with no result but content, output, redacted or text; keeps it for { auditId }", async () => {
    const answers: Record<string, unknown> = {
      // A redacting hook answering in the shape it knows: the raw result must not go.
      c1: { content: [{ type: "text", text: "[redacted]" }] },
      c2: { output: "[redacted]" },
      c3: { redacted: "[redacted]" },
      c4: { Text: "[redacted]", auditId: "a-1" },
      // Only an audit id, and a replacement name left null: the tool's result is sent, with a notice.
      c5: { auditId: "a-2" },
      c6: { auditId: "a-3", output: null },
    };
    server = await startServer({
      replies: [
        {
          toolCalls: Object.keys(answers).map((id, at) => ({
            id,
            name: "read_env",
            arguments: JSON.stringify({ n: at + 1 }),
          })),
        },
        { content: "Done." },
      ],
    });
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim" },
      tools: [
        {
          name: "read_env",
          description: "Reads the environment",
          parameters: { type: "object", properties: { n: { type: "number" } } },
          execute: (args) => `OPENAI_API_KEY=sk-live-RAWSECRET${(args as { n: number }).n}`,
        },
      ],
      afterToolCall: ({ toolCall }) => answers[toolCall.id] as never,
    });
    const notices: string[] = [];
    agent.subscribe((event: AgentEvent) => {
      if (event.type === "notice") notices.push(event.text);
    });
    expect((await agent.prompt("Read it")).status).toBe("ok");
    const sent = (server.chatRequests[1]!.body as { messages: ChatMessageLike[] }).messages;
    const results = sent.filter((m) => m.role === "tool").map((m) => (m as { content: string }).content);
    const withheld = (keys: string, key: string) =>
      `afterToolCall answered an object with ${keys} (result, isError, terminate), and no result (${JSON.stringify(key)} may be the result under another name) for the call to read_env; the tool's result was withheld.`;
    const said = [
      withheld('"content", not a field it reads', "content"),
      withheld('"output", not a field it reads', "output"),
      withheld('"redacted", not a field it reads', "redacted"),
      withheld('"Text", "auditId", not fields it reads', "Text"),
    ];
    expect(results).toEqual([
      ...said.map((text) => `Error: ${text}`),
      "OPENAI_API_KEY=sk-live-RAWSECRET5",
      "OPENAI_API_KEY=sk-live-RAWSECRET6",
    ]);
    // Neither the raw result nor the hook's own value is quoted for the withheld calls.
    expect(JSON.stringify(server.chatRequests[1]!.body)).not.toMatch(/RAWSECRET[1-4]|\[redacted\]/);
    const sentAsItWas = (keys: string) =>
      `afterToolCall answered an object with ${keys} (result, isError, terminate) for the call to read_env; it gives no result, isError or terminate, so the tool's result was sent as it was.`;
    expect(notices).toEqual([
      ...said,
      sentAsItWas('"auditId", not a field it reads'),
      sentAsItWas('"auditId", "output", not fields it reads'),
    ]);
  });
});

describe("beside block: false, a blocking verdict under a slip or in policy words, and arguments under another name (r38 #3, #6)", () => {
  /** Runs one call per answer (distinct arguments) through an Agent over HTTP; what ran, what the model read, the notices. */
  async function runAnswers(answers: Record<string, unknown>) {
    server = await startServer({
      replies: [
        {
          toolCalls: Object.keys(answers).map((id) => ({
            id,
            name: "rm",
            arguments: JSON.stringify({ path: `/etc/${id}` }),
          })),
        },
        { content: "Done." },
      ],
    });
    const ran: unknown[] = [];
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim" },
      toolExecution: "sequential",
      tools: [
        {
          name: "rm",
          description: "Deletes a file",
          parameters: { type: "object", properties: { path: { type: "string" } } },
          execute: (args) => {
            ran.push((args as { path: string }).path);
            return "deleted";
          },
        },
      ],
      beforeToolCall: ({ toolCall }) => answers[toolCall.id] as never,
    });
    const notices: string[] = [];
    agent.subscribe((event: AgentEvent) => {
      if (event.type === "notice") notices.push(event.text);
    });
    expect((await agent.prompt("Delete them")).status).toBe("ok");
    const sent = (server.chatRequests[1]!.body as { messages: ChatMessageLike[] }).messages;
    const read = Object.fromEntries(
      sent
        .filter((m) => m.role === "tool")
        .map((m) => [(m as { tool_call_id: string }).tool_call_id, (m as { content: string }).content]),
    );
    return { ran, read, notices };
  }

  it("refuses a bare verdict under a slip for block that is not an explicit no, a policy effect that does not allow, and arguments under another name", async () => {
    const notNo = (key: string, kind: string) =>
      `beside block: false; "${key}" is ${kind}, not a no (false, 0, "false" or "no") under what may be a misspelt "block", so block: false is not read over it.`;
    const verdict = (key: string, kind: string) =>
      `beside block: false; "${key}" is ${kind}, a verdict in other words that does not agree with it, so block: false is not read over it.`;
    const asArgs = (key: string, kind: string) =>
      `beside block: false; "${key}" is ${kind}, which may be the call's arguments under another name (give them as "args"), so block: false is not read over it.`;
    const cases: Record<string, [unknown, string]> = {
      // #3: the verdict itself under another form of `block`, given as a reason (before, it ran).
      b1: [
        { block: false, blocked: "writes outside the workspace" },
        notNo("blocked", 'a string ("writes outside the workspace")'),
      ],
      b2: [{ block: false, Blocked: "policy p-9: deny" }, notNo("Blocked", 'a string ("policy p-9: deny")')],
      b3: [{ block: false, blocking: "rule r-4" }, notNo("blocking", 'a string ("rule r-4")')],
      b4: [{ block: false, BLOCK: "maybe" }, notNo("BLOCK", 'a string ("maybe")')],
      b5: [{ block: false, lock: "held by ops" }, notNo("lock", 'a string ("held by ops")')],
      b6: [{ block: false, blk: 2 }, notNo("blk", "a number (2)")],
      b7: [{ block: false, isBlocked: "yes, by p-9" }, notNo("isBlocked", 'a string ("yes, by p-9")')],
      // A yes under `block` and a further word still refuses, as before.
      b8: [
        { block: false, blockedBy: true },
        'beside block: false; "blockedBy" is a boolean (true), a yes to blocking under what may be a misspelt "block", so block: false is not read over it.',
      ],
      // #3: a policy engine's verdict words, read by value (before, they ran).
      v1: [{ block: false, effect: "Deny" }, verdict("effect", 'a string ("Deny")')],
      v2: [{ block: false, verdict: "BLOCK" }, verdict("verdict", 'a string ("BLOCK")')],
      v3: [{ block: false, outcome: "rejected" }, verdict("outcome", 'a string ("rejected")')],
      v4: [{ block: false, Action: "Deny" }, verdict("Action", 'a string ("Deny")')],
      // #6: rewritten arguments under another name (before, the model's own arguments ran).
      a1: [{ block: false, updatedInput: { path: "/tmp/sandbox/a1" } }, asArgs("updatedInput", "an object")],
      a2: [{ block: false, modifiedArgs: { path: "/tmp/sandbox/a2" } }, asArgs("modifiedArgs", "an object")],
      a3: [{ block: false, newArgs: { path: "/tmp/sandbox/a3" } }, asArgs("newArgs", "an object")],
      a4: [{ block: false, input: { path: "/tmp/sandbox/a4" } }, asArgs("input", "an object")],
      a5: [
        { block: false, PARAMS: '{"path":"/tmp/sandbox/a5"}' },
        asArgs("PARAMS", 'a string ("{\\"path\\":\\"/tmp/sandbox/a5\\"}")'),
      ],
    };
    const { ran, read, notices } = await runAnswers(
      Object.fromEntries(Object.entries(cases).map(([id, [answer]]) => [id, answer])),
    );
    expect(ran).toEqual([]);
    for (const [id, [, says]] of Object.entries(cases)) {
      expect(read[id], id).toMatch(/^Error: Not run: beforeToolCall answered an object with /);
      expect(read[id]!.endsWith(says), `${id}: ${read[id]}`).toBe(true);
    }
    expect(notices).toHaveLength(Object.keys(cases).length);
  });

  it("runs a call beside block: false whose slip for block is an explicit no, whose block-and-a-word key is a reason or an id, whose effect allows, and whose other keys are no arguments", async () => {
    const answers: Record<string, unknown> = {
      r1: { block: false, blocked: false, Blocking: 0 },
      r2: { block: false, blocked: "false", lock: "no", isBlocked: "No" },
      r3: {
        block: false,
        blockReason: "would block on /etc",
        blockedBy: "ops",
        blockId: "b-1",
        blockedAt: "2026-12-03T05:00:00Z",
      },
      r4: { block: false, effect: "Allow", verdict: "permitted", outcome: "approved", action: "ALLOW" },
      r5: { block: false, target: { host: "db" }, inputTokens: 12, paramsHash: "sha256:ab12" },
      // An audit record's own `action` and `outcome` are no verdict unless they refuse.
      r6: { block: false, action: "write_file", outcome: "success" },
    };
    const { ran, read, notices } = await runAnswers(answers);
    expect(ran).toEqual(Object.keys(answers).map((id) => `/etc/${id}`));
    expect(Object.values(read)).toEqual(Array(6).fill("deleted"));
    expect(notices).toHaveLength(6);
    expect(notices.every((text) => text.endsWith("; its block: false was read."))).toBe(true);
  });
});

describe("afterToolCall answers carrying a status message or audit data (r38 #4)", () => {
  it("sends the tool's result for { message } and { auditId, data: {…} }, with a notice; withholds it for data given as a string or content list", async () => {
    const answers: Record<string, unknown> = {
      c1: { message: "audit logged" },
      c2: { auditId: "a-1", data: { latencyMs: 12 } },
      c3: { value: 3, Message: "ok" },
      c4: { data: "[redacted]" },
      c5: { value: [{ type: "text", text: "[redacted]" }] },
    };
    server = await startServer({
      replies: [
        {
          toolCalls: Object.keys(answers).map((id, at) => ({
            id,
            name: "read_env",
            arguments: JSON.stringify({ n: at + 1 }),
          })),
        },
        { content: "Done." },
      ],
    });
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim" },
      tools: [
        {
          name: "read_env",
          description: "Reads the environment",
          parameters: { type: "object", properties: { n: { type: "number" } } },
          execute: (args) => `OPENAI_API_KEY=sk-live-RAWSECRET${(args as { n: number }).n}`,
        },
      ],
      afterToolCall: ({ toolCall }) => answers[toolCall.id] as never,
    });
    const notices: string[] = [];
    agent.subscribe((event: AgentEvent) => {
      if (event.type === "notice") notices.push(event.text);
    });
    expect((await agent.prompt("Read it")).status).toBe("ok");
    const sent = (server.chatRequests[1]!.body as { messages: ChatMessageLike[] }).messages;
    const results = sent.filter((m) => m.role === "tool").map((m) => (m as { content: string }).content);
    const sentAsItWas = (keys: string) =>
      `afterToolCall answered an object with ${keys} (result, isError, terminate) for the call to read_env; it gives no result, isError or terminate, so the tool's result was sent as it was.`;
    const withheld = (key: string) =>
      `afterToolCall answered an object with "${key}", not a field it reads (result, isError, terminate), and no result ("${key}" may be the result under another name) for the call to read_env; the tool's result was withheld.`;
    expect(results).toEqual([
      "OPENAI_API_KEY=sk-live-RAWSECRET1",
      "OPENAI_API_KEY=sk-live-RAWSECRET2",
      "OPENAI_API_KEY=sk-live-RAWSECRET3",
      `Error: ${withheld("data")}`,
      `Error: ${withheld("value")}`,
    ]);
    expect(notices).toEqual([
      sentAsItWas('"message", not a field it reads'),
      sentAsItWas('"auditId", "data", not fields it reads'),
      sentAsItWas('"value", "Message", not fields it reads'),
      withheld("data"),
      withheld("value"),
    ]);
  });
});

describe("a hook answer's meta: the host's own data, never read (fix101)", () => {
  it('beforeToolCall: runs the model\'s call for { block: false, meta: { decision: "deny", blocked, args } } and for { meta } alone, without a notice; keys outside meta are read as before', async () => {
    const answers: Record<string, BeforeToolCallResult> = {
      m1: { block: false, meta: { decision: "deny", blocked: "x", args: { path: "/tmp/sandbox/m1" } } },
      m2: { meta: { auditId: "a-2", allow: false } },
      m3: { block: true, reason: "Policy p-3 forbids it.", meta: { ruleId: "p-3", block: false } },
      m4: { args: { path: "/tmp/sandbox/m4" }, meta: { args: { path: "/etc/other" } } },
      // Beside meta, a verdict in other words is read as it always was.
      m5: { block: false, decision: "deny", meta: { decision: "allow" } } as BeforeToolCallResult,
    };
    server = await startServer({
      replies: [
        {
          toolCalls: Object.keys(answers).map((id) => ({
            id,
            name: "rm",
            arguments: JSON.stringify({ path: `/etc/${id}` }),
          })),
        },
        { content: "Done." },
      ],
    });
    const ran: string[] = [];
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim" },
      toolExecution: "sequential",
      tools: [
        {
          name: "rm",
          description: "Deletes a file",
          parameters: { type: "object", properties: { path: { type: "string" } } },
          execute: (args) => {
            ran.push((args as { path: string }).path);
            return "deleted";
          },
        },
      ],
      beforeToolCall: ({ toolCall }) => answers[toolCall.id],
    });
    const notices: string[] = [];
    agent.subscribe((event: AgentEvent) => {
      if (event.type === "notice") notices.push(event.text);
    });
    expect((await agent.prompt("Delete them")).status).toBe("ok");
    const sent = (server.chatRequests[1]!.body as { messages: ChatMessageLike[] }).messages;
    const read = Object.fromEntries(
      sent
        .filter((m) => m.role === "tool")
        .map((m) => [(m as { tool_call_id: string }).tool_call_id, (m as { content: string }).content]),
    );
    // The model's own arguments ran for m1 and m2 (before: m1 ran with a notice naming "meta", m2 was
    // refused as an answer with no boolean block); m4 ran with its args, not meta's.
    expect(ran).toEqual(["/etc/m1", "/etc/m2", "/tmp/sandbox/m4"]);
    expect(read).toEqual({
      m1: "deleted",
      m2: "deleted",
      m3: "Error: Policy p-3 forbids it.",
      m4: "deleted",
      m5: expect.stringMatching(
        /^Error: Not run: beforeToolCall answered an object with "decision", not a field it reads/,
      ),
    });
    expect(read.m5).not.toContain("meta");
    // Only m5's refusal is told; meta is never named.
    expect(notices).toEqual([read.m5!.slice("Error: ".length)]);
  });

  it("afterToolCall: sends r for { result: r, meta: { content } }, keeps the tool's result for { meta } alone, without a notice; keys outside meta are read as before", async () => {
    const answers: Record<string, AfterToolCallResult> = {
      n1: { result: "[redacted]", meta: { content: "OPENAI_API_KEY=sk-live-RAWSECRET1", auditId: "a-1" } },
      n2: { meta: { content: "[redacted]", output: "[redacted]", results: "[redacted]" } },
      n3: { result: "ok", isError: false, meta: { isError: true, terminate: true } },
      // Beside meta, a redaction under another name withholds the result as it always did.
      n4: { content: "[redacted]", meta: { auditId: "a-4" } } as AfterToolCallResult,
    };
    server = await startServer({
      replies: [
        {
          toolCalls: Object.keys(answers).map((id, at) => ({
            id,
            name: "read_env",
            arguments: JSON.stringify({ n: at + 1 }),
          })),
        },
        { content: "Done." },
      ],
    });
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim" },
      tools: [
        {
          name: "read_env",
          description: "Reads the environment",
          parameters: { type: "object", properties: { n: { type: "number" } } },
          execute: (args) => `OPENAI_API_KEY=sk-live-RAWSECRET${(args as { n: number }).n}`,
        },
      ],
      afterToolCall: ({ toolCall }) => answers[toolCall.id],
    });
    const notices: string[] = [];
    agent.subscribe((event: AgentEvent) => {
      if (event.type === "notice") notices.push(event.text);
    });
    // n3's meta.terminate is not read: the run goes on to the model's answer.
    const result = await agent.prompt("Read it");
    expect(result.status).toBe("ok");
    expect(server.chatRequests).toHaveLength(2);
    const sent = (server.chatRequests[1]!.body as { messages: ChatMessageLike[] }).messages;
    const results = sent.filter((m) => m.role === "tool").map((m) => (m as { content: string }).content);
    const withheld =
      'afterToolCall answered an object with "content", not a field it reads (result, isError, terminate), and no result ("content" may be the result under another name) for the call to read_env; the tool\'s result was withheld.';
    expect(results).toEqual(["[redacted]", "OPENAI_API_KEY=sk-live-RAWSECRET2", "ok", `Error: ${withheld}`]);
    // Before: a notice for each, naming "meta" as a field it does not read.
    expect(notices).toEqual([withheld]);
  });
});

describe("a hook's isError and terminate used only as booleans (r35 #13)", () => {
  it('afterToolCall isError: "false" keeps the tool\'s own flag, and null leaves it, with a notice for the first', async () => {
    server = await startServer({
      replies: [
        {
          toolCalls: [
            { id: "c1", name: "count", arguments: '{"n":1}' },
            { id: "c2", name: "count", arguments: '{"n":2}' },
            { id: "c3", name: "count", arguments: '{"n":3}' },
          ],
        },
        { content: "Done." },
      ],
    });
    const answers: Record<string, unknown> = {
      c1: { result: "42 rows", isError: "false" },
      c2: { result: "43 rows", isError: null },
      c3: { result: "no such table", isError: true },
    };
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim" },
      tools: [
        {
          name: "count",
          description: "Counts rows",
          parameters: { type: "object", properties: { n: { type: "number" } } },
          execute: () => "rows",
        },
      ],
      afterToolCall: ({ toolCall }) => answers[toolCall.id] as never,
    });
    const notices: string[] = [];
    agent.subscribe((event: AgentEvent) => {
      if (event.type === "notice") notices.push(event.text);
    });
    expect((await agent.prompt("Count them")).status).toBe("ok");
    const sent = (server.chatRequests[1]!.body as { messages: ChatMessageLike[] }).messages;
    expect(sent.filter((m) => m.role === "tool").map((m) => (m as { content: string }).content)).toEqual([
      "42 rows",
      "43 rows",
      "Error: no such table",
    ]);
    expect(notices).toEqual([
      'afterToolCall answered isError: a string ("false"), not true or false, for the call to count; the tool\'s own isError (false) was kept.',
    ]);
  });

  const terminating: [string, Partial<ConstructorParameters<typeof Agent>[0]>, string][] = [
    [
      'afterToolCall terminate: "false"',
      { afterToolCall: ({ result }) => ({ result, terminate: "false" }) as never },
      'afterToolCall answered terminate: a string ("false"), not true or false, for the call to count; the run is not ended for it.',
    ],
    [
      'beforeToolCall { block: true, terminate: "false" }',
      { beforeToolCall: () => ({ block: true, reason: "Not now.", terminate: "false" }) as never },
      'beforeToolCall answered terminate: a string ("false"), not true or false, for the call to count; the call was blocked, and the run is not ended for it.',
    ],
  ];
  for (const [label, hooks, notice] of terminating) {
    it(`${label} does not end the run, and the host is told`, async () => {
      server = await startServer({
        replies: [{ toolCalls: [{ id: "c1", name: "count", arguments: "{}" }] }, { content: "Done." }],
      });
      const agent = new Agent({
        config: { baseUrl: server.baseUrl, model: "sim" },
        tools: [
          {
            name: "count",
            description: "Counts rows",
            parameters: { type: "object", properties: {} },
            execute: () => "42 rows",
          },
        ],
        ...hooks,
      });
      const notices: string[] = [];
      agent.subscribe((event: AgentEvent) => {
        if (event.type === "notice") notices.push(event.text);
      });
      expect((await agent.prompt("Count them")).status).toBe("ok");
      expect(server.chatRequests).toHaveLength(2);
      expect(notices).toEqual([notice]);
    });
  }

  it("terminate: true, a boolean, still ends the run after the step", async () => {
    server = await startServer({
      replies: [{ toolCalls: [{ id: "c1", name: "count", arguments: "{}" }] }, { content: "never asked" }],
    });
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim" },
      tools: [
        {
          name: "count",
          description: "Counts rows",
          parameters: { type: "object", properties: {} },
          execute: () => "42 rows",
        },
      ],
      afterToolCall: ({ result }) => ({ result, terminate: true }),
    });
    expect((await agent.prompt("Count them")).status).toBe("terminated");
    expect(server.chatRequests).toHaveLength(1);
  });
});

describe("a stop while transformContext is pending", () => {
  for (const step of [1, 2]) {
    it(`ends the run at once, "aborted", on step ${step}, whatever the hook does later`, async () => {
      server = await startServer({
        replies: [{ toolCalls: [{ id: "c1", name: "get", arguments: "{}" }] }, { content: "never asked" }],
      });
      let late = false;
      const agent = new Agent({
        config: { baseUrl: server.baseUrl, model: "sim" },
        tools: [
          {
            name: "get",
            description: "Gets it",
            parameters: { type: "object", properties: {} },
            execute: () => "got",
          },
        ],
        // A store read that ignores the signal and stalls, then fails.
        transformContext: (messages, _signal, info) =>
          info.step === step
            ? sleep(1_500).then(() => {
                late = true;
                throw new Error("late failure");
              })
            : messages,
      });
      const started = Date.now();
      const running = agent.prompt("Get it");
      setTimeout(() => agent.abort(), 200);
      const unhandled = await unhandledDuring(async () => {
        const result = await running;
        expect(result.status).toBe("aborted");
        expect(Date.now() - started).toBeLessThan(1_200);
        await sleep(1_500);
      });
      expect(late).toBe(true);
      expect(unhandled).toEqual([]);
      expect(server.chatRequests).toHaveLength(step - 1);
      // Every call the transcript holds is answered.
      const messages = agent.messages as ChatMessageLike[];
      const calls = messages.flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []) : []));
      const answered = new Set(messages.flatMap((m) => (m.role === "tool" ? [m.tool_call_id] : [])));
      expect(calls.every((call) => answered.has(call.id))).toBe(true);
    });
  }
});
