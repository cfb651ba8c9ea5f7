/**
 * r84 review of tool-loading's reading of a host's objects through a polluted `Object.prototype`: a
 * field counts where the object or a prototype of its own holds it, never where only
 * `Object.prototype` does. Before, `Object.prototype.loadCap = 1` let every load take one tool,
 * `Object.prototype.system` put its text on every request, `Object.prototype.routing` refused every
 * step, `Object.prototype.parse` read every `call_tool`'s text arguments, and
 * `Object.prototype.cap` told the model a load takes one tool.
 */
import { describe, expect, it } from "vitest";
import { catalogText } from "./catalog.js";
import { proxiedCall } from "./proxied-call.js";
import { createToolLoading } from "./tool-loading.js";

const proto = Object.prototype as Record<string, unknown>;

/** `run()` with `Object.prototype[field]` set to `value`, deleted again whatever happens. */
function polluted<T>(field: string, value: unknown, run: () => T): T {
  proto[field] = value;
  try {
    return run();
  } finally {
    delete proto[field];
  }
}

const tools = [
  {
    type: "function" as const,
    function: {
      name: "read_file",
      description: "Read a file",
      parameters: { type: "object", properties: { path: { type: "string" } } },
    },
  },
  {
    type: "function" as const,
    function: { name: "write_file", description: "Write a file", parameters: {} },
  },
];
const catalog = [
  { name: "fs", tools: [{ name: "read_file", description: "Read a file" }, { name: "write_file" }] },
];

describe("r84: a polluted Object.prototype is not read as a host's settings", () => {
  it("createToolLoading's options: a loadCap, carryCap or order only Object.prototype holds is not taken", () => {
    const text = createToolLoading({ mode: "ondemand", tools }).catalogText;
    for (const [field, value] of [
      ["loadCap", 1],
      ["carryCap", 0],
      ["order", "bogus"],
      ["descriptions", true],
      ["catalog", [{ name: "evil", tools: [{ name: "evil" }] }]],
    ] as const) {
      expect(
        polluted(field, value, () => createToolLoading({ mode: "ondemand", tools }).catalogText),
        field,
      ).toBe(text);
    }
  });

  it("a step's input and a call's state: a system, routing or preselection only Object.prototype holds is not read", () => {
    const loading = createToolLoading({ mode: "ondemand", tools });
    const plain = loading.request({ step: 0, loaded: [] });
    const state = { loaded: [] as string[], messages: [] };
    const call = { id: "1", name: "load_tools", args: { names: ["read_file"] } };
    const routed = loading.route(call, state);
    for (const [field, value] of [
      ["system", "EVIL SYSTEM"],
      ["routing", "shortlist"],
      ["preselected", ["write_file"]],
    ] as const) {
      expect(
        polluted(field, value, () => loading.request({ step: 0, loaded: [] })),
        field,
      ).toEqual(plain);
      expect(
        polluted(field, value, () => loading.route(call, state)),
        field,
      ).toEqual(routed);
    }
  });

  it("proxiedCall's options: a parse only Object.prototype holds does not read the arguments", () => {
    const args = { name: "read_file", arguments: '{"path":"a"}' };
    const plain = proxiedCall(args, catalog, { tools });
    expect(
      polluted(
        "parse",
        () => ({ path: "evil" }),
        () => proxiedCall(args, catalog, { tools }),
      ),
    ).toEqual(plain);
  });

  it("catalogText's options: a mode, cap or descriptions only Object.prototype holds is not taken", () => {
    const plain = catalogText(catalog);
    for (const [field, value] of [
      ["mode", "proxy"],
      ["cap", 1],
      ["descriptions", true],
    ] as const) {
      expect(
        polluted(field, value, () => catalogText(catalog)),
        field,
      ).toBe(plain);
    }
  });
});
