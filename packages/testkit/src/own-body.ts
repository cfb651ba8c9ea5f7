/**
 * A request body read as it was sent. `JSON.parse` makes every object of a body inherit from
 * `Object.prototype`, so a field some code in the test's process set there (prototype pollution:
 * `Object.prototype.stream = true`) read as part of every request that left it out — a plain
 * request answered as a stream, `tools` or `n` taken from nowhere, a personality refusing what the
 * client never sent. The server reads each body through a second parse whose objects hold only the
 * fields the client wrote; `RecordedRequest.body` stays the plain parse, for the host to compare.
 */
import { protoless } from "./protoless.js";

/**
 * The prototype of every object of such a body: its chain ends without `Object.prototype` (so a
 * field set there is not read), and it holds only `toString`, so such an object written into a message
 * (`String(format.type)` where the client sent an object) reads `[object Object]` as a parsed
 * object would, rather than throwing. Frozen: nothing can be added to it.
 */
const BARE: object = Object.freeze(
  Object.create(null, {
    toString: protoless({
      value: () => "[object Object]",
    }),
  }),
);

/**
 * Puts every object of a freshly parsed value on `BARE`, in place (the parse is the server's own,
 * so nothing else holds it): without recursion, so no depth of nesting overflows the stack. Done
 * after the parse rather than in a reviver, which measured 2.5 to 5 times the parse on a 4 MB body;
 * this costs about one more parse.
 */
function rebase<T>(root: T): T {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value !== "object" || value === null) continue;
    const fields = value as Record<string, unknown>;
    if (!Array.isArray(value)) Object.setPrototypeOf(value, BARE);
    for (const key of Object.keys(value)) {
      const inner = fields[key];
      if (typeof inner === "object" && inner !== null) stack.push(inner);
    }
  }
  return root;
}

/**
 * `value` with every object in it (arrays' entries too) put on a prototype holding nothing a
 * polluted `Object.prototype` holds, in place: for the objects the testkit makes and then reads
 * again (a stream's chunks and usage handed to a personality's `chunks` and `completion` hooks),
 * so a field one of them leaves out reads as absent. Only for values the testkit made itself.
 */
export function ownedOnly<T>(value: T): T {
  return rebase(value);
}

/**
 * A request body as its fields were written: one the server read (`parseOwnBody`) as it is, any
 * other object through a JSON round trip onto `BARE` (the fields a client would have sent), so a
 * host calling `scriptedModel` or `renderPrompt` with its own object reads nothing from a polluted
 * `Object.prototype`. A value JSON cannot write (a cycle, a BigInt) is read as it is.
 */
export function ownRequest(value: unknown): unknown {
  if (typeof value !== "object" || value === null || Object.getPrototypeOf(value) === BARE) return value;
  try {
    const text = JSON.stringify(value);
    return text === undefined ? value : rebase(JSON.parse(text));
  } catch {
    return value;
  }
}

/** How deep a prototype chain is followed: a Proxy's trap can make one endless. */
const MAX_CHAIN = 64;

/**
 * Whether `value` holds `field` itself or a prototype of its own does (a class's getter), never
 * where only `Object.prototype` does: `Object.prototype.content = "x"` set by some code in the
 * test's process must not become every reply's content.
 */
export function holds(value: object, field: string): boolean {
  let level: object | null = value;
  for (let depth = 0; level !== null && level !== Object.prototype && depth < MAX_CHAIN; depth++) {
    if (Object.hasOwn(level, field)) return true;
    level = Object.getPrototypeOf(level) as object | null;
  }
  return false;
}

/**
 * `value`'s `fields` as the caller wrote them (a class instance's getters too), in an object with
 * no prototype (a field it does not hold reads as undefined there, whatever `Object.prototype`
 * holds); anything but an object as it is.
 */
export function ownFields(value: unknown, fields: readonly string[]): unknown {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
  const view = Object.create(null) as Record<string, unknown>;
  for (const field of fields)
    if (holds(value, field)) view[field] = (value as Record<string, unknown>)[field];
  return view;
}

/**
 * A view of `value`'s `fields` that reads each where `value` holds it (see {@link holds}) each time it
 * is read, `undefined` where it does not (whatever a polluted `Object.prototype` holds); anything
 * that is not such an object as it is.
 */
export function liveFields(value: unknown, fields: readonly string[]): unknown {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
  const view = Object.create(null) as Record<string, unknown>;
  for (const field of fields) {
    Object.defineProperty(
      view,
      field,
      protoless({
        get: () => (holds(value, field) ? (value as Record<string, unknown>)[field] : undefined),
        enumerable: true,
      }),
    );
  }
  return view;
}

/**
 * `raw` parsed as JSON with every object holding only the fields written in it (see above);
 * undefined for an empty or unparseable body, as the recorded request's `body` is.
 */
export function parseOwnBody(raw: string): unknown {
  if (raw.trim() === "") return undefined;
  try {
    return rebase(JSON.parse(raw));
  } catch {
    return undefined;
  }
}
