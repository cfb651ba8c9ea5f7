/**
 * Review r62 of tool loading: a proxied preselection's id against the ids the transcript holds, a
 * changed definition sent again, an uncatalogued host tool refused whichever way it is called,
 * requested names capped and matched in time linear in their length, a renamed tool's host name
 * taken by call_tool and load_tools, and what counts as a redundant load.
 */
import type { FunctionToolLike } from "@loopwright/schema-compat";
import { describe, expect, it } from "vitest";
import type { MessageLike } from "./load-result.js";
import { createToolLoading } from "./tool-loading.js";

const tool = (name: string, description: string, properties: Record<string, unknown> = {}): FunctionToolLike => ({
  type: "function",
  function: { name, description, parameters: { type: "object", properties } },
});
const TOOLS = [
  tool("list_pods", "List pods", { namespace: { type: "string" } }),
  tool("read_file", "Read a file", { path: { type: "string" } }),
  tool("write_file", "Write a file", { path: { type: "string" }, text: { type: "string" } }),
  tool("delete_all", "Delete everything"),
];
const CATALOG = [
  { name: "kubernetes", tools: [{ name: "list_pods" }] },
  { name: "files", tools: [{ name: "read_file" }, { name: "write_file" }] },
];
const loadCall = (id: string, names: string[]): MessageLike => ({
  role: "assistant",
  content: "",
  tool_calls: [{ id, type: "function", function: { name: "load_tools", arguments: JSON.stringify({ names }) } }],
});

/** Every tool-call id an assistant message of `messages` holds, with repeats. */
const callIds = (messages: readonly MessageLike[]) =>
  messages.flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []).map((c) => c.id) : []));

describe("r62-1: a proxied preselection's id", () => {
  it("is one the transcript does not hold already", () => {
    const loading = createToolLoading({ mode: "proxy", tools: TOOLS, catalog: CATALOG });
    const first = loading.preselection(["list_pods"], [{ role: "user", content: "hi" }, loadCall("x", [])]);
    expect(first.messages).toHaveLength(2);
    // A transcript carried from an earlier run whose preselection landed at 4 as well.
    const four: MessageLike[] = [
      loadCall("call_preselected_4", ["list_pods"]),
      { role: "tool", tool_call_id: "call_preselected_4", content: "No tool was loaded." },
      { role: "assistant", content: "ok" },
      { role: "user", content: "now read" },
    ];
    const exchange = loading.preselection(["read_file"], four);
    const all = [...four, ...exchange.messages];
    const ids = callIds(all);
    expect(new Set(ids).size).toBe(ids.length);
    const [call, answer] = exchange.messages;
    expect(answer?.tool_call_id).toBe(call?.tool_calls?.[0]?.id);
    expect(answer?.tool_call_id).toMatch(/^call_preselected_/);
    // An answer's id alone (its call folded away) is not taken either.
    const orphan: MessageLike[] = [{ role: "tool", tool_call_id: "call_preselected_1", content: "x" }];
    const again = loading.preselection(["read_file"], orphan);
    expect(again.messages[1]?.tool_call_id).not.toBe("call_preselected_1");
  });
});
