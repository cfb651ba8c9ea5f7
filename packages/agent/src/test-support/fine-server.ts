import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach } from "vitest";
import type { Session } from "../test-exports.js";

/**
 * For a test file's top level: `fineServer()` starts a testkit server that answers every request
 * "Fine.", and `sessions` holds the sessions a test opens; after every test the sessions are closed,
 * then the servers.
 */
export function useFineServers(): { fineServer: () => Promise<TestServer>; sessions: Session[] } {
  const servers: TestServer[] = [];
  const sessions: Session[] = [];
  afterEach(async () => {
    for (const s of sessions.splice(0)) await s.close();
    for (const s of servers.splice(0)) await s.close();
  });
  const fineServer = async (): Promise<TestServer> => {
    const server = await startServer({ replies: () => ({ content: "Fine." }) });
    servers.push(server);
    return server;
  };
  return { fineServer, sessions };
}

/** The model named by request `at` (the first by default) `server` was sent. */
export const modelSent = (server: TestServer, at = 0): string | undefined =>
  (server.chatRequests[at]?.body as { model?: string } | undefined)?.model;
