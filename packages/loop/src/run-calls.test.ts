import { describe, expect, it } from "vitest";
import type { AssistantToolCall } from "./config.js";
import { NOT_RUN, runCalls } from "./run-calls.js";

const call = (id: string, name: string, args: string): AssistantToolCall => ({
  id,
  type: "function",
  function: { name, arguments: args },
});

describe("runCalls", () => {
  it("dispatches an identical call once per step and hands its answer to the repeat under its own id", async () => {
    let runs = 0;
    const ran = await runCalls([call("a", "read", '{"path": "x"}'), call("b", "read", "{'path': 'x'}")], {
      dispatch: () => {
        runs++;
        return { text: "contents" };
      },
    });
    expect(runs).toBe(1);
    expect(ran.results).toEqual([
      { role: "tool", tool_call_id: "a", content: '{"text":"contents"}' },
      { role: "tool", tool_call_id: "b", content: '{"text":"contents"}' },
    ]);
    expect(ran.calls.map((c) => c.function.arguments)).toEqual(['{"path":"x"}', '{"path":"x"}']);
  });

  it("takes two calls that reach the tool with the same arguments as one, a dropped optional null or not", async () => {
    const read = {
      type: "function" as const,
      function: {
        name: "read",
        parameters: {
          type: "object",
          properties: { path: { type: "string" }, zone: { type: "string" } },
          required: ["path"],
        },
      },
    };
    const handed: unknown[] = [];
    const ran = await runCalls(
      [call("a", "read", '{"path":"x","zone":null}'), call("b", "read", '{"path":"x"}')],
      {
        tools: [read],
        dispatch: ({ args }) => {
          handed.push(args);
          return "contents";
        },
      },
    );
    expect(handed).toEqual([{ path: "x" }]);
    expect(ran.outcomes.map((o) => o.source)).toEqual(["dispatched", "repeat"]);
  });

  it("forgets a call that threw, so asking again is a real retry, and tells the model the error", async () => {
    let runs = 0;
    const ran = await runCalls([call("a", "flaky", "{}"), call("b", "flaky", "{}")], {
      dispatch: () => {
        runs++;
        if (runs === 1) throw new Error("disk busy");
        return "ok";
      },
    });
    expect(runs).toBe(2);
    expect(ran.outcomes).toEqual([
      {
        id: "a",
        name: "flaky",
        ok: false,
        source: "dispatched",
        content: "Error: disk busy",
        ms: expect.any(Number),
      },
      { id: "b", name: "flaky", ok: true, source: "dispatched", content: "ok", ms: expect.any(Number) },
    ]);
  });

  it("reports arguments cut off at the ceiling as truncated, without dispatching", async () => {
    let runs = 0;
    const ran = await runCalls([call("a", "write", '{"path": "a.txt", "text": "once upon a ti')], {
      finishReason: "length",
      dispatch: () => {
        runs++;
      },
    });
    expect(runs).toBe(0);
    expect(ran.outcomes[0]?.ok).toBe(false);
    expect(ran.outcomes[0]?.content).toMatch(/cut off|truncat|ceiling|token limit/i);
    expect(ran.calls[0]?.function.arguments).toBe("{}");
  });

  it("answers every call when the signal is already aborted, dispatching none", async () => {
    const controller = new AbortController();
    controller.abort(new Error("stop"));
    let runs = 0;
    const told: string[] = [];
    const ran = await runCalls([call("a", "x", "{}"), call("b", "y", "{}")], {
      signal: controller.signal,
      dispatch: () => {
        runs++;
      },
      onToolResult: (r) => told.push(r.id),
    });
    expect(runs).toBe(0);
    expect(ran.results.map((r) => r.content)).toEqual([NOT_RUN, NOT_RUN]);
    expect(told).toEqual(["a", "b"]);
    expect(ran.stopped).toBeInstanceOf(Error);
  });

  it("never hands a host's route a number JS cannot hold: the call's own schema refuses it, and a route's answer for a readable call stands", async () => {
    const order = {
      type: "function" as const,
      function: {
        name: "get_order",
        parameters: { type: "object", properties: { lines: { type: "integer" } }, required: ["lines"] },
      },
    };
    const asked: unknown[] = [];
    let dispatched = 0;
    const ran = await runCalls(
      [call("a", "get_order", '{"lines": 12345678901234567891}'), call("b", "get_order", '{"lines": 3}')],
      {
        tools: [order],
        dispatch: () => {
          dispatched++;
          return "ran";
        },
        route: (request) => {
          asked.push(request.args);
          return { answer: { ok: true, content: "answered by the host" } };
        },
      },
    );
    // The route is asked only of the call it can be handed as plain JSON.
    expect(asked).toEqual([{ lines: 3 }]);
    expect(dispatched).toBe(0);
    expect(ran.outcomes[0]).toMatchObject({ ok: false, source: "refused" });
    expect(ran.results[0]?.content).toContain("12345678901234567891");
    expect(ran.results[1]).toEqual({ role: "tool", tool_call_id: "b", content: "answered by the host" });
    expect(ran.calls.map((c) => c.function.arguments)).toEqual(["{}", '{"lines":3}']);
  });
});

describe("an Error's own fields inside a returned result", () => {
  /** What the model reads of one call whose tool returned `result`. */
  async function read(result: unknown): Promise<unknown> {
    const ran = await runCalls([call("c1", "fetch", "{}")], { dispatch: async () => result });
    return JSON.parse(String(ran.results[0]?.content));
  }

  it("redacts a field named like a credential at the error's own top level, as one level down", async () => {
    const error = Object.assign(new Error("denied"), {
      authorization: "Bearer wx-SECRET-0123456789",
      apiKey: "sk-live-ABCDEF0123456789",
      meta: { token: "tok-0123456789abcdef", region: "eu" },
      code: "E_DENIED",
    });
    expect(await read({ ok: false, error })).toEqual({
      ok: false,
      error: {
        name: "Error",
        message: "denied",
        authorization: "[redacted]",
        apiKey: "[redacted]",
        meta: { token: "[redacted]", region: "eu" },
        code: "E_DENIED",
      },
    });
  });

  it("leaves out only what cannot be read (a throwing getter, a Proxy), never the whole result", async () => {
    const getter = new Error("boom");
    Object.defineProperty(getter, "detail", {
      enumerable: true,
      get() {
        throw new Error("getter exploded");
      },
    });
    const proxied = Object.assign(new Error("boom"), {
      info: new Proxy(
        {},
        {
          getPrototypeOf() {
            throw new Error("proxy trap");
          },
        },
      ),
      kept: 1,
    });
    const whole = new Proxy(new Error("boom"), {
      ownKeys() {
        throw new Error("ownKeys trap");
      },
    });
    expect(await read([{ status: "fulfilled", value: 2 }, getter, proxied, whole])).toEqual([
      { status: "fulfilled", value: 2 },
      "Error: boom",
      { name: "Error", message: "boom", kept: 1 },
      "Error: boom",
    ]);
  });

  it("writes a Date as its ISO time, keeps a list's readable items, and cuts a long list with a count", async () => {
    const error = Object.assign(new Error("validation"), {
      when: new Date(0),
      issues: [{ path: ["a"], message: "bad" }, () => "not data", { path: ["b"], message: "worse" }],
    });
    expect(await read({ error })).toEqual({
      error: {
        name: "Error",
        message: "validation",
        when: "1970-01-01T00:00:00.000Z",
        issues: [
          { path: ["a"], message: "bad" },
          { path: ["b"], message: "worse" },
        ],
      },
    });
    const many = Object.assign(new Error("validation"), {
      issues: Array.from({ length: 600 }, (_, i) => ({ path: [`f${i}`], message: "bad" })),
    });
    const issues = ((await read({ error: many })) as { error: { issues: unknown[] } }).error.issues;
    expect(issues[0]).toEqual({ path: ["f0"], message: "bad" });
    expect(issues.at(-1)).toMatch(/^… \d+ more$/);
    const shown = issues.length - 1;
    expect(Number(String(issues.at(-1)).match(/\d+/)?.[0]) + shown).toBe(600);
  });
});
