/**
 * r76 review of side-task: `taskCall` read only the six keys a spec's `tasks.<key>` has and ignored
 * any other without a word, so `tasks.compaction: { endpoint, model, timeoutMs: 300 }` (a host's own
 * object: `parseSpec` drops such a key with a warning) waited the side task's default bound. It now
 * refuses the key by name, with the spelling that does what was meant; the spelling it names bounds
 * the wait (over HTTP against the testkit).
 */
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { bodies, isolated } from "../test/wire.js";
import { ask } from "./ask.js";
import { SideTaskError } from "./errors.js";
import { type TaskSettings, taskCall } from "./task-call.js";

let server: TestServer | undefined;
afterEach(() => server?.close());

const outcome = (run: () => unknown) => {
  try {
    run();
    return "no error";
  } catch (error) {
    return SideTaskError.isInstance(error) ? `${error.code}: ${error.message}` : `bare ${String(error)}`;
  }
};

describe("r76: taskCall given a key a task does not have", () => {
  it("refuses timeoutMs by name, pointing at endpoint.requestTimeoutSeconds, before anything is sent", async () => {
    server = await startServer({ replies: [{ content: "late", firstByteDelayMs: 3000 }] });
    const task = { endpoint: { baseUrl: server.baseUrl }, model: "m", timeoutMs: 300 } as TaskSettings;
    const said = outcome(() => taskCall(task));
    expect(said).toMatch(/^invalid-input: taskCall: the task has a key it does not take: timeoutMs/);
    expect(said).toContain("endpoint.requestTimeoutSeconds");
    expect(bodies(server)).toHaveLength(0);
  });

  it("the spelling it names bounds the wait", async () => {
    // No clock: the answer comes after 30 s, so a wait the 0.3 s did not bound would end at vitest's
    // test timeout (or with the answer, not a timeout).
    server = await startServer({ replies: [{ content: "late", firstByteDelayMs: 30_000 }] });
    const call = taskCall({ endpoint: { baseUrl: server.baseUrl, requestTimeoutSeconds: 0.3 }, model: "m" });
    const error = await ask(call.endpoint, call.model, "", "x", { ...isolated(), ...call.options }).catch(
      (e: unknown) => e,
    );
    expect(SideTaskError.isInstance(error) && error.code).toBe("timeout");
  });

  it.each([
    ["baseUrl", { baseUrl: "http://127.0.0.1:9/v1" }, "endpoint.baseUrl"],
    ["max_tokens", { max_tokens: 64 }, "maxTokens"],
    ["reasoning_effort", { reasoning_effort: "low" }, "reasoningEffort"],
    ["extra_body", { extra_body: { top_k: 5 } }, "extraBody"],
    ["signal", { signal: new AbortController().signal }, "options.signal"],
  ])("refuses %s, naming the right spelling", (key, extra, spelling) => {
    const said = outcome(() =>
      taskCall({ model: "m", ...extra } as TaskSettings, {}, { baseUrl: "http://127.0.0.1:9/v1" }),
    );
    expect(said).toContain(`it does not take: ${key}`);
    expect(said).toContain(spelling);
  });

  it("names a key with no near spelling, and every unknown key, without echoing control characters", () => {
    const said = outcome(() =>
      taskCall(
        { model: "m", colour: "red", "bad\nkey": 1 } as TaskSettings,
        {},
        { baseUrl: "http://127.0.0.1:9/v1" },
      ),
    );
    expect(said).toMatch(/^invalid-input: .*colour/);
    expect(said).toContain('"bad\\nkey"');
    expect(said).not.toContain("bad\nkey");
  });

  it("still takes everything a resolved spec's task holds, and a host's undefined or null fields", () => {
    const resolved = {
      model: "m",
      endpoint: {
        baseUrl: "http://127.0.0.1:9/v1",
        apiKey: "",
        requestTimeoutSeconds: 5,
        firstTokenSeconds: 2,
      },
      maxTokens: 64,
      temperature: 0.2,
      reasoningEffort: "low",
      extraBody: { top_k: 5 },
    };
    const call = taskCall(resolved);
    expect(call.model).toBe("m");
    expect(call.endpoint.requestTimeoutSeconds).toBe(5);
    expect(call.options).toEqual({
      maxTokens: 64,
      temperature: 0.2,
      reasoningEffort: "low",
      extraBody: { top_k: 5 },
    });
    expect(
      outcome(() =>
        taskCall(
          { model: null, endpoint: null, maxTokens: undefined },
          {},
          { baseUrl: "http://127.0.0.1:9/v1" },
        ),
      ),
    ).toBe("no error");
  });
});
