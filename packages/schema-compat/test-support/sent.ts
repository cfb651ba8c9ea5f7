import { expect } from "vitest";
import { checkStrictSchema } from "../src/check-strict.js";
import { sanitizeTools } from "../src/sanitize-tools.js";

export type Raw = Record<string, unknown>;

/**
 * A tool whose one parameter `v` has this schema, through sanitizeTools: the parameter sent (checked
 * to be strict), and the notices the host was told.
 */
export function sent(v: unknown): { v: Raw; notices: string[] } {
  const notices: string[] = [];
  const [tool] = sanitizeTools(
    [
      {
        type: "function",
        function: { name: "pick", parameters: { type: "object", properties: { v }, required: ["v"] } },
      },
    ],
    { onNotice: (notice) => notices.push(notice) },
  );
  const parameters = (tool as { function: { parameters: Raw } }).function.parameters;
  expect(checkStrictSchema(parameters)).toEqual([]);
  return { v: (parameters.properties as Raw).v as Raw, notices };
}
