import type { CallToolResultSchema, ListToolsResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { sdk } from "./sdk.js";

/** The content part types MCP has (2025-11-25): what the SDK's schema of a tool result takes. */
const MCP_CONTENT_TYPES: ReadonlySet<string> = new Set([
  "text",
  "image",
  "audio",
  "resource_link",
  "resource",
]);

/** What stands for a part of a type MCP lacks while the rest of the result is checked. */
const STAND_IN = { type: "text", text: "" };

/**
 * The schema a tool call's answer is read with, in place of the SDK's own `CallToolResultSchema`
 * (`Client.callTool`'s result-schema parameter; the SDK reads a schema without zod 4's internals
 * by its `safeParse`). The SDK's schema refuses a result holding one content part of a type MCP
 * lacks (a `video` part, a type a newer protocol adds), and so the whole call failed. Here such a
 * part (an object whose `type` is a string MCP does not know) is checked as an empty text part
 * and put back as the server wrote it, for `toolOutput` to describe; every other part, and the rest
 * of the result, is checked by the SDK's schema as before (a text part without its text, a result
 * whose content is no list, still refuse the call). A `structuredContent` the schema took is put
 * back as the server wrote it too: the schema's copy of an object loses a key named `__proto__`.
 */
export function toolResultSchema(): typeof CallToolResultSchema {
  const strict = sdk().CallToolResultSchema;
  const lenient = {
    safeParse(data: unknown) {
      const given = isObject(data) ? data : undefined;
      const content = Array.isArray(given?.content) ? (given.content as unknown[]) : undefined;
      const unknown = new Map<number, unknown>();
      content?.forEach((part, at) => {
        if (isObject(part) && typeof part.type === "string" && !MCP_CONTENT_TYPES.has(part.type)) {
          unknown.set(at, part);
        }
      });
      const checked =
        unknown.size > 0 && given && content
          ? { ...given, content: content.map((part, at) => (unknown.has(at) ? STAND_IN : part)) }
          : data;
      const parsed = strict.safeParse(checked);
      if (!parsed.success) return parsed;
      const result = parsed.data;
      for (const [at, part] of unknown) (result.content as unknown[])[at] = part;
      if (isObject(given?.structuredContent) && isObject(result.structuredContent)) {
        result.structuredContent = given.structuredContent as Record<string, unknown>;
      }
      return parsed;
    },
  };
  return lenient as unknown as typeof CallToolResultSchema;
}

/**
 * The schema a page of a server's tools is read with, in place of the SDK's own
 * `ListToolsResultSchema`: that schema, with each tool's `inputSchema` and `outputSchema` then put
 * back as the server wrote them. The schema's copy of `properties` loses a property named
 * `__proto__` (zod writes each key into a plain object, where that key sets the prototype), so
 * such a tool was offered with the property's schema gone — "any JSON value", its description
 * lost — while `required` still named it. The rest of what the schema checks (a schema whose
 * `type` is not `"object"`, a property whose schema is not an object) still refuses the listing.
 */
export function toolListSchema(): typeof ListToolsResultSchema {
  const strict = sdk().ListToolsResultSchema;
  const lenient = {
    safeParse(data: unknown) {
      const parsed = strict.safeParse(data);
      if (!parsed.success) return parsed;
      const written = isObject(data) && Array.isArray(data.tools) ? (data.tools as unknown[]) : [];
      parsed.data.tools.forEach((tool, at) => {
        const raw = written[at];
        if (!isObject(raw)) return;
        if (isObject(raw.inputSchema)) tool.inputSchema = raw.inputSchema as typeof tool.inputSchema;
        if (isObject(raw.outputSchema) && tool.outputSchema !== undefined) {
          tool.outputSchema = raw.outputSchema as typeof tool.outputSchema;
        }
      });
      return parsed;
    },
  };
  return lenient as unknown as typeof ListToolsResultSchema;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
