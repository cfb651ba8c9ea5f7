/**
 * A request body read as it was sent. `JSON.parse` makes every object of a body inherit from
 * `Object.prototype`, so a field some code in the test's process set there (prototype pollution:
 * `Object.prototype.stream = true`) read as part of every request that left it out — a plain
 * request answered as a stream, `tools` or `n` taken from nowhere, a personality refusing what the
 * client never sent. The server reads each body through a copy whose objects hold only the fields
 * the client wrote; `RecordedRequest.body` stays the plain parse, for the host to compare.
 */

/**
 * The prototype of every object of such a copy: its chain ends without `Object.prototype` (so a
 * field set there is not read), and it holds only `toString`, so a copy written into a message
 * (`String(format.type)` where the client sent an object) reads `[object Object]` as a parsed
 * object would, rather than throwing. Frozen: nothing can be added to it. (A copy made on a
 * prototype-less object stays in V8's fast form, unlike one made with `Object.create(null)`.)
 */
const BARE: object = Object.freeze(
  Object.create(null, {
    toString: {
      value: () => "[object Object]",
    },
  }),
);

/** Each parsed object as a copy on `BARE`, its own fields as parsed (`__proto__` a field too). */
function revive(_key: string, value: unknown): unknown {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
  const copy = Object.create(BARE) as Record<string, unknown>;
  for (const key of Object.keys(value)) {
    Object.defineProperty(copy, key, {
      value: (value as Record<string, unknown>)[key],
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return copy;
}

/**
 * `raw` parsed as JSON with every object holding only the fields written in it (see above);
 * undefined for an empty or unparseable body, as the recorded request's `body` is.
 */
export function parseOwnBody(raw: string): unknown {
  if (raw.trim() === "") return undefined;
  try {
    return JSON.parse(raw, revive);
  } catch {
    return undefined;
  }
}
