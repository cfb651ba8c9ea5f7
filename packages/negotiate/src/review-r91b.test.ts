/**
 * Review r91b: the effort climb's notice names the rung that goes out. A model record told that
 * "minimal" goes out as "low" which later learns "low" refused as well (a snapshot merged in from a
 * process that learnt it, a server refusing one value at a time) sends "medium": that climb is told
 * too, once, rather than left behind a notice naming the lower rung.
 */
import { openaiPersonality, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, beforeEach, expect, it } from "vitest";
import { clientFor, streamText } from "../test/wire.js";
import { createCapabilityStore } from "./capabilities.js";
import { negotiate } from "./negotiate.js";
import { buildBody } from "./request-body.js";

let server: TestServer;
beforeEach(async () => {
  const personality = openaiPersonality({ reasoningEffortValues: ["low", "medium", "high"] });
  // The simulator's answer streamed with no pause between its deltas (10 ms each by default): this
  // counts requests and notices, and four answers of some fifty deltas each took up to 4.2 s of
  // vitest's 5 s on a loaded two-core machine, all of it waiting on timers.
  server = await startServer({ personality, scriptedModel: { chunkDelayMs: 0 } });
});
afterEach(() => server.close());

const climb = (to: string) =>
  `o3 does not take reasoning_effort "minimal"; sending "${to}", which spends more reasoning tokens than asked.`;

it("review r91b: a later-learnt refusal's higher rung is told, once, after the lower one was", async () => {
  const store = createCapabilityStore();
  const heard: string[] = [];
  const minimal = { model: "o3", reasoningEffort: "minimal" };
  const once = () =>
    negotiate(
      store.capabilitiesFor(server.baseUrl, "sk-test"),
      (caps, produced, model) =>
        streamText(
          clientFor(server.baseUrl),
          buildBody(minimal, caps, model, [{ role: "user", content: "hi" }]),
          produced,
        ),
      { model: "o3", reasoningEffort: "minimal", onNotice: (text) => heard.push(text) },
    );
  await once();
  expect(heard).toEqual([climb("low")]);
  // Another process learnt that o3 refuses "low" as well; its snapshot is merged into this record.
  const snapshot = JSON.parse(JSON.stringify(store.exportCapabilities()));
  snapshot.endpoints[0].models.o3.refusedEfforts.push("low");
  store.importCapabilities(snapshot);
  await once();
  await once();
  const efforts = server.chatRequests.map((r) => (r.body as { reasoning_effort?: unknown }).reasoning_effort);
  expect(efforts).toEqual(["minimal", "low", "medium", "medium"]);
  expect(heard).toEqual([climb("low"), climb("medium")]);
});
