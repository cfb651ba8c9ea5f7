/**
 * Runs `body` with `Object.prototype[name] = value` (enumerable, as an assignment would make it),
 * taken out again however it ends: what some code in a host's process polluting the prototype does.
 */
export async function polluted<T>(name: string, value: unknown, body: () => Promise<T>): Promise<T> {
  Object.defineProperty(Object.prototype, name, {
    value,
    configurable: true,
    writable: true,
    enumerable: true,
  });
  try {
    return await body();
  } finally {
    delete (Object.prototype as Record<string, unknown>)[name];
  }
}
