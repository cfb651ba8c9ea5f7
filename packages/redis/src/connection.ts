import {
  ClientClosedError,
  ClientOfflineError,
  ConnectionTimeoutError,
  createClient,
  ErrorReply,
} from "@redis/client";
import { RedisStoreError } from "./errors.js";

/** The node-redis client this package drives (RESP2, no modules). */
export type RedisConnection = ReturnType<typeof connection>;

/** Where a store's Redis is and how its keys are spelled: the options every factory here reads. */
export interface RedisOptions {
  /**
   * A `redis://` (or `rediss://`) URL, such as `redis://127.0.0.1:6379`; its path, if any, is the
   * database number (`redis://127.0.0.1:6379/2`). Messages name it without its password.
   */
  url: string;
  /**
   * Put in front of every key and channel, so two deployments can share one server. Default `"lw:"`.
   * Well-formed text: one holding an unpaired surrogate is refused (Redis would store it as U+FFFD).
   */
  prefix?: string | undefined;
  /**
   * Told of every failure the store survives on its own: a lost connection, a write that will be
   * retried, events dropped because Redis stayed away too long. Never awaited; what it throws is
   * ignored, and so is what an `async` one rejects with. Default: nothing.
   */
  onError?: ((error: unknown) => void) | undefined;
  /**
   * How long, in ms, to wait for Redis to take a connection and to answer each command a factory
   * sends while it starts (the handshake, the first `PING`, the subscription, each read of what is
   * shared); also each command of a reload after a reconnect. A server that keeps the connection open
   * and answers nothing (a stopped process, a network partition) fails the factory with
   * `RedisStoreError` (`connect`) after this long, instead of hanging it. Four times it is how long
   * the capability store's `sync()` waits for Redis to settle one more of its latch writes before
   * it rejects naming how many are still owed, and how long each store's `writtenBack()` waits by
   * default. A factory's and a reload's waits are counted from the first turn of the event loop
   * after the command was handed over, with a tenth of a second more with the process free: a host
   * busy right after calling a factory gets its store. Default 5000.
   */
  connectTimeoutMs?: number | undefined;
}

/** The checked form of {@link RedisOptions}. */
export interface Resolved {
  url: string;
  prefix: string;
  report: (error: unknown) => void;
  connectTimeoutMs: number;
}

/** How long a factory waits for Redis to answer, by default (`connectTimeoutMs`). */
export const DEFAULT_CONNECT_TIMEOUT_MS = 5000;

/** The longest a Node timer waits (about 24.8 days); a longer bound is held to it. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Checks a timing option: absent is `fallback`, else a positive, finite number of ms (held to what
 * a timer can wait). Throws `RedisStoreError` (`invalid-option`) naming it.
 */
export function timeoutOption(value: unknown, name: string, where: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || !(value > 0)) {
    throw new RedisStoreError(
      "invalid-option",
      `${where}: \`${name}\` must be a finite number of ms greater than 0 (leave it out for the default, ${fallback} ms), and was given ${
        typeof value === "number"
          ? String(value)
          : value === null
            ? "null"
            : typeof value === "string"
              ? `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`
              : `a ${typeof value}`
      }.`,
    );
  }
  return Math.min(value, MAX_TIMER_MS);
}

/** A bound in words: "5 s", "300 ms". */
export function shownMs(ms: number): string {
  return ms >= 1000 && ms % 100 === 0 ? `${ms / 1000} s` : `${Math.round(ms)} ms`;
}

/**
 * How long a bound that has run out is given more, with the event loop free (a timer that fires on
 * time), before what it waits for counts as unanswered: the answer may be waiting unread in the
 * socket behind a loop that was busy.
 */
export const GRACE_MS = 100;

/**
 * Calls `silent` once `work` has gone unanswered for `ms` of the time Redis had to answer it, and
 * then for {@link GRACE_MS} more with the event loop free; stops watching when `work` settles, or
 * when the function it answers is called.
 *
 * The clock starts at the first turn of the event loop after `work` was handed over, not at the
 * hand-off. The client does not write a command when it is handed one: it writes in a
 * `setImmediate` of its own, queued by the hand-off, so a process busy right after it (a long
 * synchronous loop, a sweep of tens of thousands of forgets) has not written the command yet, and
 * Redis has had none of that time. Counted from the hand-off, the bound was spent before the command
 * left, and a Redis slowed by load, given only the grace once the loop was free, was taken for
 * silent: what waited past `max` was dropped (the owed work), and so were the bus's events past
 * `maxPending`, with a Redis answering every command at once. The turn after the hand-off is the
 * first moment the command can be on the socket and the first at which this process is free to read
 * an answer; what a `work` hands over after its first round trip is timed with the rest of it.
 *
 * A bound run out is then given the grace with the loop free: a process busy past the bound after
 * the write may have the answer waiting unread in its socket, read once the loop turns. A process
 * busy at every look is never told: it has not been free to read the answer. `ref`: the timer holds
 * the process open (a factory waiting for its handshake); by default it does not.
 */
export function unanswered(
  work: Promise<unknown>,
  ms: number,
  silent: () => void,
  { ref = false }: { ref?: boolean } = {},
): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arm = (wait: number, look: (late: boolean) => void): void => {
    const due = Date.now() + wait;
    timer = setTimeout(() => look(Date.now() - due > GRACE_MS / 2), Math.max(0, wait));
    if (!ref) timer.unref();
  };
  // Late, the loop was busy and an answer may not have been read yet: wait that long again.
  const grace = (late: boolean): void => (late ? arm(GRACE_MS, grace) : silent());
  const start = setImmediate(() => arm(ms, () => arm(GRACE_MS, grace)));
  const stop = (): void => {
    clearImmediate(start);
    clearTimeout(timer);
  };
  work.then(stop, stop);
  return stop;
}

/**
 * Awaits `work`, rejecting with `late()` if it has gone unanswered for `ms` (counted as
 * {@link unanswered} counts: from the first turn of the event loop after the hand-off, with the grace
 * for an answer unread behind a busy loop). `work` itself runs on: a command already written is
 * answered when (if) Redis wakes, so the caller that gives up on it closes the connection, or waits
 * for it on its own terms.
 */
export function within<T>(work: Promise<T>, ms: number, late: () => Error): Promise<T> {
  let stop: () => void = () => {};
  const bound = new Promise<never>((_, reject) => {
    stop = unanswered(work, ms, () => reject(late()), { ref: true });
  });
  return Promise.race([work, bound]).finally(stop);
}

/** The error for a Redis that took the connection and did not answer `what` within the bound. */
function silent(resolved: Resolved, where: string, what: string): RedisStoreError {
  return new RedisStoreError(
    "connect",
    `${where}: Redis at ${shownUrl(resolved.url)} did not answer ${what} within ${shownMs(resolved.connectTimeoutMs)}. ` +
      "Check that the server is running and reachable: a stopped server, or one cut off by the network, " +
      "can keep the connection open and answer nothing. `connectTimeoutMs` sets how long to wait.",
  );
}

/**
 * A Redis URL as a message may name it: its password (`redis://user:password@host`) as `***`, a
 * user name given without a password as `***` too (`redis://password@host`, the colon left out), and
 * without its query and fragment (`?password=…` is a form other clients read) or a path that is not
 * a database number (`redis://u:1234/rest@host`, a password with a "/" not written %2F, parses as
 * host `u`, port 1234 and a path holding the rest of it). A URL with no host whose text is more than
 * a database number (`redis:/user:password@host`, one slash short; `redis:user:password@host`) is not
 * shown at all: the parser reads its credentials as a path, so nothing in it can be told apart.
 */
export function shownUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "(a URL that does not parse)";
  }
  const path = parsed.pathname;
  const database = /^\/?\d*$/.test(path) ? path : "/…";
  if (parsed.host === "" && database === "/…") {
    return "(a URL with no host after its scheme, not shown: what follows may hold a password)";
  }
  const password = parsed.password === "" ? "" : ":***";
  // A user name without a password is a password written where the user name goes, as often as not
  // (`redis://password@host`, its colon left out): not shown either.
  const user = parsed.username !== "" && password === "" ? "***" : parsed.username;
  return `${parsed.protocol}//${user}${password}${user || password ? "@" : ""}${parsed.host}${database}`;
}

/** Checks the common options, throwing `RedisStoreError` (`invalid-option`) naming the bad one. */
export function resolveOptions(options: unknown, where: string): Resolved {
  if (typeof options !== "object" || options === null) {
    throw new RedisStoreError(
      "invalid-option",
      `${where} needs an options object such as { url: "redis://127.0.0.1:6379" }, and was given ${options === null ? "null" : typeof options}.`,
    );
  }
  const { url, prefix, onError, connectTimeoutMs } = options as Record<string, unknown>;
  // A scheme is read whatever its case (`REDIS://`), as the client reads it.
  if (typeof url !== "string" || !/^rediss?:\/\//i.test(url)) {
    throw new RedisStoreError(
      "invalid-option",
      `${where} needs \`url\` as a redis:// or rediss:// URL, and was given ${typeof url === "string" ? JSON.stringify(shownUrl(url)) : (JSON.stringify(url) ?? "nothing")}.`,
    );
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // The parser's error carries the text as its `input`: the password with it.
    throw new RedisStoreError(
      "invalid-option",
      `${where} needs \`url\` as a URL that parses; this one does not.`,
    );
  }
  // The client reads the path as the database number (`/2`), and throws a bare "Invalid pathname"
  // from `createClient` for anything else (a password's "/" not written as %2F ends the host there).
  if (!/^\/?\d*$/.test(parsed.pathname)) {
    throw new RedisStoreError(
      "invalid-option",
      `${where}: \`url\` (${shownUrl(url)}) has a path that is not a database number: after the host and port, ` +
        'write nothing or the database, as in redis://127.0.0.1:6379/2 (a "/" in a password is written %2F).',
    );
  }
  // The client decodes the user name and password (`decodeURIComponent`), throwing a bare "URI
  // malformed" for a `%` that starts no %XX escape.
  for (const [part, text] of [
    ["user name", parsed.username],
    ["password", parsed.password],
  ] as const) {
    try {
      decodeURIComponent(text);
    } catch {
      throw new RedisStoreError(
        "invalid-option",
        `${where}: the ${part} in \`url\` (${shownUrl(url)}) has a "%" that starts no %XX escape of UTF-8 text: write a "%" in it as %25.`,
      );
    }
  }
  if (prefix !== undefined && typeof prefix !== "string") {
    throw new RedisStoreError("invalid-option", `${where}: \`prefix\` must be a string when given.`);
  }
  // Keys go to Redis as UTF-8, where an unpaired surrogate becomes U+FFFD: "a\uD800" and "a\uDC00"
  // would be one prefix, two deployments reading each other's runs and latches.
  if (prefix !== undefined && /\p{Cs}/u.test(prefix)) {
    throw new RedisStoreError(
      "invalid-option",
      `${where}: \`prefix\` holds an unpaired UTF-16 surrogate, which Redis would store as U+FFFD, the same as any other: use well-formed text.`,
    );
  }
  if (onError !== undefined && typeof onError !== "function") {
    throw new RedisStoreError("invalid-option", `${where}: \`onError\` must be a function when given.`);
  }
  const bound = timeoutOption(connectTimeoutMs, "connectTimeoutMs", where, DEFAULT_CONNECT_TIMEOUT_MS);
  const tell = onError as ((error: unknown) => void) | undefined;
  return {
    url,
    prefix: prefix ?? "lw:",
    connectTimeoutMs: bound,
    report: (error) => {
      try {
        const told: unknown = tell?.(error);
        // An `async` reporter throws by rejecting: left alone, that rejection is unhandled, and by
        // default Node ends the process on it.
        if (typeof (told as { then?: unknown } | undefined)?.then === "function") {
          (told as PromiseLike<unknown>).then(undefined, () => {});
        }
      } catch {
        // A reporter that throws must not take the store down with it.
      }
    },
  };
}

/**
 * A client that never queues a command while it is away (so a write fails fast and is retried by
 * its owner), gives up a TCP connect after `connectTimeoutMs` (and tries again), reconnects with a
 * short capped backoff forever, and reports errors instead of throwing them from an event emitter.
 */
export function connection(resolved: Resolved) {
  const client = createClient({
    url: resolved.url,
    RESP: 2,
    disableOfflineQueue: true,
    socket: {
      connectTimeout: resolved.connectTimeoutMs,
      reconnectStrategy: (retries: number) => Math.min(25 * 2 ** retries, 500),
    },
  });
  reportErrors(client, resolved);
  return client;
}

/**
 * Destroys `client` for good, also when the destroy lands while the client is reconnecting.
 *
 * node-redis (6.3) does not look again, once a reconnect's TCP connect completes, at whether the
 * client was destroyed meanwhile: a `destroy()` in that window (a connection cut, Redis's `timeout`
 * or a failover, and `close()` within the next millisecond or so) left the new socket open and the
 * client "ready" for good — a connection the server kept listing after `close()`, and a socket that
 * held the process open. The attempt emits `connect` as its socket opens: destroying again then
 * ends it before its handshake (the client ignores a `destroy()` with nothing left to tear down).
 */
export function shut(client: {
  destroy(): void;
  once(event: "connect" | "ready", listener: () => void): unknown;
}): void {
  const again = () => {
    try {
      client.destroy();
    } catch {
      // Already torn down: nothing left open.
    }
  };
  client.once("connect", again);
  client.once("ready", again);
  client.destroy();
}

/** Clients a factory gave up on: what they raise from now on is not for `onError`. */
const discarded = new WeakSet<object>();
/**
 * Clients a factory is opening ({@link open}): what they raise meanwhile is the factory's to judge —
 * it fails with its own `RedisStoreError`, or goes on past the client's connect timeout.
 */
const opening = new WeakSet<object>();

/**
 * Passes what `client` raises (an `error` event) to `onError`, until the client is {@link discard}ed.
 * A gate rather than taking the listener off: node-redis hands back a client whose listeners live on
 * the object it was made from, and `off`/`removeAllListeners` on it can leave the one that emits
 * still holding them.
 */
export function reportErrors(client: RedisConnection, resolved: Resolved): void {
  // One connection's failure is told once while it lasts (a Redis down for an hour made the client
  // raise ECONNREFUSED at each reconnect, twice a second), again once it is back or fails otherwise.
  let last: string | undefined;
  client.on("error", (error: unknown) => {
    if (discarded.has(client) || opening.has(client)) return;
    const kind = `${error instanceof Error ? error.name : typeof error}|${String((error as { code?: unknown } | null)?.code ?? "")}`;
    if (kind === last) return;
    last = kind;
    resolved.report(
      new RedisStoreError(
        "connect",
        `A connection to Redis at ${shownUrl(resolved.url)} failed (${
          error instanceof Error ? error.message : String(error)
        }); it reconnects on its own. Told once while the same failure lasts.`,
        { cause: error },
      ),
    );
  });
  client.on("ready", () => {
    last = undefined;
  });
}

/**
 * Closes `client` for good while a factory gives up on it, and deafens `onError` to it first:
 * destroying a client mid-handshake makes node-redis emit a bare `SocketClosedUnexpectedlyError`
 * that names no URL and no step, for a store that is never handed back. The factory's own
 * `RedisStoreError` says it all.
 */
export function discard(client: RedisConnection): void {
  discarded.add(client);
  shut(client);
}

/**
 * Connects `client`, turning a refusal into a `RedisStoreError` (`connect`) that names the URL, and
 * so does a server that takes the connection and does not finish the handshake within
 * `connectTimeoutMs`. The client is destroyed when it fails (see {@link discard}: `onError` hears
 * nothing of it).
 *
 * The client's own timeout on a TCP connect (`ConnectionTimeoutError`, the same bound) is not taken
 * as the answer: it is a socket timer, counted from the moment the socket was made, and it fires
 * before the loop reads the connect that completed meanwhile when the host was busy right after it
 * called the factory (synchronous work longer than the bound): the factory failed, with Redis there
 * all along. The client tries again on its own, and the bound is {@link within}'s, counted from the
 * loop's first turn after the call; a host that cannot be reached at all still fails it, with the
 * client's timeout as the cause.
 */
export async function open(
  client: RedisConnection,
  resolved: Resolved,
  where: string,
  which = "",
): Promise<void> {
  // Redis answered the handshake with an error (a password it refused: WRONGPASS): it is there, and
  // the URL is what to change. Told as unreachable, with "that the server is running", until r103.
  const unreachable = (cause: unknown) =>
    cause instanceof ErrorReply
      ? new RedisStoreError(
          "connect",
          `${where} reached Redis at ${shownUrl(resolved.url)}, which refused the handshake of its ${which === "" ? "" : `${which} `}connection (${replyShown(cause, resolved.url)}).${refusalHint(cause, resolved.url)}`,
          { cause },
        )
      : new RedisStoreError(
          "connect",
          `${where} could not ${which === "" ? "reach Redis" : `open its ${which} connection to Redis`} at ${shownUrl(resolved.url)}. Check the URL and that the server is running.`,
          { cause },
        );
  // The first connection must not retry forever: a wrong URL should fail the factory, not hang it.
  let fail: (cause: unknown) => void = () => {};
  let timedOut: unknown;
  const first = new Promise<never>((_, reject) => {
    fail = (cause: unknown) => {
      if (cause instanceof ConnectionTimeoutError) timedOut = cause;
      else reject(unreachable(cause));
    };
    client.on("error", fail);
  });
  opening.add(client);
  try {
    await within(Promise.race([client.connect(), first]), resolved.connectTimeoutMs, () =>
      timedOut === undefined
        ? silent(resolved, where, `the handshake${which === "" ? "" : ` of its ${which} connection`}`)
        : unreachable(timedOut),
    );
  } catch (error) {
    discard(client);
    throw RedisStoreError.isInstance(error) ? error : unreachable(error);
  } finally {
    opening.delete(client);
    client.off("error", fail);
  }
}

/** Resolves once `client` is connected again (at once if it is). */
export function whenReady(client: RedisConnection): Promise<void> {
  if (client.isReady) return Promise.resolve();
  return new Promise((resolve) => client.once("ready", () => resolve()));
}

/**
 * Options for one command: `unbounded` sends it without the client's command timeout (5 s from
 * the moment it is queued, not written), for a caller that bounds its own wait by what Redis
 * answers (see the capability store's `sync()`).
 */
export interface CallOptions {
  unbounded?: boolean | undefined;
}

/** What `TIME` answered (`[seconds, microseconds]`, as strings) as microseconds since the epoch; NaN for a reply that holds no numbers. */
export function timeMicros([seconds, micros]: readonly [string, string]): number {
  return Number(seconds) * 1_000_000 + Number(micros);
}

/** Sends one command and reads its RESP2 reply as `T` (the shape the caller's command answers). */
export function call<T>(client: RedisConnection, args: string[], options?: CallOptions): Promise<T> {
  // A timeout of 0 is none: the client arms its timer only for a positive one.
  const sent = options?.unbounded ? client.sendCommand(args, { timeout: 0 }) : client.sendCommand(args);
  return sent as Promise<unknown> as Promise<T>;
}

/** A store's two connections: one for commands, one held by its subscriptions. */
export interface Connections {
  resolved: Resolved;
  writer: RedisConnection;
  subscriber: RedisConnection;
  /**
   * `call` on the writer, bounded: a reply that has not come within `connectTimeoutMs` rejects with
   * `RedisStoreError` (`connect`). For the reads a store starts with (and repeats after a reconnect),
   * which would otherwise wait for ever on a server that answers nothing.
   */
  ask<T>(args: string[]): Promise<T>;
  /**
   * `work` (a subscription, `within`), bounded as `ask` is: for a command that is not a `call`.
   */
  bounded<T>(work: Promise<T>, what: string): Promise<T>;
  /**
   * Awaits one more step of a factory's start (`step` says what, for the message). If it fails —
   * Redis silent past the bound, the link lost, an error reply — closes both connections and throws
   * `RedisStoreError` (`connect`), the one `ask`/`bounded` made or one naming the URL and the step.
   */
  starting<T>(step: string, work: Promise<T>): Promise<T>;
  /**
   * Subscribes to `channel` as one more step of the start (bounded, failing as `starting` does),
   * handing each message to `handle`; what `handle` throws (a message that does not parse) goes to
   * `onError`, never to the client. The tenant stores hear their announcements through it.
   */
  listen(channel: string, handle: (message: string) => void): Promise<void>;
}

/**
 * Checks the common options and opens a store's writer and subscriber connections, throwing
 * `RedisStoreError` (`invalid-option`, `connect`) and closing what it opened when either fails.
 */
export async function connectStore(options: unknown, where: string): Promise<Connections> {
  const resolved = resolveOptions(options, where);
  const writer = connection(resolved);
  await open(writer, resolved, where);
  const subscriber = writer.duplicate();
  reportErrors(subscriber, resolved);
  try {
    await open(subscriber, resolved, where, "subscriber");
  } catch (error) {
    discard(writer);
    throw error;
  }
  // A server can take the connection and refuse every command (it wants a password the URL does not
  // give: NOAUTH): ask once on each, so that fails here, as a RedisStoreError with both closed, not
  // as the client's bare error from the store's first subscribe or read with both left open. A reply
  // that passes on its own (LOADING after a restart, BUSY under a long script) is waited out, up to
  // STARTING_MS, rather than failing a host that starts beside its Redis.
  const started = Date.now();
  for (;;) {
    try {
      // Bounded: a server that takes the connection and then answers nothing (stopped, cut off by
      // the network) fails the factory after `connectTimeoutMs`, with both connections closed.
      await within(
        Promise.all([call(writer, ["PING"]), call(subscriber, ["PING"])]),
        resolved.connectTimeoutMs,
        () => silent(resolved, where, "its first command (PING)"),
      );
      break;
    } catch (cause) {
      if (RedisStoreError.isInstance(cause)) {
        discard(writer);
        discard(subscriber);
        throw cause;
      }
      const passing = cause instanceof ErrorReply && !refusedForGood(cause);
      if (passing && Date.now() - started < STARTING_MS) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        continue;
      }
      discard(writer);
      discard(subscriber);
      const reply = replyCode(cause);
      const hint = passing
        ? ` It still answered ${reply} after ${STARTING_MS / 1000} s.`
        : refusalHint(cause, resolved.url);
      throw new RedisStoreError(
        "connect",
        `${where} reached Redis at ${shownUrl(resolved.url)}, which refused its first command (${replyShown(cause, resolved.url)}).${hint}`,
        { cause },
      );
    }
  }
  const bounded = <T>(work: Promise<T>, what: string): Promise<T> =>
    within(work, resolved.connectTimeoutMs, () => silent(resolved, where, what));
  const connections: Connections = {
    resolved,
    writer,
    subscriber,
    ask: <T>(args: string[]) => bounded(call<T>(writer, args), args[0] ?? "a command"),
    bounded,
    listen: (channel, handle) =>
      connections.starting(
        `subscribe to ${channel}`,
        bounded(
          subscriber.subscribe(channel, (message) => {
            try {
              handle(message);
            } catch (error) {
              resolved.report(error);
            }
          }),
          "SUBSCRIBE",
        ),
      ),
    async starting<T>(step: string, work: Promise<T>): Promise<T> {
      try {
        return await work;
      } catch (cause) {
        discard(writer);
        discard(subscriber);
        if (RedisStoreError.isInstance(cause)) throw cause;
        throw new RedisStoreError(
          "connect",
          `${where} connected to Redis at ${shownUrl(resolved.url)}, but could not ${step}: ${cause instanceof Error ? cause.message : String(cause)}`,
          { cause },
        );
      }
    },
  };
  return connections;
}

/** The code an error reply starts with (`WRONGPASS`, `NOAUTH`, `ERR`…); "an error" for anything else. */
function replyCode(cause: unknown): string {
  return cause instanceof Error ? (cause.message.match(/^[A-Z]+/)?.[0] ?? "an error") : "an error";
}

/**
 * Redis's refusal as a message quotes it: the code alone for NOAUTH and WRONGPASS (the hint says
 * what to change), else the reply's first line (`ERR DB index is out of range` for a database the
 * server does not have), cut past 200 characters, with the URL's password (its user name, where it
 * gives no password), wherever it holds it, as `***` (Redis's own replies never quote it; a proxy in
 * front of it might).
 */
function replyShown(cause: unknown, url: string): string {
  const code = replyCode(cause);
  if (code === "NOAUTH" || code === "WRONGPASS" || !(cause instanceof Error)) return code;
  let said = cause.message.split(/\r?\n/)[0] ?? code;
  try {
    const parsed = new URL(url);
    // The password; or, where there is none, the user name (which `shownUrl` hides then too).
    const secret = parsed.password === "" ? parsed.username : parsed.password;
    // Before the cut: cut first, a part of it could be left.
    for (const form of new Set([secret, safeDecode(secret)])) {
      if (form.length > 0) said = said.replaceAll(form, "***");
    }
  } catch {}
  return said.length > 200 ? `${said.slice(0, 200)}…` : said;
}

/** `decodeURIComponent`, or the text as it is where it holds a `%` escape that does not decode. */
function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/**
 * What a message adds to Redis's refusal of a connection's first command or handshake, as the
 * `cause`'s code says: for NOAUTH, where the URL's password goes; for WRONGPASS, that the URL's
 * user name and password were refused — and, for a URL with a user name and no password, that a
 * password goes after a colon (one written where the user name goes is sent as a user name).
 * Nothing for another reply. The password itself is never in it.
 */
function refusalHint(cause: unknown, url: string): string {
  const reply = replyCode(cause);
  if (reply === "NOAUTH") {
    return " If the server needs a password, give it in the URL (redis://:password@host:6379, or redis://user:password@host:6379).";
  }
  if (reply !== "WRONGPASS") return "";
  let userOnly = false;
  try {
    const parsed = new URL(url);
    userOnly = parsed.username !== "" && parsed.password === "";
  } catch {}
  return userOnly
    ? " The URL gives a user name and no password: a password goes after a colon (redis://:password@host:6379, or redis://user:password@host:6379)."
    : " The user name and password the URL gives were refused: check them (redis://:password@host:6379, or redis://user:password@host:6379).";
}

/** How long a factory waits out a Redis answering LOADING, BUSY or another reply that passes. */
const STARTING_MS = 30_000;

/** Error replies that pass on their own: Redis loading its data, a busy script, memory, a failover. */
const PASSING = /^(?:LOADING|BUSY|OOM|READONLY|MASTERDOWN|TRYAGAIN|CLUSTERDOWN|NOREPLICAS)\b/;

/**
 * Whether a failed command was Redis refusing it for a reason that sending it again cannot change
 * (the key holds another type, a script error): an error reply, neither a lost connection nor one
 * of the refusals that pass.
 */
export function refusedForGood(error: unknown): boolean {
  return error instanceof ErrorReply && !PASSING.test(error.message);
}

/**
 * Whether a failed command may have been carried out by Redis all the same: it went out and no
 * answer came back (the connection went, or Redis went silent). An error reply is Redis's answer
 * (it refused the command), and a client that was offline or closed never sent it.
 *
 * It answers true, too, for a command never written: with `disableOfflineQueue`, a socket error
 * makes @redis/client (6.x, `flushAll`) reject the commands waiting for a reply and those still in
 * its queue unwritten (behind a write waiting for the socket to drain, or for the next tick) with
 * the one error object, and nothing on the error or the command says which it was. So a batch
 * that never reached Redis is sent again marked `r` "1": a spare mark, which changes no entry but
 * that field (the append script never reads it), and only the watcher of a bare-seq position can
 * take it for a resend (see `belowPosition` and the README).
 */
export function mayHaveRun(error: unknown): boolean {
  return !(
    error instanceof ErrorReply ||
    error instanceof ClientOfflineError ||
    error instanceof ClientClosedError
  );
}
