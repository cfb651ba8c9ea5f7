import { withPollutedPrototype } from "@loopwright/testkit";

/** Runs `body` with `Object.prototype[name] = value`, taken out again however it ends. */
export function polluted<T>(name: string, value: unknown, body: () => Promise<T>): Promise<T> {
  return withPollutedPrototype({ [name]: value }, body);
}
