/**
 * Second review round: what a refusal echoes of arguments the model made up stays short however
 * large they are, and a call whose run was stopped while its arguments were being checked is not
 * started.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createToolset, defineTool, type ToolInputError } from "./index.js";

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
