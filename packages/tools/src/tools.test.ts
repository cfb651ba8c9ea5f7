import { runAgentLoop } from "@loopwright/loop";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, expectTypeOf, it } from "vitest";
import { z } from "zod";
import { createToolset, defineTool, ToolInputError } from "./index.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const executed: unknown[] = [];
const search = defineTool({
  name: "search_files",
  description: "Find files under a directory.",
  input: z.object({
    path: z.string().describe("Where to look."),
    limit: z.number().int().min(1).default(10),
  }),
  execute: ({ path, limit }) => {
    executed.push({ path, limit });
    return `${limit} files under ${path}`;
  },
});

describe("defineTool", () => {
  it("declares the input schema as JSON Schema in input mode: a defaulted field stays optional", () => {
    expect(search.declaration).toEqual({
      type: "function",
      function: {
        name: "search_files",
        description: "Find files under a directory.",
        parameters: {
          type: "object",
          properties: {
            path: { type: "string", description: "Where to look." },
            limit: { type: "integer", minimum: 1, maximum: Number.MAX_SAFE_INTEGER, default: 10 },
          },
          required: ["path"],
        },
      },
    });
  });

  it("types execute's argument from the schema, defaults filled in", () => {
    expectTypeOf(search.execute).parameter(0).toEqualTypeOf<{ path: string; limit: number }>();
    expect(search.parse({ path: "src" })).toEqual({ path: "src", limit: 10 });
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ["a bad name", { name: "has space" }, /needs a name of 1 to 64/],
    ["no description", { description: " " }, /needs a description/],
    ["a schema that is not an object", { input: z.string() }, /needs an object input schema/],
    ["no schema", { input: { type: "object" } }, /needs an input zod schema/],
  ])("refuses a tool with %s", (_, change, message) => {
    const spec = { name: "t", description: "d", input: z.object({}), execute: () => "", ...change };
    expect(() => defineTool(spec as Parameters<typeof defineTool>[0])).toThrow(message);
  });
});

describe("createToolset", () => {
  const toolset = createToolset([search]);

  it("checks arguments before execute, naming each mismatch", async () => {
    const before = executed.length;
    const refused = await toolset
      .dispatch({ id: "c", name: "search_files", args: { path: 3, limit: 0 } })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(ToolInputError.isInstance(refused)).toBe(true);
    expect((refused as ToolInputError).code).toBe("invalid-arguments");
    expect((refused as ToolInputError).issues.map((found) => found.path)).toEqual(["path", "limit"]);
    expect((refused as Error).message).toMatch(
      /^search_files was not run: its arguments do not match its schema \(path: /,
    );
    expect(executed.length).toBe(before);
  });

  it("names the tools it has when asked for one it does not", async () => {
    await expect(toolset.dispatch({ id: "c", name: "rm", args: {} })).rejects.toThrow(
      'There is no tool named "rm"; the tools are: search_files.',
    );
  });

  it("cuts a made-up tool name short in its answer, and refuses a call that is not one by its typed error", async () => {
    const long = `rm_${"f".repeat(30_000)}`;
    const refused = await toolset.dispatch({ id: "c", name: long, args: {} }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect((refused as ToolInputError).code).toBe("unknown-tool");
    expect((refused as Error).message).toContain(`There is no tool named "rm_${"f".repeat(40)}`);
    expect((refused as Error).message).toContain("(30003 characters)");
    expect((refused as Error).message.length).toBeLessThan(400);
    for (const call of [null, undefined, "search_files", { id: "c", name: 7, args: {} }]) {
      const error = await toolset.dispatch(call as never).then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(ToolInputError.isInstance(error)).toBe(true);
      expect((error as ToolInputError).code).toBe("invalid-call");
      expect((error as Error).message).toMatch(/^dispatch: a call is an object/);
    }
  });

  it("checks an asynchronous refinement before execute, and names the argument it refused", async () => {
    const ran: string[] = [];
    const open = defineTool({
      name: "open_file",
      description: "Open a file that exists.",
      input: z.object({ path: z.string().refine(async (path) => path !== "missing", "no such file") }),
      execute: ({ path }) => {
        ran.push(path);
        return `opened ${path}`;
      },
    });
    const set = createToolset([open]);
    const refused = await set.dispatch({ id: "c", name: "open_file", args: { path: "missing" } }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(ToolInputError.isInstance(refused) && refused.code).toBe("invalid-arguments");
    expect((refused as Error).message).toBe(
      "open_file was not run: its arguments do not match its schema (path: no such file). Call it again with arguments that do.",
    );
    await expect(set.dispatch({ id: "d", name: "open_file", args: { path: "a.txt" } })).resolves.toBe(
      "opened a.txt",
    );
    expect(ran).toEqual(["a.txt"]);
  });

  it("names the first mismatches and counts the rest, however many arguments are wrong", async () => {
    const tags = defineTool({
      name: "tag",
      description: "Tag things.",
      input: z.object({ tags: z.array(z.string()) }),
      execute: () => "",
    });
    const refused = (await createToolset([tags])
      .dispatch({ id: "c", name: "tag", args: { tags: Array.from({ length: 5000 }, (_, i) => i) } })
      .catch((error: unknown) => error)) as ToolInputError;
    expect(refused.issues).toHaveLength(5000);
    expect(refused.message).toContain("tags[0]: Invalid input: expected string, received number");
    expect(refused.message).toContain("and 4990 more");
    expect(refused.message.length).toBeLessThan(2000);
  });

  it("refuses a set that is not an array of tools with its typed error", () => {
    for (const value of [undefined, {}, "search_files"]) {
      const error = (() => {
        try {
          createToolset(value as never);
        } catch (caught) {
          return caught;
        }
        return undefined;
      })();
      expect(ToolInputError.isInstance(error) && error.code).toBe("invalid-tool");
      expect((error as Error).message).toMatch(/createToolset: the tools must be an array/);
    }
  });

  it("refuses a name given twice", () => {
    expect(() => createToolset([search, search])).toThrow(/search_files is given twice/);
  });
});

describe("a toolset in runAgentLoop over HTTP", () => {
  it("tells the model a validation failure as the call's answer, and the run goes on to the valid call", async () => {
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "call_1", name: "search_files", arguments: '{"path": 7}' }] },
        { toolCalls: [{ id: "call_2", name: "search_files", arguments: '{"path": "src"}' }] },
        { content: "Found them." },
      ],
    });
    const toolset = createToolset([search]);
    executed.length = 0;
    const result = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: [{ role: "user", content: "Find files in src." }],
      tools: toolset.tools,
      dispatch: toolset.dispatch,
    });

    expect(result.turn.content).toBe("Found them.");
    expect(executed).toEqual([{ path: "src", limit: 10 }]);
    expect(result.toolCalls.map(({ id, ok }) => [id, ok])).toEqual([
      ["call_1", false],
      ["call_2", true],
    ]);
    const second = server.chatRequests[1]?.body as {
      messages: { role: string; content?: unknown }[];
      tools: unknown[];
    };
    // The loop sends the declaration made strict-safe (the defaulted field nullable, then dropped as null).
    expect(second.tools).toMatchObject([{ type: "function", function: { name: "search_files" } }]);
    const answer = second.messages.at(-1);
    expect(answer?.role).toBe("tool");
    expect(answer?.content).toMatch(
      /^Error: search_files was not run: its arguments do not match its schema \(path: /,
    );
    const third = server.chatRequests[2]?.body as { messages: { role: string; content?: unknown }[] };
    expect(third.messages.at(-1)).toEqual({
      role: "tool",
      tool_call_id: "call_2",
      content: "10 files under src",
    });
  });
});

describe("a zod union tool in runAgentLoop over HTTP", () => {
  it("runs a call whose variant leaves an optional field out the strict way (null)", async () => {
    const edits: unknown[] = [];
    const edit = defineTool({
      name: "edit_file",
      description: "Change a file.",
      input: z.object({
        path: z.string(),
        change: z.discriminatedUnion("kind", [
          z.object({
            kind: z.literal("replace"),
            old: z.string(),
            new: z.string(),
            count: z.number().optional(),
          }),
          z.object({ kind: z.literal("append"), text: z.string(), newline: z.boolean().optional() }),
        ]),
        pair: z.tuple([z.string(), z.object({ note: z.string().optional() })]).optional(),
      }),
      execute: (args) => {
        edits.push(args);
        return "done";
      },
    });
    server = await startServer({
      replies: [
        {
          toolCalls: [
            {
              id: "call_1",
              name: "edit_file",
              // What a model answering the strict declaration writes: every field, null for the ones left out.
              arguments: JSON.stringify({
                path: "a.md",
                change: { kind: "append", text: "hi", newline: null },
                pair: ["x", { note: null }],
              }),
            },
          ],
        },
        { content: "Edited." },
      ],
    });
    const toolset = createToolset([edit]);
    const result = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: [{ role: "user", content: "Append hi to a.md." }],
      tools: toolset.tools,
      dispatch: toolset.dispatch,
    });
    expect(result.toolCalls.map(({ ok }) => ok)).toEqual([true]);
    expect(edits).toEqual([{ path: "a.md", change: { kind: "append", text: "hi" }, pair: ["x", {}] }]);
  });
});
