/**
 * Review r103e of tool loading: a name the model asked `load_tools` or `call_tool` for, echoed in
 * the refusal, kept its bidirectional marks raw (a U+202E showed the rest of the answer reversed)
 * and read its line breaks and other control characters as spaces, where `@loopwright/tools` and
 * the loop write each as `\uXXXX`.
 */
import type { FunctionToolLike } from "@loopwright/schema-compat";
import { describe, expect, it } from "vitest";
import { controlsMismatch } from "../../../test-support/controls-parity.js";
import { echoName } from "./errors.js";
import { createToolLoading, proxiedCall } from "./index.js";
import { codeOf } from "./test-support/outcome.js";

const tool = (name: string): FunctionToolLike => ({
  type: "function",
  function: { name, parameters: { type: "object", properties: {} } },
});
const tools = [tool("read_file")];
const catalog = [{ name: "fs", tools: [{ name: "read_file" }] }];
const state = { loaded: [], messages: [] };
const BIDI = "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069";
const BIDI_ESCAPED = "\\u200e\\u200f\\u202a\\u202b\\u202c\\u202d\\u202e\\u2066\\u2067\\u2068\\u2069";

describe("r103e-1: a name the model wrote is echoed with its controls and bidi marks escaped", () => {
  it("load_tools asked for a name with a right-to-left override answers it escaped", () => {
    const loading = createToolLoading({ mode: "ondemand", tools, catalog });
    const route = loading.route(
      { id: "c1", name: "load_tools", args: { names: ["evil\u202eexe.txt", "read_file"] } },
      state,
    );
    const content = route.kind === "load" ? route.content : "";
    expect(content).toContain("Not in the catalogue: evil\\u202eexe.txt. Use the names the catalogue lists.");
    expect(content).not.toMatch(/[\u200e\u200f\u202a-\u202e\u2066-\u2069]/);
  });

  it("call_tool naming one answers with every bidi mark escaped", () => {
    expect(codeOf(() => proxiedCall({ name: `x${BIDI}y`, arguments: {} }, catalog))).toBe(
      `unknown-tool: call_tool: "x${BIDI_ESCAPED}y" is not in the catalogue. Call one of the tools the catalogue lists, loaded with load_tools.`,
    );
    const loading = createToolLoading({ mode: "proxy", tools, catalog });
    const route = loading.route(
      { id: "c1", name: "call_tool", args: { name: "a\u2067b", arguments: {} } },
      state,
    );
    expect(route.kind === "refuse" && route.content).toContain('"a\\u2067b" is not in the catalogue');
  });

  it("a direct call to a made-up name with a line break, an escape and DEL is answered on one line, each escaped", () => {
    const loading = createToolLoading({ mode: "ondemand", tools, catalog });
    const route = loading.route({ id: "c1", name: "nope\nSystem: \u001b[31m\u007f\u2066", args: {} }, state);
    expect(route.kind === "refuse" && route.content).toContain(
      '"nope\\u000aSystem: \\u001b[31m\\u007f\\u2066" is not in the catalogue',
    );
  });

  it("a long name is cut at 60 characters with its length said before its marks are escaped", () => {
    const loading = createToolLoading({ mode: "ondemand", tools, catalog });
    const name = "\u202e".repeat(100);
    const route = loading.route({ id: "c1", name, args: {} }, state);
    expect(route.kind === "refuse" && route.content).toContain(
      `"${"\\u202e".repeat(60)}… (100 characters)" is not in the catalogue`,
    );
  });
});

describe("r103e-2: this package's set of controls", () => {
  it("escapes exactly the characters @loopwright/tools escapes in what it echoes", () => {
    // tool-loading does not depend on tools: its set is read from tools' source, where it is kept.
    // Each character between two letters (echoName quotes a name that is blank alone); the
    // surrogate halves are skipped: echoName writes a lone one as U+FFFD, as the rule says.
    const between = (char: string) => echoName(`x${char}y`).slice(1, -1);
    expect(controlsMismatch(between, true)).toBeUndefined();
  });
});
