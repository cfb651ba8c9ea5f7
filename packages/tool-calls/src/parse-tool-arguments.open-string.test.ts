import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ToolArgumentsError } from "./errors.js";
import { parseToolArguments } from "./parse-tool-arguments.js";

describe("parseToolArguments never invents the end of a string", () => {
  it("reports arguments cut inside a string value as truncated, whatever the finish reason", () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }),
        fc.nat(),
        fc.constantFrom("tool_calls", "stop", "", undefined),
        (value, at, finishReason) => {
          const encoded = JSON.stringify(value);
          // A cut after the opening quote and before the closing one, never inside an escape.
          let cut = 1 + (at % (encoded.length - 1));
          while (encoded[cut - 1] === "\\" && cut < encoded.length - 1) cut++;
          const inside = encoded.slice(0, cut);
          fc.pre(!/\\u[0-9a-fA-F]{0,3}$/.test(inside) && !inside.endsWith("\\"));
          const raw = `{"cmd": ${inside}`;
          let error: unknown;
          try {
            parseToolArguments(raw, { finishReason, name: "shell" });
          } catch (caught) {
            error = caught;
          }
          expect(ToolArgumentsError.isInstance(error)).toBe(true);
          expect((error as ToolArgumentsError).kind).toBe("truncated");
        },
      ),
    );
  });

  it("still closes brackets after a complete value when the turn finished", () => {
    expect(parseToolArguments('{"cmd": "ls /tmp"', { finishReason: "tool_calls" }).value).toEqual({
      cmd: "ls /tmp",
    });
  });
});
