import { TestkitError } from "../errors.js";
import { llamacppPersonality } from "./llamacpp.js";
import { lmstudioPersonality } from "./lmstudio.js";
import { openaiPersonality } from "./openai.js";
import type { Personality } from "./personality.js";
import { vllmPersonality } from "./vllm.js";

/** Names of the built-in personalities. */
export type PersonalityName = "openai" | "llamacpp" | "vllm" | "lmstudio";

/** How `startServer` is told which personality to wear: a built-in name (default options) or a personality object. */
export type PersonalitySpec = PersonalityName | Personality;

const FACTORIES: Record<PersonalityName, () => Personality> = {
  openai: () => openaiPersonality(),
  llamacpp: () => llamacppPersonality(),
  vllm: () => vllmPersonality(),
  lmstudio: () => lmstudioPersonality(),
};

/** Turns a personality option into a personality; throws a `TestkitError` (`invalid-option`) for an unknown name. */
export function resolvePersonality(spec: PersonalitySpec | undefined): Personality | undefined {
  if (spec === undefined) return undefined;
  if (typeof spec === "object" && spec !== null && typeof spec.name === "string") return spec;
  if (typeof spec === "string" && Object.hasOwn(FACTORIES, spec)) return FACTORIES[spec]();
  throw new TestkitError(
    "invalid-option",
    `Unknown personality ${JSON.stringify(spec)}; use one of ${Object.keys(FACTORIES).join(", ")} or a personality object (e.g. llamacppPersonality({ nCtx: 2048 })).`,
  );
}
