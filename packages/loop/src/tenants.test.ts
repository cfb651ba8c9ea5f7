import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { EndpointConfigError } from "@loopwright/client";
import type { RunEvent } from "@loopwright/events";
import { StreamError } from "@loopwright/stream";
import { startServer, type TestServer } from "@loopwright/testkit";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { AgentLoopError } from "./errors.js";
import { createRuntime } from "./index.js";
import { ADD_TOOL, QUESTION } from "./test-support/transcript.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const KEY = "sk-tenant-7f3a9c2e1b";
const HEADER = "header-secret-4242";

/** Everything an error carries, as text: message, stack, and the same down its cause chain and body. */
function errorText(error: unknown): string {
  const parts: string[] = [];
  let at: unknown = error;
  for (let depth = 0; depth < 6 && typeof at === "object" && at !== null; depth++) {
    const e = at as Error & { error?: unknown; headers?: unknown };
    parts.push(String(e.message), String(e.stack));
    try {
      parts.push(JSON.stringify(e.error ?? null), JSON.stringify(e.headers ?? null));
    } catch {
      // circular: the message and stack were taken
    }
    at = e.cause;
  }
  return parts.join("\n");
}

describe("the endpoint's credentials never reach a notice or an error", () => {
  it("redacts a 500 echoing the key from the retry notice and the final error, even with the host's own client", async () => {
    const echo = {
      type: "error" as const,
      status: 500,
      body: { error: { message: `upstream rejected Authorization: Bearer ${KEY} (x-custom: ${HEADER})` } },
      headers: { "retry-after-ms": "1" },
    };
    server = await startServer({ replies: [echo, echo] });
    // Not a pooled client: nothing redacts at the wire, so the loop's own redaction is what is tested.
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: KEY, maxRetries: 0, logLevel: "off" });
    const events: RunEvent[] = [];
    const error = await createRuntime()
      .runAgentLoop({
        client,
        config: {
          baseUrl: server.baseUrl,
          apiKey: KEY,
          headers: { "x-custom": HEADER },
          model: "m",
          maxRetries: 1,
        },
        messages: QUESTION,
        dispatch: () => "",
        onEvent: (event) => events.push(event),
      })
      .catch((e: unknown) => e);
    expect(AgentLoopError.isInstance(error)).toBe(true);
    const notices = events.filter((e) => e.kind === "notice");
    expect(notices).toHaveLength(1);
    expect(JSON.stringify(notices)).toContain("retrying");
    expect(JSON.stringify(notices)).toContain("[redacted]");
    const everything = `${JSON.stringify(events)}\n${errorText(error)}`;
    expect(everything).not.toContain(KEY);
    expect(everything).not.toContain(HEADER);
  });

  it("refuses a base URL with credentials before sending anything, without quoting them", async () => {
    server = await startServer();
    const runtime = createRuntime();
    const url = new URL(server.baseUrl);
    url.username = "tenant";
    url.password = KEY;
    const error = await runtime
      .runAgentLoop({
        config: { baseUrl: url.toString(), model: "m", maxRetries: 3 },
        messages: QUESTION,
        dispatch: () => "",
      })
      .catch((e: unknown) => e);
    expect(EndpointConfigError.isInstance((error as Error).cause)).toBe(true);
    expect(errorText(error)).not.toContain(KEY);
    expect(server.requests).toHaveLength(0);
    expect(JSON.stringify(runtime.capabilities.exportCapabilities())).not.toContain(KEY);
  });
});

describe("a 200 reply that is not a stream", () => {
  it("fails the run naming the HTML page that came back, instead of completing with an empty answer", async () => {
    server = await startServer({
      replies: [
        {
          type: "raw",
          headers: { "content-type": "text/html" },
          chunks: ["<html><head><title>Proxy login</title></head><body>Log in first</body></html>"],
        },
      ],
    });
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "m", maxRetries: 2 },
        messages: QUESTION,
        dispatch: () => "",
      })
      .catch((e: unknown) => e);
    expect(AgentLoopError.isInstance(error)).toBe(true);
    const cause = (error as Error).cause;
    expect(StreamError.isInstance(cause) && cause.code).toBe("not-a-stream");
    expect((error as Error).message).toContain("Proxy login");
    // Not retried: the same page would come back.
    expect(server.chatRequests).toHaveLength(1);
  });
});

describe("one host signal shared by many runs", () => {
  it("prints no MaxListenersExceededWarning with 30 concurrent runs calling tools", async () => {
    server = await startServer({
      replies: (_request, index) =>
        index < 30 ? { toolCalls: [{ name: "add", arguments: '{"a":1,"b":2}' }] } : { content: "3" },
    });
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on("warning", onWarning);
    try {
      const host = new AbortController();
      // Counts the listeners ever added to the host's signal: one per stretch in which runs share it.
      let added = 0;
      const add = host.signal.addEventListener.bind(host.signal);
      host.signal.addEventListener = ((...args: Parameters<AbortSignal["addEventListener"]>) => {
        added++;
        add(...args);
      }) as AbortSignal["addEventListener"];
      const runtime = createRuntime();
      let release: () => void = () => {};
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      let waiting = 0;
      const runs = Array.from({ length: 30 }, () =>
        runtime.runAgentLoop({
          config: { baseUrl: server!.baseUrl, model: "m" },
          messages: QUESTION,
          tools: [ADD_TOOL],
          signal: host.signal,
          // Every run holds its tool call open until all 30 are in flight at once.
          dispatch: async () => {
            if (++waiting === 30) release();
            await gate;
            return "3";
          },
        }),
      );
      const results = await Promise.all(runs);
      expect(results.every((r) => r.turn.content === "3")).toBe(true);
      await new Promise((r) => setTimeout(r, 20));
      expect(warnings.filter((w) => w.name === "MaxListenersExceededWarning")).toEqual([]);
      expect(added).toBeLessThanOrEqual(2);
    } finally {
      process.off("warning", onWarning);
    }
  });
});

describe("runtimes of many tenants", () => {
  it("forget drops one tenant's clients and latches and keeps another's", async () => {
    server = await startServer({ replies: [{ content: "a" }, { content: "b" }] });
    const runtime = createRuntime();
    const mine = { baseUrl: server.baseUrl, apiKey: "sk-mine-123456", model: "m" };
    const theirs = { baseUrl: server.baseUrl, apiKey: "sk-theirs-123456", model: "m" };
    await runtime.runAgentLoop({ config: mine, messages: QUESTION, dispatch: () => "" });
    await runtime.runAgentLoop({ config: theirs, messages: QUESTION, dispatch: () => "" });
    expect(runtime.clients.size).toBe(2);
    expect(runtime.capabilities.size).toBe(2);
    runtime.forget(mine);
    expect(runtime.clients.size).toBe(1);
    expect(runtime.capabilities.size).toBe(1);
  });

  it("bounds each cache as createRuntime's options say", async () => {
    server = await startServer({ replies: () => ({ content: "ok" }) });
    const runtime = createRuntime({ clients: { maxClients: 2 }, capabilities: { maxEndpoints: 3 } });
    for (let n = 0; n < 6; n++) {
      await runtime.runAgentLoop({
        config: { baseUrl: server.baseUrl, apiKey: `sk-tenant-${n}`, model: "m" },
        messages: QUESTION,
        dispatch: () => "",
      });
    }
    expect(runtime.clients.size).toBe(2);
    expect(runtime.capabilities.size).toBe(3);
  });

  it("a dropped runtime is collected with its bus, and close() leaves nothing behind", async () => {
    server = await startServer({ replies: () => ({ content: "ok" }) });
    const baseUrl = server.baseUrl;
    const ref = await (async () => {
      const runtime = createRuntime();
      await runtime.runAgentLoop({
        config: { baseUrl, model: "m" },
        messages: QUESTION,
        dispatch: () => "",
        onEvent: (event) => runtime.bus.emit("run-1", event),
      });
      expect(runtime.bus.history("run-1").length).toBeGreaterThan(0);
      return new WeakRef(runtime.bus);
    })();
    for (let round = 0; round < 10 && ref.deref(); round++) {
      await new Promise((r) => setTimeout(r, 0));
      gc();
    }
    expect(ref.deref()).toBeUndefined();

    const closing = createRuntime();
    closing.bus.emit("run-2", { kind: "notice", text: "x" });
    closing.close();
    expect(closing.bus.history("run-2")).toEqual([]);
    expect(closing.clients.size).toBe(0);
  });
});
