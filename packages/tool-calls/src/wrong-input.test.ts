import { describe, expect, it } from "vitest";
import { ToolCallsError } from "./errors.js";
import { parseToolArguments } from "./parse-tool-arguments.js";
import { recoverToolCalls } from "./recover-tool-calls.js";

/** The code of the ToolCallsError `fn` throws, or what else happened. */
function codeOf(fn: () => unknown): string {
  try {
    fn();
    return "no throw";
  } catch (error) {
    return ToolCallsError.isInstance(error) ? error.code : `a raw ${String(error)}`;
  }
}

const reply = '<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>';
const revoked = Proxy.revocable({}, {});
revoked.revoke();
const throwing = (field: string) =>
  Object.defineProperty({}, field, {
    enumerable: true,
    get() {
      throw new Error(`${field} getter`);
    },
  });

describe("input that cannot be read is a typed error, never a throw from inside", () => {
  it("recoverToolCalls names a tool entry it cannot read (throwing getter, revoked Proxy) as invalid-tools", () => {
    for (const tools of [
      [throwing("name")],
      [revoked.proxy],
      [{ type: "function", ...{} }, throwing("function")],
    ]) {
      expect(codeOf(() => recoverToolCalls(reply, tools as never))).toBe("invalid-tools");
    }
    const lengthThrows = new Proxy(["add"], {
      get(target, key) {
        if (key === "length") throw new Error("length getter");
        return Reflect.get(target, key);
      },
    });
    expect(codeOf(() => recoverToolCalls(reply, lengthThrows))).toBe("invalid-tools");
  });

  it("both readers refuse options they cannot read, or whose fields have the wrong type, as invalid-options", () => {
    for (const options of [throwing("finishReason"), revoked.proxy, { finishReason: 5 }]) {
      expect(codeOf(() => parseToolArguments('{"a": 1', options as never))).toBe("invalid-options");
      expect(codeOf(() => recoverToolCalls(reply, ["add"], options as never))).toBe("invalid-options");
    }
    expect(codeOf(() => parseToolArguments("{", { name: { toString: () => "x" } } as never))).toBe(
      "invalid-options",
    );
    // What is allowed still reads.
    expect(parseToolArguments('{"a": 1}', { finishReason: null, name: "add" }).json).toBe('{"a":1}');
    expect(recoverToolCalls(reply, ["add"], { finishReason: null }).calls).toHaveLength(1);
  });
});
