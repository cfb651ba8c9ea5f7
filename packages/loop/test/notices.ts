// Shared by the loop tests that count what a refusal's latch is told (review-r89's R89-5 and
// review-r91-latches): two runs on one runtime, because a latch made in the first run must be told
// once there and hold, untold, in the second.
import type { TestServer } from "@loopwright/testkit";
import type { ToolDefinition } from "../src/config.js";
import { createRuntime } from "../src/runtime.js";

/**
 * Runs "Go on." twice through one runtime's `runAgentLoop` against `server` (model `sim`, `config`
 * over that, `tools` declared, every call answered with ""), and returns each notice event's text
 * and each body the server took, in order.
 */
export async function twoRunsOnOneRuntime(
  server: TestServer,
  tools: ToolDefinition[],
  config: Record<string, unknown> = {},
): Promise<{ notices: string[]; bodies: Record<string, unknown>[] }> {
  const notices: string[] = [];
  const runtime = createRuntime();
  const run = () =>
    runtime.runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim", ...config },
      messages: [{ role: "user", content: "Go on." }],
      tools,
      dispatch: () => "",
      onEvent: (event) => {
        if (event.kind === "notice") notices.push(event.text);
      },
    });
  await run();
  await run();
  return { notices, bodies: server.chatRequests.map((r) => r.body as Record<string, unknown>) };
}
