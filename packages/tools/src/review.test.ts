/**
 * Second review round: what a refusal echoes of arguments the model made up stays short however
 * large they are, and a call whose run was stopped while its arguments were being checked is not
 * started.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createToolset, defineTool, MAX_ARGUMENT_DEPTH, ToolInputError } from "./index.js";

const ran: unknown[] = [];
const strict = defineTool({
  name: "set_option",
  description: "Set one option.",
  input: z.strictObject({ key: z.string(), tags: z.record(z.string(), z.number()).optional() }),
  execute: (args) => {
    ran.push(args);
    return "set";
  },
});

async function refusal(args: Record<string, unknown>): Promise<ToolInputError> {
  return (await createToolset([strict])
    .dispatch({ id: "c", name: "set_option", args })
    .catch((error: unknown) => error)) as ToolInputError;
}

describe("a refusal's text", () => {
  it("stays short for keys the model made up, however long or many", async () => {
    const long = "k".repeat(200_000);
    const many = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`extra_${i}`, i]));
    for (const args of [
      { key: "a", [long]: 1 },
      { key: "a", ...many },
      { key: "a", tags: { [long]: "x" } },
    ]) {
      const error = await refusal(args);
      expect(error.code).toBe("invalid-arguments");
      expect(error.message.length).toBeLessThan(3000);
      for (const issue of error.issues) {
        expect(issue.path.length + issue.message.length).toBeLessThan(1000);
      }
    }
  });
});

describe("dispatch and the run's signal", () => {
  it("does not start execute once the signal has fired, while the arguments were being checked", async () => {
    const controller = new AbortController();
    const started: string[] = [];
    const slow = defineTool({
      name: "deploy",
      description: "Deploy.",
      input: z.object({ env: z.string() }).refine(async () => {
        controller.abort(new Error("stopped by the user"));
        return true;
      }),
      execute: ({ env }) => {
        started.push(env);
        return "deployed";
      },
    });
    const outcome = await createToolset([slow])
      .dispatch({ id: "c", name: "deploy", args: { env: "prod" } }, controller.signal)
      .catch((error: unknown) => error);
    expect(started).toEqual([]);
    expect(String(outcome)).toMatch(/stopped by the user/);
  });
});

describe("text cut short for the model", () => {
  it("is never cut inside a character: a made-up tool name, a made-up key", async () => {
    for (const lead of ["", "a"]) {
      const long = `${lead}${"😀".repeat(200)}`;
      const unknown = (await createToolset([strict])
        .dispatch({ id: "c", name: long, args: {} })
        .catch((error: unknown) => error)) as ToolInputError;
      expect(unknown.message).toContain("characters)");
      expect(unknown.message).not.toMatch(
        /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/,
      );
      const key = await refusal({ key: "a", [long]: 1, tags: { [long]: "x" } });
      expect(key.message).toContain("characters)");
      expect(key.message).not.toMatch(
        /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/,
      );
    }
  });
});

describe("dispatch handed the wrong things", () => {
  const seen: string[] = [];
  const search = defineTool({
    name: "search_files",
    description: "Find files under a directory.",
    input: z.object({ path: z.string() }).refine(async ({ path }) => {
      seen.push(`refine ${path}`);
      return true;
    }),
    execute: ({ path }) => {
      seen.push(`run ${path}`);
      return `files under ${path}`;
    },
  });
  const set = createToolset([search]);
  const failure = (promise: Promise<unknown>) =>
    promise.then(
      () => undefined,
      (error: unknown) => error as ToolInputError,
    );

  it("refuses a signal that is not an AbortSignal as invalid-call, before anything runs", async () => {
    seen.length = 0;
    const controller = new AbortController();
    for (const signal of [controller, {}, "stop", { aborted: false, addEventListener() {} }]) {
      const error = await failure(
        set.dispatch({ id: "c", name: "search_files", args: { path: "a" } }, signal as never),
      );
      expect(ToolInputError.isInstance(error)).toBe(true);
      expect(error?.code).toBe("invalid-call");
      expect(error?.message).toMatch(/^dispatch: signal must be an AbortSignal/);
    }
    expect(seen).toEqual([]);
    // Left out, or null, the call runs.
    await expect(
      set.dispatch({ id: "c", name: "search_files", args: { path: "b" } }, null as never),
    ).resolves.toBe("files under b");
  });

  it("does not check the arguments of a call whose signal has already fired (a refinement may have effects)", async () => {
    seen.length = 0;
    const controller = new AbortController();
    controller.abort(new Error("stopped by the user"));
    const outcome = await failure(
      set.dispatch({ id: "c", name: "search_files", args: { path: "a" } }, controller.signal),
    );
    expect(String(outcome)).toMatch(/stopped by the user/);
    expect(seen).toEqual([]);
  });

  it("refuses a call with no id as invalid-call: execute is promised one", async () => {
    seen.length = 0;
    for (const call of [
      { name: "search_files", args: { path: "a" } },
      { id: 42, name: "search_files", args: { path: "a" } },
    ]) {
      const error = await failure(set.dispatch(call as never));
      expect(error?.code).toBe("invalid-call");
      expect(error?.message).toMatch(/^dispatch: a call is an object \{ id, name, args \}/);
    }
    expect(seen).toEqual([]);
  });

  it("refuses arguments nested deeper than MAX_ARGUMENT_DEPTH as invalid-arguments, not a stack overflow", async () => {
    const Tree: z.ZodType = z.lazy(() => z.object({ name: z.string(), children: z.array(Tree).optional() }));
    const plant = createToolset([
      defineTool({
        name: "plant",
        description: "Plant a tree.",
        input: z.object({ tree: Tree }),
        execute: () => "planted",
      }),
    ]);
    // Each level is an object and an array: `levels` tree levels nest 2 × levels deep.
    const tree = (levels: number) =>
      JSON.parse(`${'{"name":"n","children":['.repeat(levels)}{"name":"leaf"}${"]}".repeat(levels)}`);
    // { tree } is level 0, so 255 tree levels reach level 511, the deepest taken.
    await expect(plant.dispatch({ id: "c", name: "plant", args: { tree: tree(255) } })).resolves.toBe(
      "planted",
    );
    for (const levels of [256, 900, 10_000]) {
      const error = await failure(plant.dispatch({ id: "c", name: "plant", args: { tree: tree(levels) } }));
      expect(ToolInputError.isInstance(error)).toBe(true);
      expect(error?.code).toBe("invalid-arguments");
      expect(error?.message).toMatch(new RegExp(`nested deeper than ${MAX_ARGUMENT_DEPTH} levels`));
    }
    // A cycle a host built (no model writes one) is as deep as it goes.
    const loop: Record<string, unknown> = { name: "n" };
    loop.children = [loop, loop];
    const cyclic = await failure(plant.dispatch({ id: "c", name: "plant", args: { tree: loop } }));
    expect(cyclic?.code).toBe("invalid-arguments");
  });
});
