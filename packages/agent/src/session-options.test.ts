import { readdirSync } from "node:fs";
import { type AgentSpec, SPEC_TOKEN } from "@loopwright/spec";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentError, createSession, type SessionOptions } from "./test-exports.js";
import { useTempDirs } from "./test-support/temp-dirs.js";

let server: TestServer;
const tempDir = useTempDirs("agent-session-options");
let dir: string;
beforeEach(async () => {
  server = await startServer({ replies: [{ content: "hi" }] });
  dir = tempDir();
});
afterEach(async () => {
  await server.close();
});

/** What creating a session with these options rejects with (it must reject). */
async function refusal(options: Record<string, unknown>): Promise<AgentError> {
  const error = await createSession({
    config: { baseUrl: server.baseUrl, model: "sim" },
    sessionDir: dir,
    ...options,
  } as SessionOptions).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(AgentError.isInstance(error), `${JSON.stringify(options)}: ${String(error)}`).toBe(true);
  expect((error as AgentError).code).toBe("invalid-input");
  return error as AgentError;
}

describe("createSession refuses options of the wrong shape, naming the option, before anything is written", () => {
  it("refuses builtInTools that are not { askUser?, todoWrite? } of booleans, or false", async () => {
    expect((await refusal({ builtInTools: "yes" })).message).toMatch(
      /builtInTools must be .*got a string \("yes"\)/,
    );
    expect((await refusal({ builtInTools: true })).message).toMatch(
      /builtInTools must be .*got a boolean \(true\)/,
    );
    expect((await refusal({ builtInTools: ["askUser"] })).message).toMatch(
      /builtInTools must be .*got an array/,
    );
    expect((await refusal({ builtInTools: { askUser: 1 } })).message).toMatch(
      /builtInTools\.askUser must be true or false; got a number \(1\)/,
    );
    expect((await refusal({ builtInTools: { subAgent: true } })).message).toMatch(
      /builtInTools\.subAgent is not a built-in tool of a session \(askUser, todoWrite\)/,
    );
    expect(readdirSync(dir)).toEqual([]);
    // Absent, null, false and an empty object are none.
    for (const builtInTools of [undefined, null, false, {}]) {
      const session = await createSession({
        config: { baseUrl: server.baseUrl, model: "sim" },
        builtInTools: builtInTools as never,
      });
      expect(session.agent.tools.list()).toEqual([]);
    }
  });

  it("refuses tools that are not a list of tools, naming the entry", async () => {
    expect((await refusal({ tools: {} })).message).toMatch(/tools must be a list of tools .*got an object/);
    expect((await refusal({ tools: "clock" })).message).toMatch(
      /tools must be a list of tools .*got a string/,
    );
    expect((await refusal({ tools: [null] })).message).toMatch(/tools\[0\] must be a tool .*got null/);
    const named = { name: "clock", description: "", parameters: {}, execute: () => "noon" };
    expect((await refusal({ tools: [named, { name: "x" }] })).message).toMatch(
      /tools\[1\] must be a tool .*name "x" and no execute function/,
    );
    expect((await refusal({ tools: [named, { execute: () => 1 }] })).message).toMatch(
      /tools\[1\] must be a tool .*no name and an execute function/,
    );
    expect(readdirSync(dir)).toEqual([]);
  });

  it("refuses a backend or config of the wrong shape, as new Agent does, before the session wraps them", async () => {
    // Were accepted: the session hands the Agent its own backend and a copied config, so every
    // prompt then ended "error" with nothing sent and the user's text kept in the file.
    expect((await refusal({ backend: {} })).message).toMatch(
      /^createSession: backend must be an AgentBackend \(an object with a run function\); got an object\./,
    );
    expect((await refusal({ backend: { run: "go" } })).message).toMatch(/^createSession: backend must be/);
    expect((await refusal({ config: "x" })).message).toMatch(
      /^createSession: config must be an object \(the loop's config\); got a string \("x"\)\./,
    );
    expect((await refusal({ config: [] })).message).toMatch(/^createSession: config must be .*got a list/);
    expect((await refusal({ config: 42 })).message).toMatch(/^createSession: config must be .*got a number/);
    // What the Agent refuses for a session names createSession, the call the host made.
    expect((await refusal({ toolExecution: "fast" })).message).toMatch(
      /^createSession: toolExecution must be "parallel" or "sequential"; got a string \("fast"\)\./,
    );
    expect((await refusal({ autoCompact: "yes" })).message).toMatch(/^createSession: autoCompact must be/);
    expect((await refusal({ config: undefined })).message).toMatch(
      /^createSession: give exactly one of config .* and spec/,
    );
    expect(readdirSync(dir)).toEqual([]);
    expect(server.requests).toHaveLength(0);
  });

  it("reads null as absent for every option, as new Agent does", async () => {
    const names = [
      "spec",
      "system",
      "tools",
      "backend",
      "toolExecution",
      "builtInTools",
      "sessionId",
      "sessionDir",
      "lockLeaseMs",
      "importPath",
      "maxTurns",
      "autoCompact",
      "stallThreshold",
      "mcpServers",
      "mcpOptions",
    ];
    const nulls = Object.fromEntries(names.map((name) => [name, null]));
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim" },
      ...nulls,
    } as unknown as SessionOptions);
    expect([session.maxTurns, session.stallThreshold, session.filePath]).toEqual([50, 3, undefined]);
    expect(session.agent.tools.list()).toEqual([]);
    expect(await session.prompt("hello")).toEqual({ status: "ok", reply: "hi" });
    expect(server.chatRequests).toHaveLength(1);
    expect(readdirSync(dir)).toEqual([]);
    session.dispose();
  });

  it('says a number option given as text is text (maxTurns: "5")', async () => {
    expect((await refusal({ maxTurns: "5" })).message).toMatch(
      /maxTurns must be a positive integer; got a string \("5"\)/,
    );
    expect((await refusal({ stallThreshold: 0 })).message).toMatch(
      /stallThreshold must be a positive integer; got a number \(0\)/,
    );
    // lockLeaseMs (r31 #9): milliseconds, at least 300 (renewed every third of it), a timer's delay at most.
    for (const [value, kind] of [
      ["30000", 'a string \\("30000"\\)'],
      [100, "a number \\(100\\)"],
      [2.5e9, "a number"],
      [1500.5, "a number"],
    ] as const) {
      expect((await refusal({ lockLeaseMs: value as unknown as number })).message).toMatch(
        new RegExp(
          `^createSession: lockLeaseMs must be an integer number of milliseconds from 300 to 2147483647; got ${kind}`,
        ),
      );
    }
  });

  it("refuses a system prompt given twice (system and a spec's prompt entries), where every prompt would fail", async () => {
    const spec = {
      spec: SPEC_TOKEN,
      model: { name: "sim", endpoint: { baseUrl: server.baseUrl } },
      prompt: [{ id: "role", text: "You review pull requests." }],
    } as AgentSpec;
    expect((await refusal({ config: undefined, spec, system: "You are helpful." })).message).toMatch(
      /system prompt was given twice, as system and as the spec's prompt entries/,
    );
    expect(
      (
        await refusal({
          config: { baseUrl: server.baseUrl, model: "sim", prompt: [{ text: "From the config." }] },
          system: "You are helpful.",
        })
      ).message,
    ).toMatch(/as system and as the config's prompt/);
    expect((await refusal({ system: 42 })).message).toMatch(/system must be text/);
    expect(readdirSync(dir)).toEqual([]);
    expect(server.requests).toHaveLength(0);
    // Either one alone is the system prompt.
    const session = await createSession({ spec });
    expect(await session.prompt("hello")).toEqual({ status: "ok", reply: "hi" });
    const body = server.chatRequests[0]?.body as { messages: { role: string; content: unknown }[] };
    expect(body.messages[0]).toEqual({ role: "system", content: "You review pull requests." });
  });
});
