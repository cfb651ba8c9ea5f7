// The Agent's host hooks read strictly, over HTTP with the testkit: a toolChoice or convertToLlm
// written async (refused by name, a rejection never unhandled), beforeToolCall answers of the wrong
// shape (fail closed), and a stop while transformContext is pending.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { runInNewContext } from "node:vm";
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

/** The Agent's options, as its constructor takes them. */
type AgentOptions = ConstructorParameters<typeof Agent>[0];

/** The text of every notice the agent emits, collected as they come. */
function noticesOf(agent: Agent): string[] {
  const notices: string[] = [];
  agent.subscribe((event: AgentEvent) => {
    if (event.type === "notice") notices.push(event.text);
  });
  return notices;
}

/** One tool call to `name` per id, in order, with the arguments `args(id, at)` gives. */
function callsTo(name: string, ids: string[], args: (id: string, at: number) => unknown) {
  return ids.map((id, at) => ({ id, name, arguments: JSON.stringify(args(id, at)) }));
}

/**
 * The model answers `calls`, then `closing`; an Agent over HTTP with `tools` and `options` (its
 * hooks) is prompted once. Answers the run's result, the notices, and what the second chat request
 * sent: its messages, the tool messages' contents in order (`results`) and by call id (`read`).
 */
async function runCalls(
  calls: { id: string; name: string; arguments: string }[],
  tools: AgentTool[],
  options: Partial<AgentOptions>,
  { prompt = "Go", closing = "Done." }: { prompt?: string; closing?: string } = {},
) {
  // A test may run twice (after, then before): the server of the run before is closed here, as
  // afterEach closes only the last (the other stayed open for the worker's later files).
  await server?.close();
  server = await startServer({ replies: [{ toolCalls: calls }, { content: closing }] });
  const agent = new Agent({ config: { baseUrl: server.baseUrl, model: "sim" }, tools, ...options });
  const notices = noticesOf(agent);
  const result = await agent.prompt(prompt);
  const second = server.chatRequests[1];
  const sent = second ? (second.body as { messages: ChatMessageLike[] }).messages : [];
  const tool = sent.filter((m) => m.role === "tool") as unknown as {
    tool_call_id: string;
    content: string;
  }[];
  return {
    result,
    notices,
    sent,
    results: tool.map((m) => m.content),
    read: Object.fromEntries(tool.map((m) => [m.tool_call_id, m.content])),
  };
}

/** An "rm" tool that records the arguments of each call it runs in `ran`, and answers "deleted". */
function rmTool(ran: unknown[]): AgentTool {
  return {
    name: "rm",
    description: "Deletes a file",
    parameters: { type: "object", properties: { path: { type: "string" } } },
    execute: (args) => {
      ran.push(args);
      return "deleted";
    },
  };
}

/** A "get" tool taking no arguments, whose call runs `execute` (answering "got"). */
function getTool(execute: () => string = () => "got"): AgentTool {
  return { name: "get", description: "Gets it", parameters: { type: "object", properties: {} }, execute };
}

/**
 * One "rm" call per answer (id = the answer's key, path = `path(id, at)`), run in order; the Agent's
 * beforeToolCall answers `answers[id]`. Adds to runCalls what ran: the arguments, and their paths.
 */
async function runBeforeToolCall(
  answers: Record<string, unknown>,
  {
    path = (id: string) => `/etc/${id}`,
    prompt = "Delete them",
    async = false,
  }: { path?: (id: string, at: number) => string; prompt?: string; async?: boolean } = {},
) {
  const ran: unknown[] = [];
  const answer = (id: string) => answers[id] as never;
  const run = await runCalls(
    callsTo("rm", Object.keys(answers), (id, at) => ({ path: path(id, at) })),
    [rmTool(ran)],
    {
      toolExecution: "sequential",
      beforeToolCall: async
        ? async ({ toolCall }) => answer(toolCall.id)
        : ({ toolCall }) => answer(toolCall.id),
    },
    { prompt },
  );
  return { ...run, ran, paths: ran.map((args) => (args as { path: string }).path) };
}

/**
 * One "read_env" call per answer (its result holds a raw secret numbered by the call's place); the
 * Agent's afterToolCall answers `answers[id]` (from an `async` hook where `async` is set).
 */
function runAfterToolCall(answers: Record<string, unknown>, { async = false }: { async?: boolean } = {}) {
  const readEnv: AgentTool = {
    name: "read_env",
    description: "Reads the environment",
    parameters: { type: "object", properties: { n: { type: "number" } } },
    execute: (args) => `OPENAI_API_KEY=sk-live-RAWSECRET${(args as { n: number }).n}`,
  };
  return runCalls(
    callsTo("read_env", Object.keys(answers), (_id, at) => ({ n: at + 1 })),
    [readEnv],
    {
      afterToolCall: async
        ? async ({ toolCall }) => answers[toolCall.id] as never
        : ({ toolCall }) => answers[toolCall.id] as never,
    },
    { prompt: "Read it" },
  );
}

/** A policy decision kept in a private field, read through a getter with a name no hook reads. */
class Decision {
  #allowed: boolean;
  constructor(allowed: boolean) {
    this.#allowed = allowed;
  }
  get allowed(): boolean {
    return this.#allowed;
  }
}

/** A verdict whose block is a getter on its prototype, not an own key. */
class Verdict {
  #deny: boolean;
  constructor(deny: boolean) {
    this.#deny = deny;
  }
  get block(): boolean {
    return this.#deny;
  }
}

/**
 * What the model reads for a call beforeToolCall's answer kept from running, or whose result
 * afterToolCall's answer withheld: none of the host's keys, which go only to the host's notice (r41 #11).
 */
const notRunText = (name: string) =>
  `Error: Not run: the host's policy hook stopped this call to ${name} (its answer could not be read).`;
const withheldText = (name: string) =>
  `Error: Result withheld: the host's policy hook withheld the result of this call to ${name} (its answer could not be read).`;

/** A redactor or rewrite that forgot its `return`: it answers `undefined` whatever it is given. */
function forgotReturn(value: unknown): unknown {
  if (typeof value === "string") value.replace(/sk-live-\w+/, "[redacted]");
  return undefined;
}

/** A "count" tool that answers `answer`, with no parameters unless `parameters` gives them. */
function countTool(
  answer: string,
  parameters: AgentTool["parameters"] = { type: "object", properties: {} },
): AgentTool {
  return { name: "count", description: "Counts rows", parameters, execute: () => answer };
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
  /** A pattern for exactly `text` at the end of what is matched. */
  const endsWith = (text: string) => new RegExp(`${text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`);
  /** The refusal for an object with keys beforeToolCall does not read (fix105: never guessed at). */
  const notRead = (keys: string, guess = "") =>
    endsWith(
      `Not run: beforeToolCall answered an object with ${keys}, ${
        keys.includes(",") ? "not fields it reads" : "not a field it reads"
      } (block, reason, terminate, args; put the host's own data in meta${guess}).`,
    );
  /** The refusal for a block's own keys without block: true (r41 #10). */
  const blockOnly = (what: string, keys: string) =>
    endsWith(
      `Not run: beforeToolCall answered ${what} without block: true; give block: true to block, or leave ${keys} out (the host's own notes go in meta).`,
    );
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
      notRead('"blocked"', '; did you mean "block"?'),
    ],
    ["{ Block: true }", { Block: true }, notRead('"Block"', '; did you mean "block"?')],
    ["{ allow: false }", { allow: false }, notRead('"allow"')],
    ['{ decision: "deny" }', { decision: "deny", reason: "not allowed" }, notRead('"decision"')],
    // Beside block: false, a key it does not read is not guessed at (fix105; before, word lists read
    // some of these as a verdict or arguments and ran the rest): the call is not run.
    [
      "{ block: false, Block: true, reason }",
      { block: false, Block: true, reason: "deploys need approval" },
      notRead('"Block"', '; did you mean "block"?'),
    ],
    [
      "{ block: false, blocked: true }",
      { block: false, blocked: true },
      notRead('"blocked"', '; did you mean "block"?'),
    ],
    ["{ block: false, allow: false }", { block: false, allow: false }, notRead('"allow"')],
    ['{ block: false, allowed: "true" }', { block: false, allowed: "true" }, notRead('"allowed"')],
    [
      '{ block: false, Decision: "deny", ruleId }',
      { block: false, Decision: "deny", ruleId: "r-1" },
      notRead('"Decision", "ruleId"'),
    ],
    [
      "{ block: false, arg: { path } }",
      { block: false, arg: { path: "/tmp/sandbox" } },
      notRead('"arg"', '; did you mean "args"?'),
    ],
    [
      "{ block: false, arguments: JSON text of arguments }",
      { block: false, arguments: '{"path":"/tmp/sandbox"}' },
      notRead('"arguments"'),
    ],
    // A policy verdict spread in beside block: false, keys a word list once let run (fix105 flips it:
    // a verdict's own keys belong in meta).
    [
      "{ block: false, ruleId, auditId, tags, reasn }",
      { block: false, reason: "rule r-7 allows it", ruleId: "r-7", auditId: "a-9", tags: ["fs"], reasn: "x" },
      notRead(
        '"ruleId", "auditId", "tags", "reasn"',
        '; did you mean "args" for "tags", "reason" for "reasn"?',
      ),
    ],
    // No boolean block and a key it does not read whose value is null: the key is absent, the block not.
    [
      "{ block: 1, blocked: null }",
      { block: 1, blocked: null },
      /block: a number \(1\), not true or false, read as a block\.$/,
    ],
    // r41 #7: an object that is not a plain one has no own keys to read — it read as {} and RAN.
    [
      'new Error("denied by policy")',
      new Error("denied by policy"),
      endsWith(
        "Not run: beforeToolCall answered an Error, not undefined, { block: true, reason } or { args }.",
      ),
    ],
    [
      "a fetch Response whose body was not read",
      new Response('{"block":true,"reason":"denied by policy"}'),
      endsWith(
        "Not run: beforeToolCall answered a Response (read its body first: await response.json()), not undefined, { block: true, reason } or { args }.",
      ),
    ],
    ['new Map([["block", true]])', new Map([["block", true]]), /answered a Map, not undefined/],
    [
      "a class instance with a private field and a getter",
      new Decision(false),
      /answered an instance of Decision, not/,
    ],
    // A prototype getter named block was read (it blocked), the rest not: now refused the same way.
    [
      "a class instance whose block is a prototype getter",
      new Verdict(true),
      /answered an instance of Verdict, not/,
    ],
    [
      "an object whose prototype holds the verdict",
      Object.create({ deny: true }),
      /answered an object that is not a plain one \(its prototype is not Object\.prototype\), not/,
    ],
    // A key that is own but not enumerable is a key it does not read, as an enumerable one is.
    [
      "{ blocked: true } defined not enumerable",
      Object.defineProperty({}, "blocked", { value: true }),
      notRead('"blocked"', '; did you mean "block"?'),
    ],
    // r41 #8: args that are an object but not a plain one ran the tool with it.
    [
      "{ args: an un-awaited async rewrite }",
      { args: Promise.resolve({ path: "/tmp/safe" }) },
      endsWith(
        "Not run: beforeToolCall answered args: a Promise: await the rewrite, not an object of arguments.",
      ),
    ],
    ["{ args: new Date() }", { args: new Date(0) }, endsWith("args: a Date, not an object of arguments.")],
    [
      "{ args: new Map() }",
      { args: new Map([["path", "/tmp/safe"]]) },
      /args: a Map, not an object of arguments/,
    ],
    // r42b #3: an own args key holding nothing is a rewrite that produced nothing: it ran the
    // model's own arguments.
    [
      "{ args: undefined }",
      { args: undefined },
      endsWith(
        "Not run: beforeToolCall answered args: undefined — the rewrite produced nothing (leave args out to run the call as the model wrote it).",
      ),
    ],
    ["{ args: null }", { args: null }, /answered args: null — the rewrite produced nothing/],
    [
      "{ args: sanitize(args) } whose sanitizer forgot its return",
      { args: forgotReturn({ path: "/etc/passwd" }), meta: { auditId: "a-1" } },
      /answered args: undefined — the rewrite produced nothing/,
    ],
    // r41 #10: a block's own keys without block: true are a "no" whose block went missing: they RAN.
    ["{ reason }", { reason: "Outside the workspace" }, blockOnly("reason", "reason")],
    ["{ terminate: true }", { terminate: true }, blockOnly("terminate: true", "terminate")],
    [
      "{ block: false, terminate: true }",
      { block: false, terminate: true },
      blockOnly("terminate: true", "terminate"),
    ],
    ["{ block: undefined, reason }", { block: undefined, reason: "denied" }, blockOnly("reason", "reason")],
    [
      "{ block: false, reason }",
      { block: false, reason: "rule r-7 allows it" },
      blockOnly("reason", "reason"),
    ],
    [
      "{ block: null, reason, terminate: true }",
      { block: null, reason: "denied", terminate: true },
      blockOnly("reason and terminate: true", "reason and terminate"),
    ],
    ['{ terminate: "yes" }', { terminate: "yes" }, blockOnly('terminate: a string ("yes")', "terminate")],
  ];
  for (const [label, answer, reads] of cases) {
    it(`${label}: the call is answered, not run, and the host is told why`, async () => {
      const { result, ran, results, notices } = await runBeforeToolCall(
        { c1: answer },
        { path: () => "/etc/passwd", prompt: "Delete /etc/passwd" },
      );
      expect(result.status).toBe("ok");
      expect(ran).toEqual([]);
      // The model reads that the host's policy stopped it; the host reads what was wrong (r41 #11).
      expect(results[0]).toBe(notRunText("rm"));
      expect(notices).toHaveLength(1);
      expect(notices[0]).toMatch(reads);
      expect(notices[0]).toMatch(/^Not run: beforeToolCall answered /);
    });
  }

  it("still runs a call for undefined, null, block: false and { args } given as an object", async () => {
    const answers: Record<string, unknown> = {
      c1: undefined,
      c2: null,
      // A policy engine's verdict with its own keys in meta (fix105: beside block: false they are no
      // longer named and run; they refuse, see the table above).
      // (An allow's own words go in meta too: reason beside block: false is refused, r41 #10.)
      c3: {
        block: false,
        meta: { reason: "rule r-7 allows it", ruleId: "r-7", auditId: "a-9", tags: ["fs"], reasn: "x" },
      },
      c4: { args: { path: "/tmp/safe" } },
    };
    const { result, ran, notices } = await runBeforeToolCall(answers, { path: (_id, at) => "abcd"[at]! });
    expect(result.status).toBe("ok");
    expect(ran).toEqual([{ path: "a" }, { path: "b" }, { path: "c" }, { path: "/tmp/safe" }]);
    expect(notices).toEqual([]);
  });

  it("beside block: false, runs a call whose other keys are null/undefined or in meta, and refuses one whose other keys agree with it (fix105, flips r37 #3)", async () => {
    // A policy engine's allow verdict, an approver, an audit digest spread in beside block: false: a
    // word list once read them as agreeing and ran the call; fix105 reads declared keys only, so they
    // are not run, the reason pointing at meta. The same data in meta runs, without a notice; a
    // host's `blockReason: blocked ? text : undefined` (null/undefined) is absent and runs.
    const answers: Record<string, unknown> = {
      c1: { block: false, allowed: true, reason: "policy p-7 allows rm in /tmp" },
      c2: { block: false, decision: "allow", ruleId: "r-1" },
      c3: { block: false, approved: true, approver: "ops" },
      c4: { block: false, blockedBy: null },
      c5: { block: false, blockReason: undefined },
      c6: { block: false, argsHash: "sha256:ab12" },
      c7: { block: false, Decision: "Approved", denied: false, blockReason: "would block on /etc" },
      c8: { block: false, meta: { decision: "allow", ruleId: "r-1", argsHash: "sha256:ab12" } },
      c9: { meta: { allowed: true, approver: "ops" } },
    };
    const { result, ran, notices, results } = await runBeforeToolCall(answers, {
      path: (_id, at) => `/tmp/${at + 1}`,
    });
    expect(result.status).toBe("ok");
    const refused = (keys: string) =>
      `Not run: beforeToolCall answered an object with ${keys} (block, reason, terminate, args; put the host's own data in meta).`;
    const said = [
      refused('"allowed", not a field it reads'),
      refused('"decision", "ruleId", not fields it reads'),
      refused('"approved", "approver", not fields it reads'),
      refused('"argsHash", not a field it reads'),
      refused('"Decision", "denied", "blockReason", not fields it reads'),
    ];
    const no = notRunText("rm");
    expect(results).toEqual([no, no, no, "deleted", "deleted", no, no, "deleted", "deleted"]);
    expect(ran).toEqual([4, 5, 8, 9].map((n) => ({ path: `/tmp/${n}` })));
    // The null/undefined keys and meta are absent: no notice for c4, c5, c8, c9.
    expect(notices).toEqual(said);
  });

  it("blocks with the host's reason for block: true beside keys it does not read, naming them", async () => {
    const { result, ran, results, notices } = await runBeforeToolCall(
      { c1: { block: true, reason: "Policy forbids it.", auditId: "a-1" } },
      { path: () => "/etc/passwd", prompt: "Delete /etc/passwd" },
    );
    expect(result.status).toBe("ok");
    expect(ran).toEqual([]);
    expect(results[0]).toBe("Error: Policy forbids it.");
    expect(notices).toEqual([
      'beforeToolCall answered an object with "auditId", not a field it reads (block, reason, terminate, args; put the host\'s own data in meta) for the call to rm; its block: true was read.',
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
      // Only a key it does not read: the tool's result is withheld (fix105; before, it was sent).
      c7: { auditId: "a-2" },
    };
    const { result, results, notices } = await runAfterToolCall(answers);
    expect(result.status).toBe("ok");
    const withheld = (what: string) =>
      `afterToolCall answered ${what} for the call to read_env; the tool's result was withheld.`;
    const said = [
      withheld(
        'an object with "results", not a field it reads (result, isError, terminate; put the host\'s own data in meta; did you mean "result"?), and no result',
      ),
      withheld(
        'an object with "Result", "error", not fields it reads (result, isError, terminate; put the host\'s own data in meta; did you mean "result" for "Result", "isError" for "error"?), and no result',
      ),
      withheld("a string (25 characters), not undefined or { result, isError, terminate }"),
      withheld("a number (42), not undefined or { result, isError, terminate }"),
      withheld("a list (1 item), not undefined or { result, isError, terminate }"),
    ];
    const auditOnly = withheld(
      'an object with "auditId", not a field it reads (result, isError, terminate; put the host\'s own data in meta), and no result',
    );
    const no = withheldText("read_env");
    expect(results).toEqual([...said.map(() => no), "REDACTED", no]);
    expect(JSON.stringify(server!.chatRequests[1]!.body)).not.toMatch(/RAWSECRET/);
    expect(notices).toEqual([
      ...said,
      'afterToolCall answered an object with "auditId", not a field it reads (result, isError, terminate; put the host\'s own data in meta) for the call to read_env; its result was read.',
      auditOnly,
    ]);
  });
});

describe("afterToolCall answering result: undefined (r42b #3)", () => {
  it("withholds the tool's result for an own result key holding undefined (a redaction that returned nothing), naming it to the host; null replaces the result", async () => {
    const answers: Record<string, unknown> = {
      u1: { result: undefined },
      u2: { result: undefined, isError: true },
      u3: { result: forgotReturn("OPENAI_API_KEY=sk-live-RAWSECRET3"), meta: { auditId: "a-3" } },
      u4: { result: undefined, auditId: "a-4" },
      // Left out, result keeps the tool's; null is a value and replaces it.
      k5: { isError: false },
      n6: { result: null },
    };
    const { result, results, notices } = await runAfterToolCall(answers);
    expect(result.status).toBe("ok");
    const no = withheldText("read_env");
    expect(results).toEqual([no, no, no, no, "OPENAI_API_KEY=sk-live-RAWSECRET5", "null"]);
    const said =
      "afterToolCall answered result: undefined — the redaction produced nothing (leave result out to keep the tool's result) for the call to read_env; the tool's result was withheld.";
    expect(notices).toEqual([said, said, said, said]);
    expect(JSON.stringify(server!.chatRequests[1]!.body)).not.toMatch(/RAWSECRET[1-4]/);
  });
});

describe("afterToolCall redactions under another name (r37 #6)", () => {
  it("withholds the tool's result for an answer with no result but content, output, redacted or text, and for { auditId } (fix105)", async () => {
    const answers: Record<string, unknown> = {
      // A redacting hook answering in the shape it knows: the raw result must not go.
      c1: { content: [{ type: "text", text: "[redacted]" }] },
      c2: { output: "[redacted]" },
      c3: { redacted: "[redacted]" },
      c4: { Text: "[redacted]", auditId: "a-1" },
      // Only an audit id, and a replacement name left null (absent): the tool's result is withheld too
      // (fix105; before, it was sent with a notice). Audit data goes in meta.
      c5: { auditId: "a-2" },
      c6: { auditId: "a-3", output: null },
    };
    const { result, results, notices } = await runAfterToolCall(answers);
    expect(result.status).toBe("ok");
    const withheld = (keys: string) =>
      `afterToolCall answered an object with ${keys} (result, isError, terminate; put the host's own data in meta), and no result for the call to read_env; the tool's result was withheld.`;
    const said = [
      withheld('"content", not a field it reads'),
      withheld('"output", not a field it reads'),
      withheld('"redacted", not a field it reads'),
      withheld('"Text", "auditId", not fields it reads'),
      withheld('"auditId", not a field it reads'),
      withheld('"auditId", not a field it reads'),
    ];
    expect(results).toEqual(said.map(() => withheldText("read_env")));
    // Neither the raw result nor the hook's own value is quoted for the withheld calls.
    expect(JSON.stringify(server!.chatRequests[1]!.body)).not.toMatch(/RAWSECRET|\[redacted\]/);
    expect(notices).toEqual(said);
  });
});

describe("beside block: false, a key it does not read refuses, whatever its words (r38 #3, #6, r39b #2, #3, #6)", () => {
  it("refuses a verdict in other words, arguments under another name and audit, lease or policy data, pointing at meta (fix105)", async () => {
    const cases: Record<string, unknown> = {
      // r38 #3: the verdict under another form of `block` or in a policy's words.
      b1: { block: false, blocked: "writes outside the workspace" },
      b2: { block: false, isBlocked: "yes, by p-9" },
      b3: { block: false, blockedBy: true },
      b4: { block: false, effect: "Deny" },
      b5: { block: false, outcome: "rejected" },
      // r38 #6: rewritten arguments under another name (the model's own must not run).
      a1: { block: false, updatedInput: { path: "/tmp/sandbox/a1" } },
      a2: { block: false, modifiedArgs: { path: "/tmp/sandbox/a2" } },
      a3: { block: false, PARAMS: '{"path":"/tmp/sandbox/a3"}' },
      // r39b #2: a verdict in Claude Code's hook words, a negated allow, an OPA or guardrail answer
      // spread in (each ran the call before).
      s1: { block: false, continue: false, stopReason: "policy: no writes to /etc" },
      s2: { block: false, permissionDecision: "deny", permissionDecisionReason: "no /etc" },
      s3: { block: false, hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny" } },
      s4: { block: false, isAllowed: false },
      s5: { block: false, result: { allow: false } },
      s6: { block: false, allowed: "false" },
      s7: { block: false, outcome: "DENY_BY_POLICY" },
      s8: { block: false, action: "deny_call" },
      g1: { block: false, action: "GUARDRAIL_INTERVENED", outputs: [{ text: "blocked by guardrail" }] },
      g2: { block: false, type: "ignore", args: null },
      g3: { block: false, enforcementAction: "deny" },
      v1: { block: false, isBlockedByPolicy: true },
      v2: { block: false, shouldBlockCall: true },
      v3: { block: false, notAllowed: true },
      v4: { block: false, forbidden: true },
      v5: { block: false, is_denied: true },
      v6: { block: false, blockedBy: "opa:policy/fs", blockReason: "writes under /etc" },
      v7: { block: false, denyReason: "writes under /etc" },
      h1: {
        block: false,
        hookSpecificOutput: {
          hookEventName: "PreToolUse",
          permissionDecision: "allow",
          updatedInput: { path: "/etc/SANDBOXED-h1" },
        },
      },
      // r39b #3, #6 and r38's "runs" cases: audit, lease or allow data beside block: false (fix105
      // flips them from run, or from a guessed refusal, to this one; their place is meta).
      r1: { block: false, auditId: "a-1", input: { path: "/etc/r1" } },
      r2: { block: false, verdict: "pass" },
      r3: { block: false, effect: "ALLOW", policyInput: { user: "u" } },
      r4: { block: false, outcome: "success", action: "rm" },
      r5: { block: false, permissionDecision: "allow" },
      r6: { block: false, blocked: false, Blocking: 0 },
      r7: { block: false, target: { host: "db" }, inputTokens: 12, paramsHash: "sha256:ab12" },
      k1: { block: false, lock: "lease-7f3a" },
      k2: { block: false, clock: 1733212800000 },
      k3: { block: false, blocks: [] },
    };
    const { result, paths: ran, read, notices } = await runBeforeToolCall(cases);
    expect(result.status).toBe("ok");
    expect(ran).toEqual([]);
    // The model reads only that the host's policy stopped each call (r41 #11); the host is told each
    // refusal in full, one notice per call, in order.
    expect(Object.values(read)).toEqual(Object.keys(cases).map(() => notRunText("rm")));
    expect(notices).toHaveLength(Object.keys(cases).length);
    const told = Object.fromEntries(Object.keys(cases).map((id, at) => [id, notices[at]!]));
    for (const [id, answer] of Object.entries(cases)) {
      const keys = Object.entries(answer as object)
        .filter(([key, value]) => !["block", "args"].includes(key) && value !== null)
        .map(([key]) => JSON.stringify(key))
        .join(", ");
      expect(told[id], id).toMatch(/^Not run: beforeToolCall answered an object with /);
      expect(
        told[id]!.startsWith(`Not run: beforeToolCall answered an object with ${keys}, not`),
        `${id}: ${told[id]}`,
      ).toBe(true);
      expect(told[id], id).toMatch(
        / \(block, reason, terminate, args; put the host's own data in meta(; did you mean [^)]*)?\)\.$/,
      );
    }
    // r39b #3 and #6 in full: an audit record echoing the call's input, a lease id.
    expect(told.r1).toBe(
      'Not run: beforeToolCall answered an object with "auditId", "input", not fields it reads (block, reason, terminate, args; put the host\'s own data in meta).',
    );
    expect(told.k1).toBe(
      'Not run: beforeToolCall answered an object with "lock", not a field it reads (block, reason, terminate, args; put the host\'s own data in meta; did you mean "block"?).',
    );
    expect(told.s2).toBe(
      'Not run: beforeToolCall answered an object with "permissionDecision", "permissionDecisionReason", not fields it reads (block, reason, terminate, args; put the host\'s own data in meta).',
    );
  });

  it("runs the model's call for the same data given in meta, and a rewrite given as args, without a notice (fix105)", async () => {
    const answers: Record<string, unknown> = {
      r1: { block: false, meta: { auditId: "a-1", input: { path: "/etc/r1" } } },
      r3: { block: false, meta: { effect: "ALLOW", policyInput: { user: "u" } } },
      r5: { meta: { permissionDecision: "allow", lock: "lease-7f3a" } },
      r6: { block: false, meta: { blocked: false, isBlocked: "No", clock: 1733212800000 } },
      h1: {
        block: false,
        args: { path: "/etc/SANDBOXED-h1" },
        meta: { hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "allow" } },
      },
    };
    const { result, paths: ran, read, notices } = await runBeforeToolCall(answers);
    expect(result.status).toBe("ok");
    expect(ran).toEqual(["/etc/r1", "/etc/r3", "/etc/r5", "/etc/r6", "/etc/SANDBOXED-h1"]);
    expect(Object.values(read)).toEqual(Array(5).fill("deleted"));
    expect(notices).toEqual([]);
  });
});

describe("afterToolCall answers with a key it does not read and no result: withheld (r38 #4, r39b #1, #8)", () => {
  it("withholds the tool's result for a status message, audit data, a redaction under another name and an error text; sends it for meta, and result beside meta", async () => {
    const redacted = { user: "ann", apiKey: "[REDACTED]" };
    // [answer, whether the model gets the tool's own result]
    const answers: Record<string, [unknown, "withheld" | "sent" | string]> = {
      // r38 #4: a status or audit data once sent the raw result with a notice (fix105 flips them).
      c1: [{ message: "audit logged" }, "withheld"],
      c2: [{ auditId: "a-1", data: { latencyMs: 12 } }, "withheld"],
      c3: [{ value: 3, Message: "ok" }, "withheld"],
      c4: [{ data: "[redacted]" }, "withheld"],
      c5: [{ value: [{ type: "text", text: "[redacted]" }] }, "withheld"],
      // r39b #1: a redaction under a compound name or an object under data/value (they leaked).
      a1: [{ data: redacted }, "withheld"],
      a2: [{ value: redacted }, "withheld"],
      a3: [{ updatedResult: JSON.stringify(redacted) }, "withheld"],
      a4: [{ redactedResult: JSON.stringify(redacted) }, "withheld"],
      a5: [
        {
          hookSpecificOutput: {
            hookEventName: "PostToolUse",
            updatedMCPToolOutput: [{ type: "text", text: "[REDACTED]" }],
          },
        },
        "withheld",
      ],
      a6: [{ updatedMCPToolOutput: [{ type: "text", text: "[REDACTED]" }] }, "withheld"],
      a7: [{ message: "[REDACTED]" }, "withheld"],
      a8: [{ sanitized: "[REDACTED]" }, "withheld"],
      a9: [{ toolResult: "[REDACTED]" }, "withheld"],
      b1: [{ data: { latencyMs: 3 }, auditId: "x" }, "withheld"],
      // r39b #8: a DLP hook's error text beside isError: true (it sent the raw result as the error).
      d1: [{ isError: true, message: "Output withheld: it contained a credential" }, "withheld"],
      d2: [{ isError: true, error: "Output withheld: it contained a credential" }, "withheld"],
      d3: [{ isError: true, reason: "Output withheld: it contained a credential" }, "withheld"],
      // The host's own data in meta: the result is sent (or replaced by result), without a notice.
      m1: [{ meta: { auditId: "a-1", data: { latencyMs: 12 }, message: "audit logged" } }, "sent"],
      m2: [{ result: "[redacted]", meta: { auditId: "a-2", updatedResult: "x" } }, "[redacted]"],
      m3: [{ result: "[redacted]", isError: true, meta: { reason: "credential" } }, "Error: [redacted]"],
    };
    const whoami: AgentTool = {
      name: "whoami",
      description: "Who the user is",
      parameters: { type: "object", properties: { id: { type: "string" } } },
      execute: (args) =>
        JSON.stringify({ user: "ann", apiKey: `sk-live-RAWSECRET-${(args as { id: string }).id}` }),
    };
    const { result, sent, read, notices } = await runCalls(
      callsTo("whoami", Object.keys(answers), (id) => ({ id })),
      [whoami],
      { toolExecution: "sequential", afterToolCall: ({ toolCall }) => answers[toolCall.id]![0] as never },
      { prompt: "Who am I?" },
    );
    expect(result.status).toBe("ok");
    const withheld =
      /^afterToolCall answered an object with ".+", not (?:a field|fields) it reads \(result, isError, terminate; put the host's own data in meta(; did you mean [^)]*)?\), and no result for the call to whoami; the tool's result was withheld\.$/;
    let withheldCalls = 0;
    for (const [id, [, want]] of Object.entries(answers)) {
      if (want === "withheld") {
        expect(read[id], id).toBe(withheldText("whoami"));
        withheldCalls += 1;
      } else if (want === "sent") {
        expect(read[id], id).toBe(JSON.stringify({ user: "ann", apiKey: `sk-live-RAWSECRET-${id}` }));
      } else {
        expect(read[id], id).toBe(want);
      }
    }
    // Neither the raw result nor the hook's own words reach the model for a withheld call.
    expect(JSON.stringify(sent)).not.toMatch(/RAWSECRET-(?!m1)|REDACTED|Output withheld|audit logged/);
    // Each withheld call is told to the host in full, one notice each, in order; meta is never named.
    expect(notices).toHaveLength(withheldCalls);
    for (const text of notices) expect(text).toMatch(withheld);
    expect(notices[Object.keys(answers).indexOf("d1")]).toBe(
      "afterToolCall answered an object with \"message\", not a field it reads (result, isError, terminate; put the host's own data in meta), and no result for the call to whoami; the tool's result was withheld.",
    );
  });
});

describe("hook answers that are objects but not plain ones (r41 #7, #8, #10, #11)", () => {
  /** A policy service over loopback HTTP that answers `body` as JSON to every request. */
  async function policyService(body: unknown): Promise<{ url: string; close: () => Promise<void> }> {
    const service = createServer((_request, response) => {
      response.setHeader("content-type", "application/json");
      response.end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => service.listen(0, "127.0.0.1", resolve));
    const { port } = service.address() as AddressInfo;
    return {
      url: `http://127.0.0.1:${port}/`,
      close: () => new Promise<void>((resolve) => service.close(() => resolve())),
    };
  }

  it("beforeToolCall: a fetch Response returned without .json() is not run, and the host is told", async () => {
    const policy = await policyService({ block: true, reason: "denied by policy" });
    try {
      const ran: unknown[] = [];
      const { result, results, notices } = await runCalls(
        callsTo("rm", ["c1"], () => ({ path: "/etc/passwd" })),
        [rmTool(ran)],
        { beforeToolCall: () => fetch(policy.url, { method: "POST" }) as never },
        { prompt: "Delete /etc/passwd" },
      );
      expect(result.status).toBe("ok");
      expect(ran).toEqual([]);
      expect(results).toEqual([notRunText("rm")]);
      expect(notices).toEqual([
        "Not run: beforeToolCall answered a Response (read its body first: await response.json()), not undefined, { block: true, reason } or { args }.",
      ]);
    } finally {
      await policy.close();
    }
  });

  it("afterToolCall: withholds the tool's result for an Error, a Response, a Map and a class instance, naming each to the host", async () => {
    const redactor = await policyService({ result: "[redacted]" });
    try {
      const answers: Record<string, () => unknown> = {
        c1: () => new Error("redaction failed"),
        c2: () => fetch(redactor.url, { method: "POST" }),
        c3: () => new Map([["result", "[redacted]"]]),
        c4: () =>
          new (class Redacted {
            #text = "[redacted]";
            get result(): string {
              return this.#text;
            }
          })(),
        // A rejected redaction as an error subclass is still an Error.
        c5: () => new TypeError("redactor down"),
      };
      const readEnv: AgentTool = {
        name: "read_env",
        description: "Reads the environment",
        parameters: { type: "object", properties: { n: { type: "number" } } },
        execute: (args) => `OPENAI_API_KEY=sk-live-RAWSECRET${(args as { n: number }).n}`,
      };
      const { result, results, sent, notices } = await runCalls(
        callsTo("read_env", Object.keys(answers), (_id, at) => ({ n: at + 1 })),
        [readEnv],
        { toolExecution: "sequential", afterToolCall: ({ toolCall }) => answers[toolCall.id]!() as never },
        { prompt: "Read it" },
      );
      expect(result.status).toBe("ok");
      expect(results).toEqual(Object.keys(answers).map(() => withheldText("read_env")));
      expect(JSON.stringify(sent)).not.toMatch(/RAWSECRET/);
      const withheld = (what: string) =>
        `afterToolCall answered ${what}, not undefined or { result, isError, terminate } for the call to read_env; the tool's result was withheld.`;
      expect(notices).toEqual([
        withheld("an Error"),
        withheld("a Response (read its body first: await response.json())"),
        withheld("a Map"),
        withheld("an instance of Redacted"),
        withheld("an Error"),
      ]);
    } finally {
      await redactor.close();
    }
  });

  it("still reads a plain object of another realm or with no prototype, and a block's keys where they are harmless", async () => {
    const answers: Record<string, unknown> = {
      // A plain object made in another realm (a vm context, an iframe) is plain.
      c1: runInNewContext('({ block: true, reason: "Blocked in another realm." })'),
      c2: runInNewContext('({ args: { path: "/tmp/realm" } })'),
      c3: Object.assign(Object.create(null), { args: { path: "/tmp/bare" } }),
      c4: { args: Object.assign(Object.create(null), { path: "/tmp/bare-args" }) },
      // terminate: false, and reason or terminate left null/undefined, say nothing: the call runs.
      c5: { block: false, terminate: false },
      c6: { reason: undefined, terminate: null },
      c7: Object.freeze({ block: true, reason: "Frozen no." }),
    };
    const { result, paths, read, notices } = await runBeforeToolCall(answers);
    expect(result.status).toBe("ok");
    expect(paths).toEqual(["/tmp/realm", "/tmp/bare", "/tmp/bare-args", "/etc/c5", "/etc/c6"]);
    expect(read.c1).toBe("Error: Blocked in another realm.");
    expect(read.c7).toBe("Error: Frozen no.");
    expect(notices).toEqual([]);
  });

  it("the model reads that the host's policy stopped the call, never the host's key names (r41 #11)", async () => {
    const { result, ran, sent, results, notices } = await runBeforeToolCall({
      c1: { decision: "deny", ruleId: "r-7" },
    });
    expect(result.status).toBe("ok");
    expect(ran).toEqual([]);
    expect(results).toEqual([notRunText("rm")]);
    const transcript = JSON.stringify(sent);
    expect(transcript).not.toMatch(/decision|ruleId|meta|beforeToolCall/);
    // The host's notice keeps the full diagnostic.
    expect(notices).toEqual([
      'Not run: beforeToolCall answered an object with "decision", "ruleId", not fields it reads (block, reason, terminate, args; put the host\'s own data in meta).',
    ]);
  });
});

describe("hook answers read by schema-compat's isPlainPrototype, failing closed on a Proxy's trap (fix128)", () => {
  /** A class extending null: its prototype has no prototype, as a plain object's prototype has none. */
  const Allow = class Allow extends null {};
  /** What the host's policy code holds, which a trap's error may quote. */
  const SECRET = "policy-db://admin:hunter2@10.0.0.7";
  const trapped = (trap: "ownKeys" | "get", target: object) =>
    new Proxy(target, {
      [trap]: () => {
        throw new Error(`cannot reach ${SECRET}`);
      },
    });

  it("refuses an instance of a class extending null, and reads plain answers of another realm, before and after the call", async () => {
    const before = await runBeforeToolCall({
      c1: Object.assign(Object.create(Allow.prototype), { args: { path: "/tmp/allowed" } }),
      c2: runInNewContext('({ args: { path: "/tmp/realm" } })'),
    });
    expect(before.paths).toEqual(["/tmp/realm"]);
    expect(before.read.c1).toBe(notRunText("rm"));
    expect(before.notices).toEqual([
      "Not run: beforeToolCall answered an instance of Allow, not undefined, { block: true, reason } or { args }.",
    ]);
    const after = await runAfterToolCall({
      c1: Object.assign(Object.create(Allow.prototype), { result: "[redacted]" }),
      c2: runInNewContext('({ result: "[redacted in another realm]" })'),
    });
    expect(after.read).toEqual({ c1: withheldText("read_env"), c2: "[redacted in another realm]" });
    expect(JSON.stringify(after.sent)).not.toMatch(/RAWSECRET/);
  });

  it("beforeToolCall: a Proxy whose ownKeys or get trap throws is not run; the model reads the policy text, the host the trap's", async () => {
    const { result, ran, sent, results, notices } = await runBeforeToolCall({
      c1: trapped("ownKeys", { block: false }),
      c2: trapped("get", { args: { path: "/tmp/x" } }),
    });
    expect(result.status).toBe("ok");
    expect(ran).toEqual([]);
    expect(results).toEqual([notRunText("rm"), notRunText("rm")]);
    expect(JSON.stringify(sent)).not.toContain("hunter2");
    expect(notices).toEqual([
      `Not run: beforeToolCall answered an object whose reading threw (cannot reach ${SECRET}), not undefined, { block: true, reason } or { args }.`,
      `Not run: beforeToolCall answered an object whose reading threw (cannot reach ${SECRET}), not undefined, { block: true, reason } or { args }.`,
    ]);
  });

  it("afterToolCall: a Proxy whose trap throws, and a result given as a Promise, withhold the tool's result", async () => {
    const answers: Record<string, unknown> = {
      c1: trapped("ownKeys", { result: "[redacted]" }),
      c2: trapped("get", { result: "[redacted]" }),
      // An un-awaited redaction: `{ result: redact(result) }` of an async redactor.
      c3: { result: Promise.resolve("[redacted]") },
    };
    // One that rejects, made when the hook answers: its rejection is handled, never unhandled.
    Object.defineProperty(answers, "c4", {
      enumerable: true,
      get: () => ({ result: Promise.reject(new Error("redactor down")) }),
    });
    let run: Awaited<ReturnType<typeof runAfterToolCall>> | undefined;
    const unhandled = await unhandledDuring(async () => {
      run = await runAfterToolCall(answers);
    });
    expect(unhandled).toEqual([]);
    const { result, results, sent, notices } = run!;
    expect(result.status).toBe("ok");
    expect(results).toEqual(["c1", "c2", "c3", "c4"].map(() => withheldText("read_env")));
    const transcript = JSON.stringify(sent);
    expect(transcript).not.toMatch(/RAWSECRET|hunter2/);
    const threw = `afterToolCall answered an object whose reading threw (cannot reach ${SECRET}), not undefined or { result, isError, terminate } for the call to read_env; the tool's result was withheld.`;
    const promised =
      "afterToolCall answered result: a Promise: await the redaction, not a result for the call to read_env; the tool's result was withheld.";
    expect(notices).toEqual([threw, threw, promised, promised]);
  });

  it.each([
    ["a synchronous", false],
    ["an async", true],
  ])(
    "afterToolCall: %s hook's result JSON cannot write (a Proxy whose trap throws, a cycle) is withheld, its text for the host only (r44 #2)",
    async (_kind, async) => {
      const cyclic: Record<string, unknown> = { text: "[redacted]" };
      cyclic.self = cyclic;
      const { result, results, sent, notices } = await runAfterToolCall(
        {
          c1: { result: trapped("ownKeys", { text: "[redacted]" }) },
          c2: { result: trapped("get", { text: "[redacted]" }) },
          c3: { result: cyclic },
          // The hook's whole answer a Proxy: an async hook's promise rejects on its `then`, and fails closed.
          c4: trapped("get", { result: "[redacted]" }),
        },
        { async },
      );
      expect(result.status).toBe("ok");
      const failed = "Error: Result withheld: the host's policy hook failed on this call to read_env.";
      expect(results).toEqual([
        withheldText("read_env"),
        withheldText("read_env"),
        withheldText("read_env"),
        async ? failed : withheldText("read_env"),
      ]);
      expect(JSON.stringify(sent)).not.toMatch(/RAWSECRET|hunter2|circular/i);
      const unheld = `afterToolCall answered result: a value JSON cannot hold (cannot reach ${SECRET}), not a string or plain data for the call to read_env; the tool's result was withheld.`;
      expect(notices.slice(0, 2)).toEqual([unheld, unheld]);
      expect(notices[2]).toMatch(
        /^afterToolCall answered result: a value JSON cannot hold \(Converting circular structure/,
      );
      expect(notices[3]).toContain(`(cannot reach ${SECRET})`);
    },
  );

  it.each([
    ["a synchronous", false],
    ["an async", true],
  ])(
    "beforeToolCall: %s hook's args JSON cannot write (a Proxy whose trap throws) are not run, its text for the host only (r44 #2)",
    async (_kind, async) => {
      const { ran, results, sent, notices } = await runBeforeToolCall(
        {
          c1: { args: trapped("ownKeys", { path: "/tmp/x" }) },
          c2: { args: trapped("get", { path: "/tmp/y" }) },
          c3: trapped("get", { block: true }),
        },
        { async },
      );
      expect(ran).toEqual([]);
      const failed = "Error: Not run: the host's policy hook failed on this call to rm.";
      expect(results).toEqual([notRunText("rm"), notRunText("rm"), async ? failed : notRunText("rm")]);
      expect(JSON.stringify(sent)).not.toContain("hunter2");
      const unheld = `Not run: beforeToolCall answered args: a value JSON cannot hold (cannot reach ${SECRET}), not an object of arguments.`;
      expect(notices.slice(0, 2)).toEqual([unheld, unheld]);
      expect(notices[2]).toContain(`(cannot reach ${SECRET})`);
    },
  );

  /** An object whose `field` reads `value` once, and throws the host's text from its second read on. */
  const onceThenThrows = (field: string, value: unknown): object => {
    let reads = 0;
    return Object.defineProperty({}, field, {
      enumerable: true,
      get: () => {
        reads += 1;
        if (reads > 1) throw new Error(`cannot reach ${SECRET}`);
        return value;
      },
    });
  };
  /** An object whose `toJSON` answers `value` once, and throws the host's text from its second call on. */
  const toJsonOnce = (value: unknown): object => {
    let calls = 0;
    return {
      toJSON: () => {
        calls += 1;
        if (calls > 1) throw new Error(`cannot reach ${SECRET}`);
        return value;
      },
    };
  };

  it("afterToolCall: a replacement that throws from its second read on is passed on as the copy checked, its text never read (r47 F1)", async () => {
    const { result, read, sent, notices } = await runAfterToolCall({
      c1: { result: onceThenThrows("text", "[redacted]") },
      c2: { result: toJsonOnce({ text: "[redacted by toJSON]" }) },
      c3: { result: { at: new Date(0), rows: [1, undefined], gone: undefined } },
      c4: { result: "[a string, kept as it is]" },
    });
    expect(result.status).toBe("ok");
    expect(read).toEqual({
      c1: '{"text":"[redacted]"}',
      c2: '{"text":"[redacted by toJSON]"}',
      c3: '{"at":"1970-01-01T00:00:00.000Z","rows":[1,null]}',
      c4: "[a string, kept as it is]",
    });
    expect(JSON.stringify(sent)).not.toMatch(/RAWSECRET|hunter2/);
    expect(notices).toEqual([]);
  });

  it("beforeToolCall: args that throw from their second read on are run as the copy checked, its text never read (r47 F1)", async () => {
    const { ran, read, sent, notices } = await runBeforeToolCall({
      c1: { args: onceThenThrows("path", "/tmp/sandbox/c1") },
      c2: { args: toJsonOnce({ path: "/tmp/sandbox/c2" }) },
    });
    expect(ran).toEqual([{ path: "/tmp/sandbox/c1" }, { path: "/tmp/sandbox/c2" }]);
    expect(read).toEqual({ c1: "deleted", c2: "deleted" });
    expect(JSON.stringify(sent)).not.toContain("hunter2");
    expect(notices).toEqual([]);
  });

  it("afterToolCall: a replacement holding a Map or an Error, which JSON would write without their data, is withheld with a notice (r47 F1)", async () => {
    const { results, notices } = await runAfterToolCall({
      c1: { result: { rows: new Map([["k", 1]]) } },
      c2: { result: { ok: false, error: new Error("denied") } },
    });
    expect(results).toEqual([withheldText("read_env"), withheldText("read_env")]);
    expect(notices).toEqual([
      "afterToolCall answered result: a value JSON cannot hold (a Map, which JSON writes as {}), not a string or plain data for the call to read_env; the tool's result was withheld.",
      "afterToolCall answered result: a value JSON cannot hold (an Error, which JSON writes without its message or as its toJSON answers; put its text in as a string), not a string or plain data for the call to read_env; the tool's result was withheld.",
    ]);
  });

  /** An HTTP client's error, as axios writes it: its toJSON answers the request's config, headers and all. */
  class ClientError extends Error {
    toJSON(): object {
      return { message: this.message, config: { headers: { Authorization: "Bearer X-hunter2" } } };
    }
  }
  /** The same error made in another realm (another vm context), where `instanceof Error` is false. */
  const otherRealmClientError = (): object =>
    runInNewContext(
      `class ClientError extends Error { toJSON() { return { config: { headers: { Authorization: "Bearer X-hunter2" } } }; } }
      new ClientError("Request failed with status code 403")`,
    );

  it("a replacement holding an Error whose toJSON answers other data (axios) is refused, in this realm or another, at any depth (fix139)", async () => {
    const error = () => new ClientError("Request failed with status code 403");
    // An object whose prototype chain has Error, with a toJSON of its own.
    const onChain = Object.assign(Object.create(ClientError.prototype), { code: "E403" });
    const after = await runAfterToolCall({
      c1: { result: error() },
      c2: { result: { ok: false, error: error() } },
      c3: { result: [{ rows: [1, error()] }] },
      c4: { result: { error: otherRealmClientError() } },
      c5: { result: { error: onChain } },
      c6: { result: { ok: false, error: "Request failed with status code 403" } },
    });
    expect(after.read).toEqual({
      // The whole result an Error: its message only, as the call's failure (r48 F1).
      c1: "Error: Request failed with status code 403",
      c2: withheldText("read_env"),
      c3: withheldText("read_env"),
      c4: withheldText("read_env"),
      c5: withheldText("read_env"),
      c6: '{"ok":false,"error":"Request failed with status code 403"}',
    });
    const refusal =
      "afterToolCall answered result: a value JSON cannot hold (an Error, which JSON writes without its message or as its toJSON answers; put its text in as a string), not a string or plain data for the call to read_env; the tool's result was withheld.";
    expect(after.notices).toEqual([refusal, refusal, refusal, refusal]);
    const before = await runBeforeToolCall({
      c1: { args: { path: "/tmp/sandbox/c1", cause: error() } },
      c2: { args: { path: "/tmp/sandbox/c2", cause: otherRealmClientError() } },
      c3: { args: { path: "/tmp/sandbox/c3" } },
    });
    expect(before.paths).toEqual(["/tmp/sandbox/c3"]);
    expect(before.read).toEqual({ c1: notRunText("rm"), c2: notRunText("rm"), c3: "deleted" });
    for (const run of [after, before]) {
      expect(JSON.stringify(run.sent)).not.toContain("hunter2");
      expect(JSON.stringify(run.sent)).not.toContain("Authorization");
    }
  });
});

describe("an Error as the whole replacement result is the call's failure in the host's words (r48 F1)", () => {
  it("the model reads its message as the call's error, from this realm or another, and nothing else of it", async () => {
    const { results, notices, sent } = await runAfterToolCall({
      c1: { result: new Error("Denied: credential read blocked"), isError: true },
      // A subclass, with no isError: an Error replacement is an error.
      c2: { result: new TypeError("sanitized") },
      c3: { result: runInNewContext('new Error("denied in another realm")') },
      // Said not to be an error: its message is the result's text.
      c4: { result: new Error("nothing to show"), isError: false },
      // An axios-like error whose own fields and toJSON carry the request's headers.
      c5: {
        result: Object.assign(new Error("Request failed with status code 403"), {
          config: { headers: { Authorization: "Bearer X-hunter2" } },
          toJSON: () => ({ config: { headers: { Authorization: "Bearer X-hunter2" } } }),
        }),
      },
    });
    expect(results).toEqual([
      "Error: Denied: credential read blocked",
      "Error: sanitized",
      "Error: denied in another realm",
      "nothing to show",
      "Error: Request failed with status code 403",
    ]);
    expect(notices).toEqual([]);
    expect(JSON.stringify(sent)).not.toMatch(/RAWSECRET|hunter2|Authorization/);
  });

  it("withholds the result for an Error whose message is not a string, or whose message getter throws", async () => {
    const noMessage = Object.assign(new Error("x"), { message: 42 });
    const throwing = new Error("x");
    Object.defineProperty(throwing, "message", {
      get() {
        throw new Error("policy-db://admin:hunter2@10.0.0.7 unreachable");
      },
    });
    const { results, notices, sent } = await runAfterToolCall({
      c1: { result: noMessage },
      c2: { result: throwing },
    });
    expect(results).toEqual([withheldText("read_env"), withheldText("read_env")]);
    expect(notices[0]).toBe(
      "afterToolCall answered result: an Error whose message is a number (42), not a string for the call to read_env; the tool's result was withheld.",
    );
    expect(notices).toHaveLength(2);
    expect(JSON.stringify(sent)).not.toMatch(/RAWSECRET|hunter2/);
  });
});

describe("a stop while a before or after hook that fails is pending (r47 F1)", () => {
  for (const hook of ["beforeToolCall", "afterToolCall"] as const) {
    it(`${hook}: the run ends "aborted", the call answered with the stop, and no notice`, async () => {
      let ran = 0;
      // The host's policy store: it stalls, and fails once the run is stopped.
      const failing = (_context: unknown, signal: AbortSignal | undefined): Promise<never> =>
        new Promise((_resolve, reject) => {
          signal?.addEventListener("abort", () =>
            reject(new Error("cannot reach policy-db://admin:hunter2@10.0.0.7")),
          );
        });
      server = await startServer({
        replies: [{ toolCalls: [{ id: "c1", name: "get", arguments: "{}" }] }, { content: "never asked" }],
      });
      const agent = new Agent({
        config: { baseUrl: server.baseUrl, model: "sim" },
        tools: [
          getTool(() => {
            ran += 1;
            return "got";
          }),
        ],
        [hook]: failing,
      });
      const notices = noticesOf(agent);
      const running = agent.prompt("Get it");
      setTimeout(() => agent.abort(), 200);
      const result = await running;
      expect(result.status).toBe("aborted");
      expect(ran).toBe(hook === "beforeToolCall" ? 0 : 1);
      const answers = (agent.messages as ChatMessageLike[]).filter((m) => m.role === "tool");
      expect(answers.map((m) => m.content)).toEqual(["Stopped before this call finished."]);
      expect(server.chatRequests).toHaveLength(1);
      expect(notices).toEqual([]);
    });
  }
});

describe("a hook answer's meta: the host's own data, never read (fix101)", () => {
  it('beforeToolCall: runs the model\'s call for { block: false, meta: { decision: "deny", blocked, args } } and for { meta } alone, without a notice; a key outside meta refuses (fix105)', async () => {
    const answers: Record<string, BeforeToolCallResult> = {
      m1: { block: false, meta: { decision: "deny", blocked: "x", args: { path: "/tmp/sandbox/m1" } } },
      m2: { meta: { auditId: "a-2", allow: false } },
      m3: { block: true, reason: "Policy p-3 forbids it.", meta: { ruleId: "p-3", block: false } },
      m4: { args: { path: "/tmp/sandbox/m4" }, meta: { args: { path: "/etc/other" } } },
      // Beside meta, a key it does not read is refused (fix105: never guessed at).
      m5: { block: false, decision: "deny", meta: { decision: "allow" } } as BeforeToolCallResult,
    };
    const { result, paths: ran, read, notices } = await runBeforeToolCall(answers);
    expect(result.status).toBe("ok");
    // The model's own arguments ran for m1 and m2 (before: m1 ran with a notice naming "meta", m2 was
    // refused as an answer with no boolean block); m4 ran with its args, not meta's.
    expect(ran).toEqual(["/etc/m1", "/etc/m2", "/tmp/sandbox/m4"]);
    expect(read).toEqual({
      m1: "deleted",
      m2: "deleted",
      m3: "Error: Policy p-3 forbids it.",
      m4: "deleted",
      m5: notRunText("rm"),
    });
    // Only m5's refusal is told, to the host; meta is never named as a key it does not read, the
    // refusal only points at it.
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(
      /^Not run: beforeToolCall answered an object with "decision", not a field it reads/,
    );
    expect(notices[0]).not.toContain('"meta"');
    expect(notices[0]).toContain("put the host's own data in meta");
  });

  it("afterToolCall: sends r for { result: r, meta: { content } }, keeps the tool's result for { meta } alone, without a notice; a key outside meta and no result withholds (fix105)", async () => {
    const answers: Record<string, AfterToolCallResult> = {
      n1: { result: "[redacted]", meta: { content: "OPENAI_API_KEY=sk-live-RAWSECRET1", auditId: "a-1" } },
      n2: { meta: { content: "[redacted]", output: "[redacted]", results: "[redacted]" } },
      n3: { result: "ok", isError: false, meta: { isError: true, terminate: true } },
      // Beside meta, a key it does not read and no result withholds the result.
      n4: { content: "[redacted]", meta: { auditId: "a-4" } } as AfterToolCallResult,
    };
    // n3's meta.terminate is not read: the run goes on to the model's answer.
    const { result, results, notices } = await runAfterToolCall(answers);
    expect(result.status).toBe("ok");
    expect(server!.chatRequests).toHaveLength(2);
    const withheld =
      "afterToolCall answered an object with \"content\", not a field it reads (result, isError, terminate; put the host's own data in meta), and no result for the call to read_env; the tool's result was withheld.";
    expect(results).toEqual([
      "[redacted]",
      "OPENAI_API_KEY=sk-live-RAWSECRET2",
      "ok",
      withheldText("read_env"),
    ]);
    // Before: a notice for each, naming "meta" as a field it does not read.
    expect(notices).toEqual([withheld]);
  });
});

describe("a hook's isError and terminate used only as booleans (r35 #13)", () => {
  it('afterToolCall isError: "false" keeps the tool\'s own flag, and null leaves it, with a notice for the first', async () => {
    const answers: Record<string, unknown> = {
      c1: { result: "42 rows", isError: "false" },
      c2: { result: "43 rows", isError: null },
      c3: { result: "no such table", isError: true },
    };
    const { result, results, notices } = await runCalls(
      callsTo("count", Object.keys(answers), (_id, at) => ({ n: at + 1 })),
      [countTool("rows", { type: "object", properties: { n: { type: "number" } } })],
      { afterToolCall: ({ toolCall }) => answers[toolCall.id] as never },
      { prompt: "Count them" },
    );
    expect(result.status).toBe("ok");
    expect(results).toEqual(["42 rows", "43 rows", "Error: no such table"]);
    expect(notices).toEqual([
      'afterToolCall answered isError: a string ("false"), not true or false, for the call to count; the tool\'s own isError (false) was kept.',
    ]);
  });

  const terminating: [string, Partial<AgentOptions>, string][] = [
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
      const { result, notices } = await runCalls(
        callsTo("count", ["c1"], () => ({})),
        [countTool("42 rows")],
        hooks,
        {
          prompt: "Count them",
        },
      );
      expect(result.status).toBe("ok");
      expect(server!.chatRequests).toHaveLength(2);
      expect(notices).toEqual([notice]);
    });
  }

  it("terminate: true, a boolean, still ends the run after the step", async () => {
    const { result } = await runCalls(
      callsTo("count", ["c1"], () => ({})),
      [countTool("42 rows")],
      { afterToolCall: ({ result }) => ({ result, terminate: true }) },
      { prompt: "Count them", closing: "never asked" },
    );
    expect(result.status).toBe("terminated");
    expect(server!.chatRequests).toHaveLength(1);
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
        tools: [getTool()],
        // A store read that ignores the signal and stalls, then fails.
        // The stop comes 200 ms into the stall: timed from the hook's call, not the prompt, so a
        // slow first step on a loaded machine cannot put the stop before the hook.
        transformContext: (messages, _signal, info) => {
          if (info.step !== step) return messages;
          setTimeout(() => agent.abort(), 200);
          return sleep(1_500).then(() => {
            late = true;
            throw new Error("late failure");
          });
        },
      });
      const running = agent.prompt("Get it");
      const unhandled = await unhandledDuring(async () => {
        const result = await running;
        expect(result.status).toBe("aborted");
        // Settled by the stop, before the hook's stall ended: an order of events, not a number of
        // ms (the bound of 1.2 s here could be stretched by a loaded machine).
        expect(late).toBe(false);
        // The hook's stall ends (its failure must not go unhandled): waited for, not a fixed 1.5 s,
        // which a loaded machine could end before the stall that began later.
        for (let i = 0; i < 1000 && !late; i++) await sleep(10);
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

describe("a hook that throws or rejects fails closed, its text for the host only", () => {
  /** What the host's policy code holds, which its error may quote. */
  const SECRET = "policy-db://admin:hunter2@10.0.0.7";
  /** Answers whose reading by the hook throws `thrown` (c1) or gives a promise rejecting with `rejected` (c2), made when the hook asks. */
  const failing = (thrown: string, rejected: string): Record<string, unknown> =>
    Object.defineProperties(
      {},
      {
        c1: {
          enumerable: true,
          get: () => {
            throw new Error(thrown);
          },
        },
        c2: { enumerable: true, get: () => Promise.reject(new Error(rejected)) },
      },
    );

  it("beforeToolCall: a throw and a rejection are not run, and the model reads neither's text", async () => {
    const { ran, read, notices, sent } = await runBeforeToolCall(
      failing(`cannot reach ${SECRET}`, `lookup failed at ${SECRET}`),
    );
    expect(ran).toEqual([]);
    expect(read).toEqual({
      c1: "Error: Not run: the host's policy hook failed on this call to rm.",
      c2: "Error: Not run: the host's policy hook failed on this call to rm.",
    });
    expect(JSON.stringify(sent)).not.toContain("hunter2");
    expect(notices).toEqual([
      `beforeToolCall failed for the call to rm (cannot reach ${SECRET}); the call was not run.`,
      `beforeToolCall failed for the call to rm (lookup failed at ${SECRET}); the call was not run.`,
    ]);
  });

  it("afterToolCall: a throw and a rejection withhold the result, and the model reads neither's text", async () => {
    const { read, notices, sent } = await runAfterToolCall(
      failing(`cannot reach ${SECRET}`, `redactor down: ${SECRET}`),
    );
    expect(read).toEqual({
      c1: "Error: Result withheld: the host's policy hook failed on this call to read_env.",
      c2: "Error: Result withheld: the host's policy hook failed on this call to read_env.",
    });
    const shown = JSON.stringify(sent);
    expect(shown).not.toContain("hunter2");
    expect(shown).not.toMatch(/RAWSECRET/);
    expect(notices).toEqual([
      `afterToolCall failed for the call to read_env (cannot reach ${SECRET}); the tool's result was withheld.`,
      `afterToolCall failed for the call to read_env (redactor down: ${SECRET}); the tool's result was withheld.`,
    ]);
  });
});
