import { inspect } from "node:util";
import { isToolChoice, OWNED_BODY_FIELDS, ownedBodyField } from "@loopwright/negotiate";
import type { CatalogServer } from "@loopwright/tool-loading";
import type { StepPlan } from "./agent-loop.js";
import type { ChatMessage, ToolChoice, ToolDefinition } from "./config.js";
import { LoopOptionError } from "./errors.js";
import { bodyFieldsRefusal, checkCatalogOption, checkToolEntries } from "./loop-options.js";
import { ownView } from "./own.js";

/**
 * A step's plan as `prepareStep` read it: a replacement (if any), the step's `tool_choice`, a stop,
 * and the run's tools and catalogue from this step on (`undefined`: as they were; a `null`
 * catalogue: none, one server `tools` holding every tool).
 */
export interface ReadPlan {
  messages: readonly ChatMessage[] | undefined;
  toolChoice: ToolChoice | undefined;
  stop: boolean;
  tools: readonly ToolDefinition[] | undefined;
  catalog: readonly CatalogServer[] | null | undefined;
  /** How many messages at the transcript's end are for this request only (`StepPlan.requestOnly`); 0 for none. */
  requestOnly: number;
  /** This step's model (`StepPlan.model`); `undefined`: the config's. */
  model: string | undefined;
  /** This step's body fields over the config's (`StepPlan.extraBody`; a key set to `undefined` removes the config's); `undefined`: none. */
  extraBody: Readonly<Record<string, unknown>> | undefined;
}

const FIELDS = new Set([
  "messages",
  "toolChoice",
  "stop",
  "tools",
  "catalog",
  "requestOnly",
  "model",
  "extraBody",
]);

const NOTHING: ReadPlan = {
  messages: undefined,
  toolChoice: undefined,
  stop: false,
  tools: undefined,
  catalog: undefined,
  requestOnly: 0,
  model: undefined,
  extraBody: undefined,
};

function refused(message: string): LoopOptionError {
  return new LoopOptionError("invalid-option", "beforeStep", `beforeStep ${message}`);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `value` as JSON for a message; what JSON cannot show (a bigint, a cycle) as Node inspects it. */
function shown(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return inspect(value, { depth: 3, breakLength: Number.POSITIVE_INFINITY });
  }
}

/** Refuses a `tool_choice` that is none of its four forms (`isToolChoice`), naming what it got. */
function checkToolChoice(choice: unknown): asserts choice is ToolChoice | undefined {
  if (choice === undefined || isToolChoice(choice)) return;
  throw refused(
    'planned a toolChoice; toolChoice must be "auto", "none", "required" or { type: "function", function: ' +
      `{ name } } with a tool's name, and it was ${shown(choice)}.`,
  );
}

/**
 * What `beforeStep` returned, read: nothing, a transcript (the array form), or a `StepPlan`.
 * Throws `TypeError` for anything else, and `LoopOptionError` (`invalid-option`, option
 * `beforeStep`) for a plan with a field it does not know, a field of the wrong type, or a stop it
 * cannot honour (on the first step, or beside the request it cancels).
 */
/**
 * The messages before a step's request-only ones (`StepPlan.requestOnly`, counted at the end): what
 * a fold is planned over and where the hooks find the user's question.
 */
export function beforeRequestOnly<T>(messages: readonly T[], requestOnly: number): readonly T[] {
  return requestOnly > 0 ? messages.slice(0, Math.max(0, messages.length - requestOnly)) : messages;
}

export function readPlan(value: unknown, step: number): ReadPlan {
  if (value === undefined || value === null) return NOTHING;
  if (Array.isArray(value)) return { ...NOTHING, messages: value as ChatMessage[] };
  if (!isRecord(value)) {
    throw new TypeError(
      "beforeStep must return an array of messages, a step plan { messages?, toolChoice?, stop?, tools?, " +
        "catalog?, requestOnly?, model?, extraBody? }, or nothing " +
        `to keep the transcript; it returned ${shown(value)}.`,
    );
  }
  for (const key of Object.keys(value)) {
    if (!FIELDS.has(key)) {
      throw refused(
        `returned a step plan with the unknown field "${key}"; a plan has messages, toolChoice, stop, tools, ` +
          "catalog, requestOnly, model and extraBody.",
      );
    }
  }
  // Its own fields (or its class's getters): an inherited `stop` (Object.prototype.stop = true, set by
  // polluting code) stopped every run whose plan left it out.
  const { messages, toolChoice, stop, tools, catalog, requestOnly, model, extraBody } = ownView(
    value,
  ) as StepPlan;
  if (messages !== undefined && !Array.isArray(messages)) {
    throw refused(`planned messages of ${shown(messages)}; messages must be an array of chat messages.`);
  }
  checkToolChoice(toolChoice);
  if (stop !== undefined && typeof stop !== "boolean") {
    throw refused(`planned stop: ${shown(stop)}; stop must be true or false.`);
  }
  if (stop === true && step === 1) {
    throw refused(
      "planned a stop before the first request: there is no step to end on. Do not start the run instead.",
    );
  }
  checkPlannedTools(tools);
  checkPlannedCatalog(catalog);
  if (
    requestOnly !== undefined &&
    !(typeof requestOnly === "number" && Number.isInteger(requestOnly) && requestOnly >= 0)
  ) {
    throw refused(
      `planned requestOnly: ${shown(requestOnly)}; requestOnly must be a whole number of messages, 0 or more.`,
    );
  }
  if (model !== undefined && !(typeof model === "string" && model !== "")) {
    throw refused(
      `planned model: ${shown(model)}; model must be the non-empty name the endpoint knows the step's model by ` +
        "(leave it out for config.model).",
    );
  }
  const fields = extraBody === undefined ? undefined : plannedBody(extraBody);
  if (
    stop === true &&
    (messages !== undefined ||
      toolChoice !== undefined ||
      tools !== undefined ||
      catalog !== undefined ||
      requestOnly !== undefined ||
      model !== undefined ||
      extraBody !== undefined)
  ) {
    throw refused(
      "planned a stop together with messages, a toolChoice, tools, a catalog, requestOnly, a model or extraBody, " +
        "but a stopped run sends no request: plan the stop alone.",
    );
  }
  return {
    messages,
    toolChoice,
    stop: stop === true,
    tools,
    catalog,
    requestOnly: requestOnly ?? 0,
    model,
    extraBody: fields,
  };
}

/**
 * A planned `extraBody` as the step sends it (a copy: the host's object may change after the plan is
 * read), or `LoopOptionError` for one that is not a plain object, that sets a field the request is
 * built with of its own (negotiate's `OWNED_BODY_FIELDS`, the one list `buildBody` and a side task
 * refuse too; the plan's field of that name, where it has one, named) or `"__proto__"`, or holds a
 * value JSON cannot send as given (`buildBody`'s own rule: `NaN`, `±Infinity`, a BigInt, a cycle,
 * named by its path). A key set to `undefined` is kept: it removes the config's key for this step
 * (an owned one so set, which no config holds, is let be, as `buildBody` lets it be). A
 * `stream_options` goes as a config's does (see `OWNED_BODY_FIELDS`).
 */
function plannedBody(extraBody: unknown): Readonly<Record<string, unknown>> {
  const proto = isRecord(extraBody) ? Object.getPrototypeOf(extraBody) : undefined;
  if (!isRecord(extraBody) || (proto !== Object.prototype && proto !== null)) {
    throw refused(
      `planned extraBody of ${isRecord(extraBody) ? "a class instance" : shown(extraBody)}; extraBody must be a ` +
        "plain object of body fields merged over config.extraBody for this step (a field set to undefined " +
        "leaves the config's out).",
    );
  }
  // JSON.parse makes "__proto__" an own key, which Object.keys lists.
  const keys = Object.keys(extraBody);
  for (const key of keys) {
    const owned = ownedBodyField(key);
    if (key === "__proto__") {
      throw refused('planned extraBody with a "__proto__" key: no request body can carry it as a field.');
    }
    if (owned !== undefined && extraBody[key] !== undefined) {
      throw refused(
        `planned extraBody with the field "${key}", which the loop owns and does not take from extraBody ` +
          `(${OWNED_BODY_FIELDS[owned]}${FIELDS.has(key) ? `; plan { ${key} } sets it for the step` : ""}).`,
      );
    }
  }
  const fields = Object.create(null) as Record<string, unknown>;
  for (const key of keys) fields[key] = extraBody[key];
  // buildBody's own check of what JSON cannot send.
  const said = bodyFieldsRefusal(fields, "extraBody");
  if (said !== undefined) throw refused(`planned ${said}`);
  return fields;
}

/** The `tools` option's own words, said of a plan: `runAgentLoop: tools entry 2 …` becomes `beforeStep planned tools entry 2 …`. */
function asPlanned(error: unknown, option: string): LoopOptionError {
  const said = error instanceof Error ? error.message : String(error);
  const detail = said.startsWith(`runAgentLoop: ${option}`) ? said.slice(`runAgentLoop: `.length) : said;
  return refused(`planned ${detail}`);
}

/** Refuses planned tools the `tools` option would refuse: not an array, or an entry that is no function tool with a name. */
function checkPlannedTools(tools: unknown): asserts tools is readonly ToolDefinition[] | undefined {
  if (tools === undefined) return;
  if (!Array.isArray(tools)) {
    throw refused(
      `planned tools of ${shown(tools)}; tools must be an array of tool definitions ([] for none).`,
    );
  }
  try {
    checkToolEntries(tools);
  } catch (error) {
    throw asPlanned(error, "tools");
  }
}

/** Refuses a planned catalogue the `catalog` option would refuse (`checkCatalog`'s rule); `null` is none. */
function checkPlannedCatalog(
  catalog: unknown,
): asserts catalog is readonly CatalogServer[] | null | undefined {
  if (catalog === undefined || catalog === null) return;
  try {
    checkCatalogOption(catalog);
  } catch (error) {
    throw asPlanned(error, "catalog");
  }
}

/**
 * Refuses a `tool_choice` a step cannot honour: a named tool the step does not declare (`declared`,
 * the step's wire names; `known`, the host's names to list), or `"required"` with no tools at all.
 */
export function checkReachable(
  choice: ToolChoice | undefined,
  wire: string | undefined,
  declared: readonly string[],
  known: readonly string[],
): void {
  if (choice === "required" && declared.length === 0) {
    throw refused(
      'planned toolChoice "required" on a step that declares no tools; give the run tools, or plan "auto" or "none".',
    );
  }
  if (typeof choice !== "object" || wire === undefined || declared.includes(wire)) return;
  throw refused(
    `planned a toolChoice that names the tool "${choice.function.name}", which this run does not have ` +
      `(${known.join(", ") || "no tools"}).`,
  );
}
