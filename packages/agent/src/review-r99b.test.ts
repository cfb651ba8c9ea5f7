// r99b: autoCompact's copy of the config (r98b) read the config's fields each run but made its
// `tasks` once, as the agent was made: a spread of the config's `tasks` and of `tasks.compaction`,
// with the summariser's model read then. So a model the host switched to between prompts was sent
// the turns while the summaries were still asked of the model it had left (a retired model: every
// fold failed), a `tasks.compaction.model` changed between prompts was never asked, and what a
// prototype of `tasks.compaction` held (an endpoint's `baseUrl`) was left behind: the summaries went
// to the agent's own server.
import type { TestServer } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { Agent, createSession } from "./test-exports.js";
import { useFineServers } from "./test-support/fine-server.js";

const { fineServer, sessions } = useFineServers();

/** About 150 tokens: with a 1200-token window, the third such prompt is the first to fold the transcript. */
const long = "word ".repeat(150);

/** What `server` was asked, in order: each turn (a streamed request) and each summary, by model. */
const asked = (server: TestServer): string[] =>
  server.chatRequests.map((request) => {
    const body = request.body as { model?: string; stream?: boolean };
    return `${body.stream === true ? "turn" : "summary"}:${body.model}`;
  });

describe("autoCompact's summaries, made from the config as it stands at each run", () => {
  it("an Agent asks the model the host switched to between prompts for them, as for the turns", async () => {
    const server = await fineServer();
    const settings: Record<string, unknown> = {
      baseUrl: server.baseUrl,
      model: "first",
      contextLength: 1200,
    };
    const agent = new Agent({ config: settings as never, autoCompact: true });
    expect((await agent.prompt(`one ${long}`)).status).toBe("ok");
    settings.model = "second";
    expect((await agent.prompt(`two ${long}`)).status).toBe("ok");
    expect((await agent.prompt(`three ${long}`)).status).toBe("ok");
    // Was "summary:first": the model the config named at `new Agent`.
    expect(asked(server)).toEqual(["turn:first", "turn:second", "summary:second", "turn:second"]);
  });

  it("a session asks the tasks.compaction.model the host changed between prompts", async () => {
    const server = await fineServer();
    const compaction: Record<string, unknown> = { model: "summariser-a" };
    const config = { baseUrl: server.baseUrl, model: "main", contextLength: 1200, tasks: { compaction } };
    const session = await createSession({ config: config as never, autoCompact: true, maxTurns: 4 });
    sessions.push(session);
    expect((await session.prompt(`one ${long}`)).status).toBe("ok");
    compaction.model = "summariser-b";
    expect((await session.prompt(`two ${long}`)).status).toBe("ok");
    expect((await session.prompt(`three ${long}`)).status).toBe("ok");
    // Was "summary:summariser-a".
    expect(asked(server)).toEqual(["turn:main", "turn:main", "summary:summariser-b", "turn:main"]);
    expect(compaction).toEqual({ model: "summariser-b" });
  });

  it("an Agent sends them to the endpoint a prototype of tasks.compaction holds", async () => {
    const server = await fineServer();
    const summaries = await fineServer();
    const compaction = Object.create({ endpoint: { baseUrl: summaries.baseUrl } }) as Record<string, unknown>;
    compaction.model = "summariser";
    const config = { baseUrl: server.baseUrl, model: "main", contextLength: 1200, tasks: { compaction } };
    const agent = new Agent({ config: config as never, autoCompact: true });
    for (const question of ["one", "two", "three"]) {
      expect((await agent.prompt(`${question} ${long}`)).status).toBe("ok");
    }
    // Was ["turn:main", "turn:main", "summary:summariser", "turn:main"] here and nothing there.
    expect(asked(server)).toEqual(["turn:main", "turn:main", "turn:main"]);
    expect(asked(summaries)).toEqual(["summary:summariser"]);
    expect(Object.keys(compaction)).toEqual(["model"]);
  });
});
