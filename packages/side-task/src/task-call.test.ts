/**
 * taskCall: a spec's task settings turned into the call that honours each of them, checked on the
 * wire — model, endpoint and key, ceiling, temperature, effort, extraBody — and the defaults that
 * hold where the task states nothing.
 */
import { NO_KEY } from "@loopwright/client";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { bodies, isolated } from "../test/wire.js";
import { ask } from "./ask.js";
import { SideTaskError } from "./errors.js";
import { type TaskCallOptions, type TaskSettings, taskCall } from "./task-call.js";

let servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

async function serve(...contents: string[]): Promise<TestServer> {
  const server = await startServer({ replies: contents.map((content) => ({ content })) });
  servers.push(server);
  return server;
}

const authorization = (server: TestServer, i = 0) => server.chatRequests[i]?.headers.authorization;

describe("taskCall", () => {
  it("sends the task's model, ceiling, temperature, effort and extraBody, none of them the agent's", async () => {
    const main = await serve("Lisbon");
    const agent = {
      baseUrl: main.baseUrl,
      apiKey: "sk-agent",
      model: "big",
      temperature: 1,
      maxTokens: 8000,
    };
    const task = {
      model: "small",
      maxTokens: 64,
      temperature: 0.1,
      reasoningEffort: "low" as const,
      extraBody: { top_k: 20 },
    };
    const call = taskCall(task, isolated(), agent);
    await ask(call.endpoint, call.model, "Name this chat.", "Lisbon trip", call.options);
    const [body] = bodies(main);
    expect(body).toMatchObject({
      model: "small",
      max_tokens: 64,
      temperature: 0.1,
      reasoning_effort: "low",
      top_k: 20,
    });
    // A level replaces the no-thinking hints.
    expect(body).not.toHaveProperty("chat_template_kwargs");
  });

  it("keeps the side task's own defaults for what the task leaves out", async () => {
    const main = await serve("Lisbon");
    const agent = { baseUrl: main.baseUrl, temperature: 1.0, maxTokens: 8000, reasoningEffort: "high" };
    const call = taskCall({}, { ...isolated(), model: "titler" }, agent);
    await ask(call.endpoint, call.model, "Name this chat.", "Lisbon trip", call.options);
    expect(bodies(main)[0]).toMatchObject({
      model: "titler",
      max_tokens: 512,
      temperature: 0.3,
      chat_template_kwargs: { enable_thinking: false },
    });
    expect(bodies(main)[0]).not.toHaveProperty("reasoning_effort");
  });

  it("lets what the task states win over the host's options, and lays extraBody key by key", () => {
    const call = taskCall(
      { temperature: 0.7, extraBody: { top_k: 5 } },
      { temperature: 0.2, maxTokens: 100, extraBody: { top_k: 40, min_p: 0.05 }, model: "host-default" },
      { baseUrl: "http://127.0.0.1:9/v1" },
    );
    expect(call.model).toBe("host-default");
    expect(call.options).toMatchObject({
      temperature: 0.7,
      maxTokens: 100,
      extraBody: { top_k: 5, min_p: 0.05 },
    });
  });

  it("reads a task's null as absent: the host's option, else the side task's own default, no-thinking hints included", async () => {
    const main = await serve("Lisbon");
    // A task row read back from a database: its unset columns come back null.
    const task = { model: "small", maxTokens: null, temperature: null, reasoningEffort: null } as never;
    const call = taskCall(task, { ...isolated(), maxTokens: 100 }, { baseUrl: main.baseUrl });
    expect(call.options).not.toHaveProperty("temperature");
    expect(call.options).not.toHaveProperty("reasoningEffort");
    await ask(call.endpoint, call.model, "Name this chat.", "Lisbon trip", call.options);
    const [body] = bodies(main);
    expect(body).toMatchObject({
      max_tokens: 100,
      temperature: 0.3,
      chat_template_kwargs: { enable_thinking: false },
    });
    expect(body).not.toHaveProperty("reasoning_effort");
  });

  it("reads a task's null model, endpoint and extraBody as absent, and a host's null options too", async () => {
    const main = await serve("Lisbon");
    const task: TaskSettings = { model: null, endpoint: null, extraBody: null, maxTokens: null };
    const host: TaskCallOptions = {
      ...isolated(),
      model: "small",
      extraBody: null,
      maxTokens: null,
      onNotice: null,
    };
    const call = taskCall(task, host, { baseUrl: main.baseUrl });
    expect(call.model).toBe("small");
    expect(call.endpoint.baseUrl).toBe(main.baseUrl);
    await ask(call.endpoint, call.model, "Name this chat.", "Lisbon trip", call.options);
    expect(bodies(main)[0]).toMatchObject({ model: "small", max_tokens: 512 });
  });

  it.each([undefined, null])(
    "leaves out a host option given as %s, so a default layered under it holds",
    (absent) => {
      const call = taskCall(
        { model: "m", maxTokens: 9 },
        {
          temperature: absent,
          reasoningEffort: absent,
          extraBody: absent,
          signal: absent,
          timeoutMs: absent,
          onNotice: absent,
          capabilities: absent,
          clients: absent,
        },
        { baseUrl: "http://127.0.0.1:9/v1" },
      );
      expect(call.options).toStrictEqual({ maxTokens: 9 });
      expect(Object.keys(call.options)).toEqual(["maxTokens"]);
      // A host's own defaults, layered under the call's options, survive.
      expect({ timeoutMs: 30_000, temperature: 0.2, maxTokens: 64, ...call.options }).toStrictEqual({
        timeoutMs: 30_000,
        temperature: 0.2,
        maxTokens: 9,
      });
    },
  );

  it("sends no ceiling for maxTokens 0", async () => {
    const main = await serve("x");
    const call = taskCall({ model: "m", maxTokens: 0 }, isolated(), { baseUrl: main.baseUrl });
    await ask(call.endpoint, call.model, "", "x", call.options);
    expect(bodies(main)[0]).not.toHaveProperty("max_tokens");
    expect(bodies(main)[0]).not.toHaveProperty("max_completion_tokens");
  });

  it("sends a task on the agent's endpoint with the agent's spelling and key, so both share latches", async () => {
    const main = await serve("x");
    const agent = { baseUrl: main.baseUrl, apiKey: "sk-agent" };
    const respelled = `${main.baseUrl.replace("http://", "HTTP://")}/`;
    const call = taskCall({ model: "m", endpoint: { baseUrl: respelled, apiKey: "" } }, isolated(), agent);
    expect(call.endpoint.baseUrl).toBe(main.baseUrl);
    await ask(call.endpoint, call.model, "", "x", call.options);
    expect(authorization(main)).toBe("Bearer sk-agent");
  });

  it("sends a task on another endpoint only a key of its own", async () => {
    const main = await serve();
    const other = await serve("x", "y");
    const agent = { baseUrl: main.baseUrl, apiKey: "sk-agent" };
    const keyless = taskCall(
      { model: "m", endpoint: { baseUrl: other.baseUrl, apiKey: "" } },
      isolated(),
      agent,
    );
    await ask(keyless.endpoint, keyless.model, "", "x", keyless.options);
    expect(authorization(other, 0)).toBe(`Bearer ${NO_KEY}`);
    const keyed = taskCall(
      { model: "m", endpoint: { baseUrl: other.baseUrl, apiKey: "sk-task" } },
      isolated(),
      agent,
    );
    await ask(keyed.endpoint, keyed.model, "", "x", keyed.options);
    expect(authorization(other, 1)).toBe("Bearer sk-task");
    expect(main.chatRequests).toHaveLength(0);
  });

  it("honours the task endpoint's own time bound", async () => {
    const slow = await startServer({ replies: [{ content: "late", firstByteDelayMs: 3000 }] });
    servers.push(slow);
    const call = taskCall(
      { model: "m", endpoint: { baseUrl: slow.baseUrl, apiKey: "", requestTimeoutSeconds: 0.2 } },
      isolated(),
    );
    const error = await ask(call.endpoint, call.model, "", "x", call.options).catch((e: unknown) => e);
    expect(SideTaskError.isInstance(error) && error.code).toBe("timeout");
  });

  it("names no model where neither the task nor the host does, and needs an endpoint from somewhere", () => {
    expect(taskCall(undefined, {}, { baseUrl: "http://127.0.0.1:9/v1" }).model).toBe("");
    const error = (() => {
      try {
        taskCall({ model: "m" });
      } catch (e) {
        return e;
      }
    })();
    expect(SideTaskError.isInstance(error) && error.code).toBe("invalid-input");
    expect(String((error as Error).message)).toMatch(/names no endpoint/);
  });
});
