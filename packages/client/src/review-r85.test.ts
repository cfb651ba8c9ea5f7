// Review round r85 (client): pool options, lookup options, listings and the environment read
// through a polluted Object.prototype. Each test fails on the code before its fix.
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { fixtureJson } from "../test/http.js";
import { keepErrorBodies } from "./error-bodies.js";
import { EndpointConfigError, ModelListingError } from "./errors.js";
import { createClientPool } from "./pool.js";
import { findEntry, listedWindow, listingEntries } from "./window.js";

const servers: TestServer[] = [];
afterEach(() => Promise.all(servers.splice(0).map((server) => server.close())));

/** A testkit server, closed after the test. */
const testkit = async (options: Parameters<typeof startServer>[0]): Promise<TestServer> =>
  servers[servers.push(await startServer(options)) - 1] as TestServer;

/**
 * Runs `body` with `fields` set on Object.prototype (enumerable, as `Object.prototype.name = value`
 * sets them), taken off again once it has settled.
 */
function withPolluted<T>(fields: Record<string, unknown>, body: () => T | Promise<T>): Promise<T> {
  const names = Object.keys(fields);
  const described = names.map((name) => [
    name,
    { value: fields[name], configurable: true, writable: true, enumerable: true },
  ]);
  Object.defineProperties(Object.prototype, Object.fromEntries(described));
  return Promise.resolve()
    .then(body)
    .finally(() => {
      for (const name of names) Reflect.deleteProperty(Object.prototype, name);
    });
}

describe("R85C-1: a pool's options, never a polluted Object.prototype's", () => {
  it("a pool made without maxClients, logLevel, now, maxRoutes or routeLatches is made, and answers", async () => {
    const server = await testkit({
      replies: [{ content: "hi" }],
      models: [{ id: "m", context_length: 4096 }],
    });
    const settings = { baseUrl: server.baseUrl, model: "m" };
    // Before: "maxClients must be a whole number from 1, got P0LLUTED.", "logLevel must be one of
    // …", "now must be a function …", "maxRoutes …", "routeLatches must be a RouteLatchStore …";
    // an inherited maxLookupBodyBytes of 1 read every listing as too large.
    for (const fields of [
      { maxClients: "P0LLUTED" },
      { logLevel: "P0LLUTED" },
      { now: "P0LLUTED" },
      { maxRoutes: true },
      { routeLatches: true },
      { lookupBoundMs: "P0LLUTED", listingMissMs: "P0LLUTED" },
      { maxLookupBodyBytes: 1 },
    ]) {
      const window = await withPolluted(fields, () =>
        createClientPool({ onLog: () => {} }).contextLimitFor(settings),
      );
      expect(window).toBe(4096);
    }
    const reply = await withPolluted({ maxClients: "P0LLUTED", now: true }, async () => {
      const client = createClientPool().getClient(settings);
      return client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "x" }] });
    });
    expect(reply.choices[0]?.message.content).toBe("hi");
  });

  it("a lookup's options take no inherited signal; a listing error no inherited status or cause", async () => {
    // Before: "The lookup's signal must be an AbortSignal." (An operator's number is answered
    // without a request: Node's own fetch reads an inherited `signal` too, out of this package's hands.)
    const limit = await withPolluted({ signal: "P0LLUTED" }, () =>
      createClientPool().contextLimitFor({ baseUrl: "http://127.0.0.1:9/v1" }, 8192, {}),
    );
    expect(limit).toBe(8192);
    const made = await withPolluted(
      { status: 418, cause: "P0LLUTED" },
      () => new ModelListingError("malformed", "u", "m", {}),
    );
    // Before: status 418 and cause "P0LLUTED" on a malformed listing's error.
    expect([made.status, Object.hasOwn(made, "cause")]).toEqual([undefined, false]);
  });
});

describe("R85C-2: what a server listed, never a polluted Object.prototype's fields", () => {
  it("contextLimitFor takes no inherited window, n_ctx or meta", async () => {
    const listing = await testkit({ models: [{ id: "m" }] });
    const llama = await testkit({
      models: fixtureJson("models/llamacpp-v1-models.docs-example.json"),
      props: fixtureJson("models/llamacpp-props.docs-example.json"),
    });
    const vllm = await testkit({ models: fixtureJson("models/vllm.json") });
    const ask = () =>
      Promise.all(
        [listing, llama, vllm].map((server) =>
          createClientPool().contextLimitFor({ baseUrl: server.baseUrl }),
        ),
      );
    const clean = await ask();
    expect(clean[0]).toBe(0);
    // Before: a listing with no window answered 1, an inherited n_ctx replaced llama.cpp's served window.
    for (const fields of [
      { context_length: 1 },
      { n_ctx: 1, loaded_context_length: 1 },
      { meta: { n_ctx: 7 } },
    ]) {
      expect(await withPolluted(fields, ask)).toEqual(clean);
    }
  });

  it("listingEntries, findEntry and listedWindow read an entry's own fields", async () => {
    const body = { data: [{ id: "a" }, { name: "b" }] };
    const read = () => {
      const entries = listingEntries(body) ?? [];
      return [entries.map((entry) => entry.id), findEntry(entries, "zzz")?.id, listedWindow(entries[0])];
    };
    const clean = read();
    expect(clean).toEqual([["a", "b"], undefined, undefined]);
    // Before: an inherited name named every entry "zzz" (findEntry found one), and an inherited
    // max_model_len was every entry's window.
    expect(await withPolluted({ name: "zzz", max_model_len: 9 }, read)).toEqual(clean);
    // Before: an inherited `data` read a bare entry list's body as empty.
    expect(await withPolluted({ data: [] }, () => listingEntries([{ id: "x" }])?.length)).toBe(1);
  });
});

describe("R85C-3: OPENAI_CUSTOM_HEADERS read through a polluted Object.prototype", () => {
  it("one that is not text is a clear EndpointConfigError; a string one is still never sent", async () => {
    const server = await testkit({ replies: [{ content: "hi" }] });
    const baseUrl = server.baseUrl;
    // Before: TypeError "raw?.split is not a function".
    const error = await withPolluted({ OPENAI_CUSTOM_HEADERS: true }, () => {
      try {
        createClientPool().getClient({ baseUrl });
      } catch (caught) {
        return caught;
      }
      return undefined;
    });
    expect(EndpointConfigError.isInstance(error) && error.field).toBe("OPENAI_CUSTOM_HEADERS");
    await withPolluted({ OPENAI_CUSTOM_HEADERS: "X-Polluted: 1" }, () =>
      createClientPool()
        .getClient({ baseUrl })
        .chat.completions.create({ model: "m", messages: [{ role: "user", content: "x" }] }),
    );
    expect(server.chatRequests[0]?.headers["x-polluted"]).toBeUndefined();
  });
});

describe("R85C-4: keepErrorBodies reads an error body's own error and message", () => {
  it("no inherited message sets the server's words aside", async () => {
    const server = await testkit({});
    const bodies = [
      { error: "Model m is currently loading", estimated_time: 3 },
      { message: "model not found" },
    ];
    const read = async () => {
      const kept: unknown[] = [];
      for (const body of bodies) {
        server.enqueue({ type: "error", status: 400, body });
        const response = await keepErrorBodies()(`${server.baseUrl}/chat/completions`, {
          method: "POST",
          body: "{}",
        });
        kept.push(await response.json());
      }
      return kept;
    };
    const clean = await read();
    expect(clean).toEqual([
      { error: { estimated_time: 3, message: "Model m is currently loading" } },
      { error: { message: "model not found" } },
    ]);
    // Before: { error: { estimated_time: 3, error: "Model m is currently loading" } }, the words
    // taken for a status text beside an inherited message. (An inherited `error` fails Node's own
    // fetch before any body is read, so it is not tried here.)
    expect(await withPolluted({ message: "P0LLUTED" }, read)).toEqual(clean);
  });
});

describe("R85C-5: the options a pooled client is made with shadow every SDK option", () => {
  it("no inherited provider, workloadIdentity or defaultQuery reaches the SDK", async () => {
    const server = await testkit({ replies: [{ content: "a" }, { content: "b" }] });
    const ask = (fields: Record<string, unknown>) =>
      withPolluted(fields, () =>
        createClientPool()
          .getClient({ baseUrl: server.baseUrl })
          .chat.completions.create({ model: "m", messages: [{ role: "user", content: "x" }] }),
      );
    // Before: "The `provider` option cannot be used with `apiKey`, `baseURL`…" and "The `apiKey` and
    // `workloadIdentity` options are mutually exclusive".
    await expect(ask({ provider: "P0LLUTED", workloadIdentity: "P0LLUTED" })).resolves.toBeDefined();
    // Before: every request went to /v1/chat/completions?polluted=1.
    await ask({ defaultQuery: { polluted: "1" } });
    expect(server.chatRequests.map((request) => request.url)).toEqual([
      "/v1/chat/completions",
      "/v1/chat/completions",
    ]);
  });
});
