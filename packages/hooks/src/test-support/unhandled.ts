import { onTestFinished } from "vitest";

/**
 * The rejections nobody handled while the calling test runs (a hook's promise that rejects where no
 * one waits on it ends a Node host that has no handler). Listens until the test finishes; `settled`
 * waits for the event loop to turn, since a rejection is reported only once it has.
 */
export function unhandledRejections(): { reasons: unknown[]; settled(): Promise<unknown[]> } {
  const reasons: unknown[] = [];
  const listener = (reason: unknown): void => {
    reasons.push(reason);
  };
  process.on("unhandledRejection", listener);
  onTestFinished(() => {
    process.off("unhandledRejection", listener);
  });
  return {
    reasons,
    settled: () => new Promise((resolve) => setTimeout(() => resolve(reasons), 20)),
  };
}
