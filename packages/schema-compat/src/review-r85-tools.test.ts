// Review r85 (the lead's sweep): sanitizeTools/relaxTools read a tool's record through a polluted
// Object.prototype: an inherited `other` made every function tool that value (the loop then sent
// `tools: ["P0LLUTED"]` and buildBody refused every run), an inherited `description` went onto
// every tool that has none. Fails before the fix.
import { withPollutedPrototype } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { relaxTools, sanitizeTools } from "./index.js";

const TOOLS = [
  { type: "function", function: { name: "clock", parameters: { type: "object", properties: {} } } },
  {
    type: "function",
    function: {
      name: "read.file",
      description: "Read a file.",
      parameters: { type: "object", properties: {} },
    },
  },
];

function polluted<T>(name: string, value: unknown, body: () => T): T {
  return withPollutedPrototype({ [name]: value }, body);
}

describe("R85T-1: a tool is read by the fields it holds", () => {
  it("sanitizeTools and relaxTools answer the same with other, description or parameters on Object.prototype", () => {
    const renames: string[] = [];
    const clean = {
      strict: sanitizeTools(TOOLS, { onRename: (from: string, to: string) => renames.push(`${from}>${to}`) }),
      relaxed: relaxTools(TOOLS),
    };
    expect(renames).toEqual(["read.file>read_file"]);
    for (const [name, value] of [
      ["other", "P0LLUTED"],
      ["description", "P0LLUTED"],
      ["parameters", { type: "string" }],
      ["onRename", () => renames.push("inherited")],
    ] as const) {
      const read = polluted(name, value, () => ({
        strict: sanitizeTools(TOOLS),
        relaxed: relaxTools(TOOLS),
      }));
      expect({ name, read: JSON.parse(JSON.stringify(read)) }).toEqual({
        name,
        read: JSON.parse(JSON.stringify(clean)),
      });
    }
    expect(renames).toEqual(["read.file>read_file"]);
  });
});
