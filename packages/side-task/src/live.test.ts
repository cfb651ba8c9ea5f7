/**
 * Side tasks against a real llama.cpp server (the folder LOOPWRIGHT_LIVE_LLAMA names: a tiny model that knows nothing but
 * behaves): the no-thinking hint and the side task's body are taken as sent, and a json_schema
 * holds the reply through the server's own grammar. Skipped with a message where the live server
 * is absent.
 */

import { type LiveServer, liveServerPath, startLive } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isolated } from "../test/wire.js";
import { askJson, askReply } from "./ask.js";
import { PRESELECT_SCHEMA } from "./preselect.js";

const live = liveServerPath ? describe : describe.skip;
if (!liveServerPath)
  console.warn(
    "side-task live tests skipped: set LOOPWRIGHT_LIVE_LLAMA to a folder holding llama-server and tiny.gguf to run them.",
  );

// The tiny model on a shared CPU answers a few tokens a second: small ceilings, generous bounds.
live("against a live llama.cpp server", { timeout: 120_000 }, () => {
  let server: LiveServer;
  beforeAll(async () => {
    server = await startLive();
  }, 90_000);
  afterAll(() => server?.stop(), 20_000);

  it("takes a side task's body as built, and says how the reply ended", async () => {
    const notices: string[] = [];
    const reply = await askReply(
      { baseUrl: server.baseUrl },
      "tiny",
      "Name this chat.",
      "A trip to Lisbon.",
      {
        ...isolated(),
        maxTokens: 8,
        timeoutMs: 110_000,
        onNotice: (m) => notices.push(m),
      },
    );
    expect(typeof reply.text).toBe("string");
    expect(["stop", "length"]).toContain(reply.finishReason);
    expect(notices).toEqual([]);
  });

  it("holds the reply to the schema through the server's grammar", async () => {
    const answer = await askJson<{ tools: unknown }>(
      { baseUrl: server.baseUrl },
      "tiny",
      "Pick tools.",
      "Which tools?",
      PRESELECT_SCHEMA,
      // A fixed seed: sampled at random, the random-weight model runs past a 64-token ceiling about one
      // time in ten (and greedily it repeats itself past any ceiling); seed 4 writes a short list.
      { ...isolated(), maxTokens: 128, extraBody: { seed: 4 }, timeoutMs: 110_000, name: "preselection" },
    );
    expect(answer).toBeDefined();
    expect(Array.isArray(answer?.tools)).toBe(true);
  });

  it("answers a side task whose text holds half a surrogate pair alone (r68: a 500 from the server before)", async () => {
    const reply = await askReply(
      { baseUrl: server.baseUrl },
      "tiny",
      "Name this chat \uDE00.",
      "A trip to Lisbon \uD83D",
      { ...isolated(), maxTokens: 4, timeoutMs: 110_000 },
    );
    expect(typeof reply.text).toBe("string");
    expect(["stop", "length"]).toContain(reply.finishReason);
  });
});
