/**
 * Review r104c of tool loading: what a host's catalogue and tool definitions are quoted as when they
 * are refused. A server named with a megabyte made a megabyte error; a name's right-to-left override
 * or U+2028 was quoted raw; a revoked Proxy, or a getter that throws, ended the check with the
 * engine's `TypeError` or the host's own error instead of a `ToolLoadingError` naming what was read.
 */
import type { FunctionToolLike } from "@loopwright/schema-compat";
import { describe, expect, it } from "vitest";
import { checkCatalog, createToolLoading, loadResult, proxiedCall } from "./index.js";
import { codeOf } from "./test-support/outcome.js";

const tool = (name: string): FunctionToolLike => ({
  type: "function",
  function: { name, parameters: { type: "object", properties: {} } },
});

/** A Proxy of `target` already revoked: every reading of it throws. */
function revoked<T extends object>(target: T): T {
  const { proxy, revoke } = Proxy.revocable(target, {});
  revoke();
  return proxy;
}

/** An object whose every way of being read as text throws. */
const unprintable = {
  name: 5,
  tools: [],
  toString(): never {
    throw new Error("toString");
  },
  [Symbol.toPrimitive](): never {
    throw new Error("toPrimitive");
  },
};
const cycle: Record<string, unknown> = { name: 5, tools: [] };
cycle.self = cycle;

const MEGABYTE = 1 << 20;

describe("r104c-5: a refused catalogue quotes what it holds by the echo rule", () => {
  it.each([
    [
      "a catalogue of one megabyte of text",
      "c".repeat(MEGABYTE),
      `invalid-catalog: here needs a catalogue (an array of { name, tools: [{ name }] } servers), and was given the string "${"c".repeat(60)}… (${MEGABYTE} characters)".`,
    ],
    [
      "an entry of text with a right-to-left override and a line separator",
      ["evil\u202etxt\u2028next"],
      'invalid-catalog: here: catalogue entry 0 must be { name: string, tools: [...] }, and is the string "evil\\u202etxt\\u2028next".',
    ],
    [
      "a server named with one megabyte, whose tool is no object",
      [{ name: "s".repeat(MEGABYTE), tools: [5] }],
      `invalid-catalog: here: tool 0 of server "${"s".repeat(60)}… (${MEGABYTE} characters)" must be { name: string }, and is the number 5.`,
    ],
    [
      "a server named with an isolate, whose tool's description is a number",
      [{ name: "fs\u2067", tools: [{ name: "read\u202e", description: 5 }] }],
      'invalid-catalog: here: the description of "read\\u202e" on server "fs\\u2067" must be a string, and is the number 5.',
    ],
    [
      "a tool named with NEL under a server named with a bidi mark",
      [{ name: "fs\u200f", tools: [{ name: "a\u0085b" }] }],
      'invalid-catalog: here: the name of tool 0 of server "fs\\u200f" holds a line break or control character ("a\\u0085b"), which would rewrite the system prompt it is listed in. Rename it.',
    ],
    [
      "a server named with half a surrogate pair and an override",
      [{ name: "a\ud800\u202e", tools: [] }],
      'invalid-catalog: here: the name of catalogue entry 0 holds half a surrogate pair alone ("a\\ud800\\u202e"), which no server reading UTF-8 takes in the system prompt it is listed in. Rename it.',
    ],
  ])("%s", (_, catalog, refusal) => {
    expect(codeOf(() => checkCatalog(catalog, "here"))).toBe(refusal);
  });

  it.each([
    ["whose toString and Symbol.toPrimitive throw", unprintable],
    ["that holds itself", cycle],
  ])("an entry %s is named by its kind, nothing of it read as text", (_, entry) => {
    expect(codeOf(() => checkCatalog([entry], "here"))).toBe(
      "invalid-catalog: here: catalogue entry 0 must be { name: string, tools: [...] }, and is an object.",
    );
  });
});

describe("r104c-6: a catalogue that cannot be read is refused naming what was being read", () => {
  const throwing = (field: string, rest: object = {}) =>
    Object.defineProperty({ ...rest }, field, {
      enumerable: true,
      get(): never {
        throw new Error(`the ${field} store is closed\u202e`);
      },
    });
  it.each([
    ["the catalogue a revoked Proxy", () => revoked([]), /^here: the catalogue could not be read \(Cannot/],
    ["an entry a revoked Proxy", () => [revoked({})], /^here: catalogue entry 0 could not be read \(Cannot/],
    [
      "an entry whose name getter throws",
      () => [throwing("name", { tools: [] })],
      /^here: catalogue entry 0 could not be read \(the name store is closed\\u202e\)/,
    ],
    [
      "an entry whose tools are a revoked Proxy",
      () => [{ name: "fs", tools: revoked([]) }],
      /^here: catalogue entry 0 could not be read \(Cannot/,
    ],
    [
      "a tool a revoked Proxy",
      () => [{ name: "fs\u202e", tools: [revoked({})] }],
      /^here: tool 0 of server "fs\\u202e" could not be read \(Cannot/,
    ],
    [
      "a tool whose description getter throws",
      () => [{ name: "fs", tools: [throwing("description", { name: "read" })] }],
      /^here: tool 0 of server "fs" could not be read \(the description store is closed\\u202e\)/,
    ],
  ])("%s is an invalid-catalog ToolLoadingError, its error the cause", (_, catalog, message) => {
    const given = catalog();
    let thrown: unknown;
    try {
      checkCatalog(given, "here");
    } catch (error) {
      thrown = error;
    }
    expect(codeOf(() => checkCatalog(given, "here"))).toMatch(/^invalid-catalog: /);
    expect((thrown as Error).message).toMatch(message);
    expect((thrown as Error).message).toMatch(
      /; give a catalogue of plain \{ name, tools: \[\{ name, description\? \}\] \} objects\.$/,
    );
    expect((thrown as Error).cause).toBeDefined();
  });

  it("a thrown value that is not even an Error is said to be unreadable", () => {
    const catalog = [
      Object.defineProperty({ tools: [] }, "name", {
        enumerable: true,
        get(): never {
          throw revoked({});
        },
      }),
    ];
    expect(codeOf(() => checkCatalog(catalog, "here"))).toBe(
      "invalid-catalog: here: catalogue entry 0 could not be read (a value that could not be read); give a catalogue of plain { name, tools: [{ name, description? }] } objects.",
    );
  });
});

describe("r104c-7: tool definitions that cannot be read are refused naming what was being read", () => {
  it.each([
    [
      "the definitions a revoked Proxy",
      () => revoked([]),
      /^createToolLoading: the tool definitions could not be read/,
    ],
    [
      "a definition a revoked Proxy",
      () => [tool("read"), revoked({})],
      /^createToolLoading: tool 1 could not be read/,
    ],
  ])("%s is an invalid-tools ToolLoadingError", (_, tools, message) => {
    const answer = codeOf(() =>
      createToolLoading({ mode: "ondemand", tools: tools() as never, catalog: [] }),
    );
    expect(answer).toMatch(/^invalid-tools: /);
    expect(answer.slice("invalid-tools: ".length)).toMatch(message);
  });

  it("a definitions list given as a megabyte of text is quoted cut, its length said", () => {
    expect(
      codeOf(() =>
        createToolLoading({ mode: "ondemand", tools: "\u202e".repeat(MEGABYTE) as never, catalog: [] }),
      ),
    ).toBe(
      `invalid-tools: createToolLoading needs the run's tool definitions as an array, and was given the string "${"\\u202e".repeat(60)}… (${MEGABYTE} characters)".`,
    );
  });
});

describe("r104c-8: a catalogued name quoted in a refusal next to it is quoted by the rule too", () => {
  it("call_tool's refusal of its arguments names the catalogued tool with its bidi mark escaped", () => {
    const catalog = [{ name: "fs", tools: [{ name: "read\u202e" }] }];
    expect(codeOf(() => proxiedCall({ name: "read\u202e", arguments: "[1]" }, catalog))).toBe(
      'invalid-arguments: call_tool for "read\\u202e": its arguments must be a JSON object, and the text given reads as an array.',
    );
  });

  it("call_tool's refusal names a catalogued tool of 1,000 characters cut, its length said", () => {
    const name = "r".repeat(1000);
    const catalog = [{ name: "fs", tools: [{ name }] }];
    expect(codeOf(() => proxiedCall({ name, arguments: 5 }, catalog))).toBe(
      `invalid-arguments: call_tool for "${"r".repeat(60)}… (1000 characters)": its arguments must be an object, and were given the number 5.`,
    );
  });

  it("a hand-built resolution holding a name with U+2028 is refused with it escaped", () => {
    expect(codeOf(() => loadResult({ names: ["a\u2028b"], unknown: [], overCap: [], cap: 5 }, []))).toMatch(
      /holds "a\\u2028b", a name with a line break or control character/,
    );
  });
});
