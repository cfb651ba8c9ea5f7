import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { EndpointConfigError, ModelListingError } from "./errors.js";
import { type ClientLogEntry, createClientPool } from "./pool.js";
import {
  credentialRedactor,
  credentialsOf,
  isCredentialParam,
  REDACTED,
  redactor,
  secretsOf,
} from "./redact.js";
import { redactingFetch } from "./redact-fetch.js";

let server: TestServer;
beforeEach(async () => {
  server = await startServer();
});
afterEach(() => server.close());

const KEY = "sk-tenant-0123456789abcdef";
const HEADER = "hdr-secret-value-42";

const ask = (client: ReturnType<ReturnType<typeof createClientPool>["getClient"]>) =>
  client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] });

const ENVIRONMENT = {
  OPENAI_API_KEY: "sk-env-api-key",
  OPENAI_ADMIN_KEY: "sk-env-admin-key",
  OPENAI_ORG_ID: "org-env-organisation",
  OPENAI_PROJECT_ID: "proj-env-project",
  OPENAI_WEBHOOK_SECRET: "whsec-env-secret",
  OPENAI_BASE_URL: "http://127.0.0.1:9/v1",
  OPENAI_CUSTOM_HEADERS: "X-Host-Secret: env-header-secret\nX-Trace: env-trace",
  OPENAI_LOG: "debug",
};

function withEnvironment<T>(run: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(ENVIRONMENT).map((name) => [name, process.env[name]]));
  Object.assign(process.env, ENVIRONMENT);
  return run().finally(() => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });
}

describe("a pooled client reads nothing from the environment", () => {
  it("sends only the endpoint's own key and headers with every OPENAI_* variable set", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const logs = [vi.spyOn(console, "log"), vi.spyOn(console, "warn"), vi.spyOn(console, "info")];
    const debug = vi.spyOn(console, "debug").mockImplementation(() => {});
    try {
      await withEnvironment(async () => {
        server.enqueue({ content: "one" }, { content: "two" });
        const pool = createClientPool();
        const keyed = pool.getClient({ baseUrl: server.baseUrl, apiKey: KEY, headers: { "X-Trace": "own" } });
        expect(keyed.adminAPIKey).toBeNull();
        expect(keyed.organization).toBeNull();
        expect(keyed.project).toBeNull();
        expect(keyed.webhookSecret).toBeNull();
        await ask(keyed);
        await ask(pool.getClient({ baseUrl: server.baseUrl }));
      });
      const [first, second] = server.chatRequests;
      expect(first?.headers.authorization).toBe(`Bearer ${KEY}`);
      expect(first?.headers["x-trace"]).toBe("own");
      expect(second?.headers.authorization).toBe("Bearer no-key");
      for (const request of server.chatRequests) {
        const sent = JSON.stringify(request.headers);
        for (const value of Object.values(ENVIRONMENT)) {
          if (!value.includes("\n")) expect(sent).not.toContain(value);
        }
        expect(sent).not.toContain("env-header-secret");
        expect(sent).not.toContain("env-trace");
        expect(request.headers).not.toHaveProperty("openai-organization");
        expect(request.headers).not.toHaveProperty("openai-project");
        expect(request.headers).not.toHaveProperty("x-host-secret");
      }
      // OPENAI_LOG=debug would have printed every request to the console.
      for (const spy of [errors, debug, ...logs]) expect(spy).not.toHaveBeenCalled();
    } finally {
      vi.restoreAllMocks();
    }
  });
});

describe("OPENAI_CUSTOM_HEADERS naming an Object.prototype member", () => {
  it("blanks a header named constructor, toString or __proto__ like any other (r70d)", async () => {
    const saved = process.env.OPENAI_CUSTOM_HEADERS;
    process.env.OPENAI_CUSTOM_HEADERS =
      "constructor: env-ctor-secret\ntoString: env-tostring-secret\n__proto__: env-proto-secret";
    try {
      server.enqueue({ content: "one" });
      await ask(createClientPool().getClient({ baseUrl: server.baseUrl, apiKey: KEY }));
    } finally {
      if (saved === undefined) delete process.env.OPENAI_CUSTOM_HEADERS;
      else process.env.OPENAI_CUSTOM_HEADERS = saved;
    }
    const sent = JSON.stringify(server.chatRequests[0]?.headers);
    expect(sent).toContain(KEY);
    for (const secret of ["env-ctor-secret", "env-tostring-secret", "env-proto-secret"]) {
      expect(sent).not.toContain(secret);
    }
  });
});

describe("what a server echoes is redacted before anything reads it", () => {
  it("takes the key and header values out of an error body, its message and its headers", async () => {
    server.enqueue({
      type: "error",
      status: 401,
      body: { error: { message: `Incorrect API key provided: ${KEY}; header was ${HEADER}` } },
      headers: { "x-echo": `Bearer ${KEY}` },
    });
    const client = createClientPool().getClient({
      baseUrl: server.baseUrl,
      apiKey: KEY,
      headers: { "X-Custom": HEADER },
    });
    const error = (await ask(client).catch((e: unknown) => e)) as Error & {
      error?: unknown;
      headers?: unknown;
    };
    expect(error.message).toContain("Incorrect API key provided");
    expect(error.message).toContain(REDACTED);
    const everything = `${error.message}\n${error.stack}\n${JSON.stringify(error.error)}\n${JSON.stringify(error.headers)}`;
    expect(everything).not.toContain(KEY);
    expect(everything).not.toContain(HEADER);
  });

  it("takes out the token of an Authorization header given in headers when the server echoes it alone", async () => {
    const token = "gw-token-0123456789abcdef";
    server.enqueue({
      type: "error",
      status: 401,
      body: { error: { message: `gateway: token ${token} is not valid for this route` } },
    });
    const client = createClientPool().getClient({
      baseUrl: server.baseUrl,
      headers: { authorization: `Bearer ${token}`, "cf-aig-authorization": `Bearer ${HEADER}` },
    });
    const error = (await ask(client).catch((e: unknown) => e)) as Error & { error?: unknown };
    expect(error.message).toContain(`gateway: token ${REDACTED} is not valid`);
    const everything = `${error.message}\n${error.stack}\n${JSON.stringify(error.error)}`;
    expect(everything).not.toContain(token);
    // The scheme word alone is no secret: it is left where it stands.
    expect(redactor({ headers: { authorization: `Bearer ${token}` } })("Use Bearer auth")).toBe(
      "Use Bearer auth",
    );
    expect(redactor({ headers: { "cf-aig-authorization": `Bearer ${HEADER}` } })(`echo ${HEADER}`)).toBe(
      `echo ${REDACTED}`,
    );
  });

  it("takes out a key the server echoes JSON-escaped (PHP's \\/, Gson's \\u003d, any \\uXXXX)", async () => {
    // A base64 key: '/', '+' and '=' are what PHP's json_encode, Gson and Go escape when echoing.
    const key = "c2VjcmV0/a2V5+cGFydA==";
    const escapes: ((text: string) => string)[] = [
      (text) => text.replaceAll("/", "\\/"),
      (text) => text.replaceAll("=", "\\u003d"),
      (text) =>
        text.replace(
          /[^A-Za-z0-9]/g,
          (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0").toUpperCase()}`,
        ),
    ];
    const client = createClientPool().getClient({ baseUrl: server.baseUrl, apiKey: key });
    for (const escaped of escapes) {
      server.enqueue({
        type: "error",
        status: 401,
        body: `{"error":{"message":"invalid key ${escaped(`Bearer ${key}`)}"}}`,
      });
      const error = (await ask(client).catch((e: unknown) => e)) as Error & { error?: unknown };
      expect(error.message).toContain("invalid key");
      expect(`${error.message}\n${error.stack}\n${JSON.stringify(error.error)}`).not.toContain(key);
    }
  });

  it("redacts a key cut across two stream pieces, and leaves an ordinary stream byte for byte", async () => {
    const half = KEY.length / 2;
    const chunk = (text: string) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: text } }] })}\n\n`;
    server.enqueue({
      type: "raw",
      chunks: [
        `data: {"choices":[{"index":0,"delta":{"content":"key: ${KEY.slice(0, half)}`,
        `${KEY.slice(half)}"}}]}\n\n`,
        chunk("done"),
        "data: [DONE]\n\n",
      ],
      chunkDelayMs: 5,
    });
    const client = createClientPool().getClient({ baseUrl: server.baseUrl, apiKey: KEY });
    let text = "";
    const stream = await client.chat.completions.create({ model: "m", messages: [], stream: true });
    for await (const part of stream) text += part.choices[0]?.delta.content ?? "";
    expect(text).toBe(`key: ${REDACTED}done`);
  });

  it("leaves a routing header's value in a reply: whole deltas, tool-call arguments and a call that does not stream", async () => {
    // X-Title and x-portkey-provider route, they do not authenticate: a model's answer may name
    // their values, and a tool's arguments must reach it as the model wrote them.
    const headers = { "x-portkey-provider": "openai", "X-Title": "My Chat App", "x-api-key": HEADER };
    const content = `Install the openai package for My Chat App; not ${HEADER} or ${KEY}.`;
    const args = JSON.stringify({ pkg: "openai", app: "My Chat App" });
    const kept = `Install the openai package for My Chat App; not ${REDACTED} or ${REDACTED}.`;
    const client = createClientPool().getClient({ baseUrl: server.baseUrl, apiKey: KEY, headers });
    server.enqueue({
      type: "turn",
      content,
      toolCalls: [{ name: "install", arguments: args }],
      chunkChars: 1000,
    });
    let text = "";
    let called = "";
    const stream = await client.chat.completions.create({ model: "m", messages: [], stream: true });
    for await (const part of stream) {
      text += part.choices[0]?.delta.content ?? "";
      called += part.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? "";
    }
    expect([text, called]).toEqual([kept, args]);
    server.enqueue({ type: "turn", content, toolCalls: [{ name: "install", arguments: args }] });
    const whole = await ask(client);
    expect(whole.choices[0]?.message.content).toBe(kept);
    expect(whole.choices[0]?.message.tool_calls?.[0]).toMatchObject({ function: { arguments: args } });
    // An error body keeps the wider rule: every header value is taken out, routing words included.
    server.enqueue({
      type: "error",
      status: 400,
      body: { error: { message: `bad route openai for My Chat App` } },
    });
    const error = (await ask(client).catch((e: unknown) => e)) as Error;
    expect(error.message).toContain(`bad route ${REDACTED} for ${REDACTED}`);
  });

  it("passes a binary body through byte for byte", async () => {
    const bytes = new Uint8Array([0xff, 0xfe, 0x00, 0x80, ...new TextEncoder().encode(KEY), 0xc3]);
    server.enqueue({ type: "raw", headers: { "content-type": "audio/mpeg" }, chunks: [bytes] });
    const response = await redactingFetch(secretsOf({ apiKey: KEY }))(`${server.baseUrl}/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "m", messages: [] }),
    });
    expect(new Uint8Array(await response.arrayBuffer())).toEqual(bytes);
  });

  it("routes the SDK's own log lines to onLog, redacted, and never to the console", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const lines: ClientLogEntry[] = [];
      server.enqueue({ type: "raw", chunks: [`data: {"broken ${KEY}\n\n`] });
      const client = createClientPool({ onLog: (entry) => lines.push(entry) }).getClient({
        baseUrl: server.baseUrl,
        apiKey: KEY,
      });
      const stream = await client.chat.completions.create({ model: "m", messages: [], stream: true });
      await expect(
        (async () => {
          for await (const _ of stream) void _;
        })(),
      ).rejects.toThrow(SyntaxError);
      expect(lines.map((l) => l.level)).toContain("error");
      expect(lines.some((l) => l.message.includes("Could not parse message into JSON"))).toBe(true);
      expect(JSON.stringify(lines)).not.toContain(KEY);
      expect(errors).not.toHaveBeenCalled();

      // Without onLog the same malformed chunk is logged nowhere.
      server.enqueue({ type: "raw", chunks: [`data: {"broken ${KEY}\n\n`] });
      const silent = createClientPool().getClient({ baseUrl: server.baseUrl, apiKey: KEY });
      const again = await silent.chat.completions.create({ model: "m", messages: [], stream: true });
      await expect(
        (async () => {
          for await (const _ of again) void _;
        })(),
      ).rejects.toThrow(SyntaxError);
      expect(errors).not.toHaveBeenCalled();
    } finally {
      vi.restoreAllMocks();
    }
  });
});

describe("credentials in a base URL", () => {
  const refused = [
    "http://tenant:sk-in-userinfo-123456@127.0.0.1:8080/v1",
    "http://127.0.0.1:8080/v1?api-key=sk-in-query-123456",
    "https://host.example/v1?foo=1&access_token=sk-in-query-123456",
    "https://host.example/openai?key=sk-in-query-123456",
    // GitLab's spelling: a name with a telling part, not in the short list.
    "https://gitlab.example/api/v4?private_token=sk-in-query-123456",
  ];

  it("is refused up front with an error that does not repeat it, and nothing is sent", () => {
    const pool = createClientPool();
    for (const baseUrl of refused) {
      const error = (() => {
        try {
          pool.getClient({ baseUrl });
        } catch (e) {
          return e;
        }
      })() as EndpointConfigError;
      expect(EndpointConfigError.isInstance(error)).toBe(true);
      expect(error.field).toBe("baseUrl");
      expect(error.message).toMatch(/apiKey|headers/);
      expect(`${error.message}${error.stack}`).not.toMatch(/sk-in-(userinfo|query)/);
    }
    expect(pool.size).toBe(0);
    expect(server.requests).toHaveLength(0);
  });

  it("is refused by the window lookups too, without quoting it", async () => {
    const pool = createClientPool();
    const error = (await pool
      .listModels({ baseUrl: refused[0] as string })
      .catch((e: unknown) => e)) as EndpointConfigError;
    expect(EndpointConfigError.isInstance(error)).toBe(true);
    expect(error.message).not.toContain("sk-in-userinfo");
    expect(server.requests).toHaveLength(0);
  });

  it("is refused where a query name has pass as a word (db_pass, SMTP-PASS, dbPass), not bypass or passive", () => {
    const pool = createClientPool();
    for (const name of ["db_pass", "SMTP-PASS", "dbPass", "pass_word", "gpg_passphrase"]) {
      expect(isCredentialParam(name), name).toBe(true);
      expect(
        () => pool.getClient({ baseUrl: `https://host.example/v1?${name}=hunter2-123456` }),
        name,
      ).toThrow(
        expect.objectContaining({ field: "baseUrl", message: expect.not.stringContaining("hunter2") }),
      );
    }
    for (const name of ["bypass", "bypass_cache", "passive", "compass", "passes"]) {
      expect(isCredentialParam(name), name).toBe(false);
    }
  });

  it("an unparseable URL is not quoted either", () => {
    expect(() => createClientPool().getClient({ baseUrl: "sk-pasted-key-0123456789" })).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining("sk-pasted") }),
    );
  });
});

describe("the window lookups send the credentials the chat client sends", () => {
  it("send an Authorization given in headers (any case) as the client does, never beside or instead of NO_KEY", async () => {
    const pool = createClientPool();
    for (const headers of [{ Authorization: `Bearer ${KEY}` }, { authorization: `Bearer ${KEY}` }] as Record<
      string,
      string
    >[]) {
      for (const apiKey of [undefined, "sk-other-key-0123456789"]) {
        server.requests.length = 0;
        const endpoint = { baseUrl: server.baseUrl, apiKey, headers };
        await pool.getClient(endpoint).models.list();
        await pool.listModels(endpoint);
        await pool.contextLimitFor({ ...endpoint, model: "m" });
        const sent = server.requests.map((r) => r.headers.authorization);
        // The SDK lets the endpoint's own header win over its key; every lookup sends what it sends.
        expect(sent[0]).toBe(`Bearer ${KEY}`);
        expect(sent.slice(1)).toEqual(sent.slice(1).map(() => `Bearer ${KEY}`));
        expect(sent.length).toBeGreaterThanOrEqual(3);
      }
    }
  });
});

describe("what a listing echoes", () => {
  it("is redacted before listModels hands it back, as a pooled client's responses are", async () => {
    const stop = await startServer({
      models: [{ id: "m", owned_by: `tenant ${KEY}`, description: `sent with ${HEADER}` }],
    });
    try {
      const entries = await createClientPool().listModels({
        baseUrl: stop.baseUrl,
        apiKey: KEY,
        headers: { "x-api-key": HEADER },
      });
      expect(entries.map((e) => e.id)).toEqual(["m"]);
      expect(JSON.stringify(entries)).not.toContain(KEY);
      expect(JSON.stringify(entries)).not.toContain(HEADER);
      expect(entries[0]?.owned_by).toBe(`tenant ${REDACTED}`);
    } finally {
      await stop.close();
    }
  });

  it("leaves an ordinary header value alone: a gateway's provider word stays in the model ids it names", async () => {
    // A gateway routes by a plain word; the listing's ids hold it. Only credentials are redacted.
    const stop = await startServer({
      models: [
        { id: "mistral-large-latest", max_context_length: 131072, owned_by: `tenant ${KEY}` },
        { id: "mistral-small-latest", max_context_length: 32768, description: `via ${HEADER}` },
      ],
    });
    try {
      const endpoint = {
        baseUrl: stop.baseUrl,
        apiKey: KEY,
        headers: { "x-portkey-provider": "mistral", "x-upstream": `Bearer ${HEADER}` },
      };
      const pool = createClientPool();
      const entries = await pool.listModels(endpoint);
      expect(entries.map((e) => e.id)).toEqual(["mistral-large-latest", "mistral-small-latest"]);
      // The key and a bearer token (under any header name) are still taken out.
      expect([entries[0]?.owned_by, entries[1]?.description]).toEqual([
        `tenant ${REDACTED}`,
        `via ${REDACTED}`,
      ]);
      expect(await pool.contextLimitFor({ ...endpoint, model: "mistral-large-latest" })).toBe(131072);
      expect(await pool.contextLimitFor({ ...endpoint, model: "mistral-small-latest" })).toBe(32768);
    } finally {
      await stop.close();
    }
  });

  it("counts a header with pass as a word of its name (x-db-pass, X-DbPass) as a credential's, not x-bypass-cache", () => {
    const value = "word-in-ids";
    const counted = (name: string) => credentialsOf({ headers: { [name]: value } }).includes(value);
    for (const name of ["x-db-pass", "X-DbPass", "X-Smtp-Pass2", "x-key-passphrase"]) {
      expect(counted(name), name).toBe(true);
    }
    for (const name of ["x-bypass-cache", "x-compass", "x-passive"]) expect(counted(name), name).toBe(false);
  });

  it("counts a header as a credential by the words of its name, not a 'key' inside a brand", () => {
    const value = "word-in-ids";
    const counted = (name: string) => credentialsOf({ headers: { [name]: value } }).includes(value);
    for (const name of ["authorization", "api-key", "x-api-key", "x-goog-api-key", "apikey", "XApiKey"]) {
      expect(counted(name), name).toBe(true);
    }
    for (const name of [
      "x-portkey-virtual-key",
      "ocp-apim-subscription-key",
      "helicone-auth",
      "cf-aig-authorization",
      "x-auth-token",
    ]) {
      expect(counted(name), name).toBe(true);
    }
    for (const name of [
      "x-portkey-provider",
      "x-portkey-config",
      "openai-organization",
      "x-tenant",
      "x-region",
      "monkey-id",
    ]) {
      expect(counted(name), name).toBe(false);
    }
    // A bearer token is a credential under any name; the key always is.
    expect(credentialsOf({ headers: { "x-upstream": `Bearer ${HEADER}` } })).toContain(HEADER);
    expect(credentialsOf({ apiKey: KEY, headers: { "x-portkey-provider": "mistral" } })).toContain(KEY);
    expect(credentialsOf({ apiKey: KEY, headers: { "x-portkey-provider": "mistral" } })).not.toContain(
      "mistral",
    );
  });

  it("does not hide the model it looks for: contextLimitFor reads the window from the listing as sent", async () => {
    // A fine-tune named after the tenant's virtual key: listModels redacts it, the lookup still finds it.
    const stop = await startServer({ models: [{ id: `ft:${HEADER}:m`, context_length: 4096 }] });
    try {
      const endpoint = { baseUrl: stop.baseUrl, headers: { "x-portkey-virtual-key": HEADER } };
      const pool = createClientPool();
      expect((await pool.listModels(endpoint)).map((e) => e.id)).toEqual([`ft:${REDACTED}:m`]);
      expect(await pool.contextLimitFor({ ...endpoint, model: `ft:${HEADER}:m` })).toBe(4096);
    } finally {
      await stop.close();
    }
  });
});

describe("a redirect to another origin", () => {
  /** A plain server on `host` that records what it is sent and answers `answer(path)`. */
  async function origin(host: string, answer: (path: string) => [number, Record<string, string>, string]) {
    const seen: { path: string; headers: Record<string, unknown> }[] = [];
    const http = createServer((req, res) => {
      seen.push({ path: req.url ?? "", headers: req.headers });
      const [status, headers, body] = answer(req.url ?? "");
      res.writeHead(status, headers);
      res.end(body);
    });
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    const { port } = http.address() as AddressInfo;
    return {
      url: `http://${host}:${port}`,
      seen,
      close: () =>
        new Promise<void>((resolve) => {
          http.close(() => resolve());
          http.closeAllConnections();
        }),
    };
  }

  it("is not followed: the endpoint's headers never reach the other server (fetch drops only Authorization)", async () => {
    const listing = JSON.stringify({ data: [{ id: "m", context_length: 999 }] });
    const other = await origin("localhost", () => [200, { "content-type": "application/json" }, listing]);
    const moved = await origin("127.0.0.1", (path) =>
      path.startsWith("/v2/")
        ? [
            200,
            { "content-type": "application/json" },
            JSON.stringify({ data: [{ id: "m", context_length: 4096 }] }),
          ]
        : path.startsWith("/same/")
          ? [307, { location: path.replace("/same/", "/v2/") }, ""]
          : [302, { location: `${other.url}${path}` }, "moved"],
    );
    try {
      const pool = createClientPool();
      const endpoint = { baseUrl: `${moved.url}/v1`, apiKey: KEY, headers: { "api-key": HEADER } };
      const error = await pool
        .getClient(endpoint)
        .models.list()
        .catch((e: unknown) => e);
      expect((error as { status?: number }).status).toBe(302);
      const listed = await pool.listModels(endpoint).catch((e: unknown) => e);
      expect(ModelListingError.isInstance(listed)).toBe(true);
      expect((listed as ModelListingError).status).toBe(302);
      expect(await pool.contextLimitFor({ ...endpoint, model: "m" })).toBe(0);
      expect(other.seen).toEqual([]);
      // A redirect within the same server is still followed, with the headers.
      const same = { ...endpoint, baseUrl: `${moved.url}/same` };
      expect((await pool.getClient(same).models.list()).data.map((m) => m.id)).toEqual(["m"]);
      expect(await pool.contextLimitFor({ ...same, model: "m" })).toBe(4096);
      expect(moved.seen.filter((s) => s.path.startsWith("/v2/")).map((s) => s.headers["api-key"])).toEqual([
        HEADER,
        HEADER,
      ]);
    } finally {
      await Promise.all([other.close(), moved.close()]);
    }
  });
});

describe("a redirect from http to https on the same host", () => {
  it("is another origin (scheme and port differ), refused as any other: the 3xx is answered", async () => {
    const seen: string[] = [];
    const http = createServer((req, res) => {
      seen.push(req.url ?? "");
      res.writeHead(301, { location: `https://127.0.0.1:${(http.address() as AddressInfo).port}${req.url}` });
      res.end();
    });
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    try {
      const endpoint = {
        baseUrl: `http://127.0.0.1:${(http.address() as AddressInfo).port}/v1`,
        apiKey: KEY,
      };
      const pool = createClientPool();
      const listed = await pool.listModels(endpoint).catch((e: unknown) => e);
      expect(ModelListingError.isInstance(listed)).toBe(true);
      expect((listed as ModelListingError).status).toBe(301);
      const error = await pool
        .getClient(endpoint)
        .models.list()
        .catch((e: unknown) => e);
      expect((error as { status?: number }).status).toBe(301);
      expect(seen).toEqual(["/v1/models", "/v1/models"]);
    } finally {
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
    }
  });
});

describe("a key or header HTTP cannot carry", () => {
  it("is refused by name before anything is sent, never quoted (the SDK's TypeError quoted it whole)", async () => {
    const pool = createClientPool();
    const cases: [{ apiKey?: string; headers?: Record<string, string> }, string, string][] = [
      [{ headers: { "x-note": `${HEADER}—pasted` } }, "headers", "x-note"],
      [{ headers: { "x-api-key": `${HEADER}\r\nX-Injected: 1` } }, "headers", "x-api-key"],
      [{ headers: { "bad name": HEADER } }, "headers", "bad name"],
      [{ apiKey: `${KEY}\nsecond-line` }, "apiKey", "apiKey"],
      [{ apiKey: `${KEY}\u0000` }, "apiKey", "apiKey"],
    ];
    for (const [fields, field, named] of cases) {
      const endpoint = { baseUrl: server.baseUrl, ...fields };
      let thrown: unknown;
      try {
        await pool.getClient(endpoint).models.list();
      } catch (error) {
        thrown = error;
      }
      expect(EndpointConfigError.isInstance(thrown), named).toBe(true);
      expect((thrown as EndpointConfigError).field).toBe(field);
      expect((thrown as Error).message).toContain(named);
      expect((thrown as Error).message).not.toContain(HEADER);
      expect((thrown as Error).message).not.toContain(KEY);
      const lookup = await pool.listModels(endpoint).catch((error: unknown) => error);
      expect(EndpointConfigError.isInstance(lookup)).toBe(true);
      expect((lookup as EndpointConfigError).field).toBe(field);
    }
    expect(server.requests).toHaveLength(0);
    // Latin-1 letters and tabs are sendable: a header value such as "café\tbar" goes as it is.
    await pool.getClient({ baseUrl: server.baseUrl, headers: { "x-note": "café\tbar" } }).models.list();
    expect(server.requests).toHaveLength(1);
  });
});

describe("credentialRedactor", () => {
  const endpoint = {
    apiKey: KEY,
    headers: { "x-portkey-provider": "openai", "X-Title": "My Chat App", "x-upstream": `Bearer ${HEADER}` },
  };

  it("takes out the key and what follows an auth scheme, and leaves a routing header's words", () => {
    const text = `openai answered 401 for My Chat App: key ${KEY}, sent Bearer ${HEADER}`;
    expect(credentialRedactor(endpoint)(text)).toBe(
      `openai answered 401 for My Chat App: key ${REDACTED}, sent Bearer ${REDACTED}`,
    );
    // redactor, for logs, takes every header value whole.
    expect(redactor(endpoint)(text)).toBe(
      `${REDACTED} answered 401 for ${REDACTED}: key ${REDACTED}, sent ${REDACTED}`,
    );
  });

  it("redacts an error in place, cause included, and answers it", () => {
    const error = new Error(`failed with ${KEY}`, { cause: new Error(`upstream ${HEADER} via openai`) });
    expect(credentialRedactor(endpoint)(error)).toBe(error);
    expect(error.message).toBe(`failed with ${REDACTED}`);
    expect((error.cause as Error).message).toBe(`upstream ${REDACTED} via openai`);
  });

  it("leaves a local server's placeholder key (ollama, lm-studio, sk-no-key-required) in text a model or a log reads", () => {
    const text =
      "scandir '/home/ana/.ollama/models' failed (is ollama running? see lm-studio docs; sk-no-key-required, Not-Needed)";
    for (const apiKey of ["ollama", "lm-studio", "sk-no-key-required", "Not-Needed"]) {
      expect(credentialRedactor({ apiKey })(text)).toBe(text);
      // Nor to logs and thrown errors: redactor leaves it too.
      expect(redactor({ apiKey })(text)).toBe(text);
    }
    // However it was given: after Bearer, as a credential header's value, with a newline read from a file.
    const forms: { apiKey?: string; headers?: Record<string, string> }[] = [
      { apiKey: "ollama", headers: { Authorization: "Bearer ollama" } },
      { headers: { "api-key": "ollama" } },
      { apiKey: "ollama\n" },
    ];
    for (const endpoint of forms) {
      expect(credentialRedactor(endpoint)(text), JSON.stringify(endpoint)).toBe(text);
    }
    // A real key is still taken out.
    expect(credentialRedactor({ apiKey: KEY })(`ollama said ${KEY}`)).toBe(`ollama said ${REDACTED}`);
    expect(credentialRedactor({ headers: { Authorization: `Bearer ${KEY}` } })(`sent ${KEY}`)).toBe(
      `sent ${REDACTED}`,
    );
  });

  it("answers anything with no endpoint, or no credential in it, as it was", () => {
    expect(credentialRedactor(undefined)(`key ${KEY}`)).toBe(`key ${KEY}`);
    expect(credentialRedactor({ headers: { "x-portkey-provider": "openai" } })("openai is down")).toBe(
      "openai is down",
    );
  });
});

describe("redactor", () => {
  // 50,000 deep: a walk that recursed would overflow the stack well before (the slimmest recursion,
  // one property read a level, overflows at 20,000 in a vitest fork), and the test takes half the
  // time of the 100,000 it was (616 ms idle, which met vitest's 5 s default beside four other runs).
  it("redacts an error body nested fifty thousand deep (a hostile server's JSON) without throwing", {
    timeout: 30_000,
  }, () => {
    const depth = 50_000;
    const body = JSON.parse(`${'{"a":'.repeat(depth)}"${KEY}"${"}".repeat(depth)}`) as Record<
      string,
      unknown
    >;
    const error = Object.assign(new Error("400"), {
      error: body,
      list: JSON.parse(`${"[".repeat(depth)}"${KEY}"${"]".repeat(depth)}`),
    });
    expect(redactor({ apiKey: KEY })(error)).toBe(error);
    let node: unknown = error.error;
    for (let i = 0; i < depth; i++) node = (node as Record<string, unknown>).a;
    expect(node).toBe(REDACTED);
    let item: unknown = error.list;
    for (let i = 0; i < depth; i++) item = (item as unknown[])[0];
    expect(item).toBe(REDACTED);
  });

  it("redacts an error in place through its cause chain, body and stack", () => {
    const endpoint = { baseUrl: "http://127.0.0.1/v1", apiKey: KEY, headers: { "x-api-key": HEADER } };
    const inner = new Error(`socket said ${encodeURIComponent(HEADER)}`);
    const error = Object.assign(new Error(`401 ${KEY}`, { cause: inner }), {
      error: { message: `bad key ${KEY}`, list: [HEADER] },
    });
    const same = redactor(endpoint)(error);
    expect(same).toBe(error);
    const text = `${error.message}${error.stack}${JSON.stringify(error.error)}${inner.message}${inner.stack}`;
    expect(text).not.toContain(KEY);
    expect(text).not.toContain(HEADER);
    expect(redactor(endpoint)(`Bearer ${KEY}`)).toBe(`Bearer ${REDACTED}`);
  });

  it("takes out a key a server writes lower-case percent-encoded, form-encoded, base64, all-\\u or in capitals", () => {
    const key = "sk-live/AbC+x'y=1234567890";
    const hex = "9f86d081884c7d659a2feaa0c55ad015";
    const redact = redactor({ apiKey: key, headers: { "x-digest": hex } });
    const basic = Buffer.from(`user:${key}`).toString("base64");
    // What the server writes, and the part of it that would give the key back.
    const written = [
      ...[
        encodeURIComponent(key).replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase()),
        new URLSearchParams({ v: key }).toString().slice(2),
        Buffer.from(key).toString("base64url"),
        key.replace(/[^A-Za-z0-9]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`),
        hex.toUpperCase(),
      ].map((form) => [form, form] as const),
      [basic, basic.slice(8, 36)] as const,
    ];
    for (const [text, leak] of written) expect(redact(`echo ${text} end`), text).not.toContain(leak);
  });

  it("takes out a base URL's password as it reads, written in a JSON body", () => {
    const password = 'pa"ss/word-123';
    const redact = redactor({ baseUrl: `http://user:${encodeURIComponent(password)}@127.0.0.1:9/v1` });
    expect(redact(`{"password":${JSON.stringify(password)}}`)).toBe(`{"password":"${REDACTED}"}`);
  });

  it("leaves NO_KEY and values too short to tell from words alone", () => {
    expect(secretsOf({ apiKey: "no-key", headers: { a: "1", b: "json" } })).toEqual([]);
  });
});

describe("a pool stays bounded", () => {
  it("keeps at most maxClients, dropping the least recently used", () => {
    const pool = createClientPool({ maxClients: 3 });
    const at = (n: number) => ({ baseUrl: server.baseUrl, apiKey: `sk-tenant-${n}` });
    const first = pool.getClient(at(1));
    pool.getClient(at(2));
    pool.getClient(at(3));
    expect(pool.getClient(at(1))).toBe(first); // used again: now the most recent
    pool.getClient(at(4));
    expect(pool.size).toBe(3);
    expect(pool.getClient(at(1))).toBe(first);
    expect(pool.size).toBe(3);
  });

  it("forgets one tenant's clients, whatever their headers and timeouts, and no other's", () => {
    const pool = createClientPool();
    const tenant = { baseUrl: server.baseUrl, apiKey: "sk-tenant-a" };
    pool.getClient(tenant);
    pool.getClient({ ...tenant, headers: { "X-A": "1" } });
    pool.getClient({ ...tenant, requestTimeoutSeconds: 5 });
    const other = pool.getClient({ baseUrl: server.baseUrl, apiKey: "sk-tenant-b" });
    expect(pool.forget(tenant)).toBe(3);
    expect(pool.size).toBe(1);
    expect(pool.getClient({ baseUrl: server.baseUrl, apiKey: "sk-tenant-b" })).toBe(other);
  });

  it("forgets one tenant told apart only by its api-key header, and keeps the other's client", async () => {
    const pool = createClientPool();
    const tenantA = { baseUrl: server.baseUrl, headers: { "api-key": "azure-tenant-a-0123" } };
    const tenantB = { baseUrl: server.baseUrl, headers: { "Api-Key": "azure-tenant-b-4567" } };
    const a = pool.getClient(tenantA);
    const aSlow = pool.getClient({ ...tenantA, requestTimeoutSeconds: 600 });
    const b = pool.getClient(tenantB);
    const keyless = pool.getClient({ baseUrl: server.baseUrl });
    server.enqueue({ type: "turn", content: "a" }, { type: "turn", content: "b" });
    await ask(a);
    await ask(b);
    expect(server.chatRequests.map((r) => r.headers["api-key"])).toEqual([
      "azure-tenant-a-0123",
      "azure-tenant-b-4567",
    ]);

    // A's clients (every timeout), named by its headers in any case; B's and the headerless one stay.
    expect(pool.forget({ baseUrl: server.baseUrl, headers: { "API-KEY": "azure-tenant-a-0123" } })).toBe(2);
    expect(pool.size).toBe(2);
    expect(pool.getClient(tenantB)).toBe(b);
    expect(pool.getClient({ baseUrl: server.baseUrl })).toBe(keyless);
    expect(pool.getClient(tenantA)).not.toBe(a);
    expect(pool.getClient({ ...tenantA, requestTimeoutSeconds: 600 })).not.toBe(aSlow);
    server.enqueue({ type: "turn", content: "b again" });
    await ask(pool.getClient(tenantB));
    expect(server.chatRequests.at(-1)?.headers["api-key"]).toBe("azure-tenant-b-4567");

    // Without headers, as before: every client of that base URL and key, whatever its headers (A's
    // two made again above, B's and the headerless one).
    expect(pool.forget({ baseUrl: server.baseUrl })).toBe(4);
    expect(pool.size).toBe(0);
    // Headers forget checks them as getClient does.
    expect(() => pool.forget({ baseUrl: server.baseUrl, headers: { "api-key": "a\nb" } })).toThrow(
      EndpointConfigError,
    );
  });

  it("forgets with empty headers only the clients sent no headers", () => {
    const pool = createClientPool();
    const plain = pool.getClient({ baseUrl: server.baseUrl, apiKey: "sk-tenant-a" });
    const titled = pool.getClient({
      baseUrl: server.baseUrl,
      apiKey: "sk-tenant-a",
      headers: { "X-Title": "t" },
    });
    expect(pool.forget({ baseUrl: server.baseUrl, apiKey: "sk-tenant-a", headers: {} })).toBe(1);
    expect(
      pool.getClient({ baseUrl: server.baseUrl, apiKey: "sk-tenant-a", headers: { "x-title": "t" } }),
    ).toBe(titled);
    expect(pool.getClient({ baseUrl: server.baseUrl, apiKey: "sk-tenant-a" })).not.toBe(plain);
  });

  it("forgets a tenant whose base URL was spelled another way (scheme or host case, a default port)", () => {
    const pool = createClientPool();
    const port = new URL(server.baseUrl).port;
    const spelled = [
      `HTTP://LOCALHOST:${port}/v1`,
      `http://localhost:${port}/v1/`,
      "https://LLM.example.com:443/v1",
      "HTTP://llm.example.com:80/v1",
    ];
    for (const baseUrl of spelled) pool.getClient({ baseUrl, apiKey: "sk-tenant-a" });
    // One server, one client: the two spellings of each are the same endpoint.
    expect(pool.size).toBe(3);
    expect(pool.getClient({ baseUrl: `http://localhost:${port}/v1`, apiKey: "sk-tenant-a" })).toBe(
      pool.getClient({ baseUrl: spelled[0] as string, apiKey: "sk-tenant-a" }),
    );
    expect(pool.forget({ baseUrl: `http://localhost:${port}/v1`, apiKey: "sk-tenant-a" })).toBe(1);
    expect(pool.forget({ baseUrl: "https://llm.example.com/v1", apiKey: "sk-tenant-a" })).toBe(1);
    expect(pool.forget({ baseUrl: "http://llm.example.com/v1", apiKey: "sk-tenant-a" })).toBe(1);
    expect(pool.size).toBe(0);
  });

  it("takes a key with whitespace around it (read from a file with its newline) as the key itself", async () => {
    const pool = createClientPool();
    const client = pool.getClient({ baseUrl: server.baseUrl, apiKey: " sk-tenant-a\n" });
    expect(pool.getClient({ baseUrl: server.baseUrl, apiKey: "sk-tenant-a" })).toBe(client);
    server.enqueue({ type: "turn", content: "ok" });
    await ask(client);
    expect(server.chatRequests[0]?.headers.authorization).toBe("Bearer sk-tenant-a");
    expect(pool.forget({ baseUrl: server.baseUrl, apiKey: "sk-tenant-a" })).toBe(1);
    expect(pool.size).toBe(0);
  });

  it("refuses a bound that is not a whole number from 1", () => {
    expect(() => createClientPool({ maxClients: 0 })).toThrow(/maxClients/);
    expect(() => createClientPool({ maxRoutes: 1.5 })).toThrow(/maxRoutes/);
  });
});
