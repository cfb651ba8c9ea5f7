/** Wraps a personality so a failing hook reports which personality and hook failed. */
import { TestkitError } from "../errors.js";
import { holds } from "../own-body.js";
import type { Personality } from "./personality.js";

/** The hooks a personality may have (see `Personality`). */
export const PERSONALITY_HOOKS = [
  "intercept",
  "check",
  "models",
  "props",
  "lmstudioModels",
  "route",
  "notFound",
  "headers",
  "streamsUsage",
  "completionBudget",
  "toolCallTokens",
  "toolCallId",
  "chunks",
  "completion",
  "checkReply",
  "choices",
] as const satisfies readonly (keyof Personality)[];

/**
 * The same personality with each hook wrapped: a hook that throws is rethrown as a `TestkitError`
 * (`server-fault`) whose message names the personality and the hook and quotes the original
 * message (kept as `cause`); a `TestkitError` `invalid-reply` (a `checkReply` refusal) passes as is. Hooks the personality lacks stay absent; `this` is the original.
 * A hook is read where the personality holds it (its class's methods too), never from a polluted
 * `Object.prototype`, and the wrapper has no prototype: a hook it lacks reads as absent.
 */
export function guardPersonality(personality: Personality): Personality {
  const guarded = Object.create(null) as Record<string, unknown>;
  guarded.name = personality.name;
  for (const key of PERSONALITY_HOOKS) {
    if (!holds(personality, key)) continue;
    const value = (personality as unknown as Record<string, unknown>)[key];
    if (typeof value !== "function") continue;
    guarded[key] = (...args: unknown[]) => {
      try {
        return (value as (...a: unknown[]) => unknown).apply(personality, args);
      } catch (cause) {
        // A refused reply keeps its own code: it is the script's mistake, not the hook's.
        if (
          TestkitError.isInstance(cause) &&
          (cause.code === "server-fault" || cause.code === "invalid-reply")
        )
          throw cause;
        const message = cause instanceof Error ? cause.message : String(cause);
        throw new TestkitError(
          "server-fault",
          `the ${personality.name} personality's ${key} failed: ${message}`,
          { cause },
        );
      }
    };
  }
  return guarded as unknown as Personality;
}
