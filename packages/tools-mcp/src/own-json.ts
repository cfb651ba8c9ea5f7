/**
 * What a server sent, read as it sent it. `JSON.parse` makes every object of a message inherit
 * from `Object.prototype`, and the SDK's schemas copy a field they look for from wherever it is
 * found, so code in the host's process that set `Object.prototype.isError = true` (prototype
 * pollution) made every tool result an error; `.structuredContent` went into every result,
 * `.annotations` or `.readOnlyHint` made every tool read-only (run in parallel, its calls shared),
 * `.nextCursor` paged every listing to the 100-page cap, `.outputSchema` failed every call. Every
 * object of a message is put on {@link BARE} as it arrives, before the SDK reads it, and every
 * result the SDK hands back likewise, so only the fields the server wrote are read.
 */

import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { protoless } from "./protoless.js";

/**
 * The prototype of every object so read: its chain ends without `Object.prototype`, and it holds
 * only `toString` (not enumerable), so such an object written into a message reads
 * `[object Object]`, as a parsed one would, rather than throwing. Frozen.
 */
const BARE: object = Object.freeze(
  Object.create(null, { toString: protoless({ value: () => "[object Object]" }) }),
);

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

/**
 * Puts every object of `value` (a message just parsed, or an answer the SDK just built: nothing
 * else holds them) on `BARE`, in place, arrays left as arrays; answers `value`. Without recursion,
 * so no depth overflows the stack, and each object once, so a cycle ends.
 */
export function ownJson<T>(value: T): T {
  const stack: unknown[] = [value];
  const seen = new Set<object>();
  while (stack.length > 0) {
    const at = stack.pop();
    if (!isObject(at) || seen.has(at)) continue;
    seen.add(at);
    if (!Array.isArray(at) && Object.getPrototypeOf(at) !== BARE) Object.setPrototypeOf(at, BARE);
    for (const key of Object.keys(at)) {
      const inner = at[key];
      if (isObject(inner)) stack.push(inner);
    }
  }
  return value;
}

/**
 * A copy of `value` read as {@link ownJson} reads it, for a value a host handed over (not to be
 * changed): every object's own enumerable fields copied onto `BARE`, arrays copied, a cycle kept a
 * cycle. A value already so read (on `BARE`) is handed back as it is.
 */
export function ownJsonCopy<T>(value: T): T {
  if (!isObject(value) || Object.getPrototypeOf(value) === BARE) return value;
  const copies = new Map<object, Record<string, unknown>>();
  const copyOf = (from: Record<string, unknown>): Record<string, unknown> => {
    let copy = copies.get(from);
    if (copy === undefined) {
      copy = Array.isArray(from)
        ? ([] as unknown as Record<string, unknown>)
        : (Object.create(BARE) as Record<string, unknown>);
      copies.set(from, copy);
      pending.push(from);
    }
    return copy;
  };
  const pending: Record<string, unknown>[] = [];
  const root = copyOf(value);
  while (pending.length > 0) {
    const from = pending.pop() as Record<string, unknown>;
    const to = copies.get(from) as Record<string, unknown>;
    for (const key of Object.keys(from)) {
      const inner = from[key];
      Object.defineProperty(
        to,
        key,
        protoless({
          value: isObject(inner) ? copyOf(inner) : inner,
          enumerable: true,
          writable: true,
          configurable: true,
        }),
      );
    }
  }
  return root as T;
}

/**
 * `transport`, its incoming messages read by {@link ownJson} before the SDK's `onmessage` (which
 * the SDK sets on it when it connects) sees them.
 */
export function ownMessages<T extends Transport>(transport: T): T {
  let handler: Transport["onmessage"];
  Object.defineProperty(
    transport,
    "onmessage",
    protoless({
      get: () => handler,
      set: (given: Transport["onmessage"]) => {
        handler = given && ((message, extra) => given(ownJson(message), extra));
      },
      enumerable: true,
      configurable: true,
    }),
  );
  return transport;
}

/**
 * `fetch` handed a copy of its `init` with only the fields the SDK wrote (not `Object.prototype`'s:
 * a polluted `.redirect`, `.dispatcher` or `.headers` read by the fetch implementation).
 */
export const ownFetch: typeof fetch = (input, init) =>
  fetch(input, init === undefined ? undefined : (Object.assign(Object.create(null), init) as RequestInit));

/** `fields` in an object with no prototype: the SDK reads an option such as `authProvider` only where it is given. */
export function bareOptions<T extends object>(fields: T): T {
  return Object.assign(Object.create(null) as T, fields);
}
