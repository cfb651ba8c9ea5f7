import { protoless } from "./protoless.js";

/**
 * Runs `body` with each of `fields` set on `Object.prototype` — what some code in a host's process
 * does when a vulnerable merge or query parser hands it prototype pollution — and takes them out
 * again however `body` ends: at once when it returns or throws, or once the promise it returns
 * settles. Each field is enumerable and writable, as an assignment would make it. For tests that
 * prove code reads only what an object holds: run it clean and polluted, and compare.
 *
 * ```ts
 * const clean = await run();
 * expect(await withPollutedPrototype({ answer: "x" }, run)).toEqual(clean);
 * ```
 */
export function withPollutedPrototype<T>(fields: Readonly<Record<string, unknown>>, body: () => T): T {
  const names = Object.keys(fields);
  const proto = Object.prototype as unknown as Record<string, unknown>;
  for (const name of names) {
    Object.defineProperty(
      proto,
      name,
      protoless({
        value: fields[name],
        configurable: true,
        writable: true,
        enumerable: true,
      }),
    );
  }
  const clean = () => {
    for (const name of names) delete proto[name];
  };
  let result: T;
  try {
    result = body();
  } catch (error) {
    clean();
    throw error;
  }
  if (!(result instanceof Promise)) {
    clean();
    return result;
  }
  return result.then(
    (value) => {
      clean();
      return value;
    },
    (error: unknown) => {
      clean();
      throw error;
    },
  ) as T;
}
