import { startServer, type TestServer, withPollutedPrototype } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { createRuntime } from "./runtime.js";
import { isSummary, longHistory } from "./test-support/long-history.js";

const servers: TestServer[] = [];
afterEach(() => Promise.all(servers.splice(0).map((one) => one.close())));

describe("R86C-3: a run's compaction state takes nothing from Object.prototype", () => {
  // max_tokens, max_completion_tokens: a body that sets no ceiling read the inherited one as its
  // ceiling (NaN for a string), and planCompaction refused every compacting run.
  for (const name of ["summarise", "off", "max_tokens", "max_completion_tokens"]) {
    it(`the history is folded with Object.prototype.${name} set`, async () => {
      const server = await startServer({
        replies: (request) =>
          isSummary(request) ? { content: "Notes: chapters one to four." } : { content: "Five." },
      });
      servers.push(server);
      const result = await withPollutedPrototype({ [name]: "P0LLUTED" }, () =>
        createRuntime().runAgentLoop({
          config: {
            baseUrl: server.baseUrl,
            model: "m",
            maxRetries: 0,
            contextLength: 1600,
            compact: true,
            tasks: { compaction: { model: "m" } },
          },
          messages: longHistory(),
          dispatch: () => "unused",
        }),
      );
      // Before: summarise — "The request does not fit the model's context window" (the fold's
      // summariser was the polluted string); off — the same, no fold tried at all.
      expect(result.stopReason).toBe("answered");
      expect(server.chatRequests.filter(isSummary)).toHaveLength(1);
      expect(String(result.messages[0]?.content)).toContain("Notes: chapters one to four.");
    });
  }
});
