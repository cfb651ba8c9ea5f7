// With `--redis`, what every playground process on one Redis knows about runs it did not start: each
// run's prompt and whether it ended, and which run is the newest, so a page served by instance B can
// follow a run instance A is running (its events come from the Redis bus).
import { ClientOfflineError, createClient } from "@redis/client";
import { shownText, shownUrl } from "./spec.js";

/** What a page needs to follow a run. */
export interface RunInfo {
  id: string;
  prompt: string;
  ended: boolean;
}

/** The runs shared through one Redis. */
export interface SharedRuns {
  /** Records (or updates) a run, and makes a run that has not ended the newest; resolves once Redis has it. */
  put(run: RunInfo): Promise<void>;
  /** A run by id, from any instance; undefined when Redis has none by that id (or it expired). */
  get(id: string): Promise<RunInfo | undefined>;
  /** The newest run any instance started. */
  latest(): Promise<RunInfo | undefined>;
  close(): Promise<void>;
}

const PREFIX = "loopwright:playground:";
/** How long a run's record outlives its last update: a day, like the bus's retention of an ended run. */
const TTL_SECONDS = 24 * 60 * 60;

/** How many refused runs back a take-back looks for the run before them (see {@link TAKE_BACK_SCRIPT}). */
const REMEMBERED_REFUSALS = 100;

/**
 * Writes a run's record (KEYS: its record, `latest`, its `before` key; ARGV: the record, its id, the
 * TTL in seconds, "1" for a run that has not ended). A run not ended becomes `latest`, and its
 * `before` key keeps the run `latest` named until then ("" for none), in Redis itself: a take-back
 * finds it there even when the write's answer was lost with the connection. An ended run's `before`
 * key is let go (an accepted run is never taken back).
 */
const PUT_SCRIPT = `
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[3])
if ARGV[4] ~= '1' then
  redis.call('DEL', KEYS[3])
  return 0
end
local previous = redis.call('GET', KEYS[2])
redis.call('SET', KEYS[2], ARGV[2], 'EX', ARGV[3])
redis.call('SET', KEYS[3], previous or '', 'EX', ARGV[3])
return 1
`;

/**
 * Takes back the record of a run refused for want of Redis whose write may have landed late (KEYS:
 * its record, `latest`, its `before` key; ARGV: its id, the pointer's TTL in seconds, the keys'
 * prefix). Deletes the record; if `latest` still names it (a compare-and-set: a pointer another
 * write set since is never touched), points `latest` back at the run its write replaced, read from
 * its `before` key — through runs refused before it, whose records are gone, to the first whose
 * record is still there — for as long as that record lives; deletes `latest` only when no run
 * before it is left. One script, so no other playground's write lands between the check and the
 * change. A `before` key is left to expire: a run refused after this one may still look through it.
 * Answers 0 (`latest` names another run), 1 (restored), 2 (deleted).
 */
const TAKE_BACK_SCRIPT = `
redis.call('DEL', KEYS[1])
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
local before = redis.call('GET', KEYS[3])
for hop = 1, ${REMEMBERED_REFUSALS} do
  if not before or before == '' then break end
  local record = ARGV[3] .. 'run:' .. before
  if redis.call('EXISTS', record) == 1 then
    local ttl = redis.call('TTL', record)
    if ttl <= 0 then ttl = tonumber(ARGV[2]) end
    redis.call('SET', KEYS[2], before, 'EX', ttl)
    return 1
  end
  before = redis.call('GET', ARGV[3] .. 'before:' .. before)
end
redis.call('DEL', KEYS[2])
return 2
`;

/** A run record as Redis holds it; undefined for one this module did not write (another process's, or garbled). */
function parse(text: string | null | undefined): RunInfo | undefined {
  if (!text) return undefined;
  let value: Partial<RunInfo> | null;
  try {
    value = JSON.parse(text) as Partial<RunInfo> | null;
  } catch {
    return undefined;
  }
  return typeof value?.id === "string" && typeof value.prompt === "string"
    ? { id: value.id, prompt: value.prompt, ended: value.ended === true }
    : undefined;
}

/**
 * How long a page's request waits on Redis for the shared runs before it is answered 503: Redis on
 * this machine or next to it answers in milliseconds, and a prompt left unanswered longer than this
 * would look hung (a Redis restarting, or cut off by the network, may not answer for minutes).
 */
export const SHARED_RUNS_DEADLINE_MS = 3000;

/** Redis did not answer the shared runs' command in time, or refused it: the request cannot be served. */
export class SharedRunsError extends Error {
  override readonly name = "SharedRunsError";
  constructor(
    /** Redis's URL as it may be shown: without its password or query. */
    readonly shownUrl: string,
    /** What went wrong: "no answer within 3 s", or the Redis client's error. */
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`Redis at ${shownUrl} is not reachable: ${reason}`, options);
  }
}

/**
 * The Redis client's error as a reason the page may show (no URL's password, no key): its message,
 * else its code or name, never a bare "Error".
 */
function reasonOf(error: unknown): string {
  return shownText(rawReason(error));
}

function rawReason(error: unknown): string {
  if (error instanceof ClientOfflineError) return "the connection is lost and the client is reconnecting";
  if (!(error instanceof Error)) return String(error) || "an unreadable error";
  const code = (error as { code?: unknown }).code;
  const text = error.message || (typeof code === "string" ? code : "") || error.name;
  return text && text !== "Error" ? text : "the Redis client failed with no message";
}

/**
 * Connects to Redis at `url`; rejects with the client's error when it cannot. Each call then answers
 * within {@link SHARED_RUNS_DEADLINE_MS} or rejects with a {@link SharedRunsError}; while the client
 * is reconnecting, at once (no command is queued to run when Redis is back).
 */
export async function connectSharedRuns(url: string): Promise<SharedRuns> {
  const client = createClient({ url, disableOfflineQueue: true });
  client.on("error", () => {
    // Reported by the command that fails; the client reconnects by itself.
  });
  await client.connect();
  const shown = shownUrl(url);
  const latestKey = `${PREFIX}latest`;
  /**
   * Runs refused for want of Redis whose write may still land (one already sent is carried out
   * whenever a paused or cut-off Redis answers again). Taken back by {@link TAKE_BACK_SCRIPT} once
   * the write has answered (or failed), and again whenever the client is ready until Redis has
   * done it, so no playground on this Redis shows a run that never started, and `latest` names the
   * last run really accepted again (what each write replaced is kept in Redis, not in its answer,
   * which a dropped connection loses).
   */
  const refused = new Set<string>();
  const takeBack = () => {
    for (const id of refused) {
      client
        .sendCommand([
          "EVAL",
          TAKE_BACK_SCRIPT,
          "3",
          `${PREFIX}run:${id}`,
          latestKey,
          `${PREFIX}before:${id}`,
          id,
          String(TTL_SECONDS),
          PREFIX,
        ])
        .then(
          () => refused.delete(id),
          () => {
            // Offline, or Redis refused it: tried again once the client is ready.
          },
        );
    }
  };
  client.on("ready", takeBack);
  /** Owes the take-back of refused run `id` once its write has answered (or failed). */
  const refuse = (id: string) => {
    refused.add(id);
    takeBack();
  };
  /** `work`'s answer, or a SharedRunsError once the deadline passes or when the client fails. */
  const within = async <T>(work: Promise<T>): Promise<T> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new SharedRunsError(shown, `no answer within ${SHARED_RUNS_DEADLINE_MS / 1000} s`)),
        SHARED_RUNS_DEADLINE_MS,
      );
    });
    try {
      return await Promise.race([
        work.catch((error: unknown) => {
          throw new SharedRunsError(shown, reasonOf(error), { cause: error });
        }),
        deadline,
      ]);
    } finally {
      clearTimeout(timer);
    }
  };
  return {
    async put(run) {
      const sent = client.sendCommand([
        "EVAL",
        PUT_SCRIPT,
        "3",
        `${PREFIX}run:${run.id}`,
        latestKey,
        `${PREFIX}before:${run.id}`,
        JSON.stringify(run),
        run.id,
        String(TTL_SECONDS),
        run.ended ? "0" : "1",
      ]);
      try {
        await within(sent);
      } catch (error) {
        // The run is not started; an ended run's record may land late, and is right when it does.
        // A started one's is taken back after its write answers (a failed write may have landed too).
        if (!run.ended) {
          const owed = () => refuse(run.id);
          sent.then(owed, owed);
        }
        throw error;
      }
    },
    async get(id) {
      return parse(await within(client.get(`${PREFIX}run:${id}`)));
    },
    async latest() {
      return within(
        (async () => {
          const id = await client.get(latestKey);
          return id ? parse(await client.get(`${PREFIX}run:${id}`)) : undefined;
        })(),
      );
    },
    async close() {
      client.destroy();
    },
  };
}
