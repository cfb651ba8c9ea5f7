// Review round r79: many calls of a step dispatched at once on the run's one signal.
import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createToolset, defineTool } from "./index.js";

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
