import type { RunEvent, SequencedEvent } from "./types.js";

/**
 * A copy of `event` with `seq` set, as a bus stores it: every own enumerable field read once, a
 * `__proto__` key the event carries as data (`JSON.parse` makes one) kept as data, never as the
 * copy's prototype. Never changes `event`; throws what reading a field throws (a throwing getter, a
 * revoked Proxy), so check the event first where that matters.
 *
 * Object.assign rather than a spread: on V8 the spread of an object into a literal with one more key
 * came out about four times the size per stored event (measured in the bench). But Object.assign
 * sets `__proto__` through its setter, so an event carrying that key would become a copy whose
 * prototype is that value: fields it never had read through it, and JSON of it leaves the key out.
 * Such an event is copied by a spread, which keeps the key as data.
 */
export function withSeq<E extends RunEvent>(event: E, seq: number): SequencedEvent<E> {
  if (Object.hasOwn(event, "__proto__")) return { ...event, seq } as SequencedEvent<E>;
  return Object.assign({}, event, { seq }) as SequencedEvent<E>;
}
