/**
 * Asking for reasoning effort "none" from a model that refuses it: the request goes out with a
 * higher rung, which spends reasoning tokens, and a notice says so — however the refusal of "none"
 * became known (refused just now, latched from another value's refusal, restored from a snapshot
 * after a restart). Over HTTP against the testkit's openai personality, where o3 takes
 * low/medium/high.
 */
import { openaiPersonality, type RecordedRequest, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { clientFor, streamText } from "../test/wire.js";
import { type CapabilityStore, createCapabilityStore } from "./capabilities.js";
import { negotiate } from "./negotiate.js";
import { buildBody } from "./request-body.js";

let server: TestServer;
beforeEach(async () => {
  server = await startServer({
    personality: openaiPersonality({ reasoningEffortValues: ["low", "medium", "high"] }),
    // The simulator's answer streamed with no pause between its deltas (10 ms each by default):
    // these count requests and notices, and a test's five answers of some fifty deltas each took up
    // to 3.7 s of vitest's 5 s on a loaded two-core machine, all of it waiting on timers.
    scriptedModel: { chunkDelayMs: 0 },
  });
});
afterEach(() => server.close());

/** One request asking `reasoningEffort`: what it sent as reasoning_effort, and the notices. */
async function ask(store: CapabilityStore, reasoningEffort: string) {
  const before = server.chatRequests.length;
  const notices: string[] = [];
  const config = { model: "o3", reasoningEffort };
  const supports = store.capabilitiesFor(server.baseUrl, "sk-test");
  const client = clientFor(server.baseUrl);
  await negotiate(
    supports,
    (supports, produced, model) =>
      streamText(client, buildBody(config, supports, model, [{ role: "user", content: "hi" }]), produced),
    { model: config.model, onNotice: (n) => notices.push(n), reasoningEffort },
  );
  const sent = server.chatRequests
    .slice(before)
    .map((r: RecordedRequest) => (r.body as Record<string, unknown>).reasoning_effort);
  return { sent, notices };
}

const STEPPED_UP = /o3 does not take reasoning_effort "none"; sending "low", which spends reasoning tokens/;
/** A rung other than none stepped up: told too, since it spends more reasoning tokens than asked. */
const MINIMAL_UP =
  'o3 does not take reasoning_effort "minimal"; sending "low", which spends more reasoning tokens than asked.';

describe('reasoning effort "none" sent as a higher rung', () => {
  it("is told when the server refuses none itself, once per model", async () => {
    const store = createCapabilityStore();
    expect(await ask(store, "none")).toEqual({
      sent: ["none", "low"],
      notices: [expect.stringMatching(STEPPED_UP)],
    });
    expect(await ask(store, "none")).toEqual({ sent: ["low"], notices: [] });
  });

  it("is told when none's refusal was learnt from another value's refusal listing what the model takes", async () => {
    const store = createCapabilityStore();
    expect(await ask(store, "minimal")).toEqual({ sent: ["minimal", "low"], notices: [MINIMAL_UP] });
    expect(await ask(store, "none")).toEqual({ sent: ["low"], notices: [expect.stringMatching(STEPPED_UP)] });
    expect(await ask(store, "none")).toEqual({ sent: ["low"], notices: [] });
  });

  it("is told again by a restarted process that restored the refusal from a snapshot", async () => {
    const first = createCapabilityStore();
    await ask(first, "none");
    const restarted = createCapabilityStore();
    restarted.importCapabilities(JSON.parse(JSON.stringify(first.exportCapabilities())));
    expect(await ask(restarted, "none")).toEqual({
      sent: ["low"],
      notices: [expect.stringMatching(STEPPED_UP)],
    });
    // The told flag is not part of the snapshot.
    expect(JSON.stringify(restarted.exportCapabilities())).toBe(JSON.stringify(first.exportCapabilities()));
  });

  it("is told again after the endpoint was forgotten (a new record), not after an import into the same one", async () => {
    const store = createCapabilityStore();
    await ask(store, "none");
    const snapshot = JSON.parse(JSON.stringify(store.exportCapabilities()));
    store.importCapabilities(snapshot);
    expect(await ask(store, "none")).toEqual({ sent: ["low"], notices: [] });
    expect(store.forget(server.baseUrl, "sk-test")).toBe(true);
    expect(await ask(store, "none")).toEqual({
      sent: ["none", "low"],
      notices: [expect.stringMatching(STEPPED_UP)],
    });
    store.reset();
    expect(await ask(store, "none")).toEqual({
      sent: ["none", "low"],
      notices: [expect.stringMatching(STEPPED_UP)],
    });
  });

  it("tells another rung asked and stepped up once (more reasoning tokens than asked), and nothing for a rung the model takes", async () => {
    const store = createCapabilityStore();
    expect(await ask(store, "minimal")).toEqual({ sent: ["minimal", "low"], notices: [MINIMAL_UP] });
    expect(await ask(store, "minimal")).toEqual({ sent: ["low"], notices: [] });
    expect(await ask(store, "medium")).toEqual({ sent: ["medium"], notices: [] });
  });

  it("refuses a reasoningEffort option that is not a string, naming it, before anything is sent", async () => {
    const supports = createCapabilityStore().capabilitiesFor(server.baseUrl, "sk-test");
    await expect(
      negotiate(supports, async () => "x", { model: "o3", reasoningEffort: 0 as unknown as string }),
    ).rejects.toThrow(/negotiate: reasoningEffort must be/);
    expect(server.chatRequests).toHaveLength(0);
  });
});
