import { call, type RedisConnection, shownMs, shownUrl, timeoutOption } from "./connection.js";
import { RedisStoreError } from "./errors.js";

/**
 * Whether a tenant store has finished coming back from the last reconnect of its subscriber that it
 * noticed: a lost subscription means Redis may have restarted empty, and the store writes back what
 * it holds from its `ready` handler. A count of reconnects seen against the count of the last one
 * whose write-back finished, so a write-back that a second reconnect overtook does not count.
 */
export class Rejoin {
  private lost = 0;
  private rejoined = 0;
  private readonly wakers = new Set<() => void>();

  constructor(
    private readonly subscriber: RedisConnection,
    private readonly writer: RedisConnection,
  ) {
    subscriber.on("reconnecting", () => {
      this.lost++;
    });
    // Only the command connection dropped (Redis's `timeout` on an idle one): what is owed is sent
    // on its return, and a waiter looks again then.
    writer.on("ready", () => this.wake());
  }

  /** Taken as a write-back after a reconnect starts; handed to {@link done} once it finished. */
  begin(): number {
    return this.lost;
  }

  /** The write-back begun at `token` finished: the store is back, unless it was cut again meanwhile. */
  done(token: number): void {
    if (token === this.lost) this.rejoined = token;
    this.wake();
  }

  /**
   * One round trip on the command connection: a loss not noticed yet (Redis killed a moment ago,
   * its sockets' close still unread) fails it, where a pass with nothing to write would have
   * touched no socket and answered that all was there.
   */
  async ping(): Promise<void> {
    await call(this.writer, ["PING"]);
  }

  /**
   * A write-back begun at `token` that did not finish (a send or read failed, the command
   * connection dropped under it): `run` again in a second, unless a newer reconnect has begun its
   * own, the subscription is down (its return runs one) or the store is closed. Given up, it stayed
   * undone until the next reconnect: what this instance held was not in Redis meanwhile.
   */
  retry(token: number, run: () => void, closed: () => boolean): void {
    const timer = setTimeout(() => {
      if (token === this.lost && this.subscriber.isReady && !closed()) run();
    }, RETRY_MS);
    timer.unref();
  }

  /** Connected, and written back after the last reconnect noticed. */
  get back(): boolean {
    return this.rejoined === this.lost && this.writer.isReady;
  }

  /** How many reconnects have been noticed: a write-back whose count moved meanwhile is looked at again. */
  get seen(): number {
    return this.lost;
  }

  /** Resolves at the next write-back finished or command connection back, or after `ms`. */
  change(ms: number): Promise<void> {
    return new Promise((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const wake = (): void => {
        clearTimeout(timer);
        this.wakers.delete(wake);
        resolve();
      };
      timer = setTimeout(wake, ms);
      this.wakers.add(wake);
    });
  }

  private wake(): void {
    for (const wake of [...this.wakers]) wake();
  }
}

/** How long a write-back that did not finish waits before it is run again. */
const RETRY_MS = 1000;
/** How often a `writtenBack()` whose pass left something unwritten looks again, at most. */
const LOOK_AGAIN_MS = 50;
/** How often a `writtenBack()` waiting for its store to come back looks whether it was closed. */
const CLOSED_LOOK_MS = 250;

/**
 * `work`'s answer, or `false` once `deadline` (ms) has passed first: a pass or a round trip that a
 * silent Redis holds up is left to finish on its own (what it sends still lands).
 */
async function untilDeadline(work: Promise<boolean>, deadline: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()));
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * What `writtenBack()` does for each tenant store: checks `timeoutMs` (absent, four times
 * `connectTimeoutMs`), then, until it is past, waits for the store to be back ({@link Rejoin}) and
 * runs `pass` — send what is owed, write what is held and unwritten, wait for the writes — which
 * answers whether everything went. It resolves once a pass went through with no reconnect noticed
 * meanwhile; else rejects with `RedisStoreError` (`connect`) naming `store` and the bound, or
 * (`closed`) once the store is closed.
 */
export async function untilWrittenBack(options: {
  timeoutMs: unknown;
  connectTimeoutMs: number;
  url: string;
  store: string;
  rejoin: Rejoin;
  closed: () => boolean;
  pass: () => Promise<boolean>;
  afterClose: () => RedisStoreError;
}): Promise<void> {
  const { rejoin, closed, pass } = options;
  const boundMs = timeoutOption(
    options.timeoutMs,
    "timeoutMs",
    "writtenBack()",
    WRITTEN_BACK_TIMES * options.connectTimeoutMs,
  );
  const deadline = Date.now() + boundMs;
  let why = "it did not reconnect";
  for (;;) {
    if (closed()) throw options.afterClose();
    const left = deadline - Date.now();
    if (left <= 0) break;
    if (!rejoin.back) {
      why = "it did not reconnect and write back what it holds";
      // Looked at again now and then as well, so a `close()` meanwhile is answered soon.
      await rejoin.change(Math.min(left, CLOSED_LOOK_MS));
      continue;
    }
    const seen = rejoin.seen;
    const went = await untilDeadline(
      rejoin
        .ping()
        .then(pass)
        .catch(() => false),
      deadline,
    );
    // The write-back is sent: a round trip after it, with no reconnect noticed meanwhile, tells
    // that the connection it went on is still the one Redis answers.
    if (went && rejoin.seen === seen && rejoin.back && !closed()) {
      const still = await untilDeadline(
        rejoin.ping().then(
          () => true,
          () => false,
        ),
        deadline,
      );
      if (still && rejoin.seen === seen && rejoin.back) return;
    }
    why = "what it holds did not all reach Redis";
    const rest = deadline - Date.now();
    if (rest > 0) await rejoin.change(Math.min(LOOK_AGAIN_MS, rest));
  }
  throw new RedisStoreError(
    "connect",
    `writtenBack(): ${options.store} at ${shownUrl(options.url)} was not caught up within ${shownMs(boundMs)}: ${why}. ` +
      "What it holds stays on this instance, and the store carries on as before; pass a longer `timeoutMs` to wait longer.",
  );
}

/** `writtenBack()` waits this many times `connectTimeoutMs` by default (20 s at the default 5 s). */
export const WRITTEN_BACK_TIMES = 4;
