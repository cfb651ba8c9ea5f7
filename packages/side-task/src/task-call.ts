import { type Endpoint, redactor, resolveApiKey } from "@loopwright/client";
import { checkExtraBody } from "@loopwright/negotiate";
import { type SideTaskOptions, sendableExtraBody } from "./call.js";
import { describeValue, errorText, isPlainObject, SideTaskError } from "./errors.js";
import { ownView } from "./own.js";

/** A side task's endpoint as an agent spec resolves it (`ResolvedTaskEndpoint`), or any `Endpoint`. */
export interface TaskEndpoint {
  baseUrl: string;
  apiKey?: string | undefined;
  headers?: Record<string, string> | undefined;
  requestTimeoutSeconds?: number | undefined;
  firstTokenSeconds?: number | undefined;
}

/**
 * The settings an agent spec gives one side task (`tasks.<key>`).
 *
 * A `ResolvedTask` holds only what a layer stated. Structural, so a resolved spec's task passes as it is.
 */
export interface TaskSettings {
  model?: string | null | undefined;
  endpoint?: TaskEndpoint | null | undefined;
  maxTokens?: number | null | undefined;
  temperature?: number | null | undefined;
  reasoningEffort?: string | null | undefined;
  extraBody?: Record<string, unknown> | null | undefined;
}

/** The host's defaults for a task that names none: `SideTaskOptions` plus a model. */
export interface TaskCallOptions extends SideTaskOptions {
  /** The model to use where the task names none (e.g. a flattened `toolSelectModel`). */
  model?: string | null | undefined;
}

/** What `taskCall` hands back: the three arguments `ask`, `askJson`, `summariser` and `preselect` take. */
export interface TaskCall {
  endpoint: Endpoint;
  /** The task's model, else the options' model, else `""` (no model: a caller skips the task). */
  model: string;
  options: SideTaskOptions;
}

/** Whether two base URLs name one endpoint, by `resolveApiKey`'s own comparison. */
function sameEndpoint(a: string, b: string): boolean {
  const probe = "\u0000same";
  return resolveApiKey({ baseUrl: a }, { baseUrl: b, apiKey: probe }) === probe;
}

function pickEndpoint(given: TaskEndpoint, baseUrl: string, apiKey: string | undefined): Endpoint {
  const fields = ownView(given);
  const out: Endpoint = { baseUrl };
  if (apiKey !== undefined) out.apiKey = apiKey;
  if (fields.headers !== undefined) out.headers = fields.headers;
  if (fields.requestTimeoutSeconds !== undefined) out.requestTimeoutSeconds = fields.requestTimeoutSeconds;
  if (fields.firstTokenSeconds !== undefined) out.firstTokenSeconds = fields.firstTokenSeconds;
  return out;
}

/**
 * Turns the settings a spec gives a side task into the call that honours them.
 *
 * Returns `{ endpoint, model, options }` for `ask(endpoint, model, system, input, options)` and the rest.
 *
 * What the task states wins over the same field in `options`, which is where a host puts its own
 * default for a task that names none; anything neither states is the side task's own default,
 * never the agent's; a `null` the task states reads as absent, and an option given as `null` or
 * `undefined` is left out of the options answered. `extraBody` is laid over the
 * options' key by key. The endpoint: the task's own where it names one — given `agent` (the
 * endpoint the main turn uses) and the same URL, the agent's spelling of it and, with no key of its
 * own, the agent's key, so both share one set of capability latches; on another endpoint only a key of its own (`resolveApiKey`). No task
 * endpoint: the agent's. Reads only its arguments; never changes them. Throws `SideTaskError`
 * (`invalid-input`) when neither the task nor `agent` gives an endpoint, or for settings that are
 * not an object, or for a task endpoint that is stated but cannot be read (a URL string, an
 * object without a non-empty string `baseUrl` — `baseURL` as the `openai` SDK spells it included):
 * such an endpoint is never replaced by the agent's. A URL string's credentials are redacted in the
 * message. Also throws `invalid-input` for an `extraBody` (the task's or the options') that is not
 * an object, or, merged, that `ask` would refuse (a field the request is built with of its own —
 * `OWNED_BODY_FIELDS` —, or a value JSON cannot send as given: `NaN`, `±Infinity`, a BigInt, a
 * cycle; named by its field), and for a task with a key `TaskSettings` does not have (`timeoutMs`, `max_tokens`…),
 * named with the spelling that does what was meant, rather than ignored.
 */
export function taskCall(
  task: TaskSettings | undefined,
  options: TaskCallOptions = {},
  agent?: TaskEndpoint,
): TaskCall {
  // Read as the host wrote them: never a field only a polluted Object.prototype holds
  // (`Object.prototype.endpoint` sending every task to another server). Its keys are checked as given.
  const given = task;
  task = ownView(task);
  options = ownView(options);
  const hostAgent = ownView(agent);
  if (task !== undefined && !isPlainObject(task)) {
    throw new SideTaskError(
      "invalid-input",
      `taskCall: the task settings must be an object (a spec's tasks.<key>) or undefined, and were ${describeValue(task)}.`,
    );
  }
  if (!isPlainObject(options)) {
    throw new SideTaskError(
      "invalid-input",
      `taskCall: options must be an object, and were ${describeValue(options)}.`,
    );
  }
  const stated = task ?? {};
  checkTaskKeys(given ?? {});
  const own = ownView(stated.endpoint);
  if (own != null) checkTaskEndpoint(own);
  let endpoint: Endpoint;
  if (own != null) {
    const shared =
      hostAgent !== undefined &&
      typeof hostAgent.baseUrl === "string" &&
      sameEndpoint(own.baseUrl, hostAgent.baseUrl);
    if (shared) {
      const key = typeof own.apiKey === "string" && own.apiKey.trim() ? own.apiKey : hostAgent.apiKey;
      endpoint = pickEndpoint({ ...hostAgent, ...definedOnly(own) }, hostAgent.baseUrl, key);
    } else {
      endpoint = pickEndpoint(own, own.baseUrl, resolveApiKey(own, hostAgent ?? {}));
    }
  } else if (
    hostAgent !== undefined &&
    isPlainObject(hostAgent) &&
    typeof hostAgent.baseUrl === "string" &&
    hostAgent.baseUrl.trim() !== ""
  ) {
    endpoint = pickEndpoint(hostAgent, hostAgent.baseUrl, hostAgent.apiKey);
  } else {
    throw new SideTaskError(
      "invalid-input",
      "taskCall: the task names no endpoint and no agent endpoint was given as the third argument.",
    );
  }
  const { model: hostModel, ...hostOptions } = options;
  // An option given as `undefined` or `null` (which reads as absent: a host's defaults read from JSON
  // come back so) is left out, as leaving it out would: an own `undefined` or `null` key would erase
  // a host's default layered under it (`{ timeoutMs: 30_000, ...call.options }`).
  const merged = Object.fromEntries(
    Object.entries(hostOptions).filter(([, v]) => v != null),
  ) as SideTaskOptions;
  // A null the task states reads as absent (a nullable column round-trips through JSON so): the
  // host's option, else the side task's own default, holds.
  if (stated.maxTokens != null) merged.maxTokens = stated.maxTokens;
  if (stated.temperature != null) merged.temperature = stated.temperature;
  if (stated.reasoningEffort != null) merged.reasoningEffort = stated.reasoningEffort;
  // Spread, a string or an array would become fields "0", "1", … sent to the server: refused here,
  // as ask refuses one handed to it directly.
  for (const [extra, whose] of [
    [stated.extraBody, "the task's extraBody"],
    [options.extraBody, "options.extraBody"],
  ] as const) {
    // negotiate's one rule, as sendableExtraBody holds the merged one to: a Map spread is {}.
    try {
      checkExtraBody(extra, whose);
    } catch (error) {
      throw new SideTaskError("invalid-input", `taskCall: ${errorText(error)} Nothing was sent.`, {
        cause: error,
      });
    }
  }
  if (stated.extraBody != null || options.extraBody != null) {
    merged.extraBody = { ...options.extraBody, ...stated.extraBody };
    // What the side task would refuse once asked (a field it writes itself, NaN, a BigInt, a cycle),
    // refused now: a host that makes the call at its start (the loop, for its compaction task) hears
    // of it there, not at the first fold, hours and many paid requests later.
    sendableExtraBody(merged.extraBody, "taskCall");
  }
  return { endpoint, model: stated.model ?? hostModel ?? "", options: merged };
}

/** The keys a task (`TaskSettings`, a spec's `tasks.<key>`) has. */
const TASK_KEYS: ReadonlySet<string> = new Set([
  "model",
  "endpoint",
  "maxTokens",
  "temperature",
  "reasoningEffort",
  "extraBody",
]);

const TIME_BOUND = "a time bound is endpoint.requestTimeoutSeconds (in seconds), or options.timeoutMs";

/** Where a key a task does not have belongs, by its spelling folded to lower case without `_` or `-`. */
const RIGHT_SPELLING: Readonly<Record<string, string>> = {
  timeoutms: TIME_BOUND,
  timeout: TIME_BOUND,
  timeoutseconds: TIME_BOUND,
  requesttimeoutseconds: "it is endpoint.requestTimeoutSeconds",
  requesttimeout: TIME_BOUND,
  firsttokenseconds: "it is endpoint.firstTokenSeconds",
  baseurl: "it is endpoint.baseUrl",
  url: "it is endpoint.baseUrl",
  apikey: "it is endpoint.apiKey",
  headers: "it is endpoint.headers",
  maxtokens: "it is maxTokens",
  maxoutputtokens: "it is maxTokens",
  maxcompletiontokens: "it is maxTokens",
  reasoningeffort: "it is reasoningEffort",
  reasoning: "it is reasoningEffort",
  effort: "it is reasoningEffort",
  extrabody: "it is extraBody",
  body: "it is extraBody",
  modelname: "it is model",
  signal: "it is options.signal",
  onnotice: "it is options.onNotice",
  capabilities: "it is options.capabilities",
  clients: "it is options.clients",
};

/** A key as a message shows it: a plain name as it is, else quoted, escapes and all, and cut. */
function showKey(key: string): string {
  if (/^[A-Za-z_$][\w$]{0,59}$/.test(key)) return key;
  return JSON.stringify(key.length <= 60 ? key : `${key.slice(0, 60)}…`);
}

/**
 * A task holds only the keys `TaskSettings` has: any other (`timeoutMs` where the bound is the
 * endpoint's `requestTimeoutSeconds`) would be ignored without a word, so it is refused by name. A
 * resolved spec's task never holds one (`parseSpec` drops an unknown field with a warning): only a
 * host's own object can.
 */
function checkTaskKeys(stated: object): void {
  const unknown = Object.keys(stated).filter((key) => !TASK_KEYS.has(key));
  if (unknown.length === 0) return;
  const shown = unknown.slice(0, 5).map((key) => {
    const hint = RIGHT_SPELLING[key.toLowerCase().replace(/[_-]/g, "")];
    return hint === undefined ? showKey(key) : `${showKey(key)} (${hint})`;
  });
  const more = unknown.length > shown.length ? `, and ${unknown.length - shown.length} more` : "";
  throw new SideTaskError(
    "invalid-input",
    `taskCall: the task has ${unknown.length === 1 ? "a key" : "keys"} it does not take: ${shown.join(", ")}${more}. ` +
      "A task takes model, endpoint, maxTokens, temperature, reasoningEffort and extraBody; options (the second " +
      "argument) take the host's own settings. Nothing was sent.",
  );
}

/**
 * A task endpoint that is stated must be one `taskCall` can read: an object with a non-empty string
 * `baseUrl`. Anything else is refused rather than read as absent, which would send the task — with
 * the agent's key — to the agent's endpoint.
 */
function checkTaskEndpoint(own: unknown): asserts own is TaskEndpoint {
  const lead =
    "taskCall: the task's endpoint must be { baseUrl, apiKey?, headers?, requestTimeoutSeconds?, firstTokenSeconds? }";
  if (!isPlainObject(own)) {
    // The URL as the host wrote it, but never its credentials (a password, an ?api_key=): an error
    // is logged and shown. Redacted whole, then cut, so a cut cannot leave half a key unrecognised.
    const shown = typeof own === "string" ? redactor({ baseUrl: own })(own) : "";
    const hint =
      shown.trim() !== ""
        ? ` Write it as { baseUrl: ${JSON.stringify(shown.length <= 80 ? shown : `${shown.slice(0, 80)}…`)} }.`
        : "";
    throw new SideTaskError("invalid-input", `${lead}, and was ${describeValue(own)}.${hint}`);
  }
  const fields = own as Record<string, unknown>;
  const baseUrl = fields.baseUrl;
  if (typeof baseUrl === "string" && baseUrl.trim() !== "") return;
  let why: string;
  if (baseUrl == null) {
    const other = ["baseURL", "baseurl", "base_url", "url", "endpoint"].find((key) => key in fields);
    why =
      other === undefined
        ? "had no baseUrl"
        : `had no baseUrl (it names the URL as ${other}; the field is spelled baseUrl)`;
  } else {
    why =
      typeof baseUrl === "string"
        ? "had a blank baseUrl"
        : `had a baseUrl that is ${describeValue(baseUrl)}, not the server's base URL as text`;
  }
  throw new SideTaskError("invalid-input", `${lead}, and ${why}. Nothing was sent.`);
}

function definedOnly(fields: TaskEndpoint): Partial<TaskEndpoint> {
  return Object.fromEntries(
    Object.entries(fields).filter(([, v]) => v !== undefined && v !== ""),
  ) as Partial<TaskEndpoint>;
}
