import { createHash, randomBytes } from "node:crypto";
import { type Calibration, contextChars, createCalibration, type EndpointKey } from "@loopwright/ledger";
import { ErrorReply } from "@redis/client";
import { type RedisOptions, shut, whenReady } from "./connection.js";
import { RedisStoreError } from "./errors.js";
import { ForgetLog, REMEMBER_LUA, registerForgetLog, WhileReading } from "./forgets.js";
import { CLOSE_BOUND_MS, MAX_OWED, Owed } from "./owed.js";
import {
  afterClose,
  INDEX_EXPIRY_LUA,
  readIndexed,
  runScript,
  script,
  startTenantStore,
  storedPart,
  type TenantKeyOptions,
  TOUCH_SCRIPT,
} from "./tenant-keys.js";
import { Rejoin, untilWrittenBack } from "./written-back.js";

/** Options for {@link createRedisCalibration}. */
export interface RedisCalibrationOptions extends RedisOptions, TenantKeyOptions {
  /**
   * Names an endpoint object (the loop passes its capability record) for sharing: give the Redis
   * capability store's `endpointIdOf`. An object it cannot name is calibrated locally only.
   */
  endpointIdOf?: ((endpoint: object) => string | undefined) | undefined;
}

/** A `Calibration` whose readings are shared through Redis; reads are served from a local copy. */
export interface RedisCalibration extends Calibration {
  /**
   * Reads every shared reading into the local copy (done on connect and after a reconnect). Rejects
   * with `RedisStoreError` (`closed`) after `close()`.
   */
  reload(): Promise<void>;
  /**
   * Resolves once this store is connected and Redis holds the readings it holds: the reconnect it
   * last noticed (Redis restarted empty, a proxy or `timeout` cut it) is over and its write-back
   * done, the forgets owed are sent and every reading taken is written. Rejects with
   * `RedisStoreError` (`connect`) once `timeoutMs` (default four times `connectTimeoutMs`, 20 s) has
   * passed first, and (`closed`) after `close()`.
   */
  writtenBack(timeoutMs?: number): Promise<void>;
  /** Closes both connections; the local copy keeps answering, without sharing. */
  close(): Promise<void>;
}

/** As `@loopwright/ledger` keeps them: the last four readings choose the divisor. */
const KEPT = 4;
/** What the calibration's teller names (and tells apart) as the kinds of command that failed. */
const WRITE = "write a calibration reading";
const RENEW = "renew the expiry of a calibration list";
/** The reload after a reconnect: a kind that runs once (see `Teller.fail`). */
const RELOAD = "read the shared readings again after reconnecting";
const DEFAULT_DIVISOR = 4;
/** The characters-per-token range `@loopwright/ledger` takes a reading in (its MIN_READING, MAX_READING). */
const MIN_READING = 1;
const MAX_READING = 8;

/**
 * Records a reading (KEYS: the endpoint and model's list, the index, the generation; ARGV: the id,
 * the generation known, how many are kept, the expiry in ms, the channel, the announcement, `k`, then
 * the readings: the new one, or every one held here when the list expired under this instance):
 * pushed, trimmed, indexed, both expiries set and announced in one call, so no forget lands
 * between them. With `k` above 0 (a reading written again after its write was cut), the last `k`
 * are pushed if the list is there, and the ones before them (every reading held here) if it is not:
 * Redis restarted empty under the cut write, and the list goes back whole. Every forget moves the generation (`<prefix>calibration:generation`) on and announces
 * it; a reading sent by an instance that has yet to hear of a forget is refused (answers 0, nothing
 * written), so a reading in flight across a forget cannot land after it and outlive it in Redis.
 */
const READING_SCRIPT = script(`${INDEX_EXPIRY_LUA}
if tonumber(ARGV[2]) < tonumber(redis.call('GET', KEYS[3]) or '0') then return 0 end
local k = tonumber(ARGV[7])
if k > 0 and redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('RPUSH', KEYS[1], unpack(ARGV, #ARGV - k + 1))
else
  redis.call('RPUSH', KEYS[1], unpack(ARGV, 8, #ARGV - k))
end
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[3]), -1)
keepIndexed(KEYS[1], KEYS[2], ARGV[1], ARGV[4])
redis.call('PUBLISH', ARGV[5], ARGV[6])
return 1
`);

/**
 * Forgets an endpoint (KEYS: the forgotten set, the index, the generation, then each of its lists;
 * ARGV: when, mark, cutoff, kept ms, the channel, the endpoint's name, then each list's id) in one
 * call: remembered, its lists and their index entries deleted, the generation moved on, and announced
 * with it. Answers the new generation.
 */
const FORGET_SCRIPT = script(`${REMEMBER_LUA}
for i = 4, #KEYS do
  redis.call('DEL', KEYS[i])
  redis.call('SREM', KEYS[2], ARGV[i + 3])
end
local generation = redis.call('INCR', KEYS[3])
redis.call('PUBLISH', ARGV[5], cjson.encode({ forget = ARGV[6], mark = ARGV[2], generation = generation }))
return generation
`);

/** A reading another process put in Redis is taken only in ledger's range: one bad value would be every instance's divisor. */
function plausible(reading: unknown): reading is number {
  return typeof reading === "number" && reading >= MIN_READING && reading <= MAX_READING;
}

/**
 * Checks `endpointIdOf` before anything connects: absent (or null), or a function. A slip such as
 * the capability store itself, or an id string, would otherwise be taken and throw a `TypeError`
 * from the loop's first calibration. Throws `RedisStoreError` (`invalid-option`) naming `where`.
 */
function endpointIdOfOption(value: unknown, where: string): void {
  if (value === undefined || value === null || typeof value === "function") return;
  const given =
    typeof value === "string"
      ? `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`
      : typeof value === "object"
        ? Array.isArray(value)
          ? "an array"
          : "an object"
        : `a ${typeof value}`;
  throw new RedisStoreError(
    "invalid-option",
    `${where}: \`endpointIdOf\` must be a function (give the capability store's \`endpointIdOf\`; leave it out to calibrate object endpoints locally only), and was given ${given}.`,
  );
}

/**
 * Makes a calibration store shared through Redis and loads every reading already there.
 *
 * A reading taken on one instance (a list per
 * endpoint and model, the last four kept) is announced and used by every instance's next
 * `charsPerTokenFor`, which never waits on Redis. Validation is `@loopwright/ledger`'s own: a
 * reading it would not take is not shared, nor taken from Redis when another process put it there. Throws `RedisStoreError` for bad options or an
 * unreachable server.
 */
export function createRedisCalibration(options: RedisCalibrationOptions): Promise<RedisCalibration> {
  return openCalibration(options, "createRedisCalibration");
}

/**
 * {@link createRedisCalibration}, its refusals naming `where` (the function the host called):
 * `createRedisStores` opens its calibration store with this.
 */
export async function openCalibration(
  options: RedisCalibrationOptions,
  where: string,
): Promise<RedisCalibration> {
  const started = await startTenantStore(options, where, "calibration", () =>
    endpointIdOfOption(options.endpointIdOf, where),
  );
  const { writer, subscriber, ask, starting, listen, retainMs, renewMs } = started;
  const { prefix, report, tell, channel, indexKey, keyOf } = started;
  const generationKey = `${prefix}calibration:generation`;
  /**
   * This instance's mark on the readings it announces: its own, echoed back, were taken when made,
   * and taken twice they would be half of its last four, so it would divide by other numbers than
   * every other instance.
   */
  const self = randomBytes(9).toString("base64url");
  const forgottenKey = `${prefix}calibration:forgotten`;
  /**
   * The forgets this instance knows of, and the generation its readings are written with (see
   * READING_SCRIPT); a forget it does not know, read after a reconnect, was made while its
   * subscription was down.
   */
  const forgets = new ForgetLog(ask, generationKey, forgottenKey);

  let local = createCalibration();
  /** Shared readings by `<endpoint id>␀<model>`. */
  const shared = new Map<string, number[]>();
  /**
   * The ids in `shared` by each of their heads that ends just before a ␀ (an endpoint's name, which
   * may hold a ␀ itself: `<baseUrl>␀<keyId>`), so an endpoint's ids are found without a pass over
   * every id held: a sweep of 16 000 forgets took 48 s.
   */
  const byHead = new Map<string, Set<string>>();
  const headsOf = (id: string): string[] => {
    const heads: string[] = [];
    for (let at = id.indexOf("\u0000"); at >= 0; at = id.indexOf("\u0000", at + 1))
      heads.push(id.slice(0, at));
    return heads;
  };
  /** Holds `readings` under `id`, indexed by its heads. */
  const hold = (id: string, readings: number[]): void => {
    if (!shared.has(id)) {
      for (const head of headsOf(id)) {
        const ids = byHead.get(head);
        if (ids) ids.add(id);
        else byHead.set(head, new Set([id]));
      }
    }
    shared.set(id, readings);
  };
  /** Lets go of `id`'s readings; answers whether any were held. */
  const release = (id: string): boolean => {
    if (!shared.delete(id)) return false;
    for (const head of headsOf(id)) {
      const ids = byHead.get(head);
      if (ids?.delete(id) && ids.size === 0) byHead.delete(head);
    }
    return true;
  };
  /** The ids held of the endpoint named `name` (those starting with `name`␀). */
  const idsOf = (name: string): string[] => [...(byHead.get(name) ?? [])];

  // A string endpoint is shared under a digest of it: a base URL may carry credentials, and key
  // names are not the place for them.
  const nameOf = (endpoint: EndpointKey): string | undefined =>
    typeof endpoint === "string"
      ? `s:${createHash("sha256").update(endpoint).digest("hex").slice(0, 32)}`
      : (options.endpointIdOf?.(endpoint) ?? undefined);

  const take = (id: string, reading: number): void => {
    if (!plausible(reading)) return;
    const readings = shared.get(id) ?? [];
    readings.push(reading);
    if (readings.length > KEPT) readings.splice(0, readings.length - KEPT);
    hold(id, readings);
  };

  /** Drops every shared reading of the endpoint named `name` here; answers whether there were any. */
  const dropLocal = (name: string): boolean => {
    let held = false;
    for (const id of idsOf(name)) held = release(id) || held;
    return held;
  };

  /**
   * For each reload's read on its way, the endpoints this instance forgot since it began. Redis may have answered the read before the forget ran there: what it read of them is
   * from before the forget, and held here it brought the readings back on this instance only —
   * while Redis and every other instance dropped them — for good. A reading another instance takes
   * after the forget ran is heard by announcement, after the forget's.
   */
  const forgottenWhileRead = new WhileReading();
  /** For each reload's read on its way, the lists this instance took a reading of since it began. */
  const takenWhileRead = new WhileReading();
  /** A forget made here: every reload's read on its way passes over what it drops. */
  const forgottenHere = (name: string): void => forgottenWhileRead.note(name);

  /** Drops here the readings of each endpoint forgotten while this instance's subscription was down. */
  const catchUp = (): Promise<void> => forgets.catchUp((name) => dropLocal(name));

  // Each read bounded, pipelined; an index entry whose list expired is dropped from the index. The
  // forgets this instance missed go first, so what it held of a forgotten endpoint is not kept
  // beside what Redis holds now.
  // Answers the ids Redis held.
  const reload = async (): Promise<Set<string>> => {
    await catchUp();
    const found = new Set<string>();
    const since = forgottenWhileRead.open();
    const taken = takenWhileRead.open();
    const forgotten = (id: string): boolean => {
      for (const name of since) if (id.startsWith(`${name}\u0000`)) return true;
      return false;
    };
    const read = (id: string) => ask<string[]>(["LRANGE", keyOf(id), String(-KEPT), "-1"]);
    try {
      await readIndexed({ writer, ask, indexKey, keyOf, retainMs, report }, read, (id, values) => {
        found.add(id);
        if (!forgotten(id) && !taken.has(id)) hold(id, values.map(Number).filter(plausible));
      });
      // A reading taken here while the read was on its way was written behind it on this connection,
      // so the read's list may lack it, and held, it lost that reading here alone (every other
      // instance and Redis divided by it). Those lists are read again, now behind those writes.
      for (let round = 0; round < 3 && taken.size > 0; round++) {
        const ids = [...taken];
        taken.clear();
        const lists = await Promise.all(ids.map(read));
        for (const [i, id] of ids.entries()) {
          const values = (lists[i] ?? []).map(Number).filter(plausible);
          if (values.length > 0 && !forgotten(id) && !taken.has(id)) hold(id, values);
        }
      }
    } finally {
      forgottenWhileRead.close(since);
      takenWhileRead.close(taken);
    }
    return found;
  };

  /** When (ms) this instance last wrote each list or renewed its expiry. */
  const touched = new Map<string, number>();
  /**
   * The lists found gone (expired) when this instance renewed them while it held readings: the next
   * reading taken is written with every reading held, so Redis holds what this instance does.
   */
  const lapsed = new Set<string>();
  /**
   * A list read for a request: its expiry is renewed, at most once per `renewMs` here. A list found
   * gone is written whole with the next reading.
   */
  const touch = (id: string): void => {
    if (!writer.isReady) return;
    const now = Date.now();
    if (now - (touched.get(id) ?? 0) < renewMs) return;
    touched.set(id, now);
    runScript<number>(writer, TOUCH_SCRIPT, [keyOf(id), indexKey], [id, String(retainMs)]).then(
      (renewed) => {
        tell.ok(RENEW);
        if (renewed !== 1 && shared.has(id)) lapsed.add(id);
      },
      (error: unknown) => {
        // Cut by this store's own close(), not a failure of Redis: nothing to tell.
        if (closed) return;
        touched.delete(id);
        tell.fail(error, RENEW);
      },
    );
  };

  /**
   * This instance's own forgets not yet heard back, by mark: the endpoint's name. A reading
   * announced meanwhile of an endpoint one of them forgets was written before that forget ran in
   * Redis (announcements arrive in the order Redis ran them), so the forget deleted it: it is passed
   * over, not taken into the copy the forget emptied here (it was, and this instance alone divided by
   * a reading no other instance, nor Redis, held any more).
   */
  const unheard = new Map<string, string>();
  const forgetsUnheard = (id: string): boolean => {
    for (const name of unheard.values()) if (id.startsWith(`${name}\u0000`)) return true;
    return false;
  };

  await listen(channel, (message) => {
    const {
      id,
      reading,
      forget,
      mark,
      generation: moved,
      from,
    } = JSON.parse(message) as {
      from?: string;
      id: string;
      reading?: number;
      forget?: string;
      mark?: string;
      generation?: number;
    };
    // Its own forget, echoed back, was carried out when it was made: a reading taken since stays.
    if (forgets.announced(moved, mark)) {
      if (typeof mark === "string") unheard.delete(mark);
      writeRefused();
      return;
    }
    if (typeof forget === "string") {
      dropLocal(forget);
      writeRefused();
    } else if (typeof id === "string" && from !== self && !forgetsUnheard(id)) take(id, reading as number);
  });
  /**
   * Forgotten endpoints, with the reading lists they had, until Redis has the deletion and every
   * instance was told: sent at once when the link is up, else when it is back, before any reload.
   */
  const owed = new Owed<{ ids: string[]; mark: string; at: number }>({
    link: writer,
    // Remembered too, so an instance away now drops its copy when it is back.
    send: (name, { ids, mark, at }) =>
      runScript(
        writer,
        FORGET_SCRIPT,
        [forgottenKey, indexKey, generationKey, ...ids.map(keyOf)],
        [...forgets.remembered(mark, at, channel), name, ...ids],
      ),
    merge: (earlier, later) => ({ ...later, ids: [...new Set([...earlier.ids, ...later.ids])] }),
    max: MAX_OWED,
    report,
    teller: tell,
    what: "forgotten endpoints",
    // A forget let go before it was ever sent (past MAX_OWED while Redis is away or silent), or
    // folded into a later forget of the same endpoint (which carries the later mark), never reaches
    // Redis under its mark: the mark goes too, so an outage holds as many marks as forgets owed.
    dropped: (_name, work) => {
      unheard.delete(work.mark);
      forgets.unsent(work.mark);
    },
  });
  // What was forgotten while Redis was out of reach goes first, or the reload would bring it back.
  const rejoin = new Rejoin(subscriber, writer);
  const writeBack = (): void => {
    const token = rejoin.begin();
    const again = () => rejoin.retry(token, writeBack, () => closed);
    void whenReady(writer)
      .then(() => owed.flush())
      .then(async (sent) => {
        // Run again once the forgets owed are sent: the reload must not bring one back.
        if (!sent) return again();
        // Read whole from Redis after this instance's forgets went: their echoes, possibly lost
        // with the link, need not be waited for.
        unheard.clear();
        const found = await reload();
        tell.ok(RELOAD);
        // The server may have come back empty (a restart without persistence): what this instance
        // holds that Redis does not is written back whole, as the capability store and the route
        // latches write theirs back. It was left here alone, so a host started after the restart
        // divided by the default where every instance running divided by the readings. Announced
        // with no reading: each instance holds these already, and taking one again would change
        // its last four.
        const writes: Promise<boolean>[] = [];
        for (const [id, readings] of [...shared]) {
          if (found.has(id) || readings.length === 0) continue;
          // The connection dropped under the write-back: the rest is written when it runs again.
          if (!writer.isReady) return again();
          writes.push(write(id, undefined, readings, true));
        }
        // Done once Redis answered them: a write cut with its connection (which a cut of the
        // command connection alone does not make a reconnect of the subscription) is written when
        // this runs again. `writtenBack()` resolved with it lost, and nothing wrote it until that
        // tenant's next reading.
        if ((await Promise.all(writes)).every(Boolean)) rejoin.done(token);
        else again();
      })
      .catch((error: unknown) => {
        tell.fail(error, RELOAD, true);
        again();
      });
  };
  subscriber.on("ready", writeBack);
  await starting("read the readings already shared", reload());

  /**
   * Readings Redis refused for the generation: taken here before this instance heard of a forget
   * (its own, or another's) that Redis had already run. Written again once the next forget is heard
   * (the generation known here has moved on), each only while this instance still holds it: one of
   * the forgotten endpoint was dropped with it when the forget was heard, so it never outlives the
   * forget; one of another endpoint, or taken after its own instance's forget of the same one, is
   * a reading the in-memory store keeps, and is kept and shared. It was let go at the refusal:
   * a reading of any endpoint taken while this instance's forget of another was on its way was lost,
   * here and everywhere, though `calibrate` had answered with it.
   */
  let refusedReadings: { id: string; reading: number }[] = [];
  const writeRefused = (): void => {
    const again = refusedReadings;
    refusedReadings = [];
    for (const { id, reading } of again) {
      if (shared.get(id)?.includes(reading) && writer.isReady) write(id, reading, [reading], false);
    }
  };

  /**
   * The reading writes on their way (and the ones waiting for a forget owed to go first), each
   * settled once it is answered: `close()` waits for them, as it waits for the forgets owed, so a
   * reading taken just before `close()` reaches Redis instead of being cut off with the connection.
   */
  const writing = new Set<Promise<unknown>>();
  const track = (work: Promise<unknown>): void => {
    const settled = work.then(
      () => {},
      () => {},
    );
    writing.add(settled);
    void settled.then(() => writing.delete(settled));
  };

  /**
   * `reading` is the one taken, announced to every instance; `undefined` for a write-back.
   * `ifGone`: the readings to push instead of `readings` should the list not be there (see
   * READING_SCRIPT). Answers, once settled, whether Redis answered it (`false`: its connection
   * failed under it).
   */
  const write = (
    id: string,
    reading: number | undefined,
    readings: number[],
    whole: boolean,
    ifGone?: number[],
  ): Promise<boolean> => {
    const generation = forgets.generation;
    const sent = runScript<number>(
      writer,
      READING_SCRIPT,
      [keyOf(id), indexKey, generationKey],
      [
        id,
        String(generation),
        String(KEPT),
        String(retainMs),
        channel,
        JSON.stringify({ id, reading, from: self }),
        String(ifGone === undefined ? 0 : readings.length),
        ...(ifGone ?? []).map(String),
        ...readings.map(String),
      ],
    ).then(
      (written): boolean => {
        tell.ok(WRITE);
        if (written === 1) return true;
        // The list it found gone goes back whole with the next reading written.
        if (whole) lapsed.add(id);
        if (reading !== undefined) refusedReadings.push({ id, reading });
        // The forget that refused it may have been heard already (the announcement and this answer
        // come on two connections, in either order): then it is written again now.
        if (forgets.generation > generation) writeRefused();
        return true;
      },
      (error: unknown): boolean => {
        // Cut by this store's own close(), not a failure of Redis: nothing to tell.
        if (closed) return true;
        touched.delete(id);
        if (whole) lapsed.add(id);
        tell.fail(error, WRITE);
        // The connection failed under the write (not Redis refusing it): written again once it is
        // back. Its answer may have been all that was lost, so the reading can be stored twice —
        // a reading taken, repeated in the last four, on every instance alike — where it was kept
        // on this instance alone.
        if (!(error instanceof ErrorReply) && reading !== undefined) {
          holdUnwritten(id, reading);
          if (writer.isReady) writeWaiting();
        }
        return error instanceof ErrorReply;
      },
    );
    track(sent);
    return sent;
  };

  /**
   * Readings taken while the command connection was away — cut and reconnecting (Redis's `timeout`
   * on an idle connection, a proxy, a failover) while the subscription stayed, so no reload follows —
   * by id, the last `KEPT` each. Written once it is back, behind the forgets owed, each only while
   * this instance still holds it (a forget heard meanwhile dropped it). They were let go: the reading
   * stayed on this instance alone, which then divided by another number than every other.
   */
  const waiting = new Map<string, number[]>();
  const holdUnwritten = (id: string, reading: number): void => {
    const held = waiting.get(id) ?? [];
    held.push(reading);
    if (held.length > KEPT) held.splice(0, held.length - KEPT);
    waiting.set(id, held);
  };
  const writeWaiting = (): void => {
    if (waiting.size === 0) return;
    const chained = owed.flush().then(
      () => {
        for (const [id, readings] of [...waiting]) {
          if (closed || !writer.isReady) return;
          waiting.delete(id);
          // Redis may have restarted empty under the cut write (no persistence): the list is gone,
          // and this write, sent as soon as the link is back, lands before the reload that follows
          // the restart. Pushed alone, the reload then found the list, wrote nothing back, and the
          // readings before it were gone from Redis — and, once reloaded, from every instance. So
          // where the list is gone each write pushes every reading held here instead (but the
          // ones still to be written after it).
          const held = [...(shared.get(id) ?? [])];
          for (const [at, reading] of readings.entries()) {
            if (!held.includes(reading)) continue;
            const before = [...held];
            for (const later of readings.slice(at + 1)) {
              const last = before.lastIndexOf(later);
              if (last >= 0) before.splice(last, 1);
            }
            write(id, reading, [reading], false, before);
          }
        }
      },
      () => {},
    );
    track(chained);
  };
  writer.on("ready", writeWaiting);

  let closed = false;
  let closing: Promise<void> | undefined;
  /**
   * Sends the forgets owed, then the readings held while the link was away, and waits for every
   * reading write on its way — all within one `CLOSE_BOUND_MS`, as the other stores and the bus
   * wait — before the connections close; tells `report` (`closed`) once of the readings that did
   * not get there (Redis out of reach, or silent past the bound). They were cut off with the
   * connection in silence: a reading taken just before `close()` never reached Redis, and a new
   * instance divided by the default.
   */
  const closeStore = async (): Promise<void> => {
    const deadline = Date.now() + CLOSE_BOUND_MS;
    if (writer.isReady) {
      let bound: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        (async () => {
          await owed.flush();
          writeWaiting();
          while (writing.size > 0) await Promise.all([...writing]);
        })(),
        new Promise((resolve) => {
          bound = setTimeout(resolve, CLOSE_BOUND_MS);
        }),
      ]);
      clearTimeout(bound);
    }
    await owed.finish(Math.max(0, deadline - Date.now()));
    closed = true;
    // What is on the wire still may land (its answer is what is missing); what waits never goes.
    let unwritten = writing.size;
    for (const readings of waiting.values()) unwritten += readings.length;
    waiting.clear();
    shut(subscriber);
    shut(writer);
    if (unwritten > 0) {
      report(
        new RedisStoreError(
          "closed",
          `${unwritten} calibration reading${unwritten === 1 ? " was" : "s were"} not written to Redis before close(): Redis was out of reach, or did not answer within ${CLOSE_BOUND_MS / 1000} s (a write already sent may still land).`,
        ),
      );
    }
  };
  const store: RedisCalibration = {
    calibrate(endpoint, model, body, promptTokens) {
      const answer = local.calibrate(endpoint, model, body, promptTokens);
      const name = nameOf(endpoint);
      if (answer === undefined || name === undefined) return answer;
      const id = `${name}\u0000${storedPart(model ?? "")}`;
      const reading = contextChars(body).total / promptTokens;
      take(id, reading);
      takenWhileRead.note(id);
      if (writer.isReady) {
        touched.set(id, Date.now());
        // The list expired under this instance: every reading held goes back with this one.
        const whole = lapsed.delete(id);
        const readings = whole ? [...(shared.get(id) ?? [reading])] : [reading];
        if (owed.has(name)) {
          // A forget of this endpoint made here is still on its way: the reading, taken after it,
          // goes behind it. Sent first, it landed before the forget, which then deleted it from
          // Redis and from every other instance while this one kept it.
          track(
            owed.flush().then(() => {
              if (shared.get(id)?.includes(reading) && writer.isReady) write(id, reading, readings, whole);
              else if (shared.get(id)?.includes(reading)) holdUnwritten(id, reading);
            }),
          );
        } else write(id, reading, readings, whole);
      } else holdUnwritten(id, reading);
      return Math.max(...(shared.get(id) as number[]));
    },
    charsPerTokenFor(endpoint, model) {
      // Ledger's checks first, as `calibrate` has them: an endpoint or a model that is no name (42,
      // a listing entry) throws its LedgerError (`invalid-option`), not a TypeError from the key.
      const here = local.charsPerTokenFor(endpoint, model);
      const name = nameOf(endpoint);
      const id = name === undefined ? undefined : `${name}\u0000${storedPart(model ?? "")}`;
      const readings = id === undefined ? undefined : shared.get(id);
      if (id !== undefined && readings && readings.length > 0) {
        touch(id);
        return Math.max(...readings);
      }
      return name === undefined ? here : DEFAULT_DIVISOR;
    },
    forget(endpoint) {
      const heldLocally = local.forget(endpoint);
      const name = nameOf(endpoint);
      if (name === undefined) return heldLocally;
      const ids = idsOf(name);
      // What this instance answers from: the shared readings. The local store's copy of its own
      // readings outlives another instance's forget heard here (only the shared ones go then), so
      // counted, it answered that there were readings to forget where none was held any more.
      const held = dropLocal(name);
      for (const id of ids) {
        touched.delete(id);
        lapsed.delete(id);
        waiting.delete(id);
      }
      // One tenant forgotten everywhere: its readings go from Redis and from every instance. Owed
      // until Redis has it, so a reconnect's reload does not bring the readings back; remembered in
      // Redis, so an instance away meanwhile drops its copy when it is back.
      const { mark, at } = forgets.own(name);
      unheard.set(mark, name);
      forgottenHere(name);
      owed.owe(name, { ids, mark, at });
      return held;
    },
    reset() {
      local = createCalibration();
      shared.clear();
      byHead.clear();
      touched.clear();
      lapsed.clear();
      waiting.clear();
    },
    writtenBack: (timeoutMs) =>
      untilWrittenBack({
        timeoutMs,
        connectTimeoutMs: started.resolved.connectTimeoutMs,
        url: started.resolved.url,
        store: "the calibration store",
        rejoin,
        closed: () => closed || closing !== undefined,
        afterClose: () => afterClose("writtenBack", "calibration"),
        pass: async () => {
          if (!(await owed.flush())) return false;
          writeWaiting();
          while (writing.size > 0) await Promise.all([...writing]);
          return waiting.size === 0 && refusedReadings.length === 0 && owed.size === 0 && writer.isReady;
        },
      }),
    // After close() the connections are gone: a typed error, not the client's bare ClientClosedError.
    reload: () => (closed ? Promise.reject(afterClose("reload", "calibration")) : reload().then(() => {})),
    close: () => {
      closing ??= closeStore();
      return closing;
    },
  };
  registerForgetLog(store, forgets);
  return store;
}
