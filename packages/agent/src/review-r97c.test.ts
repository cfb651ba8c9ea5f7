// r97c: another SDK's step limit in a plain Agent's config (`maxSteps`, `stopWhen`, …) reached the
// loop, whose notice came at every loop run — each prompt, and each queued message a run went on
// with — and told the host to return `{ stop: true }` from `beforeStep`, which an Agent gives the
// loop itself (built from `shouldStopAfterTurn`, `toolChoice`, `transformContext`): advice the host
// could not follow. The Agent now takes the fields out of the loop's copy and tells its own notice
// once per agent, naming `config.maxToolIterations` with its value and `shouldStopAfterTurn`; a
// session's agent tells the session's words (its `maxTurns`) instead, once, and nothing else.
import { describe, expect, it } from "vitest";
import { Agent, type AgentEvent, createSession } from "./test-exports.js";
import { modelSent, useFineServers } from "./test-support/fine-server.js";

const { fineServer, sessions } = useFineServers();

/** Every notice `agent` tells its host, in order. */
function noticesOf(agent: Agent): string[] {
  const notices: string[] = [];
  agent.subscribe((event: AgentEvent) => {
    if (event.type === "notice") notices.push(event.text);
  });
  return notices;
}

describe("another SDK's step limit in a plain Agent's config", () => {
  it("is told once, across prompts and a queued follow-up, naming maxToolIterations and shouldStopAfterTurn", async () => {
    const server = await fineServer();
    // The host's settings as the AI SDK writes its limit, frozen as a host may keep them.
    const settings = Object.freeze({ baseUrl: server.baseUrl, model: "m", maxSteps: 5 });
    const agent = new Agent({ config: settings as never });
    const notices = noticesOf(agent);
    expect((await agent.prompt("one")).status).toBe("ok");
    expect((await agent.prompt("two")).status).toBe("ok");
    // A message queued as the third prompt's turn ends: the run goes on with it in a loop run of its own.
    let queued = false;
    agent.subscribe((event) => {
      if (event.type !== "turn_end" || queued) return;
      queued = true;
      agent.followUp({ role: "user", content: "and more" });
    });
    expect((await agent.prompt("three")).status).toBe("ok");
    expect(server.chatRequests).toHaveLength(4);
    expect(notices).toEqual([
      'config.maxSteps is how another SDK spells a step limit, and an Agent does not read it: this agent allows 50 tool steps per loop run (config.maxToolIterations\'s default; a queued message a run goes on with starts a new loop run), past which the run ends with status "error"; to stop on a condition, return true from shouldStopAfterTurn, asked after each tool step: the run then ends with status "stopped".',
    ]);
    expect(notices[0]).not.toContain("beforeStep");
    // The host's object is as it was, and so is what the agent says its config is.
    expect(settings.maxSteps).toBe(5);
    expect(agent.config).toBe(settings);
  });

  it("names every such field in one notice, with the maxToolIterations the config sets", async () => {
    const server = await fineServer();
    const agent = new Agent({
      config: {
        baseUrl: server.baseUrl,
        model: "m",
        maxSteps: 4,
        stopWhen: { stepCountIs: 4 },
        maxToolIterations: 3,
      } as never,
    });
    const notices = noticesOf(agent);
    await agent.prompt("one");
    await agent.prompt("two");
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(
      /^config\.maxSteps, config\.stopWhen are how another SDK spells a step limit, and an Agent does not read them: this agent allows 3 tool steps per loop run \(config\.maxToolIterations; /,
    );
    expect(notices[0]).toContain("shouldStopAfterTurn");
    expect(notices[0]).not.toContain("beforeStep");
  });

  it("still reads the rest of a config whose defaults come from its prototype", async () => {
    const server = await fineServer();
    // Object.create(defaults): the model, and the limit itself, held by the prototype.
    const defaults = { baseUrl: server.baseUrl, model: "from-defaults", maxTurns: 8 };
    const config = Object.create(defaults) as Record<string, unknown>;
    config.maxToolIterations = 6;
    const agent = new Agent({ config: config as never });
    const notices = noticesOf(agent);
    expect((await agent.prompt("one")).status).toBe("ok");
    expect((server.chatRequests[0]!.body as { model: string }).model).toBe("from-defaults");
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(
      /^config\.maxTurns is how another SDK spells a step limit, and an Agent does not read it: this agent allows 6 tool steps/,
    );
    expect(defaults.maxTurns).toBe(8);
  });

  it("still reads a config class's getters of its #private fields", async () => {
    const server = await fineServer();
    class Settings {
      readonly #model = "from-class";
      readonly baseUrl = server.baseUrl;
      readonly maxSteps = 3;
      get model(): string {
        return this.#model;
      }
    }
    const agent = new Agent({ config: new Settings() as never });
    const notices = noticesOf(agent);
    expect((await agent.prompt("one")).status).toBe("ok");
    expect((server.chatRequests[0]!.body as { model: string }).model).toBe("from-class");
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(
      /^config\.maxSteps is how another SDK spells a step limit, and an Agent does not read it: /,
    );
  });

  it("says nothing for a config without one", async () => {
    const server = await fineServer();
    const agent = new Agent({ config: { baseUrl: server.baseUrl, model: "m", maxSteps: null } as never });
    const notices = noticesOf(agent);
    await agent.prompt("one");
    await agent.prompt("two");
    expect(notices).toEqual([]);
  });
});

describe("another SDK's step limit in a session's config", () => {
  it("is told in the session's words only, once, over its prompts and a run the host starts on its agent", async () => {
    const server = await fineServer();
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "m", maxSteps: 2, stopWhen: "never" } as never,
      maxTurns: 7,
    });
    sessions.push(session);
    expect((await session.prompt("one")).status).toBe("ok");
    expect((await session.prompt("two")).status).toBe("ok");
    expect((await session.agent.prompt("three")).status).toBe("ok");
    const timeline = session.getSnapshot().timeline.flatMap((e) => (e.type === "notice" ? [e.text] : []));
    const own =
      "config.maxSteps, config.stopWhen are how another SDK spells a step limit, and a session does not read them: this session allows 7 tool turns per prompt, set by createSession's maxTurns option (config.maxToolIterations is replaced by it).";
    expect(timeline).toEqual([own]);
  });
});

// r97e: a session ran each prompt's loop on a spread copy of its config (`{ ...config,
// maxToolIterations }`): what the config's prototype held (`Object.create(defaults)`, a settings
// class's getter) was left behind, so a config the plain Agent reads whole lost its model or its
// base URL in a session. The session's copy now keeps them, read from the host's object.
describe("a session's config whose fields its prototype holds", () => {
  for (const foreign of [false, true]) {
    const label = foreign ? " (and another SDK's step limit beside them)" : "";
    it(`sends the model and reaches the base URL an Object.create(defaults) config holds${label}`, async () => {
      const server = await fineServer();
      const defaults = { baseUrl: server.baseUrl, model: "from-defaults" };
      const config = Object.create(defaults) as Record<string, unknown>;
      if (foreign) config.maxSteps = 3;
      const session = await createSession({ config: config as never, maxTurns: 4 });
      sessions.push(session);
      expect((await session.prompt("one")).status).toBe("ok");
      expect((await session.prompt("two")).status).toBe("ok");
      expect(server.chatRequests).toHaveLength(2);
      expect(modelSent(server, 1)).toBe("from-defaults");
      // The host's objects are as they were.
      expect(Object.keys(config)).toEqual(foreign ? ["maxSteps"] : []);
      expect(defaults).toEqual({ baseUrl: server.baseUrl, model: "from-defaults" });
    });

    it(`reads a settings class's getter of its #private field${label}`, async () => {
      const server = await fineServer();
      class Settings {
        readonly #model = "from-class";
        readonly baseUrl = server.baseUrl;
        get model(): string {
          return this.#model;
        }
      }
      const settings = new Settings();
      if (foreign) Object.assign(settings, { maxTurns: 9 });
      const session = await createSession({ config: settings as never, maxTurns: 4 });
      sessions.push(session);
      expect((await session.prompt("one")).status).toBe("ok");
      expect(modelSent(server)).toBe("from-class");
    });
  }

  it("asks a getter each run, so a setting the host changes between prompts is the one sent", async () => {
    const server = await fineServer();
    let model = "first";
    const config = {
      baseUrl: server.baseUrl,
      get model() {
        return model;
      },
    };
    const session = await createSession({ config: config as never, maxTurns: 4 });
    sessions.push(session);
    await session.prompt("one");
    model = "second";
    await session.prompt("two");
    expect([modelSent(server, 0), modelSent(server, 1)]).toEqual(["first", "second"]);
  });
});
