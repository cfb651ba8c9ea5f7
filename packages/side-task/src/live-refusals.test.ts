/**
 * Side tasks read the real b9749 server's refusals as it means them (review r78): its 500 for an
 * image part sent to a model loaded without a projector has the image left out and the text sent
 * alone, once per model; a grammar of the caller's own it cannot read is given up at once with a
 * typed error in the server's words, no latch left behind. In a file named live, so .ci/run's live
 * step runs it with LOOPWRIGHT_LIVE_LLAMA set; it skips with a message elsewhere.
 */
import { type LiveServer, liveServerPath, startLive } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isolated } from "../test/wire.js";
import { askJson, askReply } from "./ask.js";
import { SideTaskError } from "./errors.js";
import type { SideTaskInput } from "./input.js";

if (!liveServerPath)
  console.warn(
    "side-task live refusal tests skipped: set LOOPWRIGHT_LIVE_LLAMA to a folder holding llama-server and tiny.gguf to run them.",
  );

const page: SideTaskInput = [
  { type: "text", text: "What is this?" },
  { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
];

(liveServerPath ? describe : describe.skip)(
  "side tasks against the live llama-server's refusals",
  { timeout: 120_000 },
  () => {
    let live: LiveServer;
    beforeAll(async () => {
      live = await startLive();
    }, 90_000);
    afterAll(() => live?.stop(), 20_000);

    it("an image to a model with no projector: the text alone, said once, and the next task sends none", async () => {
      const notices: string[] = [];
      const options = {
        ...isolated(),
        maxTokens: 4,
        timeoutMs: 110_000,
        onNotice: (m: string) => notices.push(m),
      };
      const first = await askReply({ baseUrl: live.baseUrl }, "tiny", "", page, options);
      expect(["stop", "length"]).toContain(first.finishReason);
      expect(notices).toEqual([
        "tiny refused the image in a side task; sending it the text alone from now on.",
      ]);
      const second = await askReply({ baseUrl: live.baseUrl }, "tiny", "", page, options);
      expect(["stop", "length"]).toContain(second.finishReason);
      expect(notices).toHaveLength(1);
    });

    it("a structured task with an image is answered from the text alone", async () => {
      const answer = await askJson<{ tools: unknown }>(
        { baseUrl: live.baseUrl },
        "tiny",
        "Pick tools.",
        page,
        {
          type: "object",
          properties: { tools: { type: "array", items: { type: "string" }, maxItems: 0 } },
          required: ["tools"],
        },
        { ...isolated(), maxTokens: 32, timeoutMs: 110_000 },
      );
      expect(answer).toEqual({ tools: [] });
    });

    it("a grammar of the caller's own the server cannot read: request-failed in its words, nothing latched", async () => {
      const options = {
        ...isolated(),
        maxTokens: 4,
        timeoutMs: 110_000,
        extraBody: { grammar: "root ::= (" },
      };
      const error = await askReply({ baseUrl: live.baseUrl }, "tiny", "", "x", options).catch(
        (e: unknown) => e,
      );
      expect(SideTaskError.isInstance(error) && error.code).toBe("request-failed");
      expect((error as Error).message).toContain("failed to parse grammar");
      expect(options.capabilities.capabilitiesFor(live.baseUrl).strictSchemas).toBe(true);
    });
  },
);
