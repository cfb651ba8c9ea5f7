/** Test help: runs code with fields set on `Object.prototype` (prototype pollution), removed after. */
import { protoless } from "../protoless.js";

const proto = Object.prototype as unknown as Record<string, unknown>;

/** Runs `body` with `fields` set on Object.prototype (not enumerable), removed after whatever happens. */
export async function polluted<T>(fields: Record<string, unknown>, body: () => Promise<T>): Promise<T> {
  for (const [key, value] of Object.entries(fields)) {
    Object.defineProperty(
      proto,
      key,
      protoless({ value, configurable: true, writable: true, enumerable: false }),
    );
  }
  try {
    return await body();
  } finally {
    for (const key of Object.keys(fields)) delete proto[key];
  }
}
