import { createClient, ErrorReply } from "@redis/client";
import { RedisStoreError } from "./errors.js";

/** The node-redis client this package drives (RESP2, no modules). */
export type RedisConnection = ReturnType<typeof connection>;

/** Where a store's Redis is and how its keys are spelled: the options every factory here reads. */
export interface RedisOptions {
  /** A `redis://` (or `rediss://`) URL, such as `redis://127.0.0.1:6379`. */
  url: string;
  /** Put in front of every key and channel, so two deployments can share one server. Default `"lw:"`. */
  prefix?: string;
  /**
   * Told of every failure the store survives on its own: a lost connection, a write that will be
   * retried, events dropped because Redis stayed away too long. Never awaited; what it throws is
   * ignored. Default: nothing.
   */
  onError?: (error: unknown) => void;
}

/** The checked form of {@link RedisOptions}. */
export interface Resolved {
  url: string;
  prefix: string;
  report: (error: unknown) => void;
}

/** A Redis URL as a message may name it: its password (`redis://user:password@host`) as `***`. */
export function shownUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password === "") return url;
    parsed.password = "***";
    return parsed.href;
  } catch {
    return "(a URL that does not parse)";
  }
}

/** Checks the common options, throwing `RedisStoreError` (`invalid-option`) naming the bad one. */
export function resolveOptions(options: unknown, where: string): Resolved {
  if (typeof options !== "object" || options === null) {
    throw new RedisStoreError(
      "invalid-option",
      `${where} needs an options object such as { url: "redis://127.0.0.1:6379" }, and was given ${options === null ? "null" : typeof options}.`,
    );
  }
  const { url, prefix, onError } = options as Record<string, unknown>;
  if (typeof url !== "string" || !/^rediss?:\/\//.test(url)) {
    throw new RedisStoreError(
      "invalid-option",
      `${where} needs \`url\` as a redis:// or rediss:// URL, and was given ${typeof url === "string" ? JSON.stringify(shownUrl(url)) : (JSON.stringify(url) ?? "nothing")}.`,
    );
  }
  try {
    new URL(url);
  } catch {
    // The parser's error carries the text as its `input`: the password with it.
    throw new RedisStoreError(
      "invalid-option",
      `${where} needs \`url\` as a URL that parses; this one does not.`,
    );
  }
  if (prefix !== undefined && typeof prefix !== "string") {
    throw new RedisStoreError("invalid-option", `${where}: \`prefix\` must be a string when given.`);
  }
  if (onError !== undefined && typeof onError !== "function") {
    throw new RedisStoreError("invalid-option", `${where}: \`onError\` must be a function when given.`);
  }
  const tell = onError as ((error: unknown) => void) | undefined;
  return {
    url,
    prefix: prefix ?? "lw:",
    report: (error) => {
      try {
        tell?.(error);
      } catch {
        // A reporter that throws must not take the store down with it.
      }
    },
  };
}

/**
 * A client that never queues a command while it is away (so a write fails fast and is retried by
 * its owner), reconnects with a short capped backoff forever, and reports errors instead of
 * throwing them from an event emitter.
 */
export function connection(resolved: Resolved) {
  const client = createClient({
    url: resolved.url,
    RESP: 2,
    disableOfflineQueue: true,
    socket: { reconnectStrategy: (retries: number) => Math.min(25 * 2 ** retries, 500) },
  });
  client.on("error", resolved.report);
  return client;
}

/** Connects `client`, turning a refusal into a `RedisStoreError` (`connect`) that names the URL. */
export async function open(client: RedisConnection, resolved: Resolved, where: string): Promise<void> {
  // The first connection must not retry forever: a wrong URL should fail the factory, not hang it.
  const first = new Promise<never>((_, reject) => {
    const fail = (cause: unknown) =>
      reject(
        new RedisStoreError(
          "connect",
          `${where} could not reach Redis at ${shownUrl(resolved.url)}. Check the URL and that the server is running.`,
          { cause },
        ),
      );
    client.once("error", fail);
  });
  try {
    await Promise.race([client.connect(), first]);
  } catch (error) {
    client.destroy();
    throw error;
  }
}

/** Resolves once `client` is connected again (at once if it is). */
export function whenReady(client: RedisConnection): Promise<void> {
  if (client.isReady) return Promise.resolve();
  return new Promise((resolve) => client.once("ready", () => resolve()));
}

/** Sends one command and reads its RESP2 reply as `T` (the shape the caller's command answers). */
export function call<T>(client: RedisConnection, args: string[]): Promise<T> {
  return client.sendCommand(args) as Promise<unknown> as Promise<T>;
}

/** A store's two connections: one for commands, one held by its subscriptions. */
export interface Connections {
  resolved: Resolved;
  writer: RedisConnection;
  subscriber: RedisConnection;
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
  subscriber.on("error", resolved.report);
  try {
    await subscriber.connect();
  } catch (cause) {
    writer.destroy();
    throw new RedisStoreError(
      "connect",
      `${where} could not open its subscriber connection to ${shownUrl(resolved.url)}.`,
      {
        cause,
      },
    );
  }
  // A server can take the connection and refuse every command (it wants a password the URL does not
  // give: NOAUTH): ask once on each, so that fails here, as a RedisStoreError with both closed, not
  // as the client's bare error from the store's first subscribe or read with both left open. A reply
  // that passes on its own (LOADING after a restart, BUSY under a long script) is waited out, up to
  // STARTING_MS, rather than failing a host that starts beside its Redis.
  const started = Date.now();
  for (;;) {
    try {
      await Promise.all([call(writer, ["PING"]), call(subscriber, ["PING"])]);
      break;
    } catch (cause) {
      const passing = cause instanceof ErrorReply && !refusedForGood(cause);
      if (passing && Date.now() - started < STARTING_MS) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        continue;
      }
      writer.destroy();
      subscriber.destroy();
      const reply = cause instanceof Error ? (cause.message.match(/^[A-Z]+/)?.[0] ?? "an error") : "an error";
      const hint = /^(?:NOAUTH|WRONGPASS)$/.test(reply)
        ? " If the server needs a password, give it in the URL (redis://:password@host:6379, or redis://user:password@host:6379)."
        : passing
          ? ` It still answered ${reply} after ${STARTING_MS / 1000} s.`
          : "";
      throw new RedisStoreError(
        "connect",
        `${where} reached Redis at ${shownUrl(resolved.url)}, which refused its first command (${reply}).${hint}`,
        { cause },
      );
    }
  }
  return { resolved, writer, subscriber };
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
