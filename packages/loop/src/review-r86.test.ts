/**
 * Review r86c (the compaction path), found by `pnpm fuzz:pollution --scenario sidetask`: a run's
 * compaction state was an ordinary object whose optional fields were read where unset, so a
 * polluted `Object.prototype.summarise` was taken for the run's summariser (the fold failed and the
 * run ended as too big for its window) and `.off` for a veto (no fold was ever tried).
 */
import { SUMMARISER_SYSTEM } from "@loopwright/side-task";
import { startServer, type TestServer, withPollutedPrototype } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage } from "./config.js";
import { createRuntime } from "./runtime.js";

const servers: TestServer[] = [];
afterEach(() => Promise.all(servers.splice(0).map((one) => one.close())));

/** A history long enough that a 1600-token window folds it before the first request. */
function longHistory(): ChatMessage[] {
  const history: ChatMessage[] = [];
  for (const chapter of ["one", "two", "three", "four"]) {
    history.push(
      { role: "user", content: `Summarise chapter ${chapter}.` },
      { role: "assistant", content: `Chapter ${chapter}: ${"lorem ".repeat(250).trim()}` },
    );
  }
  history.push({ role: "user", content: "And chapter five?" });
  return history;
}

const isSummary = (request: { body: unknown }) =>
  (request.body as { messages: ChatMessage[] }).messages[0]?.content === SUMMARISER_SYSTEM;

describe("R86C-3: a run's compaction state takes nothing from Object.prototype", () => {
  for (const name of ["summarise", "off"]) {
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
