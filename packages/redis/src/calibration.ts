import { createHash, randomBytes } from "node:crypto";
import { type Calibration, contextChars, createCalibration, type EndpointKey } from "@loopwright/ledger";
import { call, connectStore, type RedisOptions, whenReady } from "./connection.js";
import { FORGOTTEN_MS, MAX_OWED, Owed } from "./owed.js";

/** Options for {@link createRedisCalibration}. */
export interface RedisCalibrationOptions extends RedisOptions {
  /**
   * Names an endpoint object (the loop passes its capability record) for sharing: give the Redis
   * capability store's `endpointIdOf`. An object it cannot name is calibrated locally only.
   */
  endpointIdOf?: ((endpoint: object) => string | undefined) | undefined;
}

/** A `Calibration` whose readings are shared through Redis; reads are served from a local copy. */
export interface RedisCalibration extends Calibration {
  /** Reads every shared reading into the local copy (done on connect and after a reconnect). */
  reload(): Promise<void>;
  /** Closes both connections; the local copy keeps answering, without sharing. */
  close(): Promise<void>;
}

/** As `@loopwright/ledger` keeps them: the last four readings choose the divisor. */
const KEPT = 4;
const DEFAULT_DIVISOR = 4;
/** The characters-per-token range `@loopwright/ledger` takes a reading in (its MIN_READING, MAX_READING). */
const MIN_READING = 1;
const MAX_READING = 8;

/** A reading another process put in Redis is taken only in ledger's range: one bad value would be every instance's divisor. */
function plausible(reading: unknown): reading is number {
  return typeof reading === "number" && reading >= MIN_READING && reading <= MAX_READING;
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
export async function createRedisCalibration(options: RedisCalibrationOptions): Promise<RedisCalibration> {
  const { resolved, writer, subscriber, ask, bounded, starting } = await connectStore(
    options,
    "createRedisCalibration",
  );
  const { prefix, report } = resolved;
  const channel = `${prefix}calibration`;
  const indexKey = `${prefix}calibration:index`;
  const keyOf = (id: string) => `${prefix}calibration:${id}`;

  let local = createCalibration();
  /** Shared readings by `<endpoint id>␀<model>`. */
  const shared = new Map<string, number[]>();

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
    shared.set(id, readings);
  };

  /** Drops every shared reading of the endpoint named `name` here; answers whether there were any. */
  const dropLocal = (name: string): boolean => {
    let held = false;
    for (const id of [...shared.keys()]) {
      if (id.startsWith(`${name}\u0000`)) held = shared.delete(id) || held;
    }
    return held;
  };

  /**
   * Forgets in Redis, as the capability store keeps them: a sorted set of marks (`<nonce>␀<name>`)
   * by when each was made, kept `FORGOTTEN_MS`. `seen` holds the marks this instance already knows
   * of (its own, and those announced to it); one it does not know, read after a reconnect, is a
   * forget made while its subscription was down.
   */
  const forgottenKey = `${prefix}calibration:forgotten`;
  const seen = new Map<string, number>();
  const catchUp = async (): Promise<void> => {
    const flat = await ask<string[]>(["ZRANGE", forgottenKey, "0", "-1", "WITHSCORES"]);
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const mark = flat[i] as string;
      if (seen.has(mark)) continue;
      seen.set(mark, Number(flat[i + 1]));
      dropLocal(mark.slice(mark.indexOf("\u0000") + 1));
    }
    const old = Date.now() - FORGOTTEN_MS;
    for (const [mark, at] of seen) if (at < old) seen.delete(mark);
  };

  // Each read bounded (`connectTimeoutMs`): a Redis that answers nothing fails the factory, or tells
  // `onError` after a reconnect, instead of leaving the reload waiting for ever. The forgets this
  // instance missed go first, so what it held of a forgotten endpoint is not kept beside what
  // Redis holds now.
  const reload = async (): Promise<void> => {
    await catchUp();
    const ids = await ask<string[]>(["SMEMBERS", indexKey]);
    for (const id of ids) {
      const values = await ask<string[]>(["LRANGE", keyOf(id), String(-KEPT), "-1"]);
      shared.set(id, values.map(Number).filter(plausible));
    }
  };

  await starting(
    `subscribe to ${channel}`,
    bounded(
      subscriber.subscribe(channel, (message) => {
        try {
          const { id, reading, forget, mark } = JSON.parse(message) as {
            id: string;
            reading?: number;
            forget?: string;
            mark?: string;
          };
          if (typeof mark === "string") {
            // Its own forget, echoed back, was carried out when it was made: a reading taken since stays.
            if (seen.has(mark)) return;
            seen.set(mark, Date.now());
          }
          if (typeof forget === "string") dropLocal(forget);
          else if (typeof id === "string") take(id, reading as number);
        } catch (error) {
          report(error);
        }
      }),
      "SUBSCRIBE",
    ),
  );
  /**
   * Forgotten endpoints, with the reading lists they had, until Redis has the deletion and every
   * instance was told: sent at once when the link is up, else when it is back, before any reload.
   */
  const owed = new Owed<{ ids: string[]; mark: string; at: number }>({
    link: writer,
    send: (name, { ids, mark, at }) =>
      Promise.all([
        // Remembered first, so an instance away now drops its copy when it is back.
        call(writer, ["ZADD", forgottenKey, String(at), mark]),
        call(writer, ["ZREMRANGEBYSCORE", forgottenKey, "-inf", String(Date.now() - FORGOTTEN_MS)]),
        call(writer, ["PEXPIRE", forgottenKey, String(FORGOTTEN_MS)]),
        ...ids.map((id) => call(writer, ["DEL", keyOf(id)])),
        ...ids.map((id) => call(writer, ["SREM", indexKey, id])),
        call(writer, ["PUBLISH", channel, JSON.stringify({ forget: name, mark })]),
      ]),
    merge: (earlier, later) => ({ ...later, ids: [...new Set([...earlier.ids, ...later.ids])] }),
    max: MAX_OWED,
    report,
    what: "forgotten endpoints",
  });
  // What was forgotten while Redis was out of reach goes first, or the reload would bring it back.
  subscriber.on("ready", () => {
    void whenReady(writer)
      .then(() => owed.flush())
      .then((sent) => (sent ? reload() : undefined))
      .catch(report);
  });
  await starting("read the readings already shared", reload());

  return {
    calibrate(endpoint, model, body, promptTokens) {
      const answer = local.calibrate(endpoint, model, body, promptTokens);
      const name = nameOf(endpoint);
      if (answer === undefined || name === undefined) return answer;
      const id = `${name}\u0000${model ?? ""}`;
      const reading = contextChars(body).total / promptTokens;
      take(id, reading);
      if (writer.isReady) {
        Promise.all([
          writer.sendCommand(["RPUSH", keyOf(id), String(reading)]),
          writer.sendCommand(["LTRIM", keyOf(id), String(-KEPT), "-1"]),
          writer.sendCommand(["SADD", indexKey, id]),
          writer.sendCommand(["PUBLISH", channel, JSON.stringify({ id, reading })]),
        ]).catch(report);
      }
      return Math.max(...(shared.get(id) as number[]));
    },
    charsPerTokenFor(endpoint, model) {
      const name = nameOf(endpoint);
      const readings = name === undefined ? undefined : shared.get(`${name}\u0000${model ?? ""}`);
      if (readings && readings.length > 0) return Math.max(...readings);
      return name === undefined ? local.charsPerTokenFor(endpoint, model) : DEFAULT_DIVISOR;
    },
    forget(endpoint) {
      const heldLocally = local.forget(endpoint);
      const name = nameOf(endpoint);
      if (name === undefined) return heldLocally;
      const ids = [...shared.keys()].filter((id) => id.startsWith(`${name}\u0000`));
      const held = dropLocal(name) || heldLocally;
      // One tenant forgotten everywhere: its readings go from Redis and from every instance. Owed
      // until Redis has it, so a reconnect's reload does not bring the readings back; remembered in
      // Redis, so an instance away meanwhile drops its copy when it is back.
      const mark = `${randomBytes(9).toString("base64url")}\u0000${name}`;
      const at = Date.now();
      seen.set(mark, at);
      owed.owe(name, { ids, mark, at });
      return held;
    },
    reset() {
      local = createCalibration();
      shared.clear();
    },
    reload,
    async close() {
      // A forget made just before close() still reaches Redis when it is there.
      await owed.finish();
      subscriber.destroy();
      writer.destroy();
    },
  };
}
