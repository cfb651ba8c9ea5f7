// r100f: a tool whose parameters hold what JSON cannot (a Map of properties, a BigInt default) is
// refused when the run starts, before any request: sent, it took no arguments or lost its default.
import { SchemaCompatError } from "@loopwright/schema-compat";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { AgentLoopError, createRuntime } from "./index.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("a run given a tool whose parameters JSON cannot hold", () => {
  it("is refused before any request, naming the tool and the place", async () => {
    const cases: [unknown, string][] = [
      [
        { type: "object", properties: new Map([["path", { type: "string" }]]) },
        "a Map in function.parameters at #/properties",
      ],
      [
        { type: "object", properties: { limit: { type: "integer", default: 10n } } },
        "a BigInt in function.parameters at #/properties/limit/default",
      ],
    ];
    for (const [parameters, said] of cases) {
      server = await startServer({ personality: "llamacpp", replies: [{ content: "ok" }] });
      const error = await createRuntime()
        .runAgentLoop({
          config: { baseUrl: server.baseUrl, model: "m" },
          messages: [{ role: "user", content: "List the files." }],
          tools: [{ type: "function", function: { name: "list", description: "Lists files.", parameters } }],
          dispatch: () => "a.txt",
        } as Parameters<ReturnType<typeof createRuntime>["runAgentLoop"]>[0])
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(AgentLoopError.isInstance(error), String(error)).toBe(true);
      const cause = (error as AgentLoopError).cause;
      expect(SchemaCompatError.isInstance(cause)).toBe(true);
      expect((cause as Error).message).toContain(`"list" (index 0 of the tool array) holds ${said}`);
      expect(server.requests).toHaveLength(0);
      await server.close();
      server = undefined;
    }
  });
});
