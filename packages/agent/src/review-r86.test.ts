import { join } from "node:path";
import { type Reply, startServer, type TestServer, withPollutedPrototype } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import {
  Agent,
  type AgentToolContext,
  createSession,
  defineTool,
  readSessionFile,
  sessionPath,
} from "./test-exports.js";
import { useTempDirs } from "./test-support/temp-dirs.js";

const tempDir = useTempDirs("r86c");

// Review round r86 (agent), found by `pnpm fuzz:pollution --scenario agent`: each test sets a field
// on Object.prototype enumerable, as a polluting assignment does (withPollutedPrototype), and fails
// on the code before its fix.

const servers: TestServer[] = [];
afterEach(() => Promise.all(servers.splice(0).map((one) => one.close())));

/** A testkit server with `replies`, closed after the test. */
async function serve(...replies: Reply[]): Promise<TestServer> {
  const made = await startServer({ replies });
  servers.push(made);
  return made;
}

describe("R86C-1: the session file's fs options are read as written", () => {
  for (const [name, value] of [
    ["flush", "P0LLUTED"],
    ["flush", 1],
  ] as const) {
    it(`a session with a file runs and saves with Object.prototype.${name} = ${JSON.stringify(value)}`, async () => {
      const server = await serve({ content: "Saved." });
      const dir = tempDir();
      const result = await withPollutedPrototype({ [name]: value }, async () => {
        // Before: "Could not create the lock …/s.jsonl.lock of the session file …: The
        // "options.flush" property must be of type boolean" (the `{ flag: "wx" }` Node read).
        const session = await createSession({
          config: { baseUrl: server.baseUrl, model: "sim" },
          sessionDir: dir,
          sessionId: "s",
        });
        const answer = await session.prompt("Keep this.");
        await session.close();
        return answer;
      });
      expect(result).toEqual({ status: "ok", reply: "Saved." });
      expect(readSessionFile(sessionPath(dir, "s")).messages).toEqual([
        { role: "user", content: "Keep this." },
        { role: "assistant", content: "Saved." },
      ]);
    });
  }

  // (A prompt under these fails in Node's fetch, which reads them too: the file alone here.)
  for (const name of ["mode", "encoding"]) {
    it(`a session's folder and lock are made with Object.prototype.${name} set`, async () => {
      const dir = join(tempDir(), "new", "folder");
      // Before: mode — "The argument 'mode' must be a 32-bit unsigned integer…" (`{ recursive:
      // true }`); encoding — "The argument 'encoding' is invalid encoding" (the lock's `{ flag }`).
      const session = await withPollutedPrototype({ [name]: "P0LLUTED" }, () =>
        createSession({
          config: { baseUrl: "http://127.0.0.1:9", model: "sim" },
          sessionDir: dir,
          sessionId: "m",
        }),
      );
      await session.save();
      await session.close();
      expect(readSessionFile(sessionPath(dir, "m")).messages).toEqual([]);
    });
  }
});

describe("R86C-2: descriptors and Proxy handlers of the agent's own take nothing inherited", () => {
  it("an agent's messages are read and pushed with Object.prototype.get set", () => {
    const agent = new Agent({
      config: { baseUrl: "http://127.0.0.1:9", model: "sim" },
      messages: [{ role: "user", content: "a" }],
    });
    const read = withPollutedPrototype({ get: "P0LLUTED" }, () => {
      // Before: "'P0LLUTED' returned for property 'get' of object '#<Object>' is not a function" —
      // the guard's handler had no get trap, and the one it inherited was the polluted field.
      agent.messages.push({ role: "assistant", content: "b" });
      return agent.messages.map((message) => message.role);
    });
    expect(read).toEqual(["user", "assistant"]);
  });

  it("defineTool's arguments with an absent inherited name are copied with Object.prototype.get set", async () => {
    const tool = defineTool<{ constructor?: string; city: string }>({
      name: "lookup",
      description: "Looks a city up.",
      parameters: {
        type: "object",
        properties: { constructor: { type: "string" }, city: { type: "string" } },
        required: ["city"],
      },
      execute: (args) => `${args.city}: ${String(args.constructor)}`,
    });
    const context = { signal: new AbortController().signal } as AgentToolContext;
    // Once clean first: @loopwright/schema-compat's argumentsPrototype, made the first time under
    // a polluted get, throws itself (reported, not this package's).
    expect(await tool.execute({ city: "Lyon" }, context)).toBe("Lyon: undefined");
    // Before: "Invalid property descriptor. Cannot both specify accessors and a value or writable
    // attribute" — the copy's data descriptor inherited the polluted get.
    const answer = await withPollutedPrototype({ get: "P0LLUTED" }, () =>
      Promise.resolve(tool.execute({ city: "Paris" }, context)),
    );
    expect(answer).toBe("Paris: undefined");
  });
});

describe("R86C-3: a run's side-task counts read only an event's own sideUsage", () => {
  it("a session's run metrics stay numbers with Object.prototype.sideUsage set", async () => {
    const server = await serve({ content: "Done." });
    const session = await createSession({ config: { baseUrl: server.baseUrl, model: "sim" } });
    const metrics: unknown[] = [];
    session.onEvent((event) => {
      if (event.type === "run_metrics") metrics.push(event);
    });
    const result = await withPollutedPrototype({ sideUsage: "P0LLUTED" }, () => session.prompt("go"));
    expect(result).toEqual({ status: "ok", reply: "Done." });
    // Before: every usage event with no side task read the polluted field: null (NaN) here.
    expect(metrics.at(-1)).toMatchObject({
      sideCacheInputTokens: 0,
      sideMissInputTokens: 0,
      sideOutputTokens: 0,
    });
    await session.close();
  });
});
