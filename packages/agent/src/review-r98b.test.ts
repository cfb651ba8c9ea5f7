// r98b: the loop's compaction (`autoCompact`) turned on by a spread of the config
// (`{ ...config, compact: true, tasks }`): what the config's prototype held
// (`Object.create(defaults)`, a settings class's getter) was left behind, as the session's copy left
// it before r97e, so a config an Agent without `autoCompact` reads whole lost its model or its base
// URL (every prompt ended "error") and a getter was read once, at `new Agent`.
import { describe, expect, it } from "vitest";
import { Agent, createSession } from "./test-exports.js";
import { modelSent, useFineServers } from "./test-support/fine-server.js";

const { fineServer, sessions } = useFineServers();

describe("autoCompact on a config whose fields its prototype or getters hold", () => {
  it("an Agent sends the model an Object.create(defaults) config holds", async () => {
    const server = await fineServer();
    const defaults = { baseUrl: server.baseUrl, model: "from-defaults", contextLength: 100_000 };
    const config = Object.create(defaults) as Record<string, unknown>;
    const agent = new Agent({ config: config as never, autoCompact: true });
    const result = await agent.prompt("one");
    expect(result.error).toBeUndefined();
    expect(result.status).toBe("ok");
    expect(modelSent(server)).toBe("from-defaults");
    // The host's objects are as they were.
    expect(Object.keys(config)).toEqual([]);
  });

  it("an Agent reads a settings class's getter of its #private field, each run", async () => {
    const server = await fineServer();
    class Settings {
      #model = "first";
      readonly baseUrl = server.baseUrl;
      readonly contextLength = 100_000;
      get model(): string {
        return this.#model;
      }
      use(model: string): void {
        this.#model = model;
      }
    }
    const settings = new Settings();
    const agent = new Agent({ config: settings as never, autoCompact: true });
    expect((await agent.prompt("one")).status).toBe("ok");
    settings.use("second");
    expect((await agent.prompt("two")).status).toBe("ok");
    expect([modelSent(server, 0), modelSent(server, 1)]).toEqual(["first", "second"]);
  });

  it("a session sends the model an Object.create(defaults) config holds", async () => {
    const server = await fineServer();
    const defaults = { baseUrl: server.baseUrl, model: "from-defaults", contextLength: 100_000 };
    const config = Object.create(defaults) as Record<string, unknown>;
    const session = await createSession({ config: config as never, autoCompact: true, maxTurns: 4 });
    sessions.push(session);
    const result = await session.prompt("one");
    expect(result.error).toBeUndefined();
    expect(result.status).toBe("ok");
    expect(modelSent(server)).toBe("from-defaults");
  });
});

// r98b: another SDK's step limit in the spellings the loop's FOREIGN_STEP_LIMITS left out —
// smolagents' `max_steps` (the snake-case twin of the AI SDK's `maxSteps`, as `max_turns` and
// `max_iterations` are listed beside theirs) and LangGraph's `recursionLimit` / `recursion_limit`
// (its run config's limit) — was dropped without a word: the run went on to the default 50 tool
// steps while the config's author believed it limited.
describe("another SDK's step limit spelled max_steps or recursionLimit", () => {
  it("an Agent tells its notice once, naming the field", async () => {
    const server = await fineServer();
    for (const field of ["max_steps", "recursionLimit", "recursion_limit"]) {
      const agent = new Agent({ config: { baseUrl: server.baseUrl, model: "m", [field]: 3 } as never });
      const notices: string[] = [];
      agent.subscribe((event) => {
        if (event.type === "notice") notices.push(event.text);
      });
      expect((await agent.prompt("one")).status).toBe("ok");
      expect((await agent.prompt("two")).status).toBe("ok");
      expect(notices).toHaveLength(1);
      expect(notices[0]).toMatch(
        new RegExp(
          `^config\\.${field} is how another SDK spells a step limit, and an Agent does not read it: this agent allows 50 tool steps`,
        ),
      );
    }
  });

  it("a session tells its own notice, naming its maxTurns", async () => {
    const server = await fineServer();
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "m", max_steps: 2 } as never,
      maxTurns: 6,
    });
    sessions.push(session);
    expect((await session.prompt("one")).status).toBe("ok");
    const timeline = session.getSnapshot().timeline.flatMap((e) => (e.type === "notice" ? [e.text] : []));
    expect(timeline).toEqual([
      "config.max_steps is how another SDK spells a step limit, and a session does not read it: this session allows 6 tool turns per prompt, set by createSession's maxTurns option (config.maxToolIterations is replaced by it).",
    ]);
  });
});

// r98b: a session's config copy (r97e) read the config's getters each run but copied its own data
// fields once, at createSession: a setting the host changed on its object between prompts
// (`settings.model = …`) was never sent, where an Agent given the same object sends it — and where
// the session's README said its copy reads the config as an Agent does. The same held for an Agent
// with autoCompact, whose copy is made as the agent is.
describe("a setting the host changes on its config object between prompts", () => {
  it("is the one a session sends, as an Agent does; one written on session.agent.config is the session's", async () => {
    const server = await fineServer();
    const settings: Record<string, unknown> = { baseUrl: server.baseUrl, model: "first" };
    const session = await createSession({ config: settings as never, maxTurns: 4 });
    sessions.push(session);
    await session.prompt("one");
    settings.model = "second";
    await session.prompt("two");
    (session.agent.config as unknown as Record<string, unknown>).model = "the session's";
    await session.prompt("three");
    const agent = new Agent({ config: settings as never });
    await agent.prompt("four");
    expect([0, 1, 2, 3].map((at) => modelSent(server, at))).toEqual([
      "first",
      "second",
      "the session's",
      "second",
    ]);
    // The host's object is as the host left it.
    expect(settings.model).toBe("second");
  });

  it("one written on session.agent.config is sent where the config's prototype held the field", async () => {
    const server = await fineServer();
    const defaults = { baseUrl: server.baseUrl, model: "from-defaults" };
    const session = await createSession({ config: Object.create(defaults) as never, maxTurns: 4 });
    sessions.push(session);
    // Was a TypeError: the copy held the prototype's field as a getter alone.
    (session.agent.config as unknown as Record<string, unknown>).model = "the session's";
    await session.prompt("one");
    expect(modelSent(server)).toBe("the session's");
    expect(defaults.model).toBe("from-defaults");
  });

  it("is the one an Agent with autoCompact sends", async () => {
    const server = await fineServer();
    const settings: Record<string, unknown> = {
      baseUrl: server.baseUrl,
      model: "first",
      contextLength: 100_000,
    };
    const agent = new Agent({ config: settings as never, autoCompact: true });
    await agent.prompt("one");
    settings.model = "second";
    await agent.prompt("two");
    expect([modelSent(server, 0), modelSent(server, 1)]).toEqual(["first", "second"]);
  });
});
