import { readFixtureJson, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { createRuntime, defaultRuntime, resetAll, runAgentLoop } from "./index.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  resetAll();
});

const refusal = () => ({
  type: "error" as const,
  status: 400,
  body: readFixtureJson("errors/relay-new-api/unknown-parameter-stream-options-with-request-ids.json"),
});
const question = [{ role: "user" as const, content: "hi" }];

describe("runtimes", () => {
  it("keep what one tenant's endpoint refused from another tenant's runs", async () => {
    server = await startServer({
      replies: [refusal(), { content: "a" }, { content: "b" }, { content: "c" }],
    });
    const tenantA = createRuntime();
    const tenantB = createRuntime();
    const config = { baseUrl: server.baseUrl, model: "sim" };

    await tenantA.runAgentLoop({ config, messages: question, dispatch: () => "" });
    await tenantA.runAgentLoop({ config, messages: question, dispatch: () => "" });
    await tenantB.runAgentLoop({ config, messages: question, dispatch: () => "" });

    const sentOptions = server.chatRequests.map((r) => "stream_options" in (r.body as object));
    // A: refused, re-sent without; then without from the latch. B: still asks with it.
    expect(sentOptions).toEqual([true, false, false, true]);
    expect(tenantA.capabilities.capabilitiesFor(server.baseUrl).usageInStream).toBe(false);
    expect(tenantB.capabilities.capabilitiesFor(server.baseUrl).usageInStream).toBe(true);
    expect(tenantA.clients.size).toBe(1);
    expect(tenantB.clients.size).toBe(1);
  });

  it("forget under another spelling of the base URL drops what a run latched under the first", async () => {
    server = await startServer({
      replies: [refusal(), { content: "a" }, { content: "b" }, { content: "c" }],
    });
    const runtime = createRuntime();
    const shouted = `${server.baseUrl.replace("http://", "HTTP://")}/`;
    const config = { baseUrl: shouted, model: "sim" };
    await runtime.runAgentLoop({ config, messages: question, dispatch: () => "" });
    // The same server written the usual way is the same endpoint: it knows the refusal too.
    await runtime.runAgentLoop({
      config: { ...config, baseUrl: server.baseUrl },
      messages: question,
      dispatch: () => "",
    });
    expect(runtime.capabilities.size).toBe(1);

    runtime.forget({ baseUrl: server.baseUrl });

    expect(runtime.capabilities.size).toBe(0);
    await runtime.runAgentLoop({ config, messages: question, dispatch: () => "" });
    const sentOptions = server.chatRequests.map((r) => "stream_options" in (r.body as object));
    // Refused and re-sent without; latched for the second spelling; asked again once forgotten.
    expect(sentOptions).toEqual([true, false, false, true]);
  });

  it("keeps tenants told apart only by an api-key header apart, and forgets one alone", async () => {
    server = await startServer({ replies: [refusal(), { content: "a" }, refusal(), { content: "b" }] });
    const runtime = createRuntime();
    const tenantA = { baseUrl: server.baseUrl, headers: { "api-key": "azure-tenant-a" }, model: "sim" };
    const tenantB = { baseUrl: server.baseUrl, headers: { "api-key": "azure-tenant-b" }, model: "sim" };
    await runtime.runAgentLoop({ config: tenantA, messages: question, dispatch: () => "" });
    // B's backend is B's own: what A's refused is not assumed of it.
    await runtime.runAgentLoop({ config: tenantB, messages: question, dispatch: () => "" });
    const sentOptions = () => server!.chatRequests.map((r) => "stream_options" in (r.body as object));
    expect(sentOptions()).toEqual([true, false, true, false]);
    expect(runtime.capabilities.size).toBe(2);

    runtime.forget(tenantA);

    expect(runtime.capabilities.size).toBe(1);
    const held = runtime.capabilities.capabilitiesFor(server.baseUrl, undefined, tenantB.headers);
    expect(held.usageInStream).toBe(false);
    expect(
      runtime.capabilities.capabilitiesFor(server.baseUrl, undefined, tenantA.headers).usageInStream,
    ).toBe(true);
  });

  it("forgetting a header tenant keeps the pooled client of the tenant told apart only by its header", async () => {
    server = await startServer({ replies: [{ content: "a" }, { content: "b" }, { content: "b again" }] });
    const runtime = createRuntime();
    const tenantA = { baseUrl: server.baseUrl, headers: { "api-key": "azure-tenant-a" }, model: "sim" };
    const tenantB = { baseUrl: server.baseUrl, headers: { "api-key": "azure-tenant-b" }, model: "sim" };
    await runtime.runAgentLoop({ config: tenantA, messages: question, dispatch: () => "" });
    await runtime.runAgentLoop({ config: tenantB, messages: question, dispatch: () => "" });
    const clientB = runtime.clients.getClient(tenantB);
    const clientA = runtime.clients.getClient(tenantA);
    expect(runtime.clients.size).toBe(2);

    runtime.forget(tenantA);

    expect(runtime.clients.size).toBe(1);
    expect(runtime.clients.getClient(tenantB)).toBe(clientB);
    expect(runtime.clients.getClient(tenantA)).not.toBe(clientA);
    await runtime.runAgentLoop({ config: tenantB, messages: question, dispatch: () => "" });
    expect(server.chatRequests.map((r) => r.headers["api-key"])).toEqual([
      "azure-tenant-a",
      "azure-tenant-b",
      "azure-tenant-b",
    ]);
  });

  it("forgetting a tenant the store does not hold evicts no other tenant's latches at the store's bound", async () => {
    server = await startServer({
      replies: [refusal(), { content: "a" }, { content: "b" }, { content: "a again" }],
    });
    const runtime = createRuntime({ capabilities: { maxEndpoints: 2 } });
    const tenantA = { baseUrl: server.baseUrl, apiKey: "sk-tenant-a", model: "sim" };
    const tenantB = { baseUrl: server.baseUrl, apiKey: "sk-tenant-b", model: "sim" };
    await runtime.runAgentLoop({ config: tenantA, messages: question, dispatch: () => "" });
    await runtime.runAgentLoop({ config: tenantB, messages: question, dispatch: () => "" });
    expect(runtime.capabilities.size).toBe(2);

    // A tenant that never ran here (or was dropped already) is forgotten: nothing to drop.
    runtime.forget({ baseUrl: server.baseUrl, apiKey: "sk-tenant-never-seen" });
    runtime.forget({ baseUrl: "http://127.0.0.1:9/v1", headers: { "api-key": "azure-other" } });

    expect(runtime.capabilities.size).toBe(2);
    await runtime.runAgentLoop({ config: tenantA, messages: question, dispatch: () => "" });
    const sentOptions = server.chatRequests.map((r) => "stream_options" in (r.body as object));
    // A refused stream_options, re-sent without; B asked with it; A still remembers its refusal.
    expect(sentOptions).toEqual([true, false, true, false]);
  });

  it("resetAll forgets the default runtime's latches, clients and run buffers", async () => {
    server = await startServer({ replies: [refusal(), { content: "a" }, { content: "b" }] });
    const config = { baseUrl: server.baseUrl, model: "sim" };
    await runAgentLoop({ config, messages: question, dispatch: () => "" });
    expect(defaultRuntime.capabilities.capabilitiesFor(server.baseUrl).usageInStream).toBe(false);
    defaultRuntime.bus.emit("run-1", { kind: "notice", text: "kept until reset" });
    expect(defaultRuntime.clients.size).toBeGreaterThan(0);

    resetAll();

    expect(defaultRuntime.clients.size).toBe(0);
    expect(defaultRuntime.bus.history("run-1")).toEqual([]);
    await runAgentLoop({ config, messages: question, dispatch: () => "" });
    expect("stream_options" in (server.chatRequests.at(-1)!.body as object)).toBe(true);
  });
});
