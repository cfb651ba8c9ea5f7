import { startServer } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { createRuntime } from "./index.js";
import { polluted } from "./test-support/polluted.js";

// The engine reads a property descriptor's `get`, `set`, `value` and `writable` through the
// prototype. The loop reads a host's getter option (`get system()`) through a view it defines with
// a descriptor: written as a literal, an inherited `writable` made that descriptor an invalid one,
// and every run given such options threw a TypeError before its first request.

async function run() {
  const server = await startServer({ replies: [{ content: "Hello." }] });
  let asked = 0;
  try {
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "m", apiKey: "k" },
      messages: [{ role: "user", content: "Hi" }],
      dispatch: () => "unused",
      get system() {
        asked++;
        return "Be brief.";
      },
    });
    return {
      stop: result.stopReason,
      answer: result.turn.content,
      asked: asked > 0,
      sent: server.chatRequests.map((r) => r.raw),
    };
  } catch (error) {
    return { threw: String(error) };
  } finally {
    await server.close();
  }
}

describe("a polluted descriptor field", () => {
  it("changes nothing in a run whose options hold a getter", async () => {
    const clean = await run();
    expect(clean).toMatchObject({ stop: "answered", answer: "Hello.", asked: true });
    expect(JSON.stringify(clean.sent)).toContain("Be brief.");
    for (const field of ["writable", "enumerable", "configurable"]) {
      expect(await polluted(field, "P0LLUTED", run), field).toEqual(clean);
    }
  });
});
