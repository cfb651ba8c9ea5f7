/**
 * Review r91b: the effort climb's notice names the rung that goes out. A model record that later
 * learns the rung it was told it steps up to is refused as well (a snapshot merged from a process
 * that learnt it, a server that refuses one value at a time) sends a higher rung still: that is
 * told, not left behind the earlier notice naming a lower one.
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
    scriptedModel: true,
  });
});
afterEach(() => server.close());

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

describe("review r91b: the effort climb's notice and the rung sent", () => {
  it("tells the higher rung a later-learnt refusal sends, after telling the lower one", async () => {
    const store = createCapabilityStore();
    expect(await ask(store, "minimal")).toEqual({
      sent: ["minimal", "low"],
      notices: [
        'o3 does not take reasoning_effort "minimal"; sending "low", which spends more reasoning tokens than asked.',
      ],
    });
    // Another process learnt that low is refused too; its snapshot is merged into this record.
    const snapshot = JSON.parse(JSON.stringify(store.exportCapabilities()));
    snapshot.endpoints[0].models.o3.refusedEfforts.push("low");
    store.importCapabilities(snapshot);
    expect(await ask(store, "minimal")).toEqual({
      sent: ["medium"],
      notices: [
        'o3 does not take reasoning_effort "minimal"; sending "medium", which spends more reasoning tokens than asked.',
      ],
    });
    // Told once: the same climb again is not.
    expect(await ask(store, "minimal")).toEqual({ sent: ["medium"], notices: [] });
  });
});
