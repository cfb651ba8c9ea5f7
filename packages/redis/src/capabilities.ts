import { createHash } from "node:crypto";
import {
  type CapabilitySnapshotEndpoint,
  type CapabilityStore,
  createCapabilityStore,
  DEFAULT_MAX_ENDPOINTS,
  type EndpointCapabilities,
  type ModelCapabilities,
  modelCapabilitiesFor,
} from "@loopwright/negotiate";
import { ErrorReply } from "@redis/client";
import { type RedisOptions, shownMs, shut, timeoutOption, unanswered, whenReady } from "./connection.js";
import { RedisStoreError } from "./errors.js";
import { ForgetLog, REMEMBER_LUA, registerForgetLog, WhileReading } from "./forgets.js";
import { CLOSE_BOUND_MS, MAX_OWED, Owed } from "./owed.js";
import { protoless } from "./protoless.js";
import {
  afterClose,
  INDEX_EXPIRY_LUA,
  readIndexedHashes,
  readPart,
  runScript,
  script,
  startTenantStore,
  storedPart,
  type TenantKeyOptions,
  TOUCH_SCRIPT,
} from "./tenant-keys.js";
import { Rejoin, untilWrittenBack } from "./written-back.js";

/** Options for {@link createRedisCapabilityStore}. */
export interface RedisCapabilityStoreOptions extends RedisOptions, TenantKeyOptions {
  /**
   * How often, in ms, the local copy is compared with what was last shared, as a backstop for a
   * latch set where no request follows it. Default 250. The comparison is local; Redis is written
   * only when something changed.
   */
  syncMs?: number | undefined;
}

/**
 * A `CapabilityStore` whose latches are shared through Redis; reads never wait on Redis.
 *
 * A refusal one instance latches is honoured by every other instance's next request.
 */
export interface RedisCapabilityStore extends CapabilityStore {
  /** The stable id (`<baseUrl>\n<keyId>`) of an endpoint object this store handed out, if it did. */
  endpointIdOf(supports: object): string | undefined;
  /**
   * Shares every local latch not yet shared now (it is otherwise done within a tick of a request),
   * and waits for the writes a tick started before it. Rejects with `RedisStoreError` when any of
   * those writes did not reach Redis (`refused` when Redis answered each with an error, such as
   * out of memory; `connect` when one went unanswered), naming how many, the first failure on
   * `cause` (each is told to `onError` too, and written again at the tenant's next comparison);
   * `closed` after `close()`. While the store is away (its subscription down) it writes nothing
   * and resolves: everything held is written again once Redis is back. It waits as long as Redis
   * keeps answering its writes, however slowly; once Redis has settled none of them for four times
   * `connectTimeoutMs` (stopped, or cut off with the connection open) it rejects with `connect`,
   * naming how many are still owed (they stay on their way and land if Redis answers).
   */
  sync(): Promise<void>;
  /**
   * Resolves once this store is connected and Redis holds what it holds: the reconnect it last
   * noticed (Redis restarted empty, a proxy or `timeout` cut it) is over and its write-back done,
   * the forgets owed are sent and every latch is shared (as `sync()` shares them). Where `sync()`
   * resolves at once while the store is away, this waits for it to come back. Rejects with
   * `RedisStoreError` (`connect`) once `timeoutMs` (default four times `connectTimeoutMs`, 20 s) has
   * passed first — the store keeps trying on its own — and (`closed`) after `close()`.
   */
  writtenBack(timeoutMs?: number): Promise<void>;
  /**
   * Reads every shared latch from Redis into the local copy (done on connect and after a reconnect).
   * Rejects with `RedisStoreError` (`closed`) after `close()`.
   */
  reload(): Promise<void>;
  /**
   * Shares what is not yet shared (waiting at most 2 s), closes both connections; the local copy
   * keeps answering, without sharing. Latches Redis did not take by then are told to `onError`
   * once (`closed`, how many tenants). A second call gets the first's promise.
   */
  close(): Promise<void>;
}

interface Entry {
  id: string;
  inner: CapabilityStore;
  supports: EndpointCapabilities;
  /** Every field as last shared or received, so only a change is written and nothing echoes. */
  shared: Map<string, string>;
  /**
   * When (this host's clock, ms) each latched field was first noticed here — learned or imported;
   * 0 for one received from Redis (an announcement or a reload). A forget this instance missed drops
   * the fields it held from before the forget and keeps those it learned after it. A field received
   * is always from before a forget heard or read after it: Redis ran its write before that forget
   * (announcements arrive in the order Redis ran them, and a reload reads after the forgets it caught
   * up on), whatever the time it arrived here. Taken at its arrival, a latch whose announcement
   * reached this instance a moment after another host forgot the tenant was kept past the forget and
   * written back to every instance.
   */
  learned: Map<string, number>;
  /**
   * When (ms) the tenant's capabilities were first read or written since the last comparison: no
   * change waiting for it is older. A field that comparison finds is taken as learned then — the
   * earliest it can have been — so a forget made about the same moment goes before it, not after.
   */
  dirtySince: number | undefined;
  /** Dropped (forgotten here): the objects handed out keep answering, but nothing of it is shared. */
  dropped: boolean;
  /** When (ms) this instance last wrote the tenant's key or renewed its expiry; 0 for never. */
  touchedAt: number;
  /** The sync tick (see `ticks`) in which the tenant was last used here: read, written or received. */
  usedTick: number;
  /** Its latch write on its way (or waiting for a slot), if any: what a `sync()` waits for too. */
  writing?: Promise<WriteFailed | undefined> | undefined;
}

/** A latch write that did not reach Redis: the client's error (told to `onError` too). */
interface WriteFailed {
  error: unknown;
}

/**
 * How long after its last use a tenant is still compared every `syncMs`: a latch the loop makes
 * after the request's last read of the flags (a refusal not retried) lands within a request's
 * lifetime. A tenant unused for longer is compared at its next use (every request reads its flags),
 * not every tick: comparing every tenant held every 250 ms cost 90 ms of a blocked event loop a
 * tick with 16 000 held, a third of a core with nothing happening.
 */
const ACTIVE_MS = 10 * 60 * 1000;
/** What the store's teller names (and tells apart) as the kinds of command that failed. */
const WRITE = "write a tenant's latches";
const RENEW = "renew the expiry of a tenant's latches";
/** The reload after a reconnect: a kind that runs once (see `Teller.fail`). */
const RELOAD = "read the shared latches again after reconnecting";

/** How many latch writes a capability store has on their way at once (see `share`). */
const MAX_SHARING = 256;

/**
 * Every forget and reset moves the store's generation (`<prefix>caps:generation`) on by one and
 * announces it; an instance writes a latch with the last generation it has been told of, and the
 * write is refused (answers 0, nothing written) when Redis is past it: the instance has yet to carry
 * out a forget or reset, and the latch it holds may be one that forget or reset let go. It writes
 * again once it has caught up (the refused fields stay unshared), so a latch in flight across a
 * reset or forget can never land after it and outlive it in Redis.
 *
 * Writes a latch (KEYS: the tenant's key, the index, the generation; ARGV: the id, the generation
 * known, the expiry in ms, the channel, the announcement, then field and value pairs): the fields,
 * the index entry, both expiries and the announcement in one call, so no reset or forget lands
 * between them. Answers 1 when written, 0 when refused.
 */
const LATCH_SCRIPT = script(`${INDEX_EXPIRY_LUA}
local generation = tonumber(redis.call('GET', KEYS[3]) or '0')
if tonumber(ARGV[2]) < generation then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 6))
keepIndexed(KEYS[1], KEYS[2], ARGV[1], ARGV[3])
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 1
`);

/**
 * Forgets one tenant (KEYS: the forgotten set, the generation, the index, the tenant's key; ARGV:
 * when, mark, cutoff, kept ms, the channel, the id) in one call: remembered, its key and index
 * entry deleted, the generation moved on, and announced with it. Answers the new generation.
 */
const FORGET_SCRIPT = script(`${REMEMBER_LUA}
redis.call('DEL', KEYS[4])
redis.call('SREM', KEYS[3], ARGV[6])
local generation = redis.call('INCR', KEYS[2])
redis.call('PUBLISH', ARGV[5], cjson.encode({ id = ARGV[6], forget = true, mark = ARGV[2], generation = generation, at = tonumber(ARGV[1]) }))
return generation
`);

/**
 * Resets the store (KEYS: the forgotten set, the generation, the index; ARGV: when, mark, cutoff,
 * kept ms, the channel, the tenant keys' prefix) in one call: remembered, every indexed tenant's key
 * and the index deleted, the generation moved on, and announced with it. Answers the new generation.
 */
const RESET_SCRIPT = script(`${REMEMBER_LUA}
local ids = redis.call('SMEMBERS', KEYS[3])
for i = 1, #ids do redis.call('DEL', ARGV[6] .. ids[i]) end
redis.call('DEL', KEYS[3])
local generation = redis.call('INCR', KEYS[2])
redis.call('PUBLISH', ARGV[5], cjson.encode({ reset = true, mark = ARGV[2], generation = generation, at = tonumber(ARGV[1]) }))
return generation
`);

const SEP = "\u0000";
type Headers = Readonly<Record<string, string>>;
const FLAGS = [
  "legacyTokenLimit",
  "chosenTemperature",
  "assistantPrefill",
  "structuredOutput",
  "toolChoice",
  "anyToolCallIds",
  "prefillEcho",
  "systemRole",
  "userAfterTool",
  "parallelCalls",
] as const;
const LISTS = ["refusedEfforts", "droppedFields"] as const;

// Every boolean latch negotiate keeps per model must be shared: a flag added there and not listed
// here would be learned again by each process (one refused request each). This fails to compile
// when `FLAGS` and the boolean fields of `ModelCapabilities` differ.
type BooleanLatch = {
  [K in keyof ModelCapabilities]: ModelCapabilities[K] extends boolean ? K : never;
}[keyof ModelCapabilities];
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const everyFlagShared: Same<(typeof FLAGS)[number], BooleanLatch> = true;
void everyFlagShared;

/**
 * The latched (refused) part of one endpoint as flat hash fields: `strictSchemas`, `m␀<model>␀<flag>`
 * for a flag that is `false`, `m␀<model>␀<list>␀<item>` for a refused value. A latch only ever
 * closes (nothing in the loop sets one back to `true`), so what is shared is only what was refused,
 * and laying it on twice, or late, or out of order, never reopens anything.
 */
function fieldsOf(endpoint: CapabilitySnapshotEndpoint): Map<string, string> {
  const fields = new Map<string, string>();
  if (!endpoint.strictSchemas) fields.set("strictSchemas", "0");
  if (!endpoint.usageInStream) fields.set("usageInStream", "0");
  for (const [model, caps] of Object.entries(endpoint.models)) {
    // Escaped when not well-formed text (see `storedPart`): Redis would keep it as another name.
    const name = storedPart(model);
    for (const flag of FLAGS) if (!caps[flag]) fields.set(`m${SEP}${name}${SEP}${flag}`, "0");
    for (const list of LISTS) {
      for (const item of caps[list]) fields.set(`m${SEP}${name}${SEP}${list}${SEP}${storedPart(item)}`, "1");
    }
  }
  return fields;
}

/** Lays received fields onto the live objects (the same objects the loop already holds). */
function applyFields(supports: EndpointCapabilities, fields: Iterable<[string, string]>): void {
  for (const [field, value] of fields) {
    if (field === "strictSchemas" || field === "usageInStream") {
      if (value === "0") supports[field] = false;
      continue;
    }
    const [m, stored, name, storedItem] = field.split(SEP);
    const model = stored === undefined ? undefined : readPart(stored);
    const item = storedItem === undefined ? undefined : readPart(storedItem);
    if (m !== "m" || !model || !name) continue;
    const caps = modelCapabilitiesFor(supports, model);
    if ((FLAGS as readonly string[]).includes(name)) {
      if (value === "0") caps[name as (typeof FLAGS)[number]] = false;
    } else if ((LISTS as readonly string[]).includes(name) && item !== undefined) {
      const list = caps[name as (typeof LISTS)[number]];
      if (!list.includes(item)) list.push(item);
    }
  }
}

/**
 * How many tenants' ids (base URL and key, worked out as `negotiate` does) a store keeps at hand,
 * least recently used let go first: `negotiate`'s `DEFAULT_MAX_ENDPOINTS`, as many endpoints as its
 * in-memory store keeps.
 */
const ID_CACHE_SIZE = DEFAULT_MAX_ENDPOINTS;

/**
 * What `idCache` is keyed by: a SHA-256 of the base URL (as given: it may carry a user and password)
 * and the key, each with its length so no two pairs run together. Exported for the bench only.
 */
export function cacheKeyOf(baseUrl: string, apiKey: string | undefined): string {
  const key = apiKey ?? "";
  return createHash("sha256").update(`${baseUrl.length}:${baseUrl}${key.length}:${key}`).digest("base64");
}

/**
 * Makes a capability store shared through Redis and loads every latch already there.
 *
 * Each endpoint is a hash (`<prefix>caps:<baseUrl>␀<keyId>`, one field per flag and per refused
 * value; the API key itself is never written, only its digest, nor held here: a tenant's id is kept
 * at hand under a digest of its base URL and key, for at most `DEFAULT_MAX_ENDPOINTS` tenants, least
 * recently used let go first). A change — `negotiate` latching a
 * refusal on the live objects, or `importCapabilities` — is noticed by a local comparison run after
 * the next read of the endpoint's flags (every request reads them) and every `syncMs`, written with
 * `HSET` and announced on `<prefix>caps` so every instance lays it onto its own live objects. Only
 * refusals are shared and a latch only closes, so two instances never undo each other's refusal.
 *
 * Throws `RedisStoreError` for bad options or an unreachable server; after that nothing in the
 * request path throws or waits for Redis.
 */
export function createRedisCapabilityStore(
  options: RedisCapabilityStoreOptions,
): Promise<RedisCapabilityStore> {
  return openCapabilityStore(options, "createRedisCapabilityStore");
}

/**
 * Checks `syncMs` (absent is 250): a finite number of ms greater than 0, held to what a timer can
 * wait. Throws `RedisStoreError` (`invalid-option`) naming `where`, the function the host called.
 */
export function syncMsOption(value: unknown, where: string): number {
  return timeoutOption(value, "syncMs", where, 250);
}

/**
 * {@link createRedisCapabilityStore}, its refusals naming `where` (the function the host called):
 * `createRedisStores` opens its capability store with this.
 */
export async function openCapabilityStore(
  options: RedisCapabilityStoreOptions,
  where: string,
): Promise<RedisCapabilityStore> {
  let syncMs = 0;
  const started = await startTenantStore(options, where, "caps", () => {
    syncMs = syncMsOption(options.syncMs, where);
  });
  const { writer, subscriber, ask, starting, listen, retainMs, renewMs, resolved } = started;
  const { prefix, report, tell, channel, indexKey, keyOf } = started;
  const generationKey = `${prefix}caps:generation`;
  const forgottenKey = `${prefix}caps:forgotten`;
  /**
   * The forgets (and resets) this instance knows of, and the generation its latches are written
   * with (see LATCH_SCRIPT); a forget it does not know, read after a reconnect, was made while its
   * subscription was down. A reset's mark names the tenant "".
   */
  const forgets = new ForgetLog(ask, generationKey, forgottenKey);

  const entries = new Map<string, Entry>();
  const ids = new WeakMap<object, string>();
  const dirty = new Set<Entry>();
  /** Counts the `syncMs` ticks: when each tenant was last used, cheaply (no clock read per flag read). */
  let ticks = 0;
  let comparing = false;
  let closed = false;

  const compare = (entry: Entry): Map<string, string> => {
    comparing = true;
    try {
      const since = entry.dirtySince ?? Date.now();
      entry.dirtySince = undefined;
      const endpoint = entry.inner.exportCapabilities().endpoints[0];
      const changed = new Map<string, string>();
      if (!endpoint) return changed;
      for (const [field, value] of fieldsOf(endpoint)) {
        if (!entry.learned.has(field)) entry.learned.set(field, since);
        if (entry.shared.get(field) !== value) changed.set(field, value);
      }
      return changed;
    } finally {
      comparing = false;
    }
  };

  /**
   * Set while the subscription is down, and until the forgets made meanwhile are read after it is
   * back: nothing is written then, so a latch another instance forgot meanwhile is not put back.
   */
  let away = false;

  /** Entries whose last write Redis refused for the generation: tried again at each announcement heard. */
  const refused = new Set<Entry>();
  /**
   * Plans the refused writes again, once an announcement has moved the generation this instance
   * knows on: without it, a latch whose write met a forget of another tenant in flight stayed
   * unshared until its own tenant was next used (each forget and reset moves the one generation).
   */
  const retryRefused = (): void => {
    const again = [...refused];
    refused.clear();
    for (const entry of again) if (!entry.dropped) soon(entry);
  };

  /**
   * Writes on their way, at most {@link MAX_SHARING} at once; the others wait here, in order. Handed
   * to the client all at once, a burst (a `sync()` or an import of 20 000 tenants) waited in its
   * queue longer than its command timeout (5 s before a command is written): most writes failed
   * with a bare `TimeoutError`, `sync()` resolved all the same, and a `close()` after it lost them.
   */
  let sharing = 0;
  /**
   * When a latch write last settled (answered, refused, or failed with its connection): `sync()`
   * gives up on Redis only after none has for `connectTimeoutMs`, so a slow Redis is waited for.
   */
  let settledAt = Date.now();
  const toShare: (() => void)[] = [];
  let toShareHead = 0;
  const shareSlot = (): Promise<void> | undefined => {
    if (sharing < MAX_SHARING) {
      sharing++;
      return undefined;
    }
    return new Promise<void>((resolve) => toShare.push(resolve));
  };
  const shareDone = (): void => {
    const next = toShare[toShareHead];
    if (next === undefined) {
      sharing--;
      return;
    }
    toShare[toShareHead++] = undefined as unknown as () => void;
    if (toShareHead > 1024 && toShareHead * 2 > toShare.length) {
      toShare.splice(0, toShareHead);
      toShareHead = 0;
    }
    next(); // the slot passes on
  };

  /**
   * Compares a tenant and writes what changed. Resolves once that write is over: `undefined` when it
   * went through (or there was nothing to write, or the store is away), a {@link WriteFailed} when
   * it did not reach Redis (reported; the fields are compared again next time).
   */
  const share = async (entry: Entry): Promise<WriteFailed | undefined> => {
    const changed = compare(entry);
    if (changed.size === 0 || closed || entry.dropped) return undefined;
    if (!subscriber.isReady) away = true;
    if (away) return undefined;
    for (const [field, value] of changed) entry.shared.set(field, value);
    const writing = write(entry, changed);
    entry.writing = writing;
    void writing.then(() => {
      if (entry.writing === writing) entry.writing = undefined;
    });
    return writing;
  };

  const write = async (entry: Entry, changed: Map<string, string>): Promise<WriteFailed | undefined> => {
    const waiting = shareSlot();
    if (waiting) await waiting;
    try {
      // Closed while it waited for a slot: not sent (close() tells onError of it, once for all).
      if (closed) throw afterClose("sync", "capability store");
      const written = await runScript<number>(
        writer,
        LATCH_SCRIPT,
        [keyOf(entry.id), indexKey, generationKey],
        [
          entry.id,
          String(forgets.generation),
          String(retainMs),
          channel,
          JSON.stringify({ id: entry.id, fields: [...changed] }),
          ...[...changed].flat(),
        ],
        // Not the client's 5 s timeout, which runs from when a write is queued, not sent: under a
        // slow event loop, or with the socket backed up behind a stalled Redis, the slots' writes
        // waited that long unsent, failed as bare TimeoutErrors, and were queued again behind the
        // rest for ever. How long `sync()` waits is bounded by what Redis answers instead.
        { unbounded: true },
      );
      settledAt = Date.now();
      tell.ok(WRITE);
      if (written === 1) {
        entry.touchedAt = Date.now();
      } else {
        // A forget or reset this instance has not carried out yet: written again once it has (at
        // the next announcement it hears, see `retryRefused`, or its next comparison).
        for (const field of changed.keys()) entry.shared.delete(field);
        refused.add(entry);
      }
      return undefined;
    } catch (error) {
      settledAt = Date.now();
      // Not written: forget that it was, so the next comparison tries again.
      for (const field of changed.keys()) entry.shared.delete(field);
      // After close() the connections are gone: close() tells onError of these, once for all.
      if (!closed) tell.fail(error, WRITE);
      return { error };
    } finally {
      shareDone();
    }
  };

  let scheduled = false;
  const soon = (entry: Entry): void => {
    if (comparing) return;
    entry.usedTick = ticks;
    entry.dirtySince ??= Date.now();
    dirty.add(entry);
    if (scheduled) return;
    scheduled = true;
    // After the current request's synchronous work and its refusal handling, not inside it.
    setTimeout(() => {
      scheduled = false;
      const batch = [...dirty];
      dirty.clear();
      for (const item of batch) void share(item);
    }, 0).unref();
  };

  const entryFor = (id: string, baseUrl: string, apiKey: string | undefined, headers?: Headers): Entry => {
    let entry = entries.get(id);
    if (entry) return entry;
    const inner = createCapabilityStore();
    const raw = inner.capabilitiesFor(baseUrl, apiKey, headers);
    const values = { strictSchemas: raw.strictSchemas, usageInStream: raw.usageInStream };
    // The flags become accessors on the same object: a read (every request body reads both) plans a
    // comparison, and the object stays the one the loop and `negotiate` mutate.
    const created: Entry = {
      id,
      inner,
      supports: raw,
      shared: new Map(),
      learned: new Map(),
      dirtySince: undefined,
      dropped: false,
      touchedAt: 0,
      // Not used until handed out or read: a tenant only received from Redis has nothing to compare.
      usedTick: Number.NEGATIVE_INFINITY,
    };
    for (const flag of ["strictSchemas", "usageInStream"] as const) {
      Object.defineProperty(
        raw,
        flag,
        protoless({
          enumerable: true,
          configurable: false,
          get: () => {
            soon(created);
            return values[flag];
          },
          set: (value: boolean) => {
            values[flag] = value;
            soon(created);
          },
        }),
      );
    }
    ids.set(raw, id);
    entries.set(id, created);
    entry = created;
    return entry;
  };

  /**
   * The id an endpoint is shared under: the base URL in `negotiate`'s spelling, and its digest of
   * the key and headers.
   */
  const idFor = (baseUrl: string, apiKey: string | undefined, headers: Headers | undefined): string => {
    const probe = createCapabilityStore();
    probe.capabilitiesFor(baseUrl, apiKey, headers);
    const endpoint = probe.exportCapabilities().endpoints[0] as CapabilitySnapshotEndpoint;
    return `${endpoint.baseUrl}${SEP}${endpoint.keyId}`;
  };
  /**
   * Ids already worked out, by a digest of the base URL and key (either may hold a credential, so
   * neither is kept), least recently used first; at most `ID_CACHE_SIZE`. One let go is only worked
   * out again: its endpoint and latches stay.
   */
  const idCache = new Map<string, string>();

  const receive = (id: string, fields: [string, string][], at = 0): void => {
    const [baseUrl, keyId] = id.split(SEP);
    if (!baseUrl || keyId === undefined) return;
    // An endpoint first met elsewhere is made here from its id alone: the API key stays a digest.
    const entry = entries.get(id) ?? entryFor(id, baseUrl, undefined);
    comparing = true;
    try {
      applyFields(entry.supports, fields);
    } finally {
      comparing = false;
    }
    for (const [field, value] of fields) {
      entry.shared.set(field, value);
      if (!entry.learned.has(field)) entry.learned.set(field, at);
    }
  };

  /** Forgets an endpoint here; the objects handed out keep their values. */
  const dropLocal = (id: string): boolean => {
    for (const [key, value] of idCache) if (value === id) idCache.delete(key);
    const entry = entries.get(id);
    if (entry) {
      dirty.delete(entry);
      entry.dropped = true;
    }
    return entries.delete(id);
  };

  const sendForget = (id: string, mark: string, at: number): Promise<unknown> =>
    runScript(
      writer,
      FORGET_SCRIPT,
      [forgottenKey, generationKey, indexKey, keyOf(id)],
      [...forgets.remembered(mark, at, channel), id],
    );

  const sendReset = (mark: string, at: number): Promise<unknown> =>
    runScript(
      writer,
      RESET_SCRIPT,
      [forgottenKey, generationKey, indexKey],
      [...forgets.remembered(mark, at, channel), `${prefix}caps:`],
    );

  /** Forgets everything held here (a reset, this instance's or another's). */
  const dropAll = (): void => {
    for (const id of [...entries.keys()]) dropLocal(id);
    idCache.clear();
  };

  /**
   * Carries out here a forget of `id` made at `at` (the forgetting host's clock) that this instance
   * missed: what it held of the tenant from before then goes; a latch it learned after then (while
   * away) is kept, in a fresh entry, and shared.
   */
  const missedForget = (id: string, at: number): void => {
    const entry = entries.get(id);
    if (!entry) return;
    const kept: [string, string][] = [];
    comparing = true;
    try {
      const endpoint = entry.inner.exportCapabilities().endpoints[0];
      if (endpoint) {
        for (const [field, value] of fieldsOf(endpoint)) {
          // Learned strictly after the forget was made; one of the same millisecond goes with it.
          if ((entry.learned.get(field) ?? entry.dirtySince ?? Date.now()) > at) kept.push([field, value]);
        }
      }
    } finally {
      comparing = false;
    }
    dropLocal(id);
    if (kept.length === 0) return;
    const [baseUrl] = id.split(SEP);
    const fresh = entryFor(id, baseUrl as string, undefined);
    comparing = true;
    try {
      applyFields(fresh.supports, kept);
    } finally {
      comparing = false;
    }
    for (const [field] of kept)
      fresh.learned.set(field, entry.learned.get(field) ?? entry.dirtySince ?? Date.now());
    soon(fresh);
  };

  /**
   * Reads the forgets Redis remembers and carries out, oldest first, each this instance did not
   * know of (a reset's mark names the tenant "": every tenant held).
   */
  const catchUp = (): Promise<void> =>
    forgets.catchUp((id, at) => {
      if (id === "") {
        idCache.clear();
        for (const held of [...entries.keys()]) missedForget(held, at);
      } else {
        missedForget(id, at);
      }
    });

  /**
   * This instance's own forgets and resets not yet heard back, by mark: the tenant's id, or "" for a
   * reset. A latch announcement heard meanwhile about a tenant one of them drops was published before
   * that forget ran in Redis (announcements arrive in the order Redis ran them), so the forget undoes
   * it: it is passed over, not laid on the local copy the forget emptied. Laid on, it brought the
   * latch back here only — its own latch heard back right after a `forget` or `reset`, or another
   * instance's that crossed it — while Redis and every other instance dropped it, so this instance
   * answered otherwise than the rest (and than an in-memory store after the same calls) for good.
   */
  const unheard = new Map<string, string>();
  const forgetsUnheard = (id: string): boolean => {
    for (const forgotten of unheard.values()) if (forgotten === "" || forgotten === id) return true;
    return false;
  };

  /**
   * Forgets and a reset, until Redis has them: sent at once when the link is up, else when it is
   * back, in the order they were made and before any reload. A reset supersedes the forgets before it.
   */
  const owed = new Owed<
    { forget: string; mark: string; at: number } | { reset: true; mark: string; at: number }
  >({
    link: writer,
    send: (_key, work) =>
      "forget" in work ? sendForget(work.forget, work.mark, work.at) : sendReset(work.mark, work.at),
    max: MAX_OWED,
    report,
    teller: tell,
    what: "forgotten tenants",
    // A forget let go before it was ever sent (past MAX_OWED while Redis is away or silent, or
    // superseded) never reaches Redis: its mark goes too. So the marks of forgets made during an
    // outage are held only while the forget itself is owed.
    dropped: (_key, work) => {
      unheard.delete(work.mark);
      forgets.unsent(work.mark);
    },
  });

  /**
   * For each read of the latches on its way, the tenants this instance forgot since it began (""
   * for a reset). Redis may have answered the read before the forget ran there: what it read of
   * those tenants is from before the forget, which undoes it, and laid on here it brought the latch
   * back on this instance only — while Redis and every other instance dropped it — for good. A
   * latch another instance writes after the forget ran is heard by announcement, after the forget's.
   */
  const forgottenWhileRead = new WhileReading();
  /** A forget or reset made here: every read of the latches on its way passes over what it drops. */
  const forgottenHere = (id: string): void => forgottenWhileRead.note(id);
  // Each read bounded, pipelined; an index entry whose key expired is dropped from the index.
  const readLatches = async (): Promise<void> => {
    const since = forgottenWhileRead.open();
    try {
      await readIndexedHashes({ writer, ask, indexKey, keyOf, retainMs, report }, (id, fields) => {
        if (!since.has("") && !since.has(id)) receive(id, fields);
      });
    } finally {
      forgottenWhileRead.close(since);
    }
  };
  /** The forgets made elsewhere that this instance missed first, then every shared latch. */
  const reload = async (): Promise<void> => {
    await catchUp();
    await readLatches();
  };

  await listen(channel, (message) => {
    const parsed = JSON.parse(message) as {
      id: string;
      fields?: [string, string][];
      forget?: true;
      reset?: true;
      mark?: string;
      generation?: number;
      at?: number;
    };
    // Its own forget, echoed back, was carried out when it was made: a latch learned since stays.
    if (forgets.announced(parsed.generation, parsed.mark)) {
      if (typeof parsed.mark === "string") unheard.delete(parsed.mark);
      retryRefused();
      return;
    }
    // Another's forget or reset, heard now: what was held from before it was made goes; a latch
    // learned here after it was made (a refusal met meanwhile, whose write Redis refused for the
    // generation) stays and is shared, as for a forget read after a reconnect. An announcement
    // without a time (an earlier version's) drops everything held of the tenant.
    const at = typeof parsed.at === "number" && Number.isFinite(parsed.at) ? parsed.at : undefined;
    if (parsed.reset) {
      if (at === undefined) dropAll();
      else {
        // Emptied first: dropping each tenant would otherwise look through the cache for its ids.
        idCache.clear();
        for (const held of [...entries.keys()]) missedForget(held, at);
      }
    } else if (parsed.forget) {
      if (at === undefined) dropLocal(parsed.id);
      else missedForget(parsed.id, at);
    } else if (Array.isArray(parsed.fields) && !forgetsUnheard(parsed.id)) receive(parsed.id, parsed.fields);
    if (parsed.reset || parsed.forget) retryRefused();
  });
  // Back from a lost connection: the server may have restarted empty, so every local latch is
  // written again (refusals are a union, so writing one twice is harmless), and whatever was
  // announced meanwhile is read again.
  let retry: ReturnType<typeof setTimeout> | undefined;
  const rejoin = new Rejoin(subscriber, writer);
  const resync = (): void => {
    if (retry) clearTimeout(retry);
    retry = undefined;
    const token = rejoin.begin();
    // What was forgotten here while Redis was out of reach goes first; then what other instances
    // forgot meanwhile is carried out here. Only then is what this instance holds written again, and
    // the latches read, so neither brings a forgotten tenant back.
    void whenReady(writer)
      .then(() => owed.flush())
      .then(async (sent) => {
        if (!sent) throw new Error("owed forgets not yet sent");
        await catchUp();
        away = false;
        for (const entry of entries.values()) {
          entry.shared.clear();
          soon(entry);
        }
        // What Redis holds now is read whole, after this instance's forgets went: their echoes,
        // possibly lost with the link, need not be waited for.
        unheard.clear();
        await readLatches();
        tell.ok(RELOAD);
        rejoin.done(token);
      })
      .catch((error: unknown) => {
        if (closed) return;
        if (!(error instanceof Error && error.message === "owed forgets not yet sent"))
          tell.fail(error, RELOAD, true);
        // Still away (nothing is written meanwhile), or back but the read after the write-back failed
        // (`writtenBack()` waits for this run to finish): tried again while the subscription stays
        // up, unless a newer reconnect has begun its own.
        if (subscriber.isReady && (away || token === rejoin.seen)) {
          retry = setTimeout(resync, 1000);
          retry.unref();
        }
      });
  };
  subscriber.on("reconnecting", () => {
    away = true;
  });
  subscriber.on("ready", resync);
  await starting("read the latches already shared", reload());

  // Only the tenants used within ACTIVE_MS: the others are compared at their next use.
  const activeTicks = Math.ceil(ACTIVE_MS / syncMs);
  const timer = setInterval(() => {
    ticks++;
    for (const entry of entries.values()) if (ticks - entry.usedTick <= activeTicks) void share(entry);
  }, syncMs);
  timer.unref();

  let closing: Promise<void> | undefined;
  const closeOnce = async (): Promise<void> => {
    // A latch learned or a tenant forgotten just before close() still reaches Redis when it is there.
    if (writer.isReady) {
      let bound: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        Promise.all([...entries.values()].map(share)),
        new Promise((resolve) => {
          bound = setTimeout(resolve, CLOSE_BOUND_MS);
        }),
      ]);
      clearTimeout(bound);
    }
    await owed.finish();
    closed = true;
    if (retry) clearTimeout(retry);
    clearInterval(timer);
    // The writes still on their way or waiting for a slot (Redis slow or stalled past the bound)
    // fail as the connections go: told once, not each with the client's bare error.
    const unfinished = [...entries.values()].flatMap((entry) => (entry.writing ? [entry.writing] : []));
    shut(subscriber);
    shut(writer);
    const lost = (await Promise.all(unfinished)).filter((outcome) => outcome !== undefined).length;
    if (lost > 0)
      report(
        new RedisStoreError(
          "closed",
          `${lost} tenant${lost === 1 ? "'s" : "s'"} latches were not shared before close(): Redis did not answer their writes within ${CLOSE_BOUND_MS / 1000} s (a write already sent may still land).`,
        ),
      );
  };

  /**
   * A tenant used for a request: its key's expiry is renewed, at most once per `renewMs` here, when
   * Redis holds something of it (a tenant with no latch has no key) and this instance is not away.
   * A key found gone (expired) is written again whole from what this instance holds.
   */
  const touch = (entry: Entry): void => {
    if (entry.shared.size === 0 || away || closed || !writer.isReady) return;
    const now = Date.now();
    if (now - entry.touchedAt < renewMs) return;
    entry.touchedAt = now;
    runScript<number>(writer, TOUCH_SCRIPT, [keyOf(entry.id), indexKey], [entry.id, String(retainMs)]).then(
      (renewed) => {
        tell.ok(RENEW);
        if (renewed === 1 || entry.dropped) return;
        // The key is gone (it expired while this instance held the tenant): nothing of it is shared
        // any more, so the whole tenant is written again, not only the next field learned.
        entry.shared.clear();
        entry.touchedAt = 0;
        soon(entry);
      },
      (error: unknown) => {
        // Cut by this store's own close(), not a failure of Redis: nothing to tell.
        if (closed) return;
        entry.touchedAt = 0;
        tell.fail(error, RENEW);
      },
    );
  };

  const store: RedisCapabilityStore = {
    capabilitiesFor(baseUrl, apiKey, headers) {
      if (typeof baseUrl !== "string" || baseUrl.trim() === "") {
        throw new TypeError("capabilitiesFor: baseUrl must be the endpoint's non-empty base URL.");
      }
      // An endpoint sent headers is worked out each time (a digest, no Redis): they may hold its key.
      const cacheKey = headers == null ? cacheKeyOf(baseUrl, apiKey) : undefined;
      let id = cacheKey === undefined ? undefined : idCache.get(cacheKey);
      if (cacheKey !== undefined && id !== undefined) {
        idCache.delete(cacheKey); // now the most recently used
        idCache.set(cacheKey, id);
      } else {
        id = idFor(baseUrl, apiKey, headers);
        if (cacheKey !== undefined) {
          idCache.set(cacheKey, id);
          if (idCache.size > ID_CACHE_SIZE) idCache.delete(idCache.keys().next().value as string);
        }
      }
      const entry = entryFor(id, baseUrl, apiKey, headers);
      // Handed out: the loop (or the host) may latch on it from now on, flags read or not.
      entry.usedTick = ticks;
      touch(entry);
      return entry.supports;
    },
    peekCapabilities(baseUrl, apiKey, headers) {
      if (typeof baseUrl !== "string" || baseUrl.trim() === "") {
        throw new TypeError("peekCapabilities: baseUrl must be the endpoint's non-empty base URL.");
      }
      const id = idFor(baseUrl, apiKey, headers);
      const held = entries.get(id);
      if (held) {
        held.usedTick = ticks;
        return held.supports;
      }
      // Not held here, but another instance may have calibrated against this tenant: a detached
      // object named as it (for `endpointIdOf`), never stored, so nothing here is made or changed.
      const detached: EndpointCapabilities = { strictSchemas: true, usageInStream: true };
      ids.set(detached, id);
      return detached;
    },
    modelCapabilitiesFor,
    endpointIdOf: (supports) => ids.get(supports),
    exportCapabilities() {
      const endpoints = [...entries.values()].flatMap((entry) => {
        comparing = true;
        try {
          return entry.inner.exportCapabilities().endpoints.map((endpoint) => {
            const [baseUrl, keyId] = entry.id.split(SEP);
            return { ...endpoint, baseUrl: baseUrl as string, keyId: keyId as string };
          });
        } finally {
          comparing = false;
        }
      });
      return { version: 1, endpoints };
    },
    importCapabilities(snapshot) {
      const parsed = createCapabilityStore();
      parsed.importCapabilities(snapshot); // validates whole, throws CapabilitySnapshotError before any write
      for (const endpoint of parsed.exportCapabilities().endpoints) {
        const id = `${endpoint.baseUrl}${SEP}${endpoint.keyId}`;
        // Learned here, now: not taken as a field received from Redis.
        receive(id, [...fieldsOf(endpoint)], Date.now());
        const entry = entries.get(id) as Entry;
        // Received as if from Redis so it lands locally; now mark it unshared so it is written.
        entry.shared.clear();
        soon(entry);
      }
    },
    forget(baseUrl, apiKey, headers) {
      if (typeof baseUrl !== "string" || baseUrl.trim() === "") return false;
      const id = idFor(baseUrl, apiKey, headers);
      const held = dropLocal(id);
      // One tenant forgotten everywhere: its shared latches go, and every instance drops its copy.
      // Owed until Redis has it, so a reconnect's reload does not bring the tenant back; remembered
      // in Redis (`FORGOTTEN_MS`), so an instance away meanwhile drops its copy when it is back.
      const { mark, at } = forgets.own(id);
      unheard.set(mark, id);
      forgottenHere(id);
      owed.owe(`forget:${id}`, { forget: id, mark, at });
      return held;
    },
    get size() {
      return entries.size;
    },
    reset() {
      dropAll();
      owed.clear();
      const { mark, at } = forgets.own("");
      unheard.set(mark, "");
      forgottenHere("");
      owed.owe("reset", { reset: true, mark, at });
    },
    sync: async () => {
      if (closing) throw afterClose("sync", "capability store");
      // What a tick started writing before this call is waited for too: its failure is this sync's.
      const writes = [...entries.values()].flatMap((entry) =>
        entry.writing ? [entry.writing, share(entry)] : [share(entry)],
      );
      const outcomes = await untilSilent(
        writes,
        () => settledAt,
        SYNC_SILENT_TIMES * resolved.connectTimeoutMs,
      );
      const failed = outcomes.filter((outcome) => outcome !== undefined);
      if (failed.length === 0) return;
      throw syncFailed(failed);
    },
    writtenBack: (timeoutMs) =>
      untilWrittenBack({
        timeoutMs,
        connectTimeoutMs: resolved.connectTimeoutMs,
        url: resolved.url,
        store: "the capability store",
        rejoin,
        closed: () => closing !== undefined,
        afterClose: () => afterClose("writtenBack", "capability store"),
        pass: async () => {
          if (!(await owed.flush())) return false;
          await store.sync();
          // A write Redis refused for the generation (a forget not yet heard) is not shared yet.
          return !away && owed.size === 0 && refused.size === 0;
        },
      }),
    // After close() the connections are gone: a typed error, not the client's bare ClientClosedError.
    reload: () => (closing ? Promise.reject(afterClose("reload", "capability store")) : reload()),
    close() {
      closing ??= closeOnce();
      return closing;
    },
  };
  idCacheSizes.set(store, () => idCache.size);
  registerForgetLog(store, forgets);
  return store;
}

/**
 * What `sync()` rejects with when latch writes did not reach Redis: `refused` when Redis answered
 * each with an error (out of memory, a read-only replica), `connect` when one got no answer (the
 * connection went, or the client's command timeout passed); the first failure on `cause`.
 */
function syncFailed(failed: readonly WriteFailed[]): RedisStoreError {
  const first = failed[0]?.error;
  const answered = failed.every((f) => f.error instanceof ErrorReply);
  const n = failed.length;
  return new RedisStoreError(
    answered ? "refused" : "connect",
    `sync(): ${n} latch write${n === 1 ? "" : "s"} did not reach Redis (${first instanceof Error ? first.message : String(first)}${n === 1 ? "" : ", the first"}); ` +
      "each was told to onError too, and is written again at the tenant's next comparison (within syncMs of its next use).",
    { cause: first },
  );
}

/**
 * How many times `connectTimeoutMs` (20 s by default) `sync()` waits for Redis to settle one more of
 * its latch writes before it gives up: a stall Redis comes back from (a save's fork, a slow script,
 * a failover) lasts seconds, and each write waits behind up to {@link MAX_SHARING} others.
 */
const SYNC_SILENT_TIMES = 4;

/**
 * Waits for every one of `writes`, as `Promise.all` does, however long that takes while latch
 * writes keep settling (`settledAt`: a slow Redis, a slow event loop, a burst of 12 000 writes);
 * rejects with `RedisStoreError` (`connect`) naming how many are still owed once none has settled
 * for `boundMs`, and then for a grace more with the event loop free (Redis stopped, or cut off with
 * the connection open: a command already written waits for its answer for ever).
 *
 * Timed as every other wait on Redis is (`unanswered` in connection.ts, with its grace): from the
 * first turn of the event loop after the writes were handed over, when the client writes them, and
 * again from each write that settles. Counted from the call, a host busy right after `sync()` for
 * longer than the bound had spent it before the writes left, and a Redis answering 0.3 s later (a
 * loaded one) was told "settled none of its latch writes", with its writes landing.
 */
function untilSilent<T>(
  writes: readonly Promise<T>[],
  settledAt: () => number,
  boundMs: number,
): Promise<T[]> {
  return new Promise<T[]>((resolve, reject) => {
    const outcomes: T[] = new Array(writes.length);
    let left = writes.length;
    if (left === 0) {
      resolve(outcomes);
      return;
    }
    let allSettled: () => void = () => {};
    const all = new Promise<void>((settle) => {
      allSettled = settle;
    });
    writes.forEach((write, i) => {
      void write.then((outcome) => {
        outcomes[i] = outcome;
        if (--left === 0) {
          allSettled();
          resolve(outcomes);
        }
      });
    });
    /** Watches for `ms` more: a write that settled meanwhile (`settledAt` moved) starts the bound again from there. */
    const watch = (ms: number): void => {
      const from = settledAt();
      unanswered(
        all,
        ms,
        () => {
          const idle = Date.now() - settledAt();
          if (settledAt() !== from && idle < boundMs) {
            watch(boundMs - idle);
            return;
          }
          const n = writes.length;
          reject(
            new RedisStoreError(
              "connect",
              `sync(): Redis settled none of its latch writes for ${shownMs(boundMs)} (stopped, or cut off with the connection open); ` +
                `${left} of its ${n} latch write${n === 1 ? "" : "s"} are still owed. Each stays on its way and lands if Redis answers; ` +
                "one whose connection fails is written again at the tenant's next comparison. `connectTimeoutMs` sets how long to wait (four times it).",
            ),
          );
        },
        // Held open, as a host awaiting `sync()` expects: the process does not leave it unsettled.
        { ref: true },
      );
    };
    watch(boundMs);
  });
}

const idCacheSizes = new WeakMap<RedisCapabilityStore, () => number>();

/**
 * How many tenants' ids a store made here keeps worked out (for the tests; not exported from the
 * package). `undefined` for any other object.
 */
export function idCacheSize(store: RedisCapabilityStore): number | undefined {
  return idCacheSizes.get(store)?.();
}
