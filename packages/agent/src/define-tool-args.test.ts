// defineTool's argument reading: a parameter named after an Object.prototype member (constructor,
// toString…) that a call leaves out reads undefined in execute, not the inherited function; the
// call's own objects are not written into. Over HTTP with the testkit's scripted model.
import { runInNewContext } from "node:vm";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { Agent, defineTool } from "./index.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

interface ShapeArgs {
  kind: string;
  constructor?: string;
  parts?: { toString?: string; n: number }[];
}

/** A shape's parameters: `constructor` at the top, `toString` in the items of `parts`. */
const SHAPE_PARAMETERS = {
  type: "object",
  properties: {
    kind: { type: "string" },
    constructor: { type: "string" },
    parts: {
      type: "array",
      items: { type: "object", properties: { toString: { type: "string" }, n: { type: "number" } } },
    },
  },
};

/** A "shape" tool of `SHAPE_PARAMETERS` (`kind` required) through `defineTool`, running `execute`. */
const shapeTool = (execute: (args: ShapeArgs) => string) =>
  defineTool<ShapeArgs>({
    name: "shape",
    description: "Makes a shape.",
    parameters: { ...SHAPE_PARAMETERS, required: ["kind"] },
    execute,
  });

describe("defineTool and parameters named like Object.prototype members", () => {
  it("reads a left-out constructor as undefined, at the top and in array items", async () => {
    const seen: unknown[] = [];
    const shape = shapeTool((args) => {
      // biome-ignore lint/suspicious/noShadowRestrictedNames: a parameter named constructor, destructured as a host writes it, is the case under test
      const { constructor, kind } = args;
      seen.push(
        typeof constructor,
        typeof args.parts?.[0]?.toString,
        Object.keys(args),
        JSON.stringify(args),
      );
      return `class ${constructor ?? "Shape"} (${kind})`;
    });
    server = await startServer({
      replies: [
        { toolCalls: [{ name: "shape", arguments: '{"kind":"point","parts":[{"n":1}]}' }] },
        { content: "done" },
      ],
    });
    const agent = new Agent({ config: { baseUrl: server.baseUrl, model: "m" }, tools: [shape] });
    await agent.prompt("make a point");
    expect(seen).toEqual(["undefined", "undefined", ["kind", "parts"], '{"kind":"point","parts":[{"n":1}]}']);
    const second = server.chatRequests[1]?.body as { messages: { role: string; content?: unknown }[] };
    expect(second.messages.find((m) => m.role === "tool")?.content).toBe("class Shape (point)");
  });

  it("reads a left-out constructor as undefined in arguments another realm made (node:vm), at the top and in array items (fix139)", async () => {
    const seen: unknown[] = [];
    const shape = shapeTool((args) => {
      seen.push(typeof args.constructor, typeof args.parts?.[0]?.toString, JSON.stringify(args));
      return "made";
    });
    const args = runInNewContext('({ kind: "point", parts: [{ n: 1 }] })') as Record<string, unknown>;
    const said = await shape.execute(args, { toolCallId: "c1", onUpdate: () => {}, terminate: () => {} });
    expect(said).toBe("made");
    expect(seen).toEqual(["undefined", "undefined", '{"kind":"point","parts":[{"n":1}]}']);
  });

  it("does not write into the arguments it is handed, and sends a sent constructor on", async () => {
    let got: ShapeArgs | undefined;
    const shape = defineTool<ShapeArgs>({
      name: "shape",
      description: "Makes a shape.",
      parameters: {
        type: "object",
        properties: { kind: { type: "string" }, constructor: { type: "string" } },
      },
      execute: (args) => {
        got = args;
        return "ok";
      },
    });
    const args = { kind: "point" };
    await shape.execute(args, { toolCallId: "c", onUpdate: () => {}, terminate: () => {} });
    expect(Object.getOwnPropertyNames(args)).toEqual(["kind"]);
    expect(got?.constructor).toBeUndefined();
    await shape.execute(JSON.parse('{"kind":"p","constructor":"Point"}'), {
      toolCallId: "c",
      onUpdate: () => {},
      terminate: () => {},
    });
    expect(got?.constructor).toBe("Point");
  });

  it("a left-out constructor is absent (in, hasOwn), and a value the host assigns to it is kept by JSON and spreads", async () => {
    const seen: unknown[] = [];
    const shape = defineTool<ShapeArgs>({
      name: "shape",
      description: "Makes a shape.",
      parameters: SHAPE_PARAMETERS,
      execute: (args) => {
        seen.push("constructor" in args, Object.hasOwn(args, "constructor"));
        // A host filling its own default, then forwarding the arguments as JSON and as a copy.
        args.constructor ??= "Shape";
        const part = args.parts?.[0];
        if (part) part.toString ??= "p";
        seen.push(JSON.stringify(args), Object.keys({ ...args }), structuredClone(args));
        return "ok";
      },
    });
    server = await startServer({
      replies: [
        { toolCalls: [{ name: "shape", arguments: '{"kind":"point","parts":[{"n":1}]}' }] },
        { content: "done" },
      ],
    });
    const agent = new Agent({ config: { baseUrl: server.baseUrl, model: "m" }, tools: [shape] });
    await agent.prompt("make a point");
    // Before: the left-out key was a hidden own undefined, so the host's value stayed hidden too.
    expect(seen).toEqual([
      false,
      false,
      '{"kind":"point","parts":[{"n":1,"toString":"p"}],"constructor":"Shape"}',
      ["kind", "parts", "constructor"],
      { kind: "point", parts: [{ n: 1, toString: "p" }], constructor: "Shape" },
    ]);
  });
});
