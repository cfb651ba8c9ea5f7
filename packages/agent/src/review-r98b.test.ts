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
