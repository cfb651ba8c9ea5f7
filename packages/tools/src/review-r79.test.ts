// Review round r79: many calls of a step dispatched at once on the run's one signal.
import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createToolset, defineTool, ToolInputError } from "./index.js";

describe("R79T-1: parallel calls on one signal", () => {
  it("carry one abort listener between them, not one each (past ten Node printed MaxListenersExceededWarning)", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on("warning", onWarning);
    try {
      let open: () => void = () => {};
      const gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      const read = defineTool({
        name: "read_file",
        description: "Reads a file.",
        // An asynchronous check keeps each call waiting on the signal while it is awaited.
        input: z.object({ path: z.string().refine(() => gate.then(() => true)) }),
        execute: ({ path }) => `read ${path}`,
      });
      const toolset = createToolset([read]);
      const controller = new AbortController();
      const calls = Array.from({ length: 24 }, (_, at) =>
        toolset.dispatch({ id: `c${at}`, name: "read_file", args: { path: `f${at}` } }, controller.signal),
      );
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(getEventListeners(controller.signal, "abort")).toHaveLength(1);
      open();
      expect(await Promise.all(calls)).toEqual(calls.map((_, at) => `read f${at}`));
      // The listener goes with the last call.
      expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(warnings).not.toContain("MaxListenersExceededWarning");
    } finally {
      process.off("warning", onWarning);
    }
  });

  it("still stops every one of them when the signal fires, with its reason, and no execute starts", async () => {
    let runs = 0;
    const read = defineTool({
      name: "read_file",
      description: "Reads a file.",
      input: z.object({ path: z.string().refine(() => new Promise<boolean>(() => {})) }),
      execute: () => {
        runs++;
        return "read";
      },
    });
    const toolset = createToolset([read]);
    const controller = new AbortController();
    const calls = Array.from({ length: 12 }, (_, at) =>
      toolset.dispatch({ id: `c${at}`, name: "read_file", args: { path: "f" } }, controller.signal).then(
        () => "ran",
        (error: unknown) => error,
      ),
    );
    const reason = new Error("stopped by the user");
    controller.abort(reason);
    expect(await Promise.all(calls)).toEqual(calls.map(() => reason));
    expect(runs).toBe(0);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });
});

/** What `work` rejected with. */
async function rejection(work: Promise<unknown>): Promise<ToolInputError> {
  const error = await work.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(ToolInputError.isInstance(error)).toBe(true);
  return error as ToolInputError;
}

describe("R79T-2: a refusal stays short however deep the arguments the model wrote", () => {
  const key = "k".repeat(60);
  /** `leaf` under 500 levels of 60-character keys. */
  const deep = (leaf: unknown): unknown => {
    let value = leaf;
    for (let level = 0; level < 500; level++) value = { [key]: value };
    return value;
  };

  it("names a wrong value 500 levels down by the start and end of its path, not 30,000 characters of it", async () => {
    type Node = { n?: number; [key: string]: Node | number | undefined };
    // A node holds a count and any number of child nodes.
    const node: z.ZodType<Node> = z.lazy(() => z.object({ n: z.number().optional() }).catchall(node));
    const tree = defineTool({
      name: "store_tree",
      description: "Stores a tree.",
      input: z.object({ root: node }),
      execute: () => "stored",
    });
    const leaves = Object.fromEntries(Array.from({ length: 10 }, (_, at) => [`leaf${at}`, "wrong"]));
    const error = await rejection(
      createToolset([tree]).dispatch({ id: "c1", name: "store_tree", args: { root: deep(leaves) } }),
    );
    expect(error.code).toBe("invalid-arguments");
    // Was 305,673 characters: ten paths of 30,507.
    expect(error.message.length).toBeLessThan(6_000);
    const first = error.issues[0] as { path: string; message: string };
    expect(first.path.length).toBeLessThanOrEqual(240);
    expect(first.path.startsWith(`root.${key}.k`)).toBe(true);
    expect(first.path).toContain("…");
    expect(first.path.endsWith(`${key}.leaf0`)).toBe(true);
    expect(error.message).toContain(`${key}.leaf0: `);
  });

  it("names a __proto__ key 500 levels down the same way", async () => {
    const open = defineTool({
      name: "put_values",
      description: "Puts values.",
      input: z.object({ values: z.record(z.string(), z.unknown()) }),
      execute: () => "put",
    });
    const args = { values: deep(JSON.parse('{"__proto__": {"polluted": true}}')) } as Record<string, unknown>;
    const error = await rejection(createToolset([open]).dispatch({ id: "c1", name: "put_values", args }));
    // Was 30,695 characters.
    expect(error.message.length).toBeLessThan(800);
    expect(error.issues[0]?.path.endsWith(`${key}.__proto__`)).toBe(true);
    expect(error.issues[0]?.path.length).toBeLessThanOrEqual(240);
  });

  it("keeps a path within the cut whole", async () => {
    const open = defineTool({
      name: "put_values",
      description: "Puts values.",
      input: z.object({ values: z.object({ a: z.object({ b: z.number() }) }) }),
      execute: () => "put",
    });
    const error = await rejection(
      createToolset([open]).dispatch({ id: "c1", name: "put_values", args: { values: { a: { b: "x" } } } }),
    );
    expect(error.issues[0]?.path).toBe("values.a.b");
  });
});

describe("R79T-3: a made-up tool name in a set of hundreds", () => {
  const names = Array.from({ length: 400 }, (_, at) => `server${at}__list_items`);
  names.push("github__create_issue");
  const toolset = createToolset(
    names.map((name) =>
      defineTool({ name, description: "A tool.", input: z.object({}), execute: () => "done" }),
    ),
  );

  it("is answered with forty names and a count of the rest, not every name (was about 9,000 characters a call)", async () => {
    const error = await rejection(toolset.dispatch({ id: "c1", name: "rm", args: {} }));
    expect(error.code).toBe("unknown-tool");
    expect(error.message).toContain("server0__list_items, server1__list_items");
    expect(error.message).toContain("and 361 more.");
    expect(error.message).not.toContain("server40__list_items");
    expect(error.message.length).toBeLessThan(1_200);
  });

  it("names first the tools whose names hold the one called, written another way", async () => {
    const error = await rejection(toolset.dispatch({ id: "c1", name: "GitHub_Create_Issue", args: {} }));
    expect(error.message).toContain("the tools are: github__create_issue, server0__list_items");
  });

  it("still names every tool of a small set", async () => {
    const small = createToolset(
      names
        .slice(0, 40)
        .map((name) => defineTool({ name, description: "A tool.", input: z.object({}), execute: () => 1 })),
    );
    const error = await rejection(small.dispatch({ id: "c1", name: "rm", args: {} }));
    expect(error.message).toContain("server39__list_items.");
    expect(error.message).not.toContain("more");
  });
});
