// r96r: r95k's loop notice for another SDK's step limit in `config` (`maxSteps`, `maxTurns`, …) told
// a session's user to set `config.maxToolIterations` or return `{ stop: true }` from `beforeStep`;
// a session replaces the first with what its own `maxTurns` option leaves and has no `beforeStep`,
// so following it changed nothing (with `maxToolIterations: 2` set, the notice said "this run allows
// 50 tool steps (config.maxToolIterations)"). It also came again at every prompt. A session now
// tells its own notice, once, naming its `maxTurns` option and the limit it keeps.
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { createSession, type Session } from "./test-exports.js";

const servers: TestServer[] = [];
const sessions: Session[] = [];
afterEach(async () => {
  for (const s of sessions.splice(0)) await s.close();
  for (const s of servers.splice(0)) await s.close();
});

describe("another SDK's step limit in a session's config", () => {
  it("is told once per session, naming createSession's maxTurns and the limit it keeps", async () => {
    const server = await startServer({ replies: () => ({ content: "Fine." }) });
    servers.push(server);
    // A host's whole settings object as the config, the limit written as the AI SDK writes it.
    const settings: Record<string, unknown> = {
      baseUrl: server.baseUrl,
      model: "m",
      maxSteps: 2,
      maxToolIterations: 2,
      theme: "dark",
    };
    const session = await createSession({ config: settings as never, maxTurns: 7 });
    sessions.push(session);
    for (const text of ["one", "two", "three"]) expect((await session.prompt(text)).status).toBe("ok");
    const notices = session.getSnapshot().timeline.flatMap((e) => (e.type === "notice" ? [e.text] : []));
    expect(notices).toEqual([
      "config.maxSteps is how another SDK spells a step limit, and a session does not read it: this session allows 7 tool turns per prompt, set by createSession's maxTurns option (config.maxToolIterations is replaced by it).",
    ]);
    // The host's object is left as it was.
    expect(settings.maxSteps).toBe(2);
  });

  it("says nothing for a config without one", async () => {
    const server = await startServer({ replies: () => ({ content: "Fine." }) });
    servers.push(server);
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "m", maxTurns: null } as never,
    });
    sessions.push(session);
    await session.prompt("hi");
    expect(session.getSnapshot().timeline.some((e) => e.type === "notice")).toBe(false);
  });
});
