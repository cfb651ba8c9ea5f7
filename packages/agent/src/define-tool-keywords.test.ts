// defineTool and the places JSON Schema puts a value besides `properties`, `additionalProperties`
// and `items`: a record written with `patternProperties` (TypeBox's Type.Record shape), a draft-07
// tuple (`items` as a list, `additionalItems`), `if`/`then`/`else`, `dependentSchemas`. A parameter
// named after an Object.prototype member that the model left out there reads undefined in
// execute, not the inherited function. Over HTTP with the testkit's scripted model.
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { Agent, defineTool } from "./index.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** An object schema declaring `name` (an Object.prototype member) and `n`. */
const declaring = (name: string) => ({
  type: "object",
  properties: { [name]: { type: "string" }, n: { type: "number" } },
});

/** An object of the arguments, as `execute` reads it. */
type Member = { [key: string]: unknown };
interface Probe {
  byName: Record<string, Member>;
  both: Record<string, Member>;
  tuple: Member[];
  branch: Member;
  dependent: Member;
}

describe("defineTool follows patternProperties, tuples and conditional schemas", () => {
  it("reads a left-out inherited name as undefined under each of them", async () => {
    const seen: Record<string, unknown> = {};
    const tool = defineTool<Probe>({
      name: "probe",
      description: "Reads its arguments.",
      parameters: {
        type: "object",
        properties: {
          // TypeBox: Type.Record(Type.String(), Type.Object({ constructor: Type.Optional(Type.String()), … }))
          byName: { type: "object", patternProperties: { "^(.*)$": declaring("constructor") } },
          // Two patterns matching one key: both apply.
          both: {
            type: "object",
            patternProperties: { "^a": declaring("toString"), z$: declaring("valueOf") },
          },
          // Draft-07 tuple and what follows it.
          tuple: { type: "array", items: [declaring("toString")], additionalItems: declaring("constructor") },
          branch: {
            type: "object",
            properties: { kind: { type: "string" } },
            if: { properties: { kind: { const: "a" } } },
            // biome-ignore lint/suspicious/noThenProperty: JSON Schema's `then` keyword is the case under test
            then: declaring("toString"),
            else: declaring("valueOf"),
          },
          dependent: {
            type: "object",
            properties: { kind: { type: "string" } },
            dependentSchemas: { kind: declaring("hasOwnProperty") },
          },
        },
      },
      execute: (args) => {
        seen.byName = typeof args.byName.k?.constructor;
        seen.byNameIn = "constructor" in (args.byName.k ?? {});
        seen.bothToString = typeof args.both.az?.toString;
        seen.bothValueOf = typeof args.both.az?.valueOf;
        seen.tupleFirst = typeof args.tuple[0]?.toString;
        seen.tupleRest = typeof args.tuple[1]?.constructor;
        seen.branch = typeof args.branch.toString;
        seen.dependent = typeof args.dependent.hasOwnProperty;
        return JSON.stringify(args);
      },
    });
    const sent =
      '{"byName":{"k":{"n":1}},"both":{"az":{"n":2}},"tuple":[{"n":3},{"n":4}],"branch":{"kind":"a"},"dependent":{"kind":"b"}}';
    server = await startServer({
      replies: [{ toolCalls: [{ name: "probe", arguments: sent }] }, { content: "done" }],
    });
    const agent = new Agent({ config: { baseUrl: server.baseUrl, model: "m" }, tools: [tool] });
    await agent.prompt("probe");
    // Before: each read the inherited function ("function", and `in` true).
    expect(seen).toEqual({
      byName: "undefined",
      byNameIn: false,
      bothToString: "undefined",
      bothValueOf: "undefined",
      tupleFirst: "undefined",
      tupleRest: "undefined",
      branch: "undefined",
      dependent: "undefined",
    });
    // What the tool answered is what the model sent, nothing added.
    const second = server.chatRequests[1]?.body as { messages: { role: string; content?: unknown }[] };
    expect(JSON.parse(String(second.messages.find((m) => m.role === "tool")?.content))).toEqual(
      JSON.parse(sent),
    );
  });

  it("a key no pattern matches is at additionalProperties' place, and a sent value is kept", async () => {
    let got: { map: Record<string, Member> } | undefined;
    const tool = defineTool<{ map: Record<string, Member> }>({
      name: "probe",
      description: "Reads its arguments.",
      parameters: {
        type: "object",
        properties: {
          map: {
            type: "object",
            patternProperties: { "^x-": declaring("toString") },
            additionalProperties: declaring("constructor"),
          },
        },
      },
      execute: (args) => {
        got = args;
        return "ok";
      },
    });
    const context = { toolCallId: "c", onUpdate: () => {}, terminate: () => {} };
    const args = JSON.parse('{"map":{"x-a":{"n":1},"plain":{"n":2},"x-b":{"toString":"kept"}}}');
    await tool.execute(args, context);
    expect(typeof got?.map["x-a"]?.toString).toBe("undefined");
    // Matched by a pattern: additionalProperties does not apply, so constructor is Object's.
    expect(got?.map["x-a"]?.constructor).toBe(Object);
    expect(typeof got?.map.plain?.constructor).toBe("undefined");
    expect(typeof got?.map.plain?.toString).toBe("function");
    expect(got?.map["x-b"]?.toString).toBe("kept");
    // The call's own objects are not written into.
    expect(Object.getPrototypeOf(args.map["x-a"])).toBe(Object.prototype);
  });

  it("refuses at defineTool a backtracking pattern an inherited name depends on, naming the tool, path and pattern (r43)", () => {
    // Before, defineTool took it and the walk ran the pattern on the model's keys: a 31-character
    // key ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!") blocked the process for 54 s.
    const define = (patternProperties: Record<string, unknown>, additional?: unknown) =>
      defineTool({
        name: "label",
        description: "Labels things.",
        parameters: {
          type: "object",
          properties: {
            map: {
              type: "object",
              patternProperties,
              ...(additional === undefined ? {} : { additionalProperties: additional }),
            },
          },
        },
        execute: () => "ok",
      });
    for (const [patterns, additional] of [
      [{ "^([a-z]+)*$": declaring("constructor") }, undefined],
      // Taken before r44 #1 (8 s on a 29-character key): valid only without the u flag, where
      // `\u{1,}` repeats a `u`; and a bound with many digits.
      [{ "^(\\u{1,})+$": declaring("constructor") }, undefined],
      [{ "^(a+){0000000000000000000001,}$": declaring("constructor") }, undefined],
      // A pattern whose entry declares nothing, deciding whether an additionalProperties that does applies.
      [{ "(a|ab)*": { type: "object" } }, declaring("toString")],
    ] as const) {
      const [pattern] = Object.keys(patterns);
      let thrown: unknown;
      try {
        define(patterns, additional);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toMatchObject({ name: "AgentError", code: "invalid-input" });
      expect(String(thrown)).toContain(
        `"label" has a patternProperties pattern ${JSON.stringify(pattern)} at #/properties/map`,
      );
    }
    // A safe pattern where an inherited name depends on it is taken; so is a risky one nothing depends on.
    expect(() => define({ "^[a-z]+$": declaring("constructor") })).not.toThrow();
    expect(() => define({ "^([a-z]+)*$": { type: "object" } }, { type: "object" })).not.toThrow();
  });

  it("never runs a pattern whose entry declares no inherited name on the model's key (r42b #2)", async () => {
    // A backtracking pattern: before, a 31-character key blocked the process for 77 s, this one
    // (41 characters) for days. Its entry declares nothing, so the pattern is not tested at all.
    let got: Member | undefined;
    const tool = defineTool<Member>({
      name: "label",
      description: "Labels things.",
      parameters: {
        type: "object",
        properties: { constructor: { type: "string" } },
        patternProperties: { "^([a-z]+)*$": { type: "object" } },
      },
      execute: (args) => {
        got = args;
        return "ok";
      },
    });
    const key = `${"a".repeat(40)}!`;
    server = await startServer({
      replies: [
        { toolCalls: [{ name: "label", arguments: JSON.stringify({ [key]: { x: 1 } }) }] },
        { content: "done" },
      ],
    });
    const agent = new Agent({ config: { baseUrl: server.baseUrl, model: "m" }, tools: [tool] });
    await agent.prompt("label");
    expect(got?.[key]).toEqual({ x: 1 });
    expect(typeof got?.constructor).toBe("undefined");
  }, 10_000);
});
