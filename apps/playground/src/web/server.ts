// The playground's web page, served by a small Node server on 127.0.0.1: one conversation, one run at a
// time, its events read off the runtime's bus and sent to the page as server-sent events, numbered by
// `seq` so a reconnect (Last-Event-ID) or a reload picks up exactly where it left off.
import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { extname, join, normalize, resolve as resolvePath, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { createClientPool } from "@loopwright/client";
import type { RunEvent, SequencedEvent } from "@loopwright/events";
import {
  type ChatMessage,
  createRuntime,
  errorMessage,
  failedRun,
  type LoopConfig,
  type Runtime,
  type ToolDefinition,
} from "@loopwright/loop";
import { createRedisStores, type RedisStores, readEventId } from "@loopwright/redis";
import { startServer, type TestServer } from "@loopwright/testkit";
import { partialAnswer, settleRun } from "../conversation.js";
import { ENV_SETTINGS, endpointHint, type HintSettings } from "../endpoint-hint.js";
import { runTool, TOOLS } from "../tools/index.js";
import { connectSharedRuns, type RunInfo, type SharedRuns, SharedRunsError } from "./shared-runs.js";
import { type AppliedSpec, checkSpec, type SpecReport, shownText } from "./spec.js";

/** The system prompt of a run when no agent spec gives one. */
export const WEB_SYSTEM =
  "You are a helpful assistant shown on a web page. Use the tools when they help: clock for the time, " +
  "calculator for arithmetic, read_file for files under the current directory. Answer briefly.";

/** How long a state read waits for the endpoint's window before answering without one. */
const STATE_WINDOW_WAIT_MS = 2000;

/** The window the simulator's model listing states, so the page has something to draw against. */
export const SIMULATOR_WINDOW = 8192;

/** Options for {@link startWebServer}. */
export interface WebServerOptions {
  /** Port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
  /** The endpoint; the testkit simulator on a loopback port when absent. */
  endpoint?: { baseUrl: string; apiKey?: string; model?: string; contextLength?: number };
  /** An agent spec document (its text) applied before the first run, as the page would load it. */
  spec?: string;
  /** Where the built page is; `dist/web` of this package by default. */
  pageDir?: string;
  /**
   * Adds a `hang_forever` tool that never answers until the run is stopped. For the browser tests of
   * the stop button only; the scripted simulator calls it when a prompt names it.
   */
  hangTool?: boolean;
  /**
   * How long a finished run's events stay for a reload to replay (the bus's `retainEndedMs`; default
   * 10 minutes). Without `redis` only; Redis keeps them as `createRedisStores` does.
   */
  retainEndedMs?: number;
  /** The simulator's milliseconds between streamed chunks (default 10). */
  chunkDelayMs?: number;
  /**
   * A Redis URL: the runtime's bus, capability latches, calibration and window-route latches live
   * there (`createRedisStores`), so another playground on the same Redis can follow this one's runs
   * (and this one theirs: `GET /api/runs/<id>/events` serves any run Redis holds).
   */
  redis?: string;
  /**
   * With `redis`: how long a page following another instance's run, which its shared record names
   * as not ended but of which Redis holds nothing (no stream, no claim), waits for the run's first
   * event before it is told the run is gone (its host stopped without ending it, and its stream
   * expired). A run is recorded before its first event, which comes after its window lookup; default
   * {@link DEFAULT_UNWRITTEN_GRACE_MS}. A page resuming such a run after an event it has (its
   * Last-Event-ID) waits the same grace: the run did write, but its stream may only have been lost
   * to a Redis restart or an eviction, and comes back with the live run's next write.
   */
  unwrittenGraceMs?: number;
}

/** The event bus's default `retainEndedMs` (@loopwright/events): how long this instance keeps an ended run. */
const DEFAULT_RETAIN_ENDED_MS = 10 * 60_000;

/** The default of {@link WebServerOptions.unwrittenGraceMs}: a minute. */
export const DEFAULT_UNWRITTEN_GRACE_MS = 60_000;

/** A running web playground. */
export interface WebServer {
  /** `http://127.0.0.1:<port>/` */
  readonly url: string;
  /** What the `spec` option given resolved to (its errors, or what the runs use); absent without one. */
  readonly spec?: SpecReport;
  /** Stops any run in progress, then the HTTP server and the simulator. */
  close(): Promise<void>;
}

interface Run {
  id: string;
  prompt: string;
  controller: AbortController;
  ended: boolean;
}

const HANG_TOOL: ToolDefinition = {
  type: "function",
  function: {
    name: "hang_forever",
    description: "Never returns (a test tool for the stop button).",
    parameters: { type: "object", properties: {}, additionalProperties: false },
  },
};

const PAGE_DIR = fileURLToPath(new URL("../../dist/web/", import.meta.url));

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
};

const MAX_BODY = 1_000_000;

/**
 * A request body over {@link MAX_BODY}: answered 413 with `connection: close`, since the rest of it is
 * never read and the connection cannot carry another request.
 */
class BodyTooLargeError extends Error {
  constructor() {
    super("request body over 1 MB");
    this.name = "BodyTooLargeError";
  }
}

/**
 * A body that is not JSON, told by where the parser stopped only: the parser's own message quotes
 * part of the body back (a prompt, a spec holding a key), and that text has no place in an answer.
 */
class BodyNotJsonError extends Error {
  constructor(position: number | undefined) {
    super(`the request body is not valid JSON${position === undefined ? "" : ` (at position ${position})`}`);
    this.name = "BodyNotJsonError";
  }
}

/**
 * A watcher's own last word: a `notice` with `dropped: 0` (the Redis watcher's "the run's stream is
 * gone"). It is never stored in the run, and its seq is the last one the watcher read, so a reader
 * that skips what it has by seq keeps it even at that seq (the Redis package's rule).
 */
function isWatcherWord(event: SequencedEvent<RunEvent>): boolean {
  return event.kind === "notice" && event.dropped === 0;
}

function infoOf(run: Run): RunInfo {
  return { id: run.id, prompt: run.prompt, ended: run.ended };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  // A length said up front is refused before any of it is read.
  if (Number(req.headers["content-length"] ?? 0) > MAX_BODY) throw new BodyTooLargeError();
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) throw new BodyTooLargeError();
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  if (!text) return {};
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    // Only the number is taken from the parser's message; none of its other words are passed on.
    const at = /\bat position (\d+)/.exec(error instanceof Error ? error.message : "");
    throw new BodyNotJsonError(at ? Number(at[1]) : undefined);
  }
}

/** An option's value as an error quotes it: a number as written, anything else as JSON. */
function shownOption(value: unknown): string {
  return typeof value === "number" ? String(value) : (JSON.stringify(value) ?? String(value));
}

/**
 * Starts the web playground: the built page, `POST /api/runs` to ask, `POST /api/runs/<id>/stop`,
 * `GET /api/runs/<id>/events` (SSE, replayed after `Last-Event-ID` or `?after=`), `GET /api/state`,
 * `POST /api/spec` and `POST /api/conversation/reset` (a new conversation; refused while a run goes). Listens on 127.0.0.1 only.
 */
export async function startWebServer(options: WebServerOptions = {}): Promise<WebServer> {
  const grace = options.unwrittenGraceMs;
  if (grace !== undefined && (typeof grace !== "number" || !Number.isFinite(grace) || grace < 0)) {
    throw new TypeError(
      `startWebServer: \`unwrittenGraceMs\` must be a number of ms, 0 or more, and was given ${typeof grace === "number" ? String(grace) : (JSON.stringify(grace) ?? String(grace))}.`,
    );
  }
  // The bus would read NaN, 0 or a negative as its default while this server's own map of runs forgot
  // an ended run at once (a timer of NaN fires now): a page reloading it was told 404 for events kept.
  const retain = options.retainEndedMs;
  if (retain !== undefined && (typeof retain !== "number" || !Number.isFinite(retain) || retain <= 0)) {
    throw new TypeError(
      `startWebServer: \`retainEndedMs\` must be a number of ms above 0, or absent, and was given ${shownOption(retain)}.`,
    );
  }
  // A window of -5 or 1.5 tokens went to every run as it stood (and a 0 or NaN read as none, unsaid).
  const window = options.endpoint?.contextLength;
  if (window !== undefined && !(Number.isSafeInteger(window) && window > 0)) {
    throw new TypeError(
      `startWebServer: \`endpoint.contextLength\` must be a whole number of tokens above 0 (as 8192), or absent, and was given ${shownOption(window)}.`,
    );
  }
  const redis = options.redis;
  // Empty (or not text): no Redis at all, where the caller asked for one.
  if (redis !== undefined && (typeof redis !== "string" || redis.trim() === "")) {
    throw new TypeError(
      `startWebServer: \`redis\` must be a Redis URL (as redis://127.0.0.1:6379), or absent, and was given ${JSON.stringify(redis) ?? String(redis)}.`,
    );
  }
  const stores: RedisStores | undefined = redis ? await createRedisStores({ url: redis }) : undefined;
  let shared: SharedRuns | undefined;
  try {
    shared = redis ? await connectSharedRuns(redis) : undefined;
  } catch (error) {
    await stores?.close();
    throw error;
  }
  const runtime: Runtime = stores
    ? createRuntime({
        stores: {
          clients: createClientPool({ routeLatches: stores.routeLatches }),
          capabilities: stores.capabilities,
          calibration: stores.calibration,
          bus: stores.bus,
        },
      })
    : createRuntime(
        options.retainEndedMs !== undefined ? { events: { retainEndedMs: options.retainEndedMs } } : {},
      );
  const simulator: TestServer | undefined = options.endpoint
    ? undefined
    : await startServer({
        scriptedModel: { chunkDelayMs: options.chunkDelayMs ?? 10 },
        prefixCache: true,
        models: [{ id: "loopwright-simulator", context_length: SIMULATOR_WINDOW }],
      });
  /** Whether runs with `cfg` go to the built-in simulator (a loaded spec may name an endpoint instead). */
  const isSimulator = (cfg: LoopConfig) => simulator !== undefined && cfg.baseUrl === simulator.baseUrl;
  /**
   * What named `cfg`'s endpoint, model and key, for the hint under its error: the environment, or a
   * loaded spec (on the simulator, whatever is not the simulator's is the spec's). An endpoint a spec
   * names is sent no key (`checkSpec`).
   */
  const hintSettings = (cfg: LoopConfig): HintSettings => {
    const specUrl = simulator !== undefined || cfg.baseUrl !== base.baseUrl;
    const specModel = simulator !== undefined || cfg.model !== base.model;
    return {
      url: specUrl ? "the spec's model.endpoint.baseUrl" : ENV_SETTINGS.url,
      model: specModel ? "the spec's model.name" : ENV_SETTINGS.model,
      key: specUrl ? undefined : ENV_SETTINGS.key,
    };
  };
  const base: LoopConfig = simulator
    ? { baseUrl: simulator.baseUrl, model: "loopwright-simulator", maxToolIterations: 8 }
    : {
        baseUrl: options.endpoint!.baseUrl,
        apiKey: options.endpoint!.apiKey ?? "",
        model: options.endpoint!.model ?? "gpt-4o-mini",
        maxToolIterations: 8,
        ...(window !== undefined ? { contextLength: window } : {}),
      };
  let applied: AppliedSpec | undefined;
  let lastSpec: SpecReport | undefined;
  const tools = options.hangTool ? [...TOOLS, HANG_TOOL] : TOOLS;
  const history: ChatMessage[] = [];
  /**
   * This instance's runs: each kept until its events are let go (the bus's `retainEndedMs` after its
   * end), then forgotten — its prompt (up to a 1 MB body) is not held for the life of the process. The
   * latest run stays known (`latest`), so a page opened later is told it ended (410).
   */
  const runs = new Map<string, Run>();
  const retainEnded = options.retainEndedMs ?? DEFAULT_RETAIN_ENDED_MS;
  /**
   * The timers that forget each ended run. Cleared by `close()`: each held the whole server (its
   * runs' prompts, the conversation, the bus's events) for `retainEndedMs` after it closed.
   */
  const forgetting = new Set<NodeJS.Timeout>();
  /** A run of this instance's by id: one still kept, or the latest. */
  const local = (id: string): Run | undefined => runs.get(id) ?? (latest?.id === id ? latest : undefined);
  /** The runs still going, each settled once its conversation is kept and its `done` emitted. */
  const endings = new Set<Promise<void>>();
  let latest: Run | undefined;
  const windows = new Map<string, number>();
  /** Set by `close()` just before it closes the stores: nothing is emitted after. */
  let storesClosed = false;
  /**
   * Set as `close()` begins: a prompt that comes in while it waits for the runs to end (and the
   * server to stop listening) is refused, since its run would start after the stop it cannot get.
   */
  let closing = false;
  const allowedHosts = new Set<string>();

  const config = (): LoopConfig => ({ ...base, ...(applied?.config ?? {}) });
  /**
   * Ends the state reads' lookups in flight at `close()`: a read answers without a window after 2 s
   * while its lookup goes on, and that lookup (up to its 10 s bound against a listing that does not
   * answer) kept a request to the endpoint open, and the process alive, after close().
   */
  const lookupsEnd = new AbortController();
  /** The state reads' lookup of each endpoint and model, while one is in flight: they share it. */
  const lookingUp = new Map<string, { lookup: Promise<number>; began: number }>();
  const windowKey = (cfg: LoopConfig) => `${cfg.baseUrl}\u0000${cfg.model}`;
  const windowOf = async (cfg: LoopConfig, signal?: AbortSignal): Promise<number> => {
    const key = windowKey(cfg);
    const known = windows.get(key);
    if (known !== undefined) return known;
    const found = await runtime.clients
      .contextLimitFor(
        { baseUrl: cfg.baseUrl, apiKey: cfg.apiKey, model: cfg.model },
        cfg.contextLength ?? undefined,
        signal ? { signal } : undefined,
      )
      .catch(() => 0);
    // Only a window found is kept: a server still loading its model (llama.cpp's 503 on /props)
    // answers none yet, and the next state read or run asks again.
    if (found > 0) windows.set(key, found);
    return found;
  };
  /**
   * The window for a state read: the page's first load (and every later read) would otherwise wait
   * out the lookup's bound, 10 s, on an endpoint whose listing never answers. Reads share the lookup
   * in flight and wait for it until `STATE_WINDOW_WAIT_MS` after it began, answering 0 (no window
   * shown) past that; the lookup goes on, and what it finds is there for the next read.
   */
  const stateWindow = (cfg: LoopConfig): Promise<number> => {
    const key = windowKey(cfg);
    const known = windows.get(key);
    if (known !== undefined) return Promise.resolve(known);
    let flight = lookingUp.get(key);
    if (!flight) {
      flight = {
        lookup: windowOf(cfg, lookupsEnd.signal).finally(() => lookingUp.delete(key)),
        began: Date.now(),
      };
      lookingUp.set(key, flight);
    }
    const left = flight.began + STATE_WINDOW_WAIT_MS - Date.now();
    if (left <= 0) return Promise.resolve(0);
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<number>((resolve) => {
      timer = setTimeout(() => resolve(0), left);
    });
    return Promise.race([flight.lookup, waited]).finally(() => clearTimeout(timer));
  };

  const dispatch = (
    { name, args }: { name: string; args: Record<string, unknown> },
    signal?: AbortSignal,
  ) => {
    if (name === HANG_TOOL.function.name && options.hangTool) {
      return new Promise<string>((_, reject) => {
        signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
      });
    }
    // Neither key reaches a model through a tool result, least of all one a loaded spec pointed at.
    return runTool(name, args, undefined, [base.apiKey ?? "", process.env.OPENAI_API_KEY ?? ""]);
  };

  const start = async (prompt: string): Promise<Run> => {
    const run: Run = { id: randomUUID(), prompt, controller: new AbortController(), ended: false };
    const previous = latest;
    runs.set(run.id, run);
    latest = run;
    // Read as the run is asked for, before Redis takes it: a spec loaded while the put waited (a
    // slow Redis, up to its 3 s) gave the run that spec's model, endpoint and system prompt. Read
    // with the config, the system prompt too: a spec loaded while the run still looked up its
    // window gave the run its system prompt, sent to the model and endpoint of the spec before.
    const cfg = config();
    const system = applied?.system ?? WEB_SYSTEM;
    try {
      await shared?.put(infoOf(run));
    } catch (error) {
      // Redis did not take the run in time (SharedRunsError): it is forgotten here, and nothing of
      // it starts later, when Redis answers again; the page is told why (503).
      runs.delete(run.id);
      latest = previous;
      throw error;
    }
    // Past `close()`, a run still ending (one its stop reached late) has no bus to tell: the Redis
    // bus refuses an emit after its close, and that refusal would be no one's to catch.
    const emit = (event: RunEvent) => {
      if (!storesClosed) runtime.bus.emit(run.id, event);
    };
    const seen = partialAnswer();
    const before = [...history];
    // The window lookup is part of the run: Stop (and `close()`) ends it there too, at once, rather
    // than once the endpoint's listing answers (up to the lookup's bound, 10 s), and `close()` waits
    // for a run still in it as for any other.
    const ending = windowOf(cfg, run.controller.signal)
      .then((contextLength) =>
        runtime.runAgentLoop({
          config: contextLength > 0 ? { ...cfg, contextLength } : cfg,
          system,
          messages: [...before, { role: "user", content: prompt }],
          tools,
          dispatch,
          signal: run.controller.signal,
          onEvent: (event) => {
            seen.see(event);
            emit(event);
          },
        }),
      )
      .then(
        (result) => {
          history.splice(0, history.length, ...result.messages);
          return false;
        },
        (error: unknown) => {
          // A failed prompt is not left dangling for the next one to be joined onto (see settleRun).
          const stopped = run.controller.signal.aborted;
          const settled = settleRun(before, failedRun(error)?.messages, stopped, seen.text);
          history.splice(0, history.length, ...settled.messages);
          if (!stopped) {
            const message = errorMessage(error);
            emit({ kind: "error", message });
            // What to check, as the terminal says it under the same error (endpointHint), sent as a
            // notice so the page draws it as a dim line of text, and a reload or another instance
            // following the run over Redis replays it with the error. The simulator's own failures
            // are nothing the user's settings could fix.
            const hint = isSimulator(cfg)
              ? undefined
              : endpointHint(message, cfg.baseUrl, cfg.model, hintSettings(cfg));
            if (hint) emit({ kind: "notice", text: shownText(hint) });
          }
          if (settled.notice) emit({ kind: "notice", text: settled.notice });
          return stopped;
        },
      )
      .then((stopped) => {
        run.ended = true;
        // Forgotten with its events: the bus lets them go `retainEndedMs` after its end. Past
        // `close()` there is nothing to keep it for.
        if (!storesClosed) {
          const timer = setTimeout(() => {
            forgetting.delete(timer);
            runs.delete(run.id);
          }, retainEnded).unref();
          forgetting.add(timer);
        }
        emit(stopped ? { kind: "done", stopped: true } : { kind: "done" });
        shared?.put(infoOf(run)).catch(() => {
          // The record only tells other instances the run ended; their watchers see `done` anyway.
        });
        endings.delete(ending);
      });
    endings.add(ending);

    return run;
  };

  /** A run by id: this instance's, else (with Redis) one another instance started. */
  const find = async (id: string): Promise<RunInfo | undefined> => {
    const mine = local(id);
    return mine ? infoOf(mine) : await shared?.get(id);
  };

  const state = async (runId: string | null) => {
    const cfg = config();
    const shown = runId ? await find(runId) : ((await shared?.latest()) ?? (latest && infoOf(latest)));
    // Where the next run goes: a loaded spec may name an endpoint in place of the simulator.
    const onSimulator = isSimulator(cfg);
    return {
      mode: onSimulator ? "simulator" : "endpoint",
      baseUrl: onSimulator ? undefined : shownText(cfg.baseUrl),
      model: shownText(cfg.model),
      contextLength: await stateWindow(cfg),
      spec: lastSpec,
      run: shown,
      shared: shared !== undefined,
    };
  };

  const events = async (req: IncomingMessage, res: ServerResponse, run: RunInfo, url: URL) => {
    const header = req.headers["last-event-id"];
    // The id sent with the last event the page has: `<seq>:<token>` (the Redis watcher's, naming the
    // emitter whose run it read) or a bare seq.
    const asked = typeof header === "string" && header ? header : (url.searchParams.get("after") ?? "0");
    let resume: { seq: number; id: string };
    try {
      resume = { seq: readEventId(asked).seq, id: asked };
    } catch (error) {
      sendJson(res, 400, { error: (error as Error).message });
      return;
    }
    const after = resume.seq;
    const held = stores
      ? (await stores.bus.readHistory(run.id, 0)).length
      : runtime.bus.history(run.id).length;
    // A page that left while the lookups above waited (Redis slow to answer) is not watched for: its
    // close came before any listener could hear it, and a watcher (with Redis, a connection of its
    // own) would follow the run for no one until the run ends.
    if (req.socket.destroyed) return;
    if (run.ended && held === 0) {
      sendJson(res, 410, { error: "This run ended long enough ago that its events were dropped." });
      return;
    }
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      connection: "keep-alive",
    });
    res.write("retry: 300\n\n");
    const controller = new AbortController();
    req.on("close", () => controller.abort());
    // The Redis bus replays from Redis after `after`, from whichever instance ran the run. A run of
    // another instance's that its record names as not ended, with nothing held, started (it was
    // recorded) but may be gone: its host stopped without ending it and its stream expired (the
    // record outlives it). The watcher says so (a `notice` with `dropped: 0`) and ends, once the
    // stream stays missing with no claim for the grace (a run may not have written its first event
    // yet; a live run's stream lost to a Redis restart or an eviction comes back with its next write).
    const unwritten = held === 0 && !run.ended && !local(run.id);
    // The Redis watcher gives each event an id naming the run it read (`idOf`): a page resuming from it
    // reads on through that run's batch sent again after Redis lost its stream, and not another run's.
    const watched: AsyncIterable<SequencedEvent<RunEvent>> & { idOf?: (event: SequencedEvent) => string } =
      stores
        ? stores.bus.watch(run.id, controller.signal, {
            after: resume.id,
            ...(unwritten
              ? { started: true, startedGraceMs: options.unwrittenGraceMs ?? DEFAULT_UNWRITTEN_GRACE_MS }
              : {}),
          })
        : runtime.bus.watch(run.id, controller.signal);
    void (async () => {
      for await (const event of watched) {
        // What the reader has (up to `after`) is not sent again — except a watcher's own word at
        // `after` (a `notice` with `dropped: 0`: the Redis watcher's "stream is gone"), which is
        // never stored, so never sent before, and carries the last seq read.
        if (event.seq < after || (event.seq === after && !isWatcherWord(event))) continue;
        res.write(
          `id: ${watched.idOf ? watched.idOf(event) : event.seq}\ndata: ${JSON.stringify(event)}\n\n`,
        );
      }
      res.end();
    })();
  };

  const page = async (res: ServerResponse, path: string) => {
    // Resolved: a relative pageDir (`./dist/web`) is compared with the normalized path of each file.
    const root = resolvePath(options.pageDir ?? PAGE_DIR);
    const file = normalize(join(root, path === "/" ? "index.html" : decodeURIComponent(path)));
    if (!file.startsWith(root.endsWith(sep) ? root : root + sep))
      return sendJson(res, 404, { error: "not found" });
    try {
      const body = await readFile(file);
      res.writeHead(200, {
        "content-type": TYPES[extname(file)] ?? "application/octet-stream",
        "cache-control": path.startsWith("/assets/") ? "public, max-age=31536000, immutable" : "no-cache",
      });
      res.end(body);
    } catch {
      if (path === "/") {
        res.writeHead(500, { "content-type": "text/plain; charset=utf-8" });
        res.end(
          "The page is not built: run `pnpm --filter @loopwright/playground build` (or `pnpm playground --web`).\n",
        );
      } else sendJson(res, 404, { error: "not found" });
    }
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const path = url.pathname;
    const method = req.method ?? "GET";
    // Only this machine's own names (a page on another site cannot rebind its name to us), and only
    // JSON posts (a form or a plain-text post from another site's page is refused).
    const host = req.headers.host ?? "";
    // Nothing it serves is shown in another page's frame (a page could lay the playground, unseen,
    // under a decoy and take the user's clicks: Stop, New conversation, a spec dropped in), and no
    // answer is read as another type than it says.
    res.setHeader("x-frame-options", "DENY");
    res.setHeader("content-security-policy", "frame-ancestors 'none'");
    res.setHeader("x-content-type-options", "nosniff");
    if (!allowedHosts.has(host)) return sendJson(res, 403, { error: `unexpected Host ${host}` });
    if (method === "POST" && !/^application\/json\b/i.test(req.headers["content-type"] ?? ""))
      return sendJson(res, 415, { error: "POST bodies must be application/json" });
    if (path === "/api/state" && method === "GET")
      return sendJson(res, 200, await state(url.searchParams.get("run")));
    if (path === "/api/spec" && method === "POST") {
      const body = (await readBody(req)) as { text?: unknown };
      if (typeof body?.text !== "string") return sendJson(res, 400, { error: "expected { text: string }" });
      const report = checkSpec(body.text, base);
      lastSpec = report.report;
      if (report.applied) applied = report.applied;
      return sendJson(res, 200, report.report);
    }
    if (path === "/api/runs" && method === "POST") {
      const body = (await readBody(req)) as { prompt?: unknown };
      const prompt = typeof body?.prompt === "string" ? body.prompt.trim() : "";
      if (!prompt) return sendJson(res, 400, { error: "expected { prompt: string } with some text" });
      // Before, a prompt that came in during `close()` (its wait for the runs' last events) started a
      // run no one stopped: it went on calling the endpoint, and running its tools, after close().
      if (closing)
        return sendJson(res, 503, { error: "the playground is closing: the prompt was not started" });
      if (latest && !latest.ended)
        return sendJson(res, 409, { error: "a run is in progress", id: latest.id });
      const run = await start(prompt);
      return sendJson(res, 201, { id: run.id });
    }
    if (path === "/api/conversation/reset" && method === "POST") {
      if (latest && !latest.ended)
        return sendJson(res, 409, { error: "a run is in progress: stop it first", id: latest.id });
      history.splice(0, history.length);
      return sendJson(res, 200, { messages: 0 });
    }
    const match = /^\/api\/runs\/([\w-]+)\/(events|stop)$/.exec(path);
    if (match) {
      const info = await find(match[1]!);
      if (!info) return sendJson(res, 404, { error: "no such run" });
      if (match[2] === "events" && method === "GET") return events(req, res, info, url);
      const run = local(info.id);
      if (!run) return sendJson(res, 409, { error: "this run is running on another playground instance" });
      if (match[2] === "stop" && method === "POST") {
        if (!run.ended) run.controller.abort(new Error("Stopped from the page."));
        return sendJson(res, 202, { id: run.id });
      }
    }
    if (method === "GET" && !path.startsWith("/api/")) return page(res, path);
    return sendJson(res, 404, { error: "not found" });
  };

  if (options.spec !== undefined) {
    const report = checkSpec(options.spec, base);
    lastSpec = report.report;
    applied = report.applied;
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      // Redis not answering the shared runs is the server's trouble (503), not the request's.
      if (res.headersSent) res.end();
      else if (error instanceof BodyTooLargeError) {
        res.writeHead(413, {
          "content-type": "application/json; charset=utf-8",
          "cache-control": "no-store",
          connection: "close",
        });
        res.end(JSON.stringify({ error: error.message }));
      } else if (error instanceof SharedRunsError) sendJson(res, 503, { error: error.message });
      else if (error instanceof BodyNotJsonError) sendJson(res, 400, { error: error.message });
      else sendJson(res, 400, { error: errorMessage(error) });
    });
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(options.port ?? 0, "127.0.0.1", () => resolve());
    });
  } catch (error) {
    // What was started for the page would keep the process alive after the error is told.
    await simulator?.close();
    await shared?.close();
    await stores?.close();
    if ((error as { code?: unknown }).code === "EADDRINUSE") {
      throw new Error(
        `127.0.0.1:${options.port} is already in use by another program: choose another --port (0 picks a free one).`,
        { cause: error },
      );
    }
    throw error;
  }
  const { port } = server.address() as AddressInfo;
  allowedHosts.add(`127.0.0.1:${port}`).add(`localhost:${port}`);
  return {
    url: `http://127.0.0.1:${port}/`,
    ...(options.spec !== undefined && lastSpec !== undefined ? { spec: lastSpec } : {}),
    async close() {
      closing = true;
      lookupsEnd.abort(new Error("Server closing."));
      for (const run of runs.values()) if (!run.ended) run.controller.abort(new Error("Server closing."));
      // A stopped run's last events (its notice, `done`) reach the pages before the connections
      // close, so a page watching says the run stopped rather than waiting on a silent stream.
      // The bound's timer is cleared once they have: it kept the process (a test run, a host that
      // closed the playground to exit) waiting the full 2 s after every close.
      let bound: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(endings),
        new Promise((resolve) => {
          bound = setTimeout(resolve, 2000);
        }),
      ]);
      clearTimeout(bound);
      await new Promise((resolve) => setTimeout(resolve, 50));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      storesClosed = true;
      // Nothing of the closed server stays reachable: not its runs, conversation or buffered events.
      for (const timer of forgetting) clearTimeout(timer);
      forgetting.clear();
      runs.clear();
      latest = undefined;
      history.splice(0, history.length);
      // The in-memory bus and caches are this server's own (Redis's are closed with the stores below).
      if (!stores) runtime.close();
      await simulator?.close();
      await shared?.close();
      await stores?.close();
    },
  };
}
