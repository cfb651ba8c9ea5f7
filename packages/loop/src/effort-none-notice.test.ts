// A loop asked for reasoning effort "none" from a model that refuses it (o3 on the testkit's openai
// personality takes low/medium/high): every run that sends "low" instead says so in a notice, once
// per model, however the refusal became known — including after a restart from a snapshot (r53 F1).
import { openaiPersonality, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { createRuntime, type Runtime } from "./index.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function ask(runtime: Runtime, reasoningEffort: string) {
  const s = server as TestServer;
  const before = s.chatRequests.length;
  const notices: string[] = [];
  await runtime.runAgentLoop({
    config: { baseUrl: s.baseUrl, model: "o3", reasoningEffort },
    messages: [{ role: "user", content: "hi" }],
    dispatch: () => "",
    onEvent: (e) => {
      if (e.kind === "notice") notices.push(e.text);
    },
  });
  const sent = s.chatRequests.slice(before).map((r) => (r.body as Record<string, unknown>).reasoning_effort);
  return { sent, notices };
}

const STEPPED_UP = /o3 does not take reasoning_effort "none"; sending "low", which spends reasoning tokens/;

describe('a loop asked for reasoning effort "none" that goes out as "low"', () => {
  it("says so after minimal's refusal taught it, and again after a restart from a snapshot", async () => {
    server = await startServer({
      personality: openaiPersonality({ reasoningEffortValues: ["low", "medium", "high"] }),
      // The simulator's answer streamed with no pause between its deltas (10 ms each by default):
      // this counts requests and notices, and its answers of some fifty deltas each took up to
      // 3.4 s of vitest's 5 s on a loaded two-core machine, all of it waiting on timers.
      scriptedModel: { chunkDelayMs: 0 },
    });
    const runtime = createRuntime();
    // The asked "minimal" stepped up is told too: it spends more reasoning tokens than asked.
    expect(await ask(runtime, "minimal")).toEqual({
      sent: ["minimal", "low"],
      notices: [
        'o3 does not take reasoning_effort "minimal"; sending "low", which spends more reasoning tokens than asked.',
      ],
    });
    const first = await ask(runtime, "none");
    expect(first.sent).toEqual(["low"]);
    expect(first.notices.filter((n) => STEPPED_UP.test(n))).toHaveLength(1);
    // Once per model in a process.
    expect((await ask(runtime, "none")).notices.filter((n) => STEPPED_UP.test(n))).toEqual([]);

    const restarted = createRuntime();
    restarted.capabilities.importCapabilities(runtime.capabilities.exportCapabilities());
    const after = await ask(restarted, "none");
    expect(after.sent).toEqual(["low"]);
    expect(after.notices.filter((n) => STEPPED_UP.test(n))).toHaveLength(1);
  });
});
