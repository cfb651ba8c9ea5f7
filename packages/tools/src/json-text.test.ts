import { runAgentLoop } from "@loopwright/loop";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createToolset, defineTool } from "./index.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

interface Tree {
  name: string;
  children?: Tree[];
}
const Tree: z.ZodType<Tree> = z.object({
  name: z.string(),
  get children() {
    return z.array(Tree).optional();
  },
});

describe("a value the strict declaration asked for as JSON text", () => {
  it("reaches the tool as the object its zod schema takes (a recursive tree three levels deep)", async () => {
    const planted: unknown[] = [];
    const plant = defineTool({
      name: "plant_tree",
      description: "Plant a tree of named nodes.",
      input: z.object({ tree: Tree, note: z.string().optional() }),
      execute: (args) => {
        planted.push(args);
        return "planted";
      },
    });
    const grandchildren = [{ name: "leaf", children: [{ name: "deepest" }] }];
    server = await startServer({
      replies: [
        {
          toolCalls: [
            {
              id: "call_1",
              name: "plant_tree",
              // What a model answering the strict declaration writes: the deep part as JSON text.
              arguments: JSON.stringify({
                tree: { name: "root", children: [{ name: "kid", children: JSON.stringify(grandchildren) }] },
                note: null,
              }),
            },
          ],
        },
        { content: "Planted." },
      ],
    });
    const toolset = createToolset([plant]);
    const result = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: [{ role: "user", content: "Plant the tree." }],
      tools: toolset.tools,
      dispatch: toolset.dispatch,
    });
    // The request declared the recursive reference expanded twice, then asked for as JSON text.
    const body = server.requests[0]?.body as {
      tools: Array<{ function: { parameters: { properties: Record<string, Record<string, unknown>> } } }>;
    };
    const tree = body.tools[0]?.function.parameters.properties.tree as {
      properties: { children: { items: { properties: { children: unknown } } } };
    };
    expect(tree.properties.children.items.properties.children).toMatchObject({
      type: ["string", "null"],
      description: expect.stringContaining("JSON text"),
    });
    expect(result.toolCalls.map(({ ok }) => ok)).toEqual([true]);
    expect(planted).toEqual([
      { tree: { name: "root", children: [{ name: "kid", children: grandchildren }] } },
    ]);
  });
});
