import { TestkitError } from "../errors.js";
import { holds } from "../own-body.js";
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

/** The named personality made with the config's other fields as its options (checked by its factory). */
function fromConfig(config: PersonalityConfig): Personality {
  switch (config.name) {
    case "openai": {
      const { name: _, ...options } = config;
      return openaiPersonality(options);
    }
    case "llamacpp": {
      const { name: _, ...options } = config;
      return llamacppPersonality(options);
    }
    case "vllm": {
      const { name: _, ...options } = config;
      return vllmPersonality(options);
    }
    case "lmstudio": {
      const { name: _, ...options } = config;
      return lmstudioPersonality(options);
    }
    case "mistral": {
      const { name: _, ...options } = config;
      return mistralPersonality(options);
    }
  }
}

const NAMES: readonly string[] = ["openai", "llamacpp", "vllm", "lmstudio", "mistral"];

/**
 * Turns a personality option into a personality.
 *
 * An object with a built-in `name` and no hook functions is read as that personality's options.
 * Throws a `TestkitError` (`invalid-option`) for an unknown name, an option that personality does
 * not have, or an option value it cannot honour (naming the option).
 */
export function resolvePersonality(spec: PersonalitySpec | null | undefined): Personality | undefined {
  if (spec === undefined || spec === null) return undefined;
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
  const hasHooks = PERSONALITY_HOOKS.some((h) => holds(record, h) && typeof record[h] === "function");
  if (hasHooks) return spec as Personality;
  if (!NAMES.includes(spec.name)) throw unknown();
  return fromConfig(spec as PersonalityConfig);
}
