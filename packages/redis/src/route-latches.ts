import { createHash, randomBytes } from "node:crypto";
import type { RouteLatches, RouteLatchStore } from "@loopwright/client";
import { type RedisOptions, whenReady } from "./connection.js";
import { closeOnce, MAX_OWED, Owed } from "./owed.js";
import { protoless } from "./protoless.js";
import {
  afterClose,
  INDEX_EXPIRY_LUA,
  readIndexedHashes,
  runScript,
  script,
  startTenantStore,
  type TenantKeyOptions,
  TOUCH_SCRIPT,
} from "./tenant-keys.js";
import { Rejoin, untilWrittenBack } from "./written-back.js";

/** Options for {@link createRedisRouteLatches}. */
export interface RedisRouteLatchesOptions extends RedisOptions, TenantKeyOptions {}

/**
 * The window-route latches of `@loopwright/client`'s lookups, shared through Redis.
 *
 * Pass it as `createClientPool({ routeLatches })`; the lookups read and mutate its objects as they
 * would a `Map`'s, without waiting on Redis. `delete` (the pool's least-recently-used bound, or its
 * `forget`) drops a server here only.
 */
export interface RedisRouteLatches extends RouteLatchStore {
  /**
   * Reads every shared latch into the local copy (done on connect and after a reconnect). Rejects
   * with `RedisStoreError` (`closed`) after `close()`.
   */
  reload(): Promise<void>;
  /**
   * Resolves once this store is connected and Redis holds the latches it holds: the reconnect it
   * last noticed (Redis restarted empty, a proxy or `timeout` cut it) is over and its write-back
   * done, and every latch learned is sent. Rejects with `RedisStoreError` (`connect`) once
   * `timeoutMs` (default four times `connectTimeoutMs`, 20 s) has passed first, and (`closed`) after
   * `close()`.
   */
  writtenBack(timeoutMs?: number): Promise<void>;
  /** Closes both connections; the local copy keeps answering, without sharing. */
  close(): Promise<void>;
}

type Fields = Partial<Record<keyof RouteLatches, string>>;

/** What the store's teller names as the kind of command a renewal is. */
const RENEW = "renew the expiry of a server's route latches";
/** The reload after a reconnect: a kind that runs once (see `Teller.fail`). */
const RELOAD = "read the shared route latches again after reconnecting";

/**
 * Writes a server's latches (KEYS: its key, the index; ARGV: its digest, the expiry in ms, the
 * channel, the announcement, then field and value pairs): the fields, the index entry, both expiries
 * and the announcement in one call. Each retry time (LM Studio's listing, `/props` answering without
 * a window) keeps the later of the one held and the one sent, as every instance's copy does: an instance that had not yet heard of a later time, and
 * wrote its whole state for another latch, put its earlier one over it, so a host started after read
 * a retry time already past and asked the route again.
 */
const LATCH_SCRIPT = script(`${INDEX_EXPIRY_LUA}
for i = 5, #ARGV - 1, 2 do
  local timed = ARGV[i] == 'lmstudioMissUntil' or ARGV[i] == 'propsMissUntil'
  local held = timed and tonumber(redis.call('HGET', KEYS[1], ARGV[i]))
  if not (held and held >= tonumber(ARGV[i + 1])) then redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
end
keepIndexed(KEYS[1], KEYS[2], ARGV[1], ARGV[2])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1
`);

/** The latches that are a time to wait until (epoch ms): of two, the later one holds. */
const RETRY_TIMES = ["lmstudioMissUntil", "propsMissUntil"] as const;

/** What one latch set says, as hash fields: only what was learned (a latch only closes). */
function fieldsOf(state: RouteLatches): Fields {
  const fields: Fields = {};
  if (state.neither) fields.neither = "1";
  if (state.lmstudioGone) fields.lmstudioGone = "1";
  for (const key of RETRY_TIMES) {
    const until = state[key] ?? 0;
    if (until > 0) fields[key] = String(until);
  }
  return fields;
}

/**
 * Makes a route-latch store shared through Redis and loads every latch already there.
 *
 * A latch one instance's lookup sets (a server without `/props` or `/api/v0/models`) is written to
 * `<prefix>routes:<digest of the base URL>` (a base URL may carry credentials; only its SHA-256
 * digest is written) and announced on `<prefix>routes`, and laid onto every instance's objects,
 * so no instance asks a missing route again. Flags only close; each retry time takes the
 * later of two. Throws `RedisStoreError` for bad options or an unreachable server.
 */
export function createRedisRouteLatches(options: RedisRouteLatchesOptions): Promise<RedisRouteLatches> {
  return openRouteLatches(options, "createRedisRouteLatches");
}

/**
 * {@link createRedisRouteLatches}, its refusals naming `where` (the function the host called):
 * `createRedisStores` opens its route latches with this.
 */
export async function openRouteLatches(
  options: RedisRouteLatchesOptions,
  where: string,
): Promise<RedisRouteLatches> {
  const started = await startTenantStore(options, where, "routes");
  const { writer, subscriber, ask, starting, listen, retainMs, renewMs } = started;
  const { report, tell, channel, indexKey, keyOf } = started;
  const idOf = (base: string) => createHash("sha256").update(base).digest("hex").slice(0, 32);

  /** This instance's mark on what it announces: its own announcements are not laid on again. */
  const self = randomBytes(9).toString("base64url");
  const states = new Map<string, RouteLatches>();
  /**
   * The servers in `states` by their digest, so what Redis says of one digest is laid on without a
   * digest of every server held: a reload of 8 000 keys with the pool's 1 024 servers held took 18 s.
   */
  const basesById = new Map<string, Set<string>>();
  /** The digest of each server in `states`. */
  const heldIds = new Map<string, string>();
  const holdState = (base: string, state: RouteLatches): void => {
    if (!heldIds.has(base)) {
      const id = idOf(base);
      heldIds.set(base, id);
      const bases = basesById.get(id);
      if (bases) bases.add(base);
      else basesById.set(id, new Set([base]));
    }
    states.set(base, state);
  };
  const dropState = (base: string): boolean => {
    const id = heldIds.get(base);
    if (id !== undefined) {
      heldIds.delete(base);
      const bases = basesById.get(id);
      if (bases?.delete(base) && bases.size === 0) basesById.delete(id);
    }
    return states.delete(base);
  };
  /** What Redis says about each server, by digest, until this instance meets the server itself. */
  const known = new Map<string, Fields>();
  /** The latch objects whose fields already share a change. */
  const instrumented = new WeakSet<RouteLatches>();
  let receiving = false;

  /**
   * Latches learned and not yet in Redis, by server digest: sent at once when the command link is
   * up, else when it is back (Redis's `timeout` closes an idle command connection and leaves the
   * subscriber alone), and again after a send that failed. A server owed again before the first
   * went is sent both together: flags either held, the later retry time. Its whole state alone is
   * not enough: a `delete` here (the pool's forget) empties it, and a latch learned after would
   * have taken the place of one still owed, which Redis then never heard of.
   */
  const owed = new Owed<Fields>({
    link: writer,
    merge: (held, next) => {
      const merged: Fields = { ...held, ...next };
      for (const key of RETRY_TIMES) {
        const until = Math.max(Number(held[key] ?? 0), Number(next[key] ?? 0));
        if (until > 0) merged[key] = String(until);
      }
      return merged;
    },
    send: async (id, fields) => {
      await runScript(
        writer,
        LATCH_SCRIPT,
        [keyOf(id), indexKey],
        [
          id,
          String(retainMs),
          channel,
          JSON.stringify({ id, fields, from: self }),
          ...Object.entries(fields).flat(),
        ],
      );
      touched.set(id, Date.now());
    },
    max: MAX_OWED,
    report,
    teller: tell,
    what: "learned route latches",
  });

  /** When (ms) this instance last wrote each server's key or renewed its expiry. */
  const touched = new Map<string, number>();
  /**
   * A server looked up for a request: its key's expiry is renewed, at most once per `renewMs` here,
   * when Redis holds something of it. A key found gone (expired) is written again from what this
   * instance holds.
   */
  const looked = new Map<string, number>();
  const touch = (base: string): void => {
    // A lookup per request: the time is checked first, and the digest worked out once per `renewMs`.
    const now = Date.now();
    if (now - (looked.get(base) ?? 0) < renewMs || !writer.isReady) return;
    looked.set(base, now);
    const id = idOf(base);
    if (!known.has(id) && !touched.has(id)) return;
    if (now - (touched.get(id) ?? 0) < renewMs) return;
    touched.set(id, now);
    runScript<number>(writer, TOUCH_SCRIPT, [keyOf(id), indexKey], [id, String(retainMs)]).then(
      (renewed) => {
        tell.ok(RENEW);
        // The key is gone (it expired while this instance held the server): written again whole.
        const state = states.get(base);
        if (renewed !== 1 && state) share(base, state);
      },
      (error: unknown) => {
        // Cut by this store's own close(), not a failure of Redis: nothing to tell.
        if (closed) return;
        touched.set(id, 0);
        tell.fail(error, RENEW);
      },
    );
  };

  const share = (base: string, state: RouteLatches): void => {
    if (receiving) return;
    const fields = fieldsOf(state);
    if (Object.keys(fields).length === 0) return;
    owed.owe(idOf(base), fields);
  };

  /**
   * Turns `state`'s four fields into accessors that share a change, on the object itself: the
   * lookups keep using the object they made and handed to `set`. `propsMissUntil` is made an
   * accessor even where the object came without it (a store's caller written before it), so a
   * lookup setting it later shares it too.
   */
  const instrument = (base: string, state: RouteLatches): RouteLatches => {
    const values = {
      neither: state.neither,
      lmstudioGone: state.lmstudioGone,
      lmstudioMissUntil: state.lmstudioMissUntil,
      propsMissUntil: state.propsMissUntil ?? 0,
    };
    for (const key of ["neither", "lmstudioGone", "lmstudioMissUntil", "propsMissUntil"] as const) {
      Object.defineProperty(
        state,
        key,
        protoless({
          enumerable: true,
          configurable: true,
          get: () => values[key],
          set: (value: never) => {
            if (values[key] === value) return;
            values[key] = value;
            share(base, state);
          },
        }),
      );
    }
    return state;
  };

  /** Lays `fields` onto `state`: flags only close, a retry time only moves later. */
  const lay = (state: RouteLatches, fields: Fields): void => {
    receiving = true;
    try {
      if (fields.neither === "1") state.neither = true;
      if (fields.lmstudioGone === "1") state.lmstudioGone = true;
      for (const key of RETRY_TIMES) {
        const until = Number(fields[key]);
        if (until > (state[key] ?? 0)) state[key] = until;
      }
    } finally {
      receiving = false;
    }
  };

  const receive = (id: string, fields: Fields): void => {
    known.set(id, { ...known.get(id), ...fields });
    for (const base of basesById.get(id) ?? []) {
      const state = states.get(base);
      if (state) lay(state, fields);
    }
  };

  /** A server this instance has not met: made from what Redis knows of it, if anything. */
  const adopt = (base: string): RouteLatches | undefined => {
    const fields = known.get(idOf(base));
    if (!fields) return undefined;
    const state = instrument(base, {
      neither: false,
      lmstudioGone: false,
      lmstudioMissUntil: 0,
      propsMissUntil: 0,
    });
    instrumented.add(state);
    lay(state, fields);
    holdState(base, state);
    return state;
  };

  // Each read bounded, pipelined; an index entry whose key expired is dropped from the index.
  const reload = (): Promise<void> =>
    readIndexedHashes({ writer, ask, indexKey, keyOf, retainMs, report }, (id, fields) =>
      receive(id, Object.fromEntries(fields) as Fields),
    );

  await listen(channel, (message) => {
    const { id, fields, from } = JSON.parse(message) as { id: string; fields: Fields; from?: string };
    // Its own announcement, echoed back, holds nothing it did not hold — and arriving after a
    // `delete` (the pool's forget) it would lay the forgotten latch straight back on.
    if (from === self) return;
    if (typeof id === "string" && typeof fields === "object" && fields !== null) receive(id, fields);
  });
  const rejoin = new Rejoin(subscriber, writer);
  const writeBack = (): void => {
    const token = rejoin.begin();
    // The server may have come back empty: write what this instance knows again, then read.
    void whenReady(writer)
      .then(() => {
        for (const [base, state] of states) share(base, state);
        return reload();
      })
      .then(
        () => {
          tell.ok(RELOAD);
          // What was written back is owed until Redis has it: `writtenBack()` waits for that.
          rejoin.done(token);
        },
        (error: unknown) => {
          tell.fail(error, RELOAD, true);
          // Run again (the latches owed again, the read again), not left undone until the next reconnect.
          rejoin.retry(token, writeBack, () => closed);
        },
      );
  };
  subscriber.on("ready", writeBack);
  await starting("read the latches already shared", reload());

  let closed = false;
  return {
    get(base) {
      const state = states.get(base) ?? adopt(base);
      if (state) touch(base);
      return state;
    },
    set(base, latches) {
      // A lookup sets its server again to mark it recent: the same object, already sharing.
      if (!instrumented.has(latches)) {
        instrument(base, latches);
        instrumented.add(latches);
        share(base, latches);
      }
      holdState(base, latches);
      return this;
    },
    delete(base) {
      // What Redis said of the server goes too, or the next lookup would adopt it straight back:
      // the pool's `forget` (and its bound) would drop nothing, and the server would never be asked
      // again by this instance. Learned again, it is shared again.
      known.delete(idOf(base));
      looked.delete(base);
      return dropState(base);
    },
    clear() {
      states.clear();
      basesById.clear();
      heldIds.clear();
      known.clear();
      looked.clear();
    },
    get size() {
      return states.size;
    },
    keys: () => states.keys(),
    // After close() the connections are gone: a typed error, not the client's bare ClientClosedError.
    reload: () => (closed ? Promise.reject(afterClose("reload", "route latch store")) : reload()),
    writtenBack: (timeoutMs) =>
      untilWrittenBack({
        timeoutMs,
        connectTimeoutMs: started.resolved.connectTimeoutMs,
        url: started.resolved.url,
        store: "the route latch store",
        rejoin,
        closed: () => closed,
        afterClose: () => afterClose("writtenBack", "route latch store"),
        pass: async () => (await owed.flush()) && owed.size === 0,
      }),
    close: closeOnce(
      owed,
      () => {
        closed = true;
      },
      subscriber,
      writer,
    ),
  };
}
