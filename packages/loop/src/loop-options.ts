import { LoopOptionError } from "./errors.js";

/**
 * How `runAgentLoop` treats an option:
 * - `read`: the loop does what it says;
 * - `host`: a field of the resolved agent config that is the host's to act on (which servers to
 *   connect, the side tasks' models) — accepted, never read by the loop;
 * - `not-built`: known, not done yet — refused with `LoopOptionError` when it asks for anything,
 *   rather than dropped. Building one is flipping it to `read` here and reading it in a phase.
 */
export type OptionHandling = "read" | "host" | "not-built";

/** One option: its name (`config.` for a config field), how it is handled, and when it asks for anything. */
export interface LoopOption {
  readonly name: string;
  readonly handling: OptionHandling;
  /** For `not-built`: what it is, for the error. */
  readonly what?: string;
  /** For `not-built`: whether a value asks for the feature (absent: any value but `undefined`). */
  readonly asks?: (value: unknown) => boolean;
}

/**
 * Every option the loop knows, the one list: `runAgentLoop`'s own options, and the `config` fields
 * beyond `Endpoint & ModelParams` (the endpoint and model fields are read by the packages they go to).
 * An option object key not listed here is refused as unknown; a config field not listed is the
 * host's (config is often a host's whole settings object).
 */
export const LOOP_OPTIONS: readonly LoopOption[] = [
  ...[
    "config",
    "system",
    "messages",
    "tools",
    "dispatch",
    "signal",
    "onEvent",
    "onRequest",
    "client",
    "ledger",
    "parallel",
    "dedupeToolCalls",
    "recoverToolCalls",
    "onToolCall",
    "onToolResult",
    "onMessage",
    "beforeStep",
    "hooks",
  ].map((name): LoopOption => ({ name, handling: "read" })),
  {
    name: "catalog",
    handling: "not-built",
    what: "a name-only catalogue for on-demand or proxied tool loading",
  },
  { name: "preselected", handling: "not-built", what: "a preselected shortlist of tools" },
  ...[
    "maxToolIterations",
    "toolOrder",
    "parallel",
    "dedupeToolCalls",
    "recoverToolCalls",
    "maxRetries",
    "loadingTimeoutSeconds",
    "contextLength",
    "maxContinuations",
    "prompt",
    "compact",
  ].map((name): LoopOption => ({ name: `config.${name}`, handling: "read" })),
  // `hooks` is the spec's list of hooks: the host's runner (the `hooks` option's `run`) runs them.
  ...[
    "name",
    "description",
    "servers",
    "mcpServers",
    "tasks",
    "preselectKeywords",
    "preselectRouting",
    "hooks",
  ].map((name): LoopOption => ({ name: `config.${name}`, handling: "host" })),
  {
    name: "config.toolDiscovery",
    handling: "not-built",
    what: "on-demand and proxied tool loading (only eager is built)",
    asks: (value) => value !== undefined && value !== "eager",
  },
  {
    name: "config.preselect",
    handling: "not-built",
    what: "preselecting tools with a side task",
    asks: (value) => value === true,
  },
];

const BY_NAME = new Map(LOOP_OPTIONS.map((option) => [option.name, option]));

/**
 * Refuses what the loop would otherwise drop: an option key it does not know, and an option or
 * config field it knows of but does not do yet when its value asks for it. Throws `LoopOptionError`.
 */
export function refuseUnbuilt(options: object, config: object): void {
  for (const [key, value] of Object.entries(options)) {
    const option = BY_NAME.get(key);
    if (!option) {
      throw new LoopOptionError(
        "unknown-option",
        key,
        `runAgentLoop does not know the option "${key}"; the options it reads are ${LOOP_OPTIONS.filter(
          (o) => o.handling === "read" && !o.name.includes("."),
        )
          .map((o) => o.name)
          .join(", ")}.`,
      );
    }
    if (value !== undefined) refuseIfUnbuilt(option, value);
  }
  for (const [key, value] of Object.entries(config)) {
    const option = BY_NAME.get(`config.${key}`);
    if (option && (option.asks ? option.asks(value) : value !== undefined)) refuseIfUnbuilt(option, value);
  }
}

function refuseIfUnbuilt(option: LoopOption, value: unknown): void {
  if (option.handling !== "not-built") return;
  if (option.asks && !option.asks(value)) return;
  throw new LoopOptionError(
    "not-built",
    option.name,
    `${option.name} asks for ${option.what}, which this loop does not do yet; it is refused rather than ` +
      `ignored. Leave ${option.name} out${option.name.startsWith("config.") ? " of the config" : ""} for now.`,
  );
}
