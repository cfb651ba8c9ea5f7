// Shared by the side-task tests: a fresh client pool and capability store per test, so latches
// learned in one test are not the next one's, and the bodies a test server received.
import { createClientPool } from "@loopwright/client";
import { createCapabilityStore } from "@loopwright/negotiate";
import type { RecordedRequest, TestServer } from "@loopwright/testkit";
import type { SideTaskOptions } from "../src/call.js";

export function isolated(): Required<Pick<SideTaskOptions, "capabilities" | "clients">> & {
  capabilities: ReturnType<typeof createCapabilityStore>;
} {
  return { capabilities: createCapabilityStore(), clients: createClientPool() };
}

export function bodies(server: TestServer): Record<string, unknown>[] {
  return server.chatRequests.map((r: RecordedRequest) => r.body as Record<string, unknown>);
}

export function userContent(body: Record<string, unknown>): unknown {
  const messages = body.messages as { role: string; content: unknown }[];
  return messages.find((m) => m.role === "user")?.content;
}

export function systemContent(body: Record<string, unknown>): string {
  const messages = body.messages as { role: string; content: unknown }[];
  return String(messages.find((m) => m.role === "system")?.content ?? "");
}
