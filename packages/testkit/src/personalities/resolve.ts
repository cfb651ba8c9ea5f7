import { TestkitError } from "../errors.js";
import { PERSONALITY_HOOKS } from "./guard.js";
import { type LlamacppPersonalityOptions, llamacppPersonality } from "./llamacpp.js";
import { type LmstudioPersonalityOptions, lmstudioPersonality } from "./lmstudio.js";
import { type MistralPersonalityOptions, mistralPersonality } from "./mistral.js";
import { type OpenAiPersonalityOptions, openaiPersonality } from "./openai.js";
import type { Personality } from "./personality.js";
import { type VllmPersonalityOptions, vllmPersonality } from "./vllm.js";

/** Names of the built-in personalities. */
export type PersonalityName = "openai" | "llamacpp" | "vllm" | "lmstudio" | "mistral";

/** A built-in personality by name with its options, e.g. `{ name: "llamacpp", nCtx: 2048 }`. */
export type PersonalityConfig =
  | ({ name: "openai" } & OpenAiPersonalityOptions)
  | ({ name: "llamacpp" } & LlamacppPersonalityOptions)
  | ({ name: "vllm" } & VllmPersonalityOptions)
  | ({ name: "lmstudio" } & LmstudioPersonalityOptions)
  | ({ name: "mistral" } & MistralPersonalityOptions);

/** How `startServer` is told which personality to wear: a built-in name, a name with options, or a personality object. */
export type PersonalitySpec = PersonalityName | PersonalityConfig | Personality;

function fromConfig(config: PersonalityConfig): Personality {
  switch (config.name) {
    case "openai":
      return openaiPersonality(config);
    case "llamacpp":
      return llamacppPersonality(config);
    case "vllm":
      return vllmPersonality(config);
    case "lmstudio":
      return lmstudioPersonality(config);
    case "mistral":
      return mistralPersonality(config);
  }
}

const NAMES: readonly string[] = ["openai", "llamacpp", "vllm", "lmstudio", "mistral"];

/**
 * Turns a personality option into a personality.
 *
 * An object with a built-in `name` and no hook functions is read as that personality's options.
 * Throws a `TestkitError` (`invalid-option`) for an unknown name.
 */
export function resolvePersonality(spec: PersonalitySpec | undefined): Personality | undefined {
  if (spec === undefined) return undefined;
  const unknown = () =>
    new TestkitError(
      "invalid-option",
      `Unknown personality ${JSON.stringify(spec)}; use one of ${NAMES.join(", ")}, a name with options (e.g. { name: "llamacpp", nCtx: 2048 }), or a personality object.`,
    );
  if (typeof spec === "string") {
    if (!NAMES.includes(spec)) throw unknown();
    return fromConfig({ name: spec } as PersonalityConfig);
  }
  if (typeof spec !== "object" || spec === null || typeof spec.name !== "string") throw unknown();
  const record = spec as unknown as Record<string, unknown>;
  const hasHooks = PERSONALITY_HOOKS.some((h) => typeof record[h] === "function");
  if (hasHooks) return spec as Personality;
  if (!NAMES.includes(spec.name)) throw unknown();
  return fromConfig(spec as PersonalityConfig);
}
