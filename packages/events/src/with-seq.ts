import type { RunEvent, SequencedEvent } from "./types.js";

/**
 * A copy of `event` with `seq` set, as a bus stores it: every own enumerable field read once, a
 * `__proto__` key the event carries as data (`JSON.parse` makes one) kept as data, never as the
 * copy's prototype. A `notice`'s `dropped` is left out of the copy: like `seq`, it is the bus's to
 * set — it marks the gap notice a watcher inserts, never stored in a run — so a host's own notice
 * that carries one (`{ kind: "notice", text: "dropped 3 rows", dropped: 3 }`) is stored, handed to
 * watchers and written to JSON as a plain notice, and `fold` never reads it as a gap. Never changes
 * `event`; throws what reading a field throws (a throwing getter, a revoked Proxy), so check the
 * event first where that matters.
 *
 * Object.assign rather than a spread: on V8 the spread of an object into a literal with one more key
 * came out about four times the size per stored event (measured in the bench). But Object.assign
 * sets `__proto__` through its setter, so an event carrying that key would become a copy whose
 * prototype is that value: fields it never had read through it, and JSON of it leaves the key out.
 * Such an event is copied by a spread, which keeps the key as data.
 */
export function withSeq<E extends RunEvent>(event: E, seq: number): SequencedEvent<E> {
  const copy = (
    Object.hasOwn(event, "__proto__") ? { ...event, seq } : Object.assign({}, event, { seq })
  ) as SequencedEvent<E> & { dropped?: unknown };
  // Read off the copy, whose fields are plain data now (a getter was read once, above).
  if (copy.kind === "notice" && Object.hasOwn(copy, "dropped")) delete copy.dropped;
  return copy;
}
