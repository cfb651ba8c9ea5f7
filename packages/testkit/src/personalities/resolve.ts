import { TestkitError } from "../errors.js";
import type { Personality } from "./personality.js";

/** Names of the built-in personalities. */
export type PersonalityName = "openai" | "llamacpp" | "vllm" | "lmstudio";

/** How `startServer` is told which personality to wear: a name, or a personality object. */
export type PersonalitySpec = PersonalityName | Personality;

const FACTORIES: Partial<Record<PersonalityName, () => Personality>> = {};

/** Turns a personality option into a personality; throws a `TestkitError` for an unknown name. */
export function resolvePersonality(spec: PersonalitySpec | undefined): Personality | undefined {
  if (spec === undefined) return undefined;
  if (typeof spec === "object" && spec !== null && typeof spec.name === "string") return spec;
  const make = typeof spec === "string" ? FACTORIES[spec] : undefined;
  if (!make) {
    throw new TestkitError(
      "invalid-option",
      `Unknown personality ${JSON.stringify(spec)}; use one of ${Object.keys(FACTORIES).join(", ") || "(none yet)"}.`,
    );
  }
  return make();
}
