import { createHash } from "node:crypto";
import {
  type CallOptions,
  type Connections,
  call,
  connectStore,
  type RedisConnection,
  type RedisOptions,
  refusedForGood,
  resolveOptions,
} from "./connection.js";
import { RedisStoreError } from "./errors.js";
import { quoted, type Teller, teller } from "./tell.js";

/** The error a tenant store's call rejects with after `close()`: its connections are gone. */
export function afterClose(call: string, store: string): RedisStoreError {
  return new RedisStoreError(
    "closed",
    `${call} was called on a Redis ${store} after close(): its connections are closed. Make a new store to reach Redis again.`,
  );
}

/** Marks a key part or hash field part written escaped (see {@link storedPart}). */
const ESCAPED = "\u0001";

/**
 * A part of a key or a hash field that a caller named (a model, a refused value) as Redis is to
 * hold it: as it is when it is well-formed text without a NUL (the separator of the parts), else
 * the mark U+0001 and its JSON, whose escapes are plain ASCII. Redis keeps text as UTF-8, where
 * every lone surrogate becomes U+FFFD: "m\uD800" and "m\uDC00" were one model there, and a host
 * reading the latch or the readings back (a fresh one, any reload) held them under "m\uFFFD", a
 * name no request uses, while the live announcement (JSON) kept the name. A part that starts with
 * the mark is escaped too, so no two parts are written alike. {@link readPart} reads one back.
 */
export function storedPart(text: string): string {
  return text.isWellFormed() && !text.includes("\u0000") && !text.startsWith(ESCAPED)
    ? text
    : ESCAPED + JSON.stringify(text);
}

/** A part as {@link storedPart} wrote it, read back; `undefined` for a mark followed by no JSON string. */
export function readPart(part: string): string | undefined {
  if (!part.startsWith(ESCAPED)) return part;
  try {
    const text: unknown = JSON.parse(part.slice(ESCAPED.length));
    return typeof text === "string" ? text : undefined;
  } catch {
    return undefined;
  }
}

/** The option the three tenant stores (capabilities, calibration, route latches) share. */
export interface TenantKeyOptions {
  /**
   * How long, in ms, a tenant's key (`caps:`, `calibration:`, `routes:`) lives in Redis past its last
   * write or its last use by a request on some instance (the expiry is renewed then). A tenant no
   * instance uses for this long is let go by Redis, and its index entry with it at the next reload.
   * Default 30 days.
   */
  retainTenantMs?: number | undefined;
}

/** 30 days. */
export const DEFAULT_RETAIN_TENANT_MS = 30 * 24 * 60 * 60 * 1000;
/** About a hundred years: past it, an expiry reads as "kept" anyway, and Redis's clock arithmetic stays whole. */
const MAX_RETAIN_TENANT_MS = 100 * 365 * 24 * 60 * 60 * 1000;

/**
 * Checks `retainTenantMs`: absent is 30 days; else a finite number of ms greater than 0, held to a
 * century. Throws `RedisStoreError` (`invalid-option`) saying the rule and what was given.
 */
export function retainTenantOption(value: unknown, where: string): number {
  if (value === undefined) return DEFAULT_RETAIN_TENANT_MS;
  if (typeof value !== "number" || !Number.isFinite(value) || !(value > 0)) {
    const given =
      typeof value === "number"
        ? String(value)
        : value === null
          ? "null"
          : typeof value === "string"
            ? `the string ${JSON.stringify(value)}`
            : `a value of type ${typeof value}`;
    throw new RedisStoreError(
      "invalid-option",
      `${where}: \`retainTenantMs\` must be a finite number of ms greater than 0 (one longer than a century is held to a century; leave it out for the default, 30 days), and was given ${given}.`,
    );
  }
  return Math.min(Math.ceil(value), MAX_RETAIN_TENANT_MS);
}

/**
 * How long an instance lets pass between two renewals of one tenant's expiry when it uses the tenant:
 * a tenth of the retention, at most a day, so a tenant in use never comes near expiring and a hot
 * tenant costs Redis a command a day, not one per request.
 */
export function renewEveryMs(retainMs: number): number {
  return Math.min(retainMs / 10, 24 * 60 * 60 * 1000);
}

/** A tenant store's connections (see `connectStore`), its retention and where its keys are. */
export interface TenantStoreStart extends Connections {
  /** `retainTenantMs` as checked. */
  retainMs: number;
  /** How often a tenant in use has its expiry renewed ({@link renewEveryMs}). */
  renewMs: number;
  /** The store's key prefix and `onError`, as resolved. */
  prefix: string;
  report: (error: unknown) => void;
  /** How the store tells `onError` of the commands it sends on its own (see {@link Teller}). */
  tell: Teller;
  /** `<prefix><space>`: the channel the store announces on. */
  channel: string;
  /** `<prefix><space>:index`: the set of tenant ids. */
  indexKey: string;
  /** `<prefix><space>:<id>`: one tenant's key. */
  keyOf: (id: string) => string;
}

/** How messages name each tenant store, by its space. */
const STORE_NAMES: Record<string, string> = {
  caps: "The capability store",
  calibration: "The calibration store",
  routes: "The route latch store",
};

/**
 * How the three tenant stores start: the common options and `retainTenantMs` checked, then `check`
 * (the store's own options), all before anything connects, then the store's connections opened.
 * `where` is the function the host called (`createRedisStores` when it made all four at once), so
 * a refusal names it; `space` (`caps`, `calibration`, `routes`) is where the store's keys and
 * channel are under the prefix. Throws `RedisStoreError` (`invalid-option`, `connect`).
 */
export async function startTenantStore(
  options: RedisOptions & TenantKeyOptions,
  where: string,
  space: string,
  check?: () => void,
): Promise<TenantStoreStart> {
  resolveOptions(options, where);
  const retainMs = retainTenantOption(options.retainTenantMs, where);
  check?.();
  const connections = await connectStore(options, where);
  const { prefix, report } = connections.resolved;
  return {
    ...connections,
    retainMs,
    renewMs: renewEveryMs(retainMs),
    prefix,
    report,
    tell: teller(connections.resolved, STORE_NAMES[space] ?? `The ${space} store`),
    channel: `${prefix}${space}`,
    indexKey: `${prefix}${space}:index`,
    keyOf: (id) => `${prefix}${space}:${id}`,
  };
}

/** A Lua script and its SHA-1, run with {@link runScript}. */
export interface Script {
  text: string;
  sha: string;
}

export function script(text: string): Script {
  return { text, sha: createHash("sha1").update(text).digest("hex") };
}

/**
 * Runs `s` by its digest (`EVALSHA`), sending its text (`EVAL`) when the server does not hold it
 * (NOSCRIPT: a restart, `SCRIPT FLUSH`). A script runs whole, with no other client's command between
 * its writes.
 */
export function runScript<T>(
  writer: RedisConnection,
  s: Script,
  keys: string[],
  args: string[],
  options?: CallOptions,
): Promise<T> {
  const tail = [String(keys.length), ...keys, ...args];
  return call<T>(writer, ["EVALSHA", s.sha, ...tail], options).catch((error: unknown) =>
    error instanceof Error && error.message.startsWith("NOSCRIPT")
      ? call<T>(writer, ["EVAL", s.text, ...tail], options)
      : Promise.reject(error),
  );
}

/**
 * Lua: `indexExpiry(index, ttl)` gives the index the expiry `ttl` unless it already has a longer one,
 * so the index outlives every key it names, whatever retention each instance was given.
 * `keepIndexed(key, index, id, ttl)`, after a tenant's key is written: the key expires `ttl` from
 * now, and it is indexed under `id` (the index's expiry as above). Each store's write script ends so.
 */
export const INDEX_EXPIRY_LUA = `
local function indexExpiry(index, ttl)
  local left = redis.call('PTTL', index)
  if left == -1 or left < tonumber(ttl) then redis.call('PEXPIRE', index, ttl) end
end
local function keepIndexed(key, index, id, ttl)
  redis.call('PEXPIRE', key, ttl)
  redis.call('SADD', index, id)
  indexExpiry(index, ttl)
end
`;

/**
 * Renews a tenant's expiry on use (KEYS: the tenant's key, the index; ARGV: its id, the expiry in ms):
 * only a key that still exists, and it is (re-)indexed with it, so the index names it as long as it
 * lives. Answers 1 when renewed, 0 when the key is gone.
 */
export const TOUCH_SCRIPT = script(`${INDEX_EXPIRY_LUA}
if redis.call('PEXPIRE', KEYS[1], ARGV[2]) == 1 then
  redis.call('SADD', KEYS[2], ARGV[1])
  indexExpiry(KEYS[2], ARGV[2])
  return 1
end
return 0
`);

/**
 * Drops from the index (KEYS[1]) each id (ARGV[i]) whose key (KEYS[i + 1]) no longer exists (it
 * expired), in one call: a key written again meanwhile keeps its entry. Answers how many went.
 */
export const PRUNE_SCRIPT = script(`
local gone = 0
for i = 1, #ARGV do
  if redis.call('EXISTS', KEYS[i + 1]) == 0 then
    gone = gone + redis.call('SREM', KEYS[1], ARGV[i])
  end
end
return gone
`);

/**
 * Gives each tenant key (KEYS[i]) that has no expiry — one written by a version before tenant keys
 * expired — the retention (ARGV[1], ms), so it is retired like any other. A key that has an expiry,
 * or is gone, is left as it is. Answers how many were given one. (`PTTL` -1 rather than
 * `PEXPIRE … NX`, which needs Redis 7.)
 */
export const RETAIN_SCRIPT = script(`
local given = 0
for i = 1, #KEYS do
  if redis.call('PTTL', KEYS[i]) == -1 then
    redis.call('PEXPIRE', KEYS[i], ARGV[1])
    given = given + 1
  end
end
return given
`);

/**
 * Gives the index (KEYS[1]) the expiry ARGV[1] unless it has a longer one: after a reload gave keys
 * that had none the retention, so the index outlives them too.
 */
const INDEX_RETAIN_SCRIPT = script(`${INDEX_EXPIRY_LUA}
indexExpiry(KEYS[1], ARGV[1])
return 1
`);

/** How many keys a reload reads per round trip (pipelined), and drops from the index per script call. */
const CHUNK = 500;

/** Where a tenant store's keys are, for {@link readIndexed}. */
export interface IndexedKeys {
  /** The store's command connection, and its bounded `ask` on it (`connectTimeoutMs`). */
  writer: RedisConnection;
  ask: Connections["ask"];
  /** The set of tenant ids, and each id's key. */
  indexKey: string;
  keyOf: (id: string) => string;
  /** The retention a key without an expiry is given. */
  retainMs: number;
  /** The store's `onError`: told of a tenant passed over (its key holds another type, or what it holds cannot be taken). */
  report: (error: unknown) => void;
}

/** A key as a message names it: quoted, and cut past 200 characters. */
function shownKey(key: string): string {
  return JSON.stringify(key.length > 200 ? `${key.slice(0, 200)}…` : key);
}

/**
 * Reads the index, then every indexed tenant's key with `read` (an `HGETALL`/`LRANGE` through the
 * store's bounded `ask`, so a Redis that answers nothing fails the factory, or tells `onError` after
 * a reconnect, instead of leaving the reload waiting for ever), pipelined a chunk at a time rather
 * than one round trip each, hands each non-empty answer to `take`, and drops from the index the ids
 * whose key expired (and is still gone).
 *
 * With each chunk it gives every key that has no expiry (written by an older version) the retention
 * `retainMs`; once every chunk is done, and only then, the index is given an expiry at least as long
 * when it has none or a shorter one, so it never expires before a key it names that had none.
 *
 * One tenant that cannot be read — its key holds another type (`WRONGTYPE`: another process wrote
 * under the prefix), or `take` throws on what it holds (an id or a value no instance of this package
 * writes) — is passed over and told to `report` (`RedisStoreError`, `refused`), and the others are
 * read: it never fails the reload, and so every factory's start, on its own. Its index entry stays.
 * Reads Redis refuses for a reason of its own, not the key's (`NOPERM`: an ACL without the read
 * command), are passed over the same way and told once for the reload, with how many there were.
 */
export async function readIndexed<T extends unknown[]>(
  { writer, ask, indexKey, keyOf, retainMs, report }: IndexedKeys,
  read: (id: string) => Promise<T>,
  take: (id: string, answer: T) => void,
): Promise<void> {
  const passedOver = (id: string, cause: unknown): void =>
    report(
      new RedisStoreError(
        "refused",
        `Redis key ${shownKey(keyOf(id))} (indexed in ${shownKey(indexKey)}) holds what this store cannot read ` +
          `(${cause instanceof Error ? cause.message : String(cause)}): it was passed over, and the other tenants were read.`,
        { cause },
      ),
    );
  const ids = await ask<string[]>(["SMEMBERS", indexKey]);
  const gone: string[] = [];
  let given = 0;
  /**
   * The reads Redis refused for a reason that is not the key's (`NOPERM`: an ACL without the read
   * command): one report for the reload, not one per tenant blaming each key (30 tenants, 30 reports).
   */
  let refused: { count: number; first: string; cause: unknown } | undefined;
  try {
    await readChunks();
  } finally {
    if (refused) {
      const { count, first, cause } = refused;
      report(
        new RedisStoreError(
          "refused",
          `Redis refused to read ${count} ${count === 1 ? "key" : "keys"} indexed in ${shownKey(indexKey)} ` +
            `(${quoted(cause)}; the first ${shownKey(keyOf(first))}): ${count === 1 ? "it was" : "they were"} passed over, and the other tenants were read.`,
          { cause },
        ),
      );
    }
  }
  if (given > 0) await runScript(writer, INDEX_RETAIN_SCRIPT, [indexKey], [String(retainMs)]);
  for (let start = 0; start < gone.length; start += CHUNK) {
    const chunk = gone.slice(start, start + CHUNK);
    await runScript(writer, PRUNE_SCRIPT, [indexKey, ...chunk.map(keyOf)], chunk);
  }

  async function readChunks(): Promise<void> {
    for (let start = 0; start < ids.length; start += CHUNK) {
      const chunk = ids.slice(start, start + CHUNK);
      // On the same connection as the reads, so bounded with them: a silent Redis fails the reads.
      const [answers, retained] = await Promise.all([
        Promise.all(
          chunk.map((id) =>
            read(id).catch((error: unknown) => {
              // Redis's answer, which reading again cannot change: this tenant only is passed over.
              if (!refusedForGood(error)) throw error;
              if (/^WRONGTYPE\b/.test((error as Error).message)) passedOver(id, error);
              else {
                refused ??= { count: 0, first: id, cause: error };
                refused.count++;
              }
              return undefined;
            }),
          ),
        ),
        runScript<number>(writer, RETAIN_SCRIPT, chunk.map(keyOf), [String(retainMs)]),
      ]);
      given += retained;
      chunk.forEach((id, i) => {
        const answer = answers[i];
        if (answer === undefined) return;
        if (answer.length === 0) gone.push(id);
        else {
          try {
            take(id, answer);
          } catch (error) {
            passedOver(id, error);
          }
        }
      });
    }
  }
}

/** {@link readIndexed} for keys that are hashes (`HGETALL`): each tenant's fields as pairs. */
export function readIndexedHashes(
  keys: IndexedKeys,
  take: (id: string, fields: [string, string][]) => void,
): Promise<void> {
  return readIndexed(
    keys,
    (id) => keys.ask<string[]>(["HGETALL", keys.keyOf(id)]),
    (id, flat) => {
      const fields: [string, string][] = [];
      for (let i = 0; i + 1 < flat.length; i += 2) fields.push([flat[i] as string, flat[i + 1] as string]);
      take(id, fields);
    },
  );
}
