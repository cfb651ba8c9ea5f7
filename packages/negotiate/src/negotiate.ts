import {
  EFFORT_LADDER,
  type EndpointCapabilities,
  effortFor,
  type ModelCapabilities,
  modelCapabilitiesFor,
} from "./capabilities.js";
import { escapeControls } from "./controls.js";
import { own, ownOptions } from "./own.js";
import { type Refusal, type RefusedField, readRefusal } from "./refusal.js";
import { TOOL_RESULTS_READ } from "./template-roles.js";

/**
 * A per-attempt box that says whether the model has started answering.
 *
 * Set by the stream reader on the first chunk that carries text, reasoning or
 * a piece of a tool call. Once it reads `true` the model has started answering and nothing is sent
 * again.
 */
export interface Produced {
  /** `true` once the model has produced something a user may have seen. */
  value: boolean;
}

/**
 * What one attempt sent, as `send` hands it back: a box `negotiate` makes fresh for each attempt.
 * Optional to fill; filled, a refusal's notice can say what was refused (a plain `json_object` in
 * `response_format`, not "a JSON schema").
 */
export interface Sent {
  /** The request body this attempt sent, as an object (what `buildBody` built, with what you added). */
  body?: unknown;
}

/**
 * Sends one attempt of a request, rebuilt from the latches.
 *
 * Rebuild the body on every call from `supports` and `model` (the latches), and
 * hand `produced` to the stream reader. Set `sent.body` to the body sent, so a refusal is told as
 * what it refused.
 */
export type Send<T> = (
  supports: EndpointCapabilities,
  produced: Produced,
  model: ModelCapabilities | undefined,
  sent: Sent,
) => Promise<T>;

/** Options for `negotiate`. */
export interface NegotiateOptions {
  /** The model's name at this endpoint: enables model-level latches (effort, ceiling, temperature…). */
  model?: string | undefined;
  /** Top-level body fields the caller allows dropping when this model refuses them (extraBody keys). */
  droppable?: readonly string[] | undefined;
  /**
   * Told, in words, when a request is changed in a way that costs or drops something: each latch
   * this call makes, as it makes it (`stream_options`, a temperature, structured output,
   * `tool_choice`, tool-call ids, a template's roles, a dropped field, an effort climbing) — schemas
   * sent relaxed once the call is over, and only if that latch still holds then. A latch is made
   * once per endpoint (or model), so each is told once; the ceiling respelled
   * `max_completion_tokens` loses nothing and is not told.
   */
  onNotice?: ((message: string) => void) | undefined;
  /**
   * The `reasoning_effort` the caller asked for (its config's `reasoningEffort`). With a rung of
   * `EFFORT_LADDER` and `model`, a request that goes out with a higher rung because the model refuses
   * the one asked (refused just now, learnt from another value's refusal, or restored from a
   * snapshot) is said so in a notice — `"none"` stepped up spends reasoning tokens where none were
   * asked for, any other rung more than asked — once per model record, asked rung and rung sent in
   * this process (a `forget` or store reset starts a new record, told again when it learns the
   * refusal again; a record that later learns the rung sent refused too tells the higher rung it
   * then sends).
   * Without it only a refusal of `"none"` itself is told.
   */
  reasoningEffort?: string | undefined;
  /**
   * One box for every attempt, for a caller with its own retry budget: read it after a failure to
   * know whether the model had started answering. Without it each attempt gets a fresh box.
   */
  produced?: Produced | undefined;
  /**
   * Upper bound on attempts; every latch changes at most once, so this is a backstop. Default: one
   * more than the latches the call can change, and at least 12 (see `defaultMaxAttempts`).
   */
  maxAttempts?: number | undefined;
}

/**
 * What a structured-output refusal was of, as its notice says it: the field itself, by the name the
 * server refused (`response_format`: it does not know the field, so a plain `{ type: "json_object" }`
 * was refused as much as a schema); else `json_object` where the attempt's body (as `send` handed
 * it back) asked for that, a server's generic "does not support response_format" of it; else a JSON
 * schema in `response_format` (the server named the schema, or structured output).
 */
function refusedFormat(name: string | undefined, sentType: string | undefined): string {
  if (name !== undefined) return `${echoed(name)}, a field it does not take`;
  return sentType === "json_object" ? "json_object in response_format" : "a JSON schema in response_format";
}

/** How much of a name the server wrote a notice repeats: whole up to this, else cut with its length said. */
const ECHOED_CHARS = 60;

/**
 * A field's name as the server refused it, as a notice repeats it: the server's own words, which can
 * be any size and hold anything (a relay echoing what it was sent, a body cut mid-name), read only
 * so far as its top-level field was one the caller allowed dropping. Whole up to 60 characters,
 * else cut there (never inside a character) with its length said; half a surrogate pair written
 * U+FFFD; each control character (an ESC, a line break, a right-to-left override) written
 * `\uXXXX`, so a notice shown in a terminal or a run's log says what the server wrote and cannot
 * rewrite what is around it.
 */
function echoed(given: string): string {
  const name = given.toWellFormed();
  if (name.length <= ECHOED_CHARS) return escapeControls(name);
  const last = name.charCodeAt(ECHOED_CHARS - 1);
  const head = name.slice(0, last >= 0xd800 && last <= 0xdbff ? ECHOED_CHARS - 1 : ECHOED_CHARS);
  return `${escapeControls(head)}… (${name.length} characters)`;
}

/**
 * The `response_format.type` of the body an attempt sent, if `send` handed it back; read as written
 * (own fields only), never throwing for what the body's getters throw.
 */
function sentFormatType(sent: Sent): string | undefined {
  try {
    const type = own(own(own(sent, "body"), "response_format"), "type");
    return typeof type === "string" ? type : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Answers one refusal by changing a latch. Returns false when nothing could change (the latch was
 * already off, no model was named, the caller did not allow the drop, the effort ladder ran out),
 * which means the refusal goes to the caller.
 */
function answer(
  refusal: Refusal,
  supports: EndpointCapabilities,
  model: ModelCapabilities | undefined,
  modelName: string | undefined,
  droppable: ReadonlySet<string>,
  notice: (message: string) => void,
  sent: Sent,
): boolean {
  switch (refusal.kind) {
    case "strict-schema":
    case "grammar":
      // Told by `negotiate` as the call ends, and only if the latch still holds then
      // (`relaxedNotice`): a relaxed request refused alike takes it back, and then nothing changed.
      if (!supports.strictSchemas) return false;
      supports.strictSchemas = false;
      return true;
    case "stream-options":
      if (!supports.usageInStream) return false;
      supports.usageInStream = false;
      notice(
        "The server refused stream_options; streaming without it from now on (token usage is counted only " +
          "where the server reports it unasked).",
      );
      return true;
    case "token-limit-spelling":
      // A rename that loses nothing (the same ceiling, spelled as the model wants it): not told.
      if (!model || model.legacyTokenLimit === false) return false;
      model.legacyTokenLimit = false;
      return true;
    case "temperature":
      if (!model?.chosenTemperature) return false;
      model.chosenTemperature = false;
      notice(
        `${modelName} refused the temperature asked (it takes only its own default); sending requests ` +
          "without one from now on.",
      );
      return true;
    case "structured-output":
      if (!model?.structuredOutput) return false;
      model.structuredOutput = false;
      notice(
        `${modelName} refused structured output (${refusedFormat(refusal.name, sentFormatType(sent))}); sending requests without ` +
          "one from now on: a response_format of the caller's own (extraBody) is left out, and a side task " +
          "asks for json_object, or for JSON in words.",
      );
      return true;
    case "tool-choice":
      if (!model?.toolChoice) return false;
      model.toolChoice = false;
      notice(
        `${modelName} refused tool_choice; sending requests without it from now on (a step asking for ` +
          '"none" goes without tools).',
      );
      return true;
    case "tool-call-ids":
      if (!model?.anyToolCallIds) return false;
      model.anyToolCallIds = false;
      notice(
        `${modelName} refused a tool-call id in the transcript; sending each id that is not nine letters ` +
          "and digits as nine derived from it from now on (the transcript keeps its own).",
      );
      return true;
    case "system-role":
      if (!model?.systemRole) return false;
      model.systemRole = false;
      notice(
        `${modelName} takes no system message (its chat template refused one); sending the system text at ` +
          "the head of the first user message from now on.",
      );
      return true;
    case "user-after-tool":
      if (!model?.userAfterTool) return false;
      model.userAfterTool = false;
      notice(
        `${modelName} takes no user message straight after a tool result; sending a short assistant message ` +
          `between them from now on (${JSON.stringify(TOOL_RESULTS_READ)}).`,
      );
      return true;
    case "parallel-calls":
      if (!model?.parallelCalls) return false;
      model.parallelCalls = false;
      notice(
        `${modelName} takes one tool call per assistant message (its chat template refused several); sending ` +
          "each call of a step as an assistant message of its own, its result after it, from now on (the " +
          "transcript keeps its own).",
      );
      return true;
    case "effort":
      return model ? climbEffort(refusal, model, modelName ?? "", notice) : false;
    case "unknown-field": {
      if (!model) return false;
      // Every field the refusal named and the model has not dropped yet, each once. All of them go
      // in the one re-send, or none: a field nobody said was droppable is the caller's to see, and
      // dropping the rest first would only be refused again for it, a send and a latch later.
      const dropped = new Set(model.droppedFields);
      const fresh = new Map<string, string>();
      for (const { field, name } of refusedFields(refusal)) {
        if (dropped.has(field) || fresh.has(field)) continue;
        // A model with no effort at all (gpt-4o given reasoning_effort) takes none from now on.
        if (field !== "reasoning_effort" && !droppable.has(field)) return false;
        fresh.set(field, name);
      }
      if (fresh.size === 0) return false;
      for (const [field, name] of fresh) {
        model.droppedFields.push(field);
        notice(
          field === "reasoning_effort"
            ? `${modelName} does not take reasoning_effort; sending it without one from now on.`
            : `${modelName} refused the field ${echoed(name)}; sending ${field} no more for this model.`,
        );
      }
      return true;
    }
  }
}

/**
 * The default bound on attempts: one more than the latches one call can change — the endpoint's
 * two, and with a model its eight flags, its effort (a rung per refusal where the refusal lists
 * nothing, up the whole ladder, then dropped) and one per droppable field — and never under 12.
 * A fixed 12 cut short a request refused once for each of twelve things: the twelfth refusal, which
 * the latches answer, went to the caller unlatched instead of being answered by a thirteenth send.
 */
function defaultMaxAttempts(named: boolean, droppable: number): number {
  const latches = 2 + (named ? 8 + EFFORT_LADDER.length + droppable : 0);
  return Math.max(12, latches + 1);
}

/**
 * Whether the latch `refusal` names was already off in the body it answers (`builtFrom`, what
 * `latchState` said when the body was built): the body did not carry what the refusal is about,
 * so latching it once more answers nothing. Alone this is "the latch is already off"; beside
 * another request it also covers a latch that one took back meanwhile, which this request would
 * otherwise latch again (and then take back again) for a body that never had the thing.
 */
function offWhenBuilt(refusal: Refusal, builtFrom: string): boolean {
  const [strict, usage, model] = JSON.parse(builtFrom) as [boolean, boolean, ModelCapabilities | null];
  switch (refusal.kind) {
    case "strict-schema":
    case "grammar":
      return !strict;
    case "stream-options":
      return !usage;
    case "token-limit-spelling":
      return model?.legacyTokenLimit === false;
    case "temperature":
      return model?.chosenTemperature === false;
    case "structured-output":
      return model?.structuredOutput === false;
    case "tool-choice":
      return model?.toolChoice === false;
    case "tool-call-ids":
      return model?.anyToolCallIds === false;
    case "system-role":
      return model?.systemRole === false;
    case "user-after-tool":
      return model?.userAfterTool === false;
    case "parallel-calls":
      return model?.parallelCalls === false;
    case "effort":
      return refusal.refused !== null && (model?.refusedEfforts.includes(refusal.refused) ?? false);
    case "unknown-field": {
      // Off when every field it named was: a body that carried any of them is answered by dropping it.
      const dropped = new Set(model?.droppedFields);
      return refusedFields(refusal).every(({ field }) => dropped.has(field));
    }
  }
}

/** Each field an `unknown-field` refusal named: the first, then the rest (`more`). */
function refusedFields(refusal: Extract<Refusal, { kind: "unknown-field" }>): RefusedField[] {
  return [{ field: refusal.field, name: refusal.name }, ...(refusal.more ?? [])];
}

/** Every latch a body is built from, as one comparable string. */
function latchState(supports: EndpointCapabilities, model: ModelCapabilities | undefined): string {
  return JSON.stringify([supports.strictSchemas, supports.usageInStream, model ?? null]);
}

function climbEffort(
  refusal: Extract<Refusal, { kind: "effort" }>,
  model: ModelCapabilities,
  modelName: string,
  notice: (message: string) => void,
): boolean {
  const refused = refusal.refused;
  const at = refused === null ? -1 : EFFORT_LADDER.indexOf(refused);
  if (at < 0 || refused === null || model.refusedEfforts.includes(refused)) return false;
  // Where the model listed what it takes, every rung it left out is refused as well.
  const listed = refusal.supported.filter((v) => EFFORT_LADDER.includes(v));
  const refuses = (rung: string) =>
    rung === refused ||
    model.refusedEfforts.includes(rung) ||
    (refusal.supported.length > 0 && !refusal.supported.includes(rung));
  const next = EFFORT_LADDER.slice(at + 1).find((rung) => !refuses(rung));
  if (next === undefined) return false; // the ladder ran out: the caller hears the refusal
  const add = listed.length > 0 ? EFFORT_LADDER.filter((rung) => refuses(rung)) : [refused];
  for (const rung of add) if (!model.refusedEfforts.includes(rung)) model.refusedEfforts.push(rung);
  if (refused === "none") noticeClimb(model, modelName, "none", notice);
  return true;
}

// What each model record was told it steps up from, and to, in this process ("minimal>low"): not in
// the record, so a snapshot or a store shared through Redis never carries it, and a restarted process
// tells it again. Keyed by the rung sent too: a record that later learns that rung refused as well
// (a snapshot merged in, a server refusing one value at a time) sends a higher one, which the earlier
// notice, naming the lower, does not say.
const toldClimbs = new WeakMap<ModelCapabilities, Set<string>>();

/**
 * Tells, once per model record, asked rung and rung sent, that the rung asked goes out as the higher
 * one `effortFor` climbs to: a step up from "none" spends reasoning tokens where none were asked
 * for, one from any other rung more of them than asked. Nothing for a value off the ladder (sent as
 * given) or one the model takes.
 */
function noticeClimb(
  model: ModelCapabilities,
  modelName: string,
  asked: string,
  notice: (message: string) => void,
): void {
  if (!EFFORT_LADDER.includes(asked)) return;
  const sent = effortFor(model, asked);
  if (sent === asked || sent === "") return;
  const told = toldClimbs.get(model) ?? new Set<string>();
  const climb = `${asked}>${sent}`;
  if (told.has(climb)) return;
  told.add(climb);
  toldClimbs.set(model, told);
  notice(
    asked === "none"
      ? `${modelName} does not take reasoning_effort "none"; sending "${sent}", which spends reasoning tokens.`
      : `${modelName} does not take reasoning_effort "${asked}"; sending "${sent}", which spends more reasoning tokens than asked.`,
  );
}

/**
 * The notice for schemas sent relaxed, by the refusal that relaxed them: a grammar the server could
 * not build from them, or their strict form refused.
 */
function relaxedNotice(kind: "grammar" | "strict-schema"): string {
  const why =
    kind === "grammar"
      ? "The server could not build a grammar from the request's schemas"
      : "The server refused the request's schemas in strict form";
  return (
    `${why}; sending tool and response_format schemas relaxed from now on (their patterns and bounds ` +
    "are described to the model, no longer enforced by the server)."
  );
}

/** Refuses options of the wrong type before anything is sent, naming the option. */
const NEGOTIATE_OPTIONS = [
  "model",
  "droppable",
  "onNotice",
  "reasoningEffort",
  "produced",
  "maxAttempts",
] as const satisfies readonly (keyof NegotiateOptions)[];

function checkOptions(given: NegotiateOptions): void {
  const invalid = (name: string, what: string) => new TypeError(`negotiate: ${name} must be ${what}.`);
  if (typeof given !== "object") throw invalid("options", "an object");
  const { model, droppable, onNotice, produced, maxAttempts, reasoningEffort } = ownOptions(
    given,
    NEGOTIATE_OPTIONS,
  );
  if (model != null && typeof model !== "string") throw invalid("model", "the model's name as a string");
  if (droppable != null && !(Array.isArray(droppable) && droppable.every((f) => typeof f === "string"))) {
    throw invalid("droppable", "an array of field names");
  }
  if (onNotice != null && typeof onNotice !== "function") throw invalid("onNotice", "a function");
  if (reasoningEffort != null && typeof reasoningEffort !== "string") {
    throw invalid("reasoningEffort", 'the asked reasoning_effort as a string such as "none"');
  }
  if (produced != null && typeof produced !== "object") throw invalid("produced", "a { value: boolean } box");
  if (maxAttempts != null && !(Number.isInteger(maxAttempts) && maxAttempts >= 1)) {
    throw invalid("maxAttempts", "a whole number from 1");
  }
}

/**
 * Sends a request, re-sending it while the failure is a refusal it can answer by latching it.
 *
 * Re-sends for as long as the failure is this endpoint (or this model on
 * it) refusing something the request can do without, latching each refusal so no later request
 * asks again. Never re-sends once `produced` says the model started answering.
 *
 * Answered: strict tool schemas and grammar failures (→ `strictSchemas: false`, taken back
 * when the relaxed request draws the same refusal: no tool schema was at fault), `stream_options`
 * (→ `usageInStream: false`), and — with `model` — a refused effort rung (climb), `max_tokens`
 * (→ `legacyTokenLimit: false`), a temperature only the model's default goes for
 * (→ `chosenTemperature: false`), `response_format` (→ `structuredOutput: false`), `tool_choice`
 * no provider of the model takes (→ `toolChoice: false`, with a notice), a tool-call id the model
 * refused for its form or length, also as a 500 (→ `anyToolCallIds: false`, with a notice; taken
 * back, with a notice, when the re-sent request draws the same refusal: no id was at fault), a
 * system message the model's chat template takes none of (→ `systemRole: false`, with a notice), a
 * user message straight after a tool result (→ `userAfterTool: false`, with a notice), an
 * assistant message with several tool calls (→ `parallelCalls: false`, with a notice), an unknown
 * `reasoning_effort`, and unknown fields named in `droppable` — several named in one refusal dropped
 * in one re-send, and only when every one of them may be (a list holding `messages` is passed on
 * whole, as `messages` alone is). Everything else — a refusal of a
 * value, an overflow, a rate limit, a server error — is rethrown as it came. Throws `TypeError`
 * naming the argument, before anything is sent, for a `supports`, `send` or option of the wrong
 * type (`null` options are none).
 */
export async function negotiate<T>(
  supports: EndpointCapabilities,
  send: Send<T>,
  options: NegotiateOptions = {},
): Promise<T> {
  if (typeof supports !== "object" || supports === null) {
    throw new TypeError("negotiate: supports must be the object capabilitiesFor(baseUrl, apiKey) returned.");
  }
  if (typeof send !== "function") {
    throw new TypeError("negotiate: send must be a function (supports, produced, model) => Promise.");
  }
  checkOptions(options ?? {});
  // Its own fields (or its class's), each read once: never one a polluted Object.prototype holds
  // (an inherited `maxAttempts: true` refused every call, `model` latched another model's refusals).
  options = ownOptions(options, NEGOTIATE_OPTIONS);
  const model = options.model ? modelCapabilitiesFor(supports, options.model) : undefined;
  const droppable = new Set(options.droppable ?? []);
  const notice = options.onNotice ?? (() => {});
  const maxAttempts = options.maxAttempts ?? defaultMaxAttempts(model !== undefined, droppable.size);
  // Whether this call latched strict schemas off: if the relaxed request draws the same refusal,
  // no tool schema was at fault (a response_format's schema, a grammar of the caller's own), and
  // the latch is taken back rather than relaxing every later request to the endpoint for nothing.
  let relaxedHere: "grammar" | "strict-schema" | undefined;
  // Likewise for tool-call ids: a request with no id the latch changes (a side task's, with no
  // tool calls at all) that draws the refusal again was not refused for its ids, and the latch is
  // taken back rather than renaming every later request's ids for the model.
  let idsHere = false;
  try {
    return await attempts();
  } finally {
    // The relaxed schemas are told once the call is over, where the latch this call set still
    // holds (a relaxed request refused alike took it back: no schema was at fault, nothing changed).
    if (relaxedHere && !supports.strictSchemas) {
      try {
        notice(relaxedNotice(relaxedHere));
      } catch {
        // Told from a finally: what the host's sink throws must not replace the call's own outcome.
      }
    }
  }

  async function attempts(): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const produced = options.produced ?? { value: false };
      // What this attempt's body was built from: a request running beside this one may latch the
      // same refusal first, and then this one is answered by sending again, not by a second latch.
      const builtFrom = latchState(supports, model);
      // A rung asked and a higher one going out (whichever way the model's refusal became known).
      if (model && options.reasoningEffort !== undefined)
        noticeClimb(model, options.model ?? "", options.reasoningEffort, notice);
      // What this attempt sent, if `send` says: one box per attempt, handed to it and read here.
      const sent: Sent = {};
      try {
        return await send(supports, produced, model, sent);
      } catch (error) {
        if (produced.value || attempt >= maxAttempts) throw error;
        const refusal = readRefusal(error);
        if (!refusal) throw error;
        const wasStrict = supports.strictSchemas;
        const anyIds = model?.anyToolCallIds;
        const stale = offWhenBuilt(refusal, builtFrom);
        const answered = !stale && answer(refusal, supports, model, options.model, droppable, notice, sent);
        if (
          answered &&
          wasStrict &&
          !supports.strictSchemas &&
          (refusal.kind === "grammar" || refusal.kind === "strict-schema")
        ) {
          relaxedHere = refusal.kind;
        }
        if (answered && anyIds && model?.anyToolCallIds === false) idsHere = true;
        if (!answered && (stale || latchState(supports, model) === builtFrom)) {
          if (relaxedHere && (refusal.kind === "grammar" || refusal.kind === "strict-schema")) {
            supports.strictSchemas = true;
            relaxedHere = undefined;
          }
          if (idsHere && model && refusal.kind === "tool-call-ids") {
            model.anyToolCallIds = true;
            notice(
              `${options.model} refused the request again with tool-call ids it takes, so the ids were not ` +
                "at fault; sending them as they are again.",
            );
          }
          throw error;
        }
      }
    }
  }
}
