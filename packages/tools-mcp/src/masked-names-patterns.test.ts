// The masked-name rename (r73a) walks a call's arguments along the tool's schema, and a
// `patternProperties` pattern is the server's while the keys are the model's: a pattern that can
// backtrack exponentially (`^(a+)+$`) tested against a key the model wrote (`aaaa…!`) held the
// event loop for minutes. Such a pattern, or a key past PATTERN_KEY_LIMIT, is never run: the key is
// read under that entry and under `additionalProperties` both.
import { describe, expect, it } from "vitest";
import { toServerNames } from "./redact.js";

const names = new Map([["***", "sk-live-token-1234"]]);
const masked = { type: "object", properties: { "***": { type: "string" } } };

describe("masked names under patternProperties", () => {
  it("a pattern that may backtrack is never run on the model's key, and the rename still follows the schema", () => {
    const schema = {
      type: "object",
      properties: {
        bag: { type: "object", patternProperties: { "^(a+)+$": masked }, additionalProperties: false },
      },
    };
    // 26 letters keep the old code's run to about a second (each one more doubles it: 34 took 95 s).
    const hostile = `${"a".repeat(26)}!`;
    const args = { bag: { [hostile]: { "***": "v" } } };
    expect(toServerNames(args, names, schema)).toEqual({
      bag: { [hostile]: { "sk-live-token-1234": "v" } },
    });
  });

  it("a safe pattern is still tested: a key it does not match is read under additionalProperties only", () => {
    const schema = {
      type: "object",
      properties: {
        bag: {
          type: "object",
          patternProperties: { "^x_": masked },
          additionalProperties: { type: "object" },
        },
      },
    };
    const args = { bag: { x_1: { "***": "v" }, y_1: { "***": "w" } } };
    expect(toServerNames(args, names, schema)).toEqual({
      bag: { x_1: { "sk-live-token-1234": "v" }, y_1: { "***": "w" } },
    });
  });
});
