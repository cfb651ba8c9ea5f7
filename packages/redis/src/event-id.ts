import { EventsError } from "@loopwright/events";

/** What an emitter token in an event id may be: what this package writes (base64url), bounded. */
const TOKEN = /^[A-Za-z0-9_-]{1,64}$/;
const ID = /^(0|[1-9][0-9]*)(?::([^\n\r]*))?$/;

/** What an event id says: the seq read up to, and the emitter token of the run it was read from. */
export interface EventId {
  /** The seq of the event the id was handed out with. */
  seq: number;
  /**
   * The token of the emitter whose entry held that event (its run's own mark); `undefined` for a
   * bare-seq id (from an earlier version, or an event whose entry carried no token).
   */
  token: string | undefined;
}

/** The event id for `seq` read from the run that `token` wrote: `<seq>:<token>`, or `<seq>` without one. */
export function formatEventId(seq: number, token: string | undefined): string {
  return token !== undefined && TOKEN.test(token) ? `${seq}:${token}` : String(seq);
}

/**
 * Reads an event id a Redis watcher handed out (`<seq>:<token>`, what a page sends back as its
 * Last-Event-ID), or a bare seq (`<seq>`, as earlier versions handed out). Throws `EventsError`
 * (`invalid-event`) naming what is wrong for anything else. The token is only what the id says:
 * a watcher given it trusts no entry for it beyond what the entry itself shows (see the README's
 * "Event ids").
 */
export function readEventId(id: string): EventId {
  if (typeof id !== "string") {
    throw new EventsError(
      "invalid-event",
      `readEventId: an event id is a string, and was given a ${typeof id}.`,
    );
  }
  const found = ID.exec(id);
  const seq = found ? Number(found[1]) : Number.NaN;
  const token = found?.[2];
  if (!found || !Number.isSafeInteger(seq) || (token !== undefined && !TOKEN.test(token))) {
    const shown = id.length > 80 ? `${JSON.stringify(id.slice(0, 80))}…` : JSON.stringify(id);
    throw new EventsError(
      "invalid-event",
      `An event id is a seq (a whole number, 0 or more), optionally followed by ":" and the emitter token ` +
        `(1 to 64 of A-Z a-z 0-9 _ -) a Redis watcher handed out with it, as in "12:Xc3_9aQk2LpM"; ` +
        `${shown} is not one.`,
    );
  }
  return { seq, token };
}
