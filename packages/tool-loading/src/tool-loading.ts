import { type FunctionToolLike, orderTools, type ToolOrder } from "@loopwright/schema-compat";
import {
  type CatalogServer,
  catalogFromTools,
  catalogIndex,
  catalogText,
  checkCatalog,
  definitionsByName,
} from "./catalog.js";
import {
  checkCap,
  checkNameList,
  checkRecord,
  describe,
  echoName,
  echoNames,
  ToolLoadingError,
} from "./errors.js";
import { definitionLine, heldWhere, loadResult, type MessageLike, proxyAnswer } from "./load-result.js";
import { CALL_TOOL_NAME, LOAD_TOOLS, LOAD_TOOLS_NAME, PROXY_TOOLS } from "./meta-tools.js";
import {
  carryOver,
  DEFAULT_CARRY_CAP,
  DEFAULT_LOAD_CAP,
  type NameResolution,
  nameReader,
  namesIn,
  toolResolver,
} from "./names.js";
import { ownView } from "./own.js";
import {
  type OtherReaderOptions,
  type ProxiedParseOptions,
  type ReaderAnswersArguments,
  readProxiedCall,
} from "./proxied-call.js";

/** How a run reaches its tools: all declared, loaded on demand into the tool array, or proxied. */
export type ToolDiscovery = "eager" | "ondemand" | "proxy";
/** Where an on-demand preselection goes: a first step of its own, or loaded beside the catalogue. */
export type PreselectRouting = "exclusive" | "append";

/**
 * What {@link createToolLoading} is built from: the run's tools and how it reaches them. `R` is
 * what `parse` answers (inferred; a reading's result holding the arguments as `value` is refused).
 */
export interface ToolLoadingOptions<R = unknown> {
  /** `"eager"` declares every tool; `"ondemand"` and `"proxy"` put the catalogue on the system prompt. */
  mode: ToolDiscovery;
  /** Every tool the run may reach, as full definitions. */
  tools: readonly FunctionToolLike[];
  /** The same tools by name, grouped by server. One server named `"tools"` holding `tools` unless given. */
  catalog?: readonly CatalogServer[] | undefined;
  /** How the tool array is ordered before it is sent (`orderTools`). Name order unless given. */
  order?: ToolOrder<FunctionToolLike> | undefined;
  /** Tools one load may load. 12 unless given. */
  loadCap?: number | undefined;
  /** Loaded tools carried in from an earlier run. 16 unless given. */
  carryCap?: number | undefined;
  /** List a one-line description beside each name in the catalogue text. Off unless given. */
  descriptions?: boolean | undefined;
  /**
   * Reads `call_tool` arguments given as text (see `proxiedCall`), handed the inner tool's
   * `takesOnlyString` from its definition in `tools`. `JSON.parse` unless given; for the lenient
   * reader, `(text, o) => parseToolArguments(text, o).value` (it answers an object holding the
   * arguments as `value`). A method, as `ProxiedCallOptions.parse`, so `JSON.parse`, `parseJson`
   * and a one-argument function type-check.
   */
  parse?(text: string, options?: ProxiedParseOptions & OtherReaderOptions): R;
}

/** What a run starts with (from {@link ToolLoading.start}). */
export interface LoadingStart {
  /** The names loaded before the first step: carried ones, plus a preselection where it is loaded. */
  loaded: string[];
  /** The preselected names that are catalogued and defined, at most a load's worth. */
  preselected: string[];
}

/** One step's request as far as tools go: the tool array to declare and the system text. */
export interface StepRequest {
  /** The tool array, ordered; never empty in a loading mode (it holds `load_tools` at least). */
  tools: FunctionToolLike[];
  /** The system prompt with the catalogue on its end where the step shows one; `undefined` for none. */
  system: string | undefined;
}

/** The state a step's request is built from. */
export interface StepInput {
  /** 0 for the run's first request. */
  step: number;
  /** What is loaded now (on-demand mode). */
  loaded: readonly string[];
  /** The start's `preselected`. */
  preselected?: readonly string[] | undefined;
  /** `"exclusive"` unless given. */
  routing?: PreselectRouting | undefined;
  /** The host's system prompt, if any. */
  system?: string | undefined;
}

/** A tool call as the loop read it: id, name and arguments (already parsed). */
export interface CallInput {
  id: string;
  name: string;
  args: Record<string, unknown>;
  raw?: string | undefined;
}

/** How the loop is to answer one tool call (from {@link ToolLoading.route}). */
export type CallRoute =
  | {
      /** A `load_tools` call: the loop answers it with `content` and never dispatches it. */
      kind: "load";
      content: string;
      /** What is loaded after this call. Always empty in proxy mode (the history holds it). */
      loaded: string[];
      resolution: NameResolution;
      /** Names newly loaded by this call (counted as tools loaded). */
      fresh: string[];
      /**
       * Tools this call reached that were already loaded (proxied: whose current definition the
       * transcript holds), counted as redundant loads: a name asked for again, and each such tool a
       * server's name or a pattern reached.
       */
      repeated: string[];
    }
  | {
      /** A call to dispatch as this tool, under the call's own id. */
      kind: "dispatch";
      id: string;
      name: string;
      args: Record<string, unknown>;
      /** The arguments as the model wrote them, where the call had such text (`undefined` otherwise). */
      raw?: string | undefined;
      /** What is loaded after this call: on demand, a catalogued tool called unloaded is now loaded. */
      loaded: string[];
      /** The name this call loaded on the way (on demand), if it did. */
      loadedNow?: string | undefined;
      /** Whether `call_tool` was unwrapped to get here. */
      proxied: boolean;
    }
  | {
      /**
       * A call refused with `content` as its (failed) result: a bad `call_tool` or `load_tools`, or
       * (ondemand and proxy) a direct call to a name outside the catalogue, one of `tools` included.
       */
      kind: "refuse";
      content: string;
      error: ToolLoadingError;
      loaded: string[];
      /** Names the call asked for that are outside the catalogue. */
      unknown: string[];
    };

/**
 * The per-step half of tool loading, built once for a run: what each step declares and what the
 * system prompt carries, what a `load_tools` or `call_tool` call is answered with, and (proxied)
 * the exchange a preselection is written into the transcript as. Every method is pure: state — the
 * loaded names, the transcript — goes in as arguments and comes back in results.
 */
export interface ToolLoading {
  /** The mode this was built for. */
  readonly mode: ToolDiscovery;
  /** The catalogue in use: the given one (or one built from the tools), less any tool without a definition. */
  readonly catalog: readonly CatalogServer[];
  /** The catalogue text a loading mode appends to the system prompt; `""` in eager mode. */
  readonly catalogText: string;
  /**
   * What the run starts with: carried names (capped), and the usable part of a preselection. Either
   * absent or `undefined` is none, so a loop forwards what it may not have yet.
   */
  start(input?: {
    loaded?: readonly string[] | undefined;
    preselected?: readonly string[] | undefined;
  }): LoadingStart;
  /**
   * The tool array and system text for one step. Throws `invalid-call` for a `step` that is not a
   * whole number of 0 or more, or a `system` that is not a string.
   */
  request(input: StepInput): StepRequest;
  /**
   * How to answer one call the model made. In ondemand and proxy mode a name outside the catalogue
   * is refused (`unknown-tool`) however it is called — by its own name, through `call_tool` or
   * `load_tools` — one of `tools` the catalogue does not list too, since no request of these modes
   * declares it; eager dispatches any name. A `step` given that is not a whole number of 0 or more
   * throws `invalid-call`.
   */
  route(
    call: CallInput,
    state: {
      loaded: readonly string[];
      messages: readonly MessageLike[];
      /**
       * The step the call was made on, its `preselected` and `routing` as `request` was given them:
       * on demand, a call outside the catalogue made on the first step of an exclusive preselection
       * (which declares the shortlist alone, with no catalogue and no `load_tools`) is told to call
       * one of the shortlist, rather than to load from a catalogue that step did not show.
       */
      step?: number | undefined;
      preselected?: readonly string[] | undefined;
      routing?: PreselectRouting | undefined;
    },
  ): CallRoute;
  /**
   * Proxy mode: a preselection written as a `load_tools` call the model did not make and its result,
   * to append after the question. Its id is numbered by `messages.length`, where the call lands
   * (`call_preselected_<n>`), with `_2`, `_3`… after it where the transcript already holds that id.
   * Names outside the catalogue, without a definition, or already held by the transcript are left
   * out; none left gives no messages. Other modes always give none.
   */
  preselection(preselected: readonly string[], messages: readonly MessageLike[]): PreselectionExchange;
}

/** A proxied preselection as the transcript holds it (from {@link ToolLoading.preselection}). */
export interface PreselectionExchange {
  /** The `load_tools` call and its answer, to append after the question; `[]` for none. */
  messages: MessageLike[];
  /** The names it loads (counted as tools loaded); `[]` for none. */
  names: string[];
}

const MODES: readonly ToolDiscovery[] = ["eager", "ondemand", "proxy"];

/** How many tools the answer to a server's name or a pattern called as a tool names before "and N more". */
const SET_NAMES_SHOWN = 24;

/**
 * `base`, or `base_2`, `base_3`… — the first that no call and no answer in `messages` holds as its
 * id: a transcript carried from an earlier run may hold a preselection that landed at the same
 * place, and an id used twice is refused by endpoints that check the transcript.
 */
function freshId(base: string, messages: readonly MessageLike[]): string {
  const used = new Set<string>();
  for (const message of messages) {
    if (typeof message?.tool_call_id === "string") used.add(message.tool_call_id);
    if (!Array.isArray(message?.tool_calls)) continue;
    for (const call of message.tool_calls) if (typeof call?.id === "string") used.add(call.id);
  }
  if (!used.has(base)) return base;
  let n = 2;
  while (used.has(`${base}_${n}`)) n++;
  return `${base}_${n}`;
}

/** The conversion from a chat-completion tool call, as the `invalid-call` message spells it. */
const FROM_SDK_CALL =
  "{ id: call.id, name: call.function.name, args: JSON.parse(call.function.arguments) }" +
  " (parsed the way your loop reads arguments; keep the text as raw)";

/** What a value is, for an `invalid-call` message: `describe`, with a Map, Set or Promise named. */
function kindOf(value: unknown): string {
  if (value instanceof Map) return "a Map";
  if (value instanceof Set) return "a Set";
  if (typeof (value as { then?: unknown } | null)?.then === "function") return "a Promise";
  return describe(value);
}

/**
 * Throws `invalid-call` unless `call` is `{ id, name, args, raw? }`: `id` and `name` strings, `args`
 * a plain object (the arguments read, never their text), `raw` text where given. A chat-completion
 * call (`{ id, type, function: { name, arguments } }`, what the SDK and `@loopwright/stream`'s `Turn`
 * hold) is named, with the conversion.
 */
function checkCall(call: unknown): asserts call is CallInput {
  const given = checkRecord(call, "a call ({ id, name, args })", "route");
  const fn = given.function as { name?: unknown } | null | undefined;
  if (given.name === undefined && typeof fn === "object" && fn !== null) {
    throw new ToolLoadingError(
      "invalid-call",
      "route needs a call as { id, name, args }, and was given a chat-completion tool call " +
        `({ id, type, function: { name, arguments } }, as the SDK and a stream's Turn hold it); pass ${FROM_SDK_CALL}.`,
    );
  }
  const fault =
    typeof given.id !== "string"
      ? `id is ${kindOf(given.id)}, not a string`
      : typeof given.name !== "string"
        ? `name is ${kindOf(given.name)}, not a string`
        : !plainObject(given.args)
          ? `args is ${kindOf(given.args)}, not an object of arguments` +
            (typeof given.args === "string"
              ? ": parse the arguments text first (args: JSON.parse(text)), and pass the text as raw"
              : "")
          : given.raw !== undefined && typeof given.raw !== "string"
            ? `raw is ${kindOf(given.raw)}, not the arguments text`
            : undefined;
  if (fault === undefined) return;
  const named = typeof given.name === "string" ? ` the call "${echoName(given.name)}"` : " the call";
  throw new ToolLoadingError(
    "invalid-call",
    `route needs a call as { id: string, name: string, args: { … }, raw?: string }, and${named}'s ${fault}. ` +
      `From a chat-completion call ({ id, type, function: { name, arguments } }), pass ${FROM_SDK_CALL}.`,
  );
}

/**
 * Throws `invalid-call` unless `step` is a whole number of 0 or more (absent too, where `optional`):
 * step 0 is what an exclusive preselection's shortlist stands on, so "0", NaN or -1 read as a later
 * step and the first request silently lost its shortlist.
 */
function checkStep(step: unknown, where: string, optional: boolean): void {
  if (optional && step === undefined) return;
  if (typeof step === "number" && Number.isSafeInteger(step) && step >= 0) return;
  throw new ToolLoadingError(
    "invalid-call",
    `${where} needs step as a whole number of 0 or more (0 for the run's first request), and was given ${describe(step)}.`,
  );
}

/** The transcript as `heldDefinitions` takes it: throws `invalid-names` for one that is not an array. */
function checkMessages(messages: readonly MessageLike[]): readonly MessageLike[] {
  if (Array.isArray(messages)) return messages;
  throw new ToolLoadingError(
    "invalid-names",
    `heldDefinitions needs the transcript as an array of messages, and was given ${describe(messages)}.`,
  );
}

/** An object of named values: not null, an array, a Map or Set, a Promise or a function. */
function plainObject(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === "object" &&
    value !== null &&
    Object.prototype.toString.call(value) === "[object Object]" &&
    typeof (value as { then?: unknown }).then !== "function"
  );
}

/**
 * Builds the {@link ToolLoading} for a run. Checks everything once: throws a `ToolLoadingError` for a
 * mode that is not one of the three (`invalid-mode`), tools that are not named function tools or
 * a catalogued one under a meta-tool's name the mode declares (`invalid-tools`: `load_tools` on
 * demand and proxied, `call_tool` proxied), a malformed catalogue (`invalid-catalog`), a bad cap (`invalid-cap`)
 * or a `descriptions` that is not a boolean (`invalid-call`).
 */
export function createToolLoading<R = unknown>(
  options: ToolLoadingOptions<R> & ReaderAnswersArguments<R>,
): ToolLoading {
  // Read as the host wrote them (and each step's input and call's state below): never a field only
  // a polluted Object.prototype holds (`loadCap = 1`, `system`, `routing`).
  options = ownView(options);
  checkRecord(options, "options ({ mode, tools, catalog?, ... })", "createToolLoading");
  const { mode, order = true, descriptions = false, parse } = options;
  if (!MODES.includes(mode)) {
    throw new ToolLoadingError(
      "invalid-mode",
      `createToolLoading needs a mode of "eager", "ondemand" or "proxy", and was given ${describe(mode)}.`,
    );
  }
  if (typeof descriptions !== "boolean") {
    // Read as truthy, "false" listed every description.
    throw new ToolLoadingError(
      "invalid-call",
      `createToolLoading needs descriptions as true or false, and was given ${describe(descriptions)}.`,
    );
  }
  const definitions = definitionsByName(options.tools, "createToolLoading");
  const given = options.catalog ?? [catalogFromTools(options.tools)];
  checkCatalog(given, "createToolLoading");
  // Only what a load can hand over is offered: a catalogued name without a definition is left out,
  // so the catalogue text never lists it and a load or a call_tool naming it is told so.
  const catalog: CatalogServer[] = given.map((server) => ({
    ...server,
    tools: server.tools.filter((tool) => definitions.has(tool.name)),
  }));
  const loadCap = checkCap(options.loadCap ?? DEFAULT_LOAD_CAP, "loadCap", "createToolLoading");
  const carryCap = checkCap(options.carryCap ?? DEFAULT_CARRY_CAP, "carryCap", "createToolLoading");
  const index = catalogIndex(catalog);
  // A catalogued tool named as a meta-tool the mode declares would shadow it (or be shadowed): a
  // call to one could not be told from a call to the other. One the catalogue leaves out is never
  // reached in these modes; on demand, a host's own catalogued `call_tool` is its tool.
  const meta =
    mode === "proxy" ? [LOAD_TOOLS_NAME, CALL_TOOL_NAME] : mode === "ondemand" ? [LOAD_TOOLS_NAME] : [];
  for (const name of meta) {
    if (!index.has(name)) continue;
    throw new ToolLoadingError(
      "invalid-tools",
      `createToolLoading: the tool "${name}" is catalogued under the name of the meta-tool ` +
        `${mode === "proxy" ? "a proxy" : "an on-demand"} run declares itself, so a call to one could not ` +
        "be told from a call to the other. Rename the tool, or leave it out of the catalogue.",
    );
  }
  // Built once: every call_tool and every unloaded call resolves its name through it.
  const resolve = toolResolver(catalog);
  // Built once as well: every load and the preselection expand their names through it.
  const { expand, readsWhole } = nameReader(catalog);
  // Each tool's definition line, written once when first needed (the definitions never change in a run).
  const lines = new Map<string, string>();
  const lineOf = (name: string): string | undefined => {
    const known = lines.get(name);
    if (known !== undefined) return known;
    const tool = definitions.get(name);
    if (tool === undefined) return undefined;
    const line = definitionLine(tool);
    lines.set(name, line);
    return line;
  };
  // Proxied, a tool counts as loaded only while the transcript holds its definition as it is now:
  // one whose definition changed (a carried transcript, new tools from a step's plan) is sent again.
  const heldNow = (messages: readonly MessageLike[]) =>
    heldWhere(messages, (name, line) => lineOf(name) === line);
  const text = mode === "eager" ? "" : catalogText(catalog, { mode, descriptions, cap: loadCap });
  const loadable = (name: string) => index.has(name);
  // Each name once: a tool declared twice is a request endpoints refuse (and the loop refuses such a
  // tool list), and a host's `loaded` may name one twice (its own list joined with a route's).
  const definitionsOf = (names: readonly string[]) =>
    [...new Set(names)].flatMap((name) =>
      definitions.get(name) ? [definitions.get(name) as FunctionToolLike] : [],
    );
  const withCatalog = (system: string | undefined) =>
    text === "" ? system : system ? `${system}\n\n${text}` : text;
  const hostOwns = (name: string) => definitions.has(name);
  const parametersOf = (name: string) => definitions.get(name)?.function.parameters;

  const usablePreselection = (preselected: readonly string[] | undefined): string[] => {
    if (preselected === undefined) return [];
    if (!Array.isArray(preselected)) {
      throw new ToolLoadingError(
        "invalid-names",
        `the preselection must be an array of tool names, and was given ${describe(preselected)}.`,
      );
    }
    return expand(
      preselected.filter((name) => typeof name === "string" && loadable(name)),
      loadCap,
    ).names;
  };

  const checkRouting = (routing: unknown): PreselectRouting => {
    if (routing === undefined || routing === "exclusive" || routing === "append")
      return routing ?? "exclusive";
    throw new ToolLoadingError(
      "invalid-mode",
      `preselectRouting must be "exclusive" or "append", and was given ${describe(routing)}.`,
    );
  };

  /**
   * What a load reaches, held to the cap by what it adds: a tool already loaded (or, proxied, whose
   * definition the transcript holds) takes no place under it, so loading a server's name again
   * brings the tools the cap left out the last time instead of the same ones.
   */
  const resolveLoad = (names: readonly string[], has: ReadonlySet<string>): NameResolution => {
    const reached = expand(names, Math.max(1, index.size));
    const fresh = reached.names.filter((name) => !has.has(name));
    const kept = new Set(fresh.slice(0, loadCap));
    return {
      names: reached.names.filter((name) => has.has(name) || kept.has(name)),
      unknown: reached.unknown,
      overCap: fresh.slice(loadCap),
      cap: loadCap,
    };
  };

  const loadRoute = (
    call: CallInput,
    loaded: readonly string[],
    messages: readonly MessageLike[],
  ): CallRoute => {
    let names: string[];
    try {
      names = namesIn(call.args, readsWhole);
    } catch (error) {
      if (!ToolLoadingError.isInstance(error)) throw error;
      return { kind: "refuse", content: error.message, error, loaded: [...loaded], unknown: [] };
    }
    if (mode === "proxy") {
      const held = heldNow(checkMessages(messages));
      const resolution = resolveLoad(names, held);
      const fresh = resolution.names.filter((name) => !held.has(name));
      const repeated = resolution.names.filter((name) => held.has(name));
      return {
        kind: "load",
        content: proxyAnswer(resolution, lineOf, held),
        loaded: [],
        resolution,
        fresh,
        repeated,
      };
    }
    const before = new Set(loaded);
    const resolution = resolveLoad(names, before);
    const fresh = resolution.names.filter((name) => !before.has(name));
    const repeated = resolution.names.filter((name) => before.has(name));
    return {
      kind: "load",
      content: loadResult(resolution, loaded),
      loaded: [...loaded, ...fresh],
      resolution,
      fresh,
      repeated,
    };
  };

  return {
    mode,
    catalog,
    catalogText: text,

    start(startGiven = {}) {
      const input = ownView(startGiven);
      checkRecord(input, "{ loaded?, preselected? }", "start");
      if (mode !== "ondemand") {
        return { loaded: [], preselected: mode === "proxy" ? usablePreselection(input.preselected) : [] };
      }
      const given = checkNameList(input.loaded ?? [], "the loaded names", "start");
      const carried = carryOver(given.filter(loadable), catalog, carryCap);
      const preselected = usablePreselection(input.preselected);
      // Loaded after whatever was carried, each name once, in either routing: "append" declares
      // them from the first step, "exclusive" shows them alone on the first step and then like
      // the rest (the model has seen them, and may be in the middle of using one).
      const loaded = [...carried, ...preselected.filter((name) => !carried.includes(name))];
      return { loaded, preselected };
    },

    request(requestGiven) {
      const input = ownView(requestGiven);
      checkRecord(input, "{ step, loaded, preselected?, routing?, system? }", "request");
      checkStep(input.step, "request", false);
      if (input.system !== undefined && typeof input.system !== "string") {
        // A number or an object went out as its String() before the catalogue.
        throw new ToolLoadingError(
          "invalid-call",
          `request needs system as the host's system prompt (a string), or none, and was given ${describe(input.system)}.`,
        );
      }
      const routing = checkRouting(input.routing);
      if (mode === "eager")
        return { tools: orderTools([...definitions.values()], order), system: input.system };
      if (mode === "proxy")
        return { tools: orderTools([...PROXY_TOOLS], order), system: withCatalog(input.system) };
      const preselected = checkNameList(input.preselected ?? [], "the preselected names", "request");
      const loadedNow = checkNameList(input.loaded, "the loaded names", "request");
      // A shortlist with no definition left (a host's own names) is no shortlist: never an empty array.
      const shortlist = input.step === 0 && routing === "exclusive" ? definitionsOf(preselected) : [];
      if (shortlist.length > 0) return { tools: orderTools(shortlist, order), system: input.system };
      const declared = definitionsOf(loadedNow.filter((name) => name !== LOAD_TOOLS_NAME));
      return { tools: orderTools([LOAD_TOOLS, ...declared], order), system: withCatalog(input.system) };
    },

    route(callGiven, stateGiven) {
      const call = ownView(callGiven);
      const state = ownView(stateGiven);
      checkCall(call);
      checkRecord(state, "the run's state ({ loaded, messages, step?, preselected?, routing? })", "route");
      checkStep(state.step, "route", true);
      const loaded = [...checkNameList(state.loaded, "the loaded names", "route")];
      // On demand, the first step of an exclusive preselection offers the shortlist alone: a call
      // outside the catalogue is pointed at what that step declared, not at a catalogue it did not show.
      const shortlist =
        mode === "ondemand" && state.step === 0 && checkRouting(state.routing) === "exclusive"
          ? orderTools(
              definitionsOf(checkNameList(state.preselected ?? [], "the preselected names", "route")),
              order,
            )
          : [];
      const offered = shortlist.map((tool) => tool.function.name);
      // A server's name or a pattern called as a tool: it is in the catalogue the model reads (as
      // `server: a, b`), so "not in the catalogue" would be false; it stands for several tools, so
      // the answer names them to call one of, as a load of it would reach them.
      const setOf = (name: string, prefix: string): string | undefined => {
        const reached = expand([name], Math.max(1, index.size)).names;
        if (reached.length === 0) return undefined;
        return (
          `${prefix}"${echoName(name)}" stands for ${reached.length === 1 ? "a tool" : "several tools"} of the ` +
          `catalogue, not one tool's name, so nothing was run. Call ${reached.length === 1 ? "it" : "one of them"} ` +
          `by its own name${mode === "proxy" ? " through call_tool" : ""}: ${echoNames(reached, SET_NAMES_SHOWN)}.`
        );
      };
      const outsideOffer = (name: string, prefix: string) =>
        `${prefix}"${echoName(name)}" is not one of the tools this step offers, so nothing was run. ` +
        `Call one of them: ${offered.join(", ")}.`;
      const dispatch = (
        name: string,
        args: Record<string, unknown>,
        raw: string | undefined,
        proxied: boolean,
      ): CallRoute => {
        if (mode === "ondemand" && loadable(name) && !loaded.includes(name)) {
          return {
            kind: "dispatch",
            id: call.id,
            name,
            args,
            raw,
            loaded: [...loaded, name],
            loadedNow: name,
            proxied,
          };
        }
        // `loadedNow` held as undefined: a reader of the route never finds a polluted `Object.prototype`'s.
        return { kind: "dispatch", id: call.id, name, args, raw, loaded, loadedNow: undefined, proxied };
      };
      if (mode === "eager") return dispatch(call.name, call.args, call.raw, false);
      if (call.name === LOAD_TOOLS_NAME) return loadRoute(call, loaded, state.messages);
      // On demand, a host's catalogued call_tool is its own tool; one the catalogue leaves out is
      // never reached, so the name is the meta-tool's.
      if (call.name === CALL_TOOL_NAME && !(mode === "ondemand" && loadable(CALL_TOOL_NAME))) {
        try {
          const inner = readProxiedCall(call.args, resolve, { ...(parse ? { parse } : {}), parametersOf });
          return dispatch(inner.name, inner.args, inner.raw, true);
        } catch (error) {
          if (!ToolLoadingError.isInstance(error)) throw error;
          const args: Record<string, unknown> =
            typeof call.args === "object" && call.args !== null ? call.args : {};
          const named = args.name ?? args.tool ?? args.tool_name;
          const unknown = error.code === "unknown-tool" && typeof named === "string" ? [named] : [];
          const content =
            unknown.length > 0 && offered.length > 0
              ? outsideOffer((unknown[0] as string).trim(), "call_tool: ")
              : ((unknown.length > 0 ? setOf(unknown[0] as string, "call_tool: ") : undefined) ??
                error.message);
          return { kind: "refuse", content, error, loaded, unknown };
        }
      }
      // A catalogued tool called by name, spelled as load_tools and call_tool take it
      // (github.create_issue, functions.read_file, Read_File): run as that tool (and, on demand,
      // loaded), in proxy mode too. A name the host declares itself is the host's, never folded to
      // another tool: outside the catalogue no request of these modes declares it, so it is refused
      // as call_tool and load_tools refuse it.
      const named = loadable(call.name) ? call.name : hostOwns(call.name) ? undefined : resolve(call.name);
      if (named !== undefined) return dispatch(named, call.args, call.raw, false);
      // Outside the catalogue: refused as call_tool refuses it, never dispatched.
      const error = new ToolLoadingError(
        "unknown-tool",
        offered.length > 0
          ? outsideOffer(call.name, "")
          : (setOf(call.name, "") ??
              `"${echoName(call.name)}" is not in the catalogue, so nothing was run. Call one of the tools the catalogue lists` +
                (mode === "proxy"
                  ? " through call_tool, loaded with load_tools."
                  : ", loaded with load_tools.")),
      );
      return { kind: "refuse", content: error.message, error, loaded, unknown: [call.name] };
    },

    preselection(preselected, messages) {
      if (mode !== "proxy") return { messages: [], names: [] };
      const held = heldNow(checkMessages(messages));
      const names = usablePreselection(preselected).filter((name) => !held.has(name));
      if (names.length === 0) return { messages: [], names: [] };
      const id = freshId(`call_preselected_${messages.length}`, messages);
      const resolution = expand(names, loadCap);
      const exchange: MessageLike[] = [
        {
          role: "assistant",
          content: "",
          tool_calls: [
            {
              id,
              type: "function",
              function: { name: LOAD_TOOLS_NAME, arguments: JSON.stringify({ names }) },
            },
          ],
        },
        {
          role: "tool",
          tool_call_id: id,
          content: proxyAnswer(resolution, lineOf, held),
        },
      ];
      return { messages: exchange, names };
    },
  };
}
