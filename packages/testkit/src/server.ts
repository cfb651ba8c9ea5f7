/**
 * The loopback server: listening, routing, the reply script and request recording. The bytes of
 * each reply are written by `respond.ts`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { TestkitError } from "./errors.js";
import { liveFields, parseOwnBody } from "./own-body.js";
import { guardPersonality } from "./personalities/guard.js";
import { checkOptions, finiteMs, type OptionRule, positiveWhole } from "./personalities/options.js";
import { type Personality, requestedChoices } from "./personalities/personality.js";
import { type PersonalitySpec, resolvePersonality } from "./personalities/resolve.js";
import { countTokens, createPrefixCache, type PrefixCache, renderPrompt } from "./prefix-cache.js";
import type { RecordedRequest } from "./recorded-request.js";
import type { ErrorReply, Reply } from "./replies.js";
import { ownReply, validateReply } from "./replies.js";
import { createResponder } from "./respond.js";
import { type ScriptedModelOptions, scriptedModel } from "./scripted-model.js";
import type { TurnContext } from "./sse.js";
import { cutTurn } from "./token-budget.js";

/** One entry of the default `GET /v1/models` list. */
export interface ModelListing {
  id: string;
  object?: string | undefined;
  created?: number | undefined;
  owned_by?: string | undefined;
  [key: string]: unknown;
}

/** Decides the reply to one chat request: gets the request and its 0-based index among chat requests. */
export type ReplyFunction = (request: RecordedRequest, index: number) => Reply | Promise<Reply>;

/** Options of {@link startServer}; all optional. */
export interface ServerOptions {
  /** The script: a queue consumed one reply per chat request, or a function deciding each reply. */
  replies?: Reply[] | ReplyFunction | null | undefined;
  /** A real server's refusals and routes: a name, `{ name, …options }`, or a `Personality` object. */
  personality?: PersonalitySpec | null | undefined;
  /** Report `prompt_tokens_details.cached_tokens` from the prefix-cache model (one cache per model name). */
  prefixCache?: boolean | null | undefined;
  /** Body of `GET /v1/models`: an array is wrapped as `{ object: "list", data }`, anything else sent as is. */
  models?: ModelListing[] | unknown | undefined;
  /** Body of `GET /props`; `false` or absent (without a personality that has one): 404; `null` is absent. */
  props?: unknown | undefined;
  /** Body of LM Studio's `GET /api/v0/models`; `false` or absent (without the lmstudio personality): 404; `null` is absent. */
  lmstudio?: unknown | undefined;
  /** Let the rule-based demo model answer chat requests when no scripted reply is left (options: its streaming pace). */
  scriptedModel?: boolean | ScriptedModelOptions | null | undefined;
  /** Port to listen on (default 0: a free one). */
  port?: number | null | undefined;
}

/** Every option of `startServer`. */
const SERVER_OPTIONS: readonly (keyof ServerOptions)[] = [
  "replies",
  "personality",
  "prefixCache",
  "models",
  "props",
  "lmstudio",
  "scriptedModel",
  "port",
];

/** What each field of `scriptedModel: { … }` must be. */
const SCRIPTED_MODEL_RULES: Record<keyof ScriptedModelOptions, OptionRule> = {
  chunkChars: positiveWhole,
  chunkDelayMs: finiteMs,
};

/** A running server; see {@link startServer}. */
export interface TestServer {
  /** `http://127.0.0.1:<port>/v1` — the `baseURL` for `new OpenAI(…)`. */
  readonly baseUrl: string;
  /** `http://127.0.0.1:<port>`. */
  readonly origin: string;
  /** The port it listens on. */
  readonly port: number;
  /** Every request received, in arrival order (all routes). */
  readonly requests: RecordedRequest[];
  /** The chat-completions requests only, in arrival order. */
  readonly chatRequests: RecordedRequest[];
  /** Appends replies to the queue. */
  enqueue(...replies: Reply[]): void;
  /** Replies still queued. */
  readonly pending: number;
  /** Stops listening and ends every open response, silent streams included. Safe to call twice. */
  close(): Promise<void>;
}

function headerRecord(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(", ") : v;
  }
  return out;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  return Buffer.concat(parts).toString("utf8");
}

function parseJson(raw: string): unknown {
  if (raw.trim() === "") return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}

function openAiError(status: number, message: string, type = "invalid_request_error"): ErrorReply {
  return { type: "error", status, body: { error: { message, type, param: null, code: null } } };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Starts an OpenAI-compatible HTTP server on 127.0.0.1 with a free port.
 *
 * Routes: `POST /v1/chat/completions` (SSE when the body has `stream: true`, else one JSON
 * completion), `GET /v1/models`, `GET /props` and `GET /api/v0/models` when configured. Each chat
 * request is answered, in order of precedence, by: the personality's refusal, the next queued reply,
 * the reply function, the scripted model (when enabled), else a 500 saying the script ran out.
 * Throws a `TestkitError` (`invalid-option` naming the option, `invalid-reply` for a bad queued
 * reply) before listening for options it cannot honour; never leaves a listener behind on failure.
 */
export async function startServer(given: ServerOptions = {}): Promise<TestServer> {
  if (typeof given !== "object" || given === null || Array.isArray(given)) {
    throw new TestkitError("invalid-option", "startServer: options must be an object.");
  }
  // Read where the caller's object holds them (a class's getters too), never from a polluted
  // Object.prototype: `Object.prototype.port = "x"` must not become every server's port. Read as
  // they are used, not copied once: a test may give a listing or `/props` to a running server by
  // setting it on the options it started with (a server upgraded behind the same address).
  const options = liveFields(given, SERVER_OPTIONS) as ServerOptions;
  const resolved = resolvePersonality(options.personality);
  // null reads as absent, as everywhere in the project (a field read back from JSON).
  if (options.prefixCache != null && typeof options.prefixCache !== "boolean") {
    throw new TestkitError(
      "invalid-option",
      `startServer: prefixCache must be true or false, got ${JSON.stringify(options.prefixCache) ?? String(options.prefixCache)}.`,
    );
  }
  const scripted: unknown = options.scriptedModel;
  if (
    scripted != null &&
    typeof scripted !== "boolean" &&
    (typeof scripted !== "object" || scripted === null)
  ) {
    throw new TestkitError(
      "invalid-option",
      `startServer: scriptedModel must be true, false or { chunkChars?, chunkDelayMs? }, got ${JSON.stringify(scripted) ?? String(scripted)}.`,
    );
  }
  if (typeof scripted === "object" && scripted !== null) {
    checkOptions("startServer scriptedModel", options.scriptedModel, SCRIPTED_MODEL_RULES);
  }
  const personality: Personality | undefined = resolved && guardPersonality(resolved);
  if (options.replies != null && !Array.isArray(options.replies) && typeof options.replies !== "function") {
    throw new TestkitError(
      "invalid-option",
      "startServer: replies must be an array of replies or a function.",
    );
  }
  if (Array.isArray(options.models)) {
    // Each entry is spread into a listing entry: a string would become { "0": "g", "1": "p", … }.
    options.models.forEach((entry: unknown, i) => {
      if (!isRecord(entry)) {
        throw new TestkitError(
          "invalid-option",
          `startServer: models[${i}] must be an object such as { id: "gpt-4o" }, got ${typeof entry === "string" ? JSON.stringify(entry) : Array.isArray(entry) ? "an array" : `${typeof entry} ${String(entry)}`}. To serve a listing exactly as written, pass it whole: { object: "list", data: [...] }.`,
        );
      }
    });
  }
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new TestkitError(
      "invalid-option",
      `startServer: port must be an integer 0-65535 (0: any free port), got ${String(port)}.`,
    );
  }

  const replyFn = typeof options.replies === "function" ? options.replies : undefined;
  const requests: RecordedRequest[] = [];
  const chatRequests: RecordedRequest[] = [];
  // One prefix cache per model name: a server that serves several models (llama.cpp's router,
  // vLLM, a gateway) keeps each model's KV cache apart, so a prompt one model processed is no
  // cache hit for another.
  const caches = new Map<string, PrefixCache>();
  const cacheFor = (model: unknown): PrefixCache => {
    const key = typeof model === "string" ? model : "";
    let cache = caches.get(key);
    if (!cache) {
      cache = createPrefixCache();
      caches.set(key, cache);
    }
    return cache;
  };
  const sockets = new Set<Socket>();
  const stop = new AbortController();
  const startedAt = Date.now();
  let completionCounter = 0;

  const respond = createResponder(
    stop.signal,
    personality?.headers?.bind(personality),
    personality?.chunks?.bind(personality),
    personality?.completion?.bind(personality),
  );

  /** The testkit's checks of a reply, then the personality's own for a scripted turn. */
  const checked = (value: unknown): Reply => {
    // Sent from the fields the script wrote, never from a polluted Object.prototype.
    const reply = ownReply(validateReply(value));
    if (reply.type === undefined || reply.type === "turn") personality?.checkReply?.(reply);
    return reply;
  };
  /**
   * Checks a list of replies given at once (the initial queue, one `enqueue` call) and returns it;
   * a bad one throws naming its place (`where(i)`), so nothing of the list is queued.
   */
  const checkedList = (replies: readonly unknown[], where: (index: number) => string): Reply[] =>
    replies.map((reply, i) => {
      try {
        return checked(reply);
      } catch (cause) {
        if (!TestkitError.isInstance(cause)) throw cause;
        throw new TestkitError(cause.code, `${where(i)}: ${cause.message}`, { cause });
      }
    });
  const queue: Reply[] = Array.isArray(options.replies)
    ? checkedList(options.replies, (i) => `startServer: replies[${i}]`)
    : [];

  const nextReply = async (
    request: RecordedRequest,
    recorded: RecordedRequest,
    index: number,
  ): Promise<Reply> => {
    const queued = queue.shift();
    if (queued) return queued;
    if (replyFn) {
      try {
        return checked(await replyFn(recorded, index));
      } catch (cause) {
        const message = cause instanceof Error ? cause.message : String(cause);
        throw new TestkitError(
          "server-fault",
          `the replies function failed on chat request #${index + 1}: ${message}`,
          { cause },
        );
      }
    }
    if (options.scriptedModel) {
      const pace = typeof options.scriptedModel === "object" ? options.scriptedModel : {};
      return scriptedModel(request.body, pace);
    }
    return openAiError(
      500,
      `loopwright testkit: the script ran out — chat request #${index + 1} arrived but no reply was queued. Enqueue a reply, pass a replies function, or enable scriptedModel.`,
      "server_error",
    );
  };

  const handleChat = async (
    res: ServerResponse,
    request: RecordedRequest,
    recorded: RecordedRequest,
    index: number,
  ) => {
    const promptTokens = isRecord(request.body) ? countTokens(renderPrompt(request.body)) : 0;
    const refusal = personality?.check?.(request, { promptTokens, uptimeMs: Date.now() - startedAt });
    if (refusal) {
      respond.answer(res, refusal);
      return;
    }
    if (!isRecord(request.body)) {
      respond.answer(
        res,
        openAiError(400, "The request body must be a JSON object with model and messages."),
      );
      return;
    }
    const reply = checked(await nextReply(request, recorded, index));
    // A prompt enters the prefix cache once the server answers it; an error reply (a scripted 429,
    // the script running out) is a request the server never processed, as a personality's refusal is.
    const counted =
      options.prefixCache && reply.type !== "error"
        ? cacheFor(request.body.model).process(request.body)
        : { promptTokens, cachedTokens: undefined };
    switch (reply.type) {
      case "error":
        respond.answer(res, reply);
        return;
      case "replay":
        await respond.replay(res, reply);
        return;
      case "raw":
        await respond.raw(res, reply);
        return;
      default: {
        completionCounter++;
        const n = completionCounter;
        const model = typeof request.body.model === "string" ? request.body.model : "sim";
        const ctx: TurnContext = {
          id: `chatcmpl-sim${n}`,
          model,
          created: Math.floor(Date.now() / 1000),
          promptTokens: counted.promptTokens,
          cachedTokens: counted.cachedTokens,
          toolCallId: (i) => personality?.toolCallId?.(n, i) ?? `call_sim${n}_${i}`,
          // n choices: without a personality as OpenAI does, with one as that server does.
          choices: personality ? (personality.choices?.(request) ?? 1) : requestedChoices(request),
        };
        const includeUsage = personality?.streamsUsage?.(request) ?? true;
        const budget = personality?.completionBudget?.(request, {
          promptTokens,
          uptimeMs: Date.now() - startedAt,
        });
        const { turn, cutCall } =
          budget === undefined
            ? { turn: reply, cutCall: undefined }
            : cutTurn(reply, budget, personality?.toolCallTokens?.bind(personality));
        await respond.turn(res, turn, ctx, request.body.stream === true, includeUsage, n, request, cutCall);
      }
    }
  };

  /** The `GET /v1/models` body: the option, else the personality's, else one `sim` model. */
  const modelsBody = (): unknown => {
    const models = options.models ?? personality?.models?.() ?? [{ id: "sim" }];
    if (!Array.isArray(models)) return models;
    const data = models.map((m) => ({ object: "model", created: 0, owned_by: "loopwright-testkit", ...m }));
    return { object: "list", data };
  };

  const getBody = (explicit: unknown, fallback: (() => unknown) | undefined): unknown => {
    if (explicit === false) return undefined;
    if (explicit !== undefined && explicit !== null) return explicit;
    return fallback?.();
  };

  /** The methods the server answers on `path` (empty: the path is unknown). */
  const allowedMethods = (path: string): string[] => {
    if (path === "/v1/chat/completions") return ["POST"];
    if (path === "/v1/models" || path.startsWith("/v1/models/")) return ["GET", "HEAD"];
    if (path === "/props" && getBody(options.props, personality?.props?.bind(personality)) !== undefined)
      return ["GET", "HEAD"];
    if (
      path === "/api/v0/models" &&
      getBody(options.lmstudio, personality?.lmstudioModels?.bind(personality)) !== undefined
    )
      return ["GET", "HEAD"];
    return [];
  };

  /**
   * Answers `request` (its body holding only the fields the client sent); `recorded` is the same
   * request as the host reads it back (a plain parse), recorded and handed to the reply function.
   */
  const route = async (res: ServerResponse, request: RecordedRequest, recorded: RecordedRequest) => {
    const isChat = request.method === "POST" && request.path === "/v1/chat/completions";
    const chatIndex = chatRequests.length;
    if (isChat) chatRequests.push(recorded);
    // A CORS preflight is answered before anything else, as llama-server does (even while loading).
    if (request.method === "OPTIONS") {
      const allow = allowedMethods(request.path);
      respond.answer(res, {
        status: 204,
        body: "",
        headers: {
          allow: [...(allow.length > 0 ? allow : ["GET", "HEAD", "POST"]), "OPTIONS"].join(", "),
          "access-control-allow-origin": request.headers.origin ?? "*",
          "access-control-allow-methods": "GET, POST",
          "access-control-allow-headers": "*",
        },
      });
      return;
    }
    const intercepted = personality?.intercept?.(request, Date.now() - startedAt);
    if (intercepted) {
      respond.answer(res, intercepted);
      return;
    }
    const { path } = request;
    // HEAD is answered as GET; Node leaves the body out.
    const method = request.method === "HEAD" ? "GET" : request.method;
    if (isChat) {
      await handleChat(res, request, recorded, chatIndex);
      return;
    }
    if (method === "GET" && path === "/v1/models") {
      respond.answer(res, { status: 200, body: modelsBody() });
      return;
    }
    if (method === "GET" && path.startsWith("/v1/models/")) {
      let id: string;
      try {
        id = decodeURIComponent(path.slice("/v1/models/".length));
      } catch {
        respond.answer(
          res,
          openAiError(400, `loopwright testkit: the model id in ${path} is not valid percent-encoding.`),
        );
        return;
      }
      const body = modelsBody();
      const data = isRecord(body) && Array.isArray(body.data) ? body.data : [];
      const found = data.find((m: unknown) => isRecord(m) && m.id === id);
      if (found) {
        respond.answer(res, { status: 200, body: found });
        return;
      }
      const message = `The model \`${id}\` does not exist or you do not have access to it.`;
      respond.answer(res, {
        status: 404,
        body: { error: { message, type: "invalid_request_error", param: null, code: "model_not_found" } },
      });
      return;
    }
    const extra =
      method === "GET" && path === "/props"
        ? getBody(options.props, personality?.props?.bind(personality))
        : method === "GET" && path === "/api/v0/models"
          ? getBody(options.lmstudio, personality?.lmstudioModels?.bind(personality))
          : undefined;
    if (extra !== undefined) {
      respond.answer(res, { status: 200, body: extra });
      return;
    }
    const answer = personality?.route?.(method === request.method ? request : { ...request, method });
    if (answer) {
      respond.answer(res, answer);
      return;
    }
    const allowed = allowedMethods(path);
    const own = personality?.notFound?.(request, allowed);
    if (own) {
      respond.answer(res, own);
      return;
    }
    if (allowed.length > 0) {
      const message = `loopwright testkit: ${request.method} is not allowed on ${path}; use ${allowed.join(" or ")}.`;
      respond.answer(res, {
        status: 405,
        body: { error: { message, type: "invalid_request_error", param: null, code: null } },
        headers: { allow: allowed.join(", ") },
      });
      return;
    }
    const message = `loopwright testkit: no route for ${request.method} ${path}.`;
    respond.answer(res, { status: 404, body: { error: { message, type: "not_found_error", code: null } } });
  };

  /**
   * The last word on a request whose handling threw: a 500 naming the failure, sent without the
   * personality's headers (they may be what failed); a stream already under way is cut instead.
   * Never throws, so nothing escapes as an unhandled rejection.
   */
  const failed = (res: ServerResponse, error: unknown) => {
    try {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const message = error instanceof Error ? error.message : String(error);
      const body = openAiError(500, `loopwright testkit: ${message}`, "server_error").body;
      res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    } catch {
      res.destroy();
    }
  };

  const server = createServer((req, res) => {
    void (async () => {
      const raw = await readBody(req);
      const url = req.url ?? "/";
      const request: RecordedRequest = {
        method: (req.method ?? "GET").toUpperCase(),
        path: url.split("?")[0] ?? "/",
        url,
        headers: headerRecord(req),
        body: parseJson(raw),
        raw,
      };
      requests.push(request);
      // Read as sent: the personality, the script and the answer read the body's own fields.
      await route(res, { ...request, body: parseOwnBody(raw) }, request);
    })().catch((error: unknown) => failed(res, error));
  });
  // Only the client closes an idle kept-alive connection. Node's server closes one after 5 s; the
  // server and the test's client share one event loop, so a test that keeps that loop busy past
  // 5 s (a timing loop, a big parse) woke both timers at once: the server hung up as the client
  // wrote its next request on the same socket, which failed with "Connection error" and left its
  // queued reply for the request after (one reply out of step). close() still ends every socket.
  server.keepAliveTimeout = 0;
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${bound}`;
  let closing: Promise<void> | undefined;

  return {
    baseUrl: `${origin}/v1`,
    origin,
    port: bound,
    requests,
    chatRequests,
    enqueue(...replies: Reply[]) {
      // All or nothing: a bad reply anywhere in the call leaves the queue as it was.
      queue.push(...checkedList(replies, (i) => `enqueue: reply #${i + 1}`));
    },
    get pending() {
      return queue.length;
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        stop.abort();
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
