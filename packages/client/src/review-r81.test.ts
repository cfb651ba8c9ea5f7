// Review r81 (client): the one listener a pooled client keeps on a caller's signal. Every case
// speaks HTTP to the testkit's loopback server.

import { getEventListeners } from "node:events";
import { startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import { APIUserAbortError } from "openai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { createClientPool } from "./pool.js";
import { findEntry, listingEntries, type ModelEntry } from "./window.js";

let server: TestServer;
beforeEach(async () => {
  server = await startServer();
});
afterEach(() => server.close());

const chat = { model: "m", messages: [{ role: "user" as const, content: "hi" }] };
const listeners = (signal: AbortSignal) => getEventListeners(signal, "abort").length;

describe("R81C-1: a long-lived signal (a host's shutdown signal) between requests", () => {
  it("holds no listener once every request on it settled: answered, streamed to the end, a stream left early, a refusal", async () => {
    const client = createClientPool().getClient({ baseUrl: server.baseUrl });
    const host = new AbortController();
    for (let i = 0; i < 20; i++) server.enqueue({ type: "turn", content: "ok" });
    await Promise.all(
      Array.from({ length: 20 }, () => client.chat.completions.create(chat, { signal: host.signal })),
    );
    // Before: the one listener stayed on the signal until it aborted (for a host's signal, for good).
    expect(listeners(host.signal)).toBe(0);

    server.enqueue({ type: "turn", content: "streamed ".repeat(20) });
    const whole = await client.chat.completions.create({ ...chat, stream: true }, { signal: host.signal });
    expect(listeners(host.signal)).toBe(1);
    let text = "";
    for await (const chunk of whole) text += chunk.choices[0]?.delta?.content ?? "";
    expect(text).toBe("streamed ".repeat(20));
    expect(listeners(host.signal)).toBe(0);

    server.enqueue({ type: "turn", content: "a long streamed answer ".repeat(100), chunkDelayMs: 5 });
    const left = await client.chat.completions.create({ ...chat, stream: true }, { signal: host.signal });
    for await (const _ of left) break;
    expect(listeners(host.signal)).toBe(0);

    server.enqueue({ type: "error", status: 400, body: { error: { message: "bad request" } } });
    await expect(client.chat.completions.create(chat, { signal: host.signal })).rejects.toThrow(
      /bad request/,
    );
    expect(listeners(host.signal)).toBe(0);

    // The signal still stops what is under way when it aborts.
    server.enqueue({ type: "turn", content: "late", firstByteDelayMs: 5_000 });
    const waiting = client.chat.completions.create(chat, { signal: host.signal });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(listeners(host.signal)).toBe(1);
    host.abort();
    await expect(waiting).rejects.toBeInstanceOf(APIUserAbortError);
    expect(listeners(host.signal)).toBe(0);
  });
});

describe("R81C-2: a big model listing read for one model (contextLimitFor, servedWindow)", () => {
  it("finds the model in a 2·10^5-entry listing (its time beside plain passes is in `pnpm bench`)", () => {
    const body = {
      data: Array.from({ length: 200_000 }, (_, i) => ({
        id: `org/model-${i}`,
        name: `Org: Model ${i}`,
        aliases: [`m${i}`],
        context_length: 4096,
      })),
    };
    const entries = listingEntries(body) ?? [];
    expect(entries).toHaveLength(200_000);
    expect(findEntry(entries, "models/org/model-199999")?.id).toBe("org/model-199999");
    expect(findEntry(entries, "m150000")?.id).toBe("org/model-150000");
    expect(findEntry(entries, "nope")).toBeUndefined();
  }, 20_000);

  /** findEntry as it was before r81, three passes: the order it picks in is kept. */
  const reference = (entries: readonly ModelEntry[], model: string): ModelEntry | undefined => {
    const bare = (name: string) => name.replace(/^models\//, "");
    const names = (e: ModelEntry): unknown[] => [
      e.id,
      ...(Array.isArray(e.aliases) ? e.aliases : []),
      e.name,
      e.model,
      e.key,
      e.canonical_slug,
      ...(Array.isArray(e.loaded_instances)
        ? e.loaded_instances.map((i) =>
            typeof i === "object" && i !== null ? (i as { id?: unknown }).id : undefined,
          )
        : []),
    ];
    return (
      entries.find((e) => e.id === model) ??
      entries.find((e) => names(e).includes(model)) ??
      entries.find((e) => names(e).some((n) => typeof n === "string" && bare(n) === bare(model)))
    );
  };

  it("picks the entry it picked before: an id first, then a name or alias, then a name without models/ (property)", () => {
    const name = fc.constantFrom("a", "b", "models/a", "models/b", "models/models/a", "");
    const entry = fc.record(
      {
        id: name,
        aliases: fc.array(fc.oneof(name, fc.integer()), { maxLength: 2 }),
        name: fc.oneof(name, fc.constant(null)),
        model: name,
        key: name,
        canonical_slug: name,
        loaded_instances: fc.array(fc.record({ id: fc.oneof(name, fc.integer()) }), { maxLength: 2 }),
      },
      { requiredKeys: ["id"] },
    );
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 6 }), name, (entries, model) => {
        expect(findEntry(entries, model)).toBe(
          model === "" ? findEntry(entries, undefined) : reference(entries, model),
        );
      }),
      propertyRuns(2_000),
    );
  });
});
