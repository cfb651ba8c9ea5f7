import type { FunctionToolLike, ToolOrder } from "@loopwright/schema-compat";
import {
  PRESELECTED_NOTICE,
  preselect,
  SideTaskError,
  type TaskSettings,
  taskCall,
} from "@loopwright/side-task";
import {
  CALL_TOOL_NAME,
  type CatalogServer,
  createToolLoading,
  LOAD_TOOLS_NAME,
  loadNames,
  MAX_NAME_LENGTH,
  type PreselectRouting,
  type ToolDiscovery,
  type ToolLoading,
} from "@loopwright/tool-loading";
import type { AgentLoopOptions } from "./agent-loop.js";
import type { ChatMessage, ToolChoice, ToolDefinition } from "./config.js";
import { LoopOptionError } from "./errors.js";
import { preview } from "./loop-phases.js";
import {
  addSideUsage,
  append,
  emitEvent,
  type LoopRun,
  notice,
  tellToolNotices,
  throwIfStopped,
} from "./loop-run.js";
import { hasOwnKey } from "./own.js";
import {
  answeringNames,
  type CallResult,
  type CallRouting,
  type DispatchRequest,
  exactArgumentsText,
  heldOutside,
  holdingNumbers,
  holdsHeld,
  readHolding,
  sameNameAnswers,
  settleHeld,
} from "./run-calls.js";
import { checkReachable } from "./step-plan.js";
import { tell } from "./tell.js";
import { type DeclaredTools, declareTools } from "./tool-names.js";

/** What the loop counts of `load_tools` and `call_tool`: the part of `metrics` only it can see. */
export interface ToolLoadMetrics {
  /** Tools newly loaded: by a load, by a proxied preselection, or (on demand) by calling one unloaded. */
  toolsLoaded: number;
  /**
   * Tools a load reached that were already loaded (or, proxied, whose definition as it is now was
   * already in the conversation): one for a name asked for again, and one for each such tool a
   * server's name or a pattern reached.
   */
  redundantLoads: number;
  /**
   * Names the model asked to load, `call_tool` or call that are outside the catalogue, each once, in
   * order: the first 100, each cut to 256 characters (the rest of a longer one as `…`).
   */
  unknownToolNames: string[];
}

/** How many names `metrics.unknownToolNames` keeps: the model makes them up, so any number. */
const UNKNOWN_NAMES_KEPT = 100;

/**
 * A loading run's tool discovery (`ondemand` or `proxy`; eager runs have none): the per-step
 * builders, and what is loaded and preselected so far. Names inside are the wire's (what the
 * model reads and writes); the host's names are used wherever the host sees them.
 */
export interface Discovery {
  /** The per-step builders; built again when a step's plan changes the tools or the catalogue. */
  loading: ToolLoading;
  readonly routing: PreselectRouting;
  /** What is loaded now (on demand; always empty proxied). */
  loaded: string[];
  /** The shortlist the run opened with. */
  preselected: string[];
  readonly counts: ToolLoadMetrics;
  /** The names `counts.unknownToolNames` holds, as a set: a repeat is found without a scan. */
  readonly unknownSeen: Set<string>;
}

const NO_COUNTS = (): ToolLoadMetrics => ({ toolsLoaded: 0, redundantLoads: 0, unknownToolNames: [] });

const hostName = (names: Pick<DeclaredTools, "toHost">, name: string) => names.toHost.get(name) ?? name;
const wireName = (names: Pick<DeclaredTools, "toWire">, name: string) => names.toWire.get(name) ?? name;

/** The meta-tools' names: `load_tools` (both loading modes) and `call_tool` (declared proxied). */
const META_NAMES: readonly string[] = [LOAD_TOOLS_NAME, CALL_TOOL_NAME];

/** A loading mode as its run is named in a message: "an on-demand" run, "a proxy" run. */
const MODE_RUN = { ondemand: "an on-demand", proxy: "a proxy" } as const;

function nameList(value: unknown, option: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((name) => typeof name !== "string")) {
    throw new LoopOptionError(
      "conflicting-options",
      option,
      `runAgentLoop's ${option} must be an array of tool names; it was given ${JSON.stringify(value) ?? String(value)}.`,
    );
  }
  return value as string[];
}

/**
 * Reads `config.toolDiscovery`, `catalog`, `loaded`, `preselected`, `preselect` and
 * `preselectRouting` at the start of a run. Eager (the default) gives `undefined` and the run
 * declares every tool, as it always did; a preselection there has nowhere to go and is refused
 * (`LoopOptionError`, `conflicting-options`), as is a name list that is not one. A tool declared
 * under a meta-tool's name (`load_tools`, and proxied `call_tool`; `load.tools` becomes one on the
 * wire) is refused (`LoopOptionError`, `tool-name-collision`). A malformed catalogue throws what
 * `createToolLoading` throws.
 */
export function startDiscovery(options: AgentLoopOptions, declared: DeclaredTools): Discovery | undefined {
  const { config } = options;
  const mode: ToolDiscovery = config.toolDiscovery ?? "eager";
  const loaded = nameList(options.loaded, "loaded");
  const preselected = nameList(options.preselected, "preselected");
  const asked = options.preselect ?? config.preselect;
  if (mode === "eager") {
    if (preselected.length > 0 || asked === true) {
      throw new LoopOptionError(
        "conflicting-options",
        preselected.length > 0 ? "preselected" : "preselect",
        'A preselection needs config.toolDiscovery "ondemand" or "proxy": an eager run declares every tool ' +
          "on every step, so a shortlist has nowhere to go.",
      );
    }
    return undefined;
  }
  if (asked === true && preselected.length === 0) {
    // The task that will make the preselection, checked now: a run it cannot make starts nothing.
    const tasks = config.tasks as Readonly<Record<string, TaskSettings | undefined>> | undefined;
    toolSelectCall(tasks?.toolSelect, {}, config);
  }
  const routing = options.preselectRouting ?? config.preselectRouting ?? "exclusive";
  const loading = openLoading(mode, declared, options.catalog, config.toolOrder, routing);
  return {
    loading,
    routing,
    loaded: loaded.map((name) => wireName(declared, name)),
    preselected: preselected.map((name) => wireName(declared, name)),
    counts: NO_COUNTS(),
    unknownSeen: new Set(),
  };
}

/**
 * The per-step builders of a loading mode over `declared` (the run's tools as the wire names
 * them) and the host's `catalog` (its names made the wire's; absent or `null`, one server `tools`
 * holding every tool), checked here rather than on the first step. Throws `LoopOptionError`
 * (`tool-name-collision`) for a tool declared under the name of a meta-tool the mode declares
 * (`load_tools`; proxied, `call_tool` too), and what `createToolLoading` throws.
 */
function openLoading(
  mode: Exclude<ToolDiscovery, "eager">,
  declared: DeclaredTools,
  given: readonly CatalogServer[] | null | undefined,
  toolOrder: LoopRun["config"]["toolOrder"],
  routing: PreselectRouting,
): ToolLoading {
  const catalog = given?.map(
    (server): CatalogServer => ({
      ...server,
      tools: Array.isArray(server?.tools)
        ? server.tools.map((tool) => ({ ...tool, name: wireName(declared, tool?.name) }))
        : server?.tools,
    }),
  );
  // A catalogued host tool under a meta-tool's wire name would shadow it (or be shadowed): a call
  // could not be told apart, so it is refused as two tools of one wire name are. One the catalogue
  // leaves out is never declared, loaded or run in these modes: nothing to confuse.
  const meta = mode === "proxy" ? META_NAMES : [LOAD_TOOLS_NAME];
  const listed = (name: string) =>
    catalog === undefined ||
    catalog.some(
      (server) => Array.isArray(server?.tools) && server.tools.some((tool) => tool?.name === name),
    );
  for (const tool of declared.tools) {
    const name = tool.type === "function" ? tool.function.name : undefined;
    if (name === undefined || !meta.includes(name) || !listed(name)) continue;
    const host = hostName(declared, name);
    throw new LoopOptionError(
      "tool-name-collision",
      `${host}, ${name}`,
      `The tool "${host}" is catalogued as "${name}", the name of the meta-tool ${MODE_RUN[mode]} run ` +
        "declares itself, so a call to one could not be told from a call to the other. Rename the tool, " +
        "or leave it out of the catalogue.",
    );
  }
  const loading = createToolLoading({
    mode,
    tools: declared.tools.filter((tool) => tool.type === "function"),
    ...(catalog ? { catalog } : {}),
    order: (toolOrder ?? true) as ToolOrder<FunctionToolLike>,
    // A number JS cannot hold in a call_tool's arguments text is held for the inner tool's schema;
    // a number token where that tool takes only a string (`+5`, `02134`) is read as its text.
    parse: (text, read) => readHolding(text, read).value,
  });
  // Checked here, once, rather than on the first step.
  loading.request({ step: 0, loaded: [], routing });
  return loading;
}

/**
 * A step's plan gave the run new tools, a new catalogue, or both (`undefined`: as it was; a `null`
 * catalogue: none): from this step on the request declares them — sanitized, renamed and ordered
 * as the `tools` option is — and dispatch, dedupe and routing read them. In a loading mode the
 * catalogue (and its text on the system prompt) is built again, and what is loaded keeps the names
 * still in it. Everything is checked before anything of the run changes: two tools whose names
 * become one on the wire (or one name given twice) are refused as `LoopOptionError`
 * (`tool-name-collision`, option the two names), as when the run starts; tools and catalogue a
 * loading mode refuses as `LoopOptionError` (`invalid-option`, option `beforeStep`), naming what was wrong.
 */
export function planTools(
  run: LoopRun,
  tools: readonly ToolDefinition[] | undefined,
  catalog: readonly CatalogServer[] | null | undefined,
): void {
  const hostTools = tools ?? run.hostTools;
  const nextCatalog = catalog === undefined ? run.catalog : catalog;
  let declared: DeclaredTools;
  let loading: ToolLoading | undefined;
  const discovery = run.discovery;
  try {
    declared = declareTools(hostTools);
    if (discovery) {
      const mode = discovery.loading.mode as Exclude<ToolDiscovery, "eager">;
      loading = openLoading(mode, declared, nextCatalog, run.config.toolOrder, discovery.routing);
    }
  } catch (error) {
    const said = error instanceof Error ? error.message : String(error);
    // A collision keeps its code and names the two tools, as it does when the run starts.
    if (LoopOptionError.isInstance(error) && error.code === "tool-name-collision") {
      throw new LoopOptionError(
        error.code,
        error.option,
        `The tools planned for this step cannot be declared: ${said}`,
      );
    }
    throw new LoopOptionError(
      "invalid-option",
      "beforeStep",
      `beforeStep planned ${tools !== undefined ? "tools" : "a catalog"} the run cannot declare: ${said}`,
    );
  }
  if (discovery && loading) {
    // The wire's names under the old tools, as the new ones spell them; kept where still catalogued.
    const moved = (names: readonly string[]) => {
      const listed = new Set(loading.catalog.flatMap((server) => server.tools.map((tool) => tool.name)));
      return names
        .map((name) => wireName(declared, hostName(run.names, name)))
        .filter((name) => listed.has(name));
    };
    discovery.loading = loading;
    discovery.loaded = moved(discovery.loaded);
    discovery.preselected = moved(discovery.preselected);
  }
  run.hostTools = hostTools;
  run.catalog = nextCatalog;
  run.tools = declared.tools;
  run.names = declared;
  tellToolNotices(run, declared);
}

/**
 * What `planTools` and `stepChoice` change of the run (its tools, names and catalogue; what is
 * loading, loaded, preselected and counted), kept now: the function it answers puts it all back,
 * for a step's plan refused after part of it was applied.
 */
export function keepToolState(run: LoopRun): () => void {
  const { hostTools, catalog, tools, names, discovery } = run;
  const kept = discovery && {
    loading: discovery.loading,
    loaded: discovery.loaded,
    preselected: discovery.preselected,
    toolsLoaded: discovery.counts.toolsLoaded,
  };
  return () => {
    run.hostTools = hostTools;
    run.catalog = catalog;
    run.tools = tools;
    run.names = names;
    if (!discovery || !kept) return;
    discovery.loading = kept.loading;
    discovery.loaded = kept.loaded;
    discovery.preselected = kept.preselected;
    discovery.counts.toolsLoaded = kept.toolsLoaded;
  };
}

/** The question the run answers: the text of the last user message. */
function question(messages: readonly ChatMessage[]): string {
  const last = messages.findLast((message) => message.role === "user");
  const content = last?.content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part) => (part?.type === "text" && typeof part.text === "string" ? part.text : ""))
    .filter((text) => text !== "")
    .join("\n");
}

/**
 * `taskCall` for `tasks.toolSelect`; a task it cannot read (an endpoint that is not `{ baseUrl }`)
 * refused as the option at fault, before anything is sent, never routed to the agent's endpoint.
 */
function toolSelectCall(...args: Parameters<typeof taskCall>): ReturnType<typeof taskCall> {
  try {
    return taskCall(...args);
  } catch (error) {
    if (SideTaskError.isInstance(error) && error.code === "invalid-input") {
      throw new LoopOptionError(
        "invalid-option",
        "config.tasks.toolSelect",
        `config.preselect: ${error.message}`,
      );
    }
    throw error;
  }
}

/** `preselect: true`: the side task (`tasks.toolSelect`, else `toolSelectModel` on the agent's endpoint). */
async function selectTools(run: LoopRun, discovery: Discovery): Promise<string[]> {
  const { config, options, services } = run;
  const tasks = config.tasks as Readonly<Record<string, TaskSettings | undefined>> | undefined;
  const call = toolSelectCall(
    tasks?.toolSelect,
    {
      ...(config.toolSelectModel !== undefined ? { model: config.toolSelectModel } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      // What the side task says of a stop would have the run start without a preselection: it does not start.
      onNotice: (text) => {
        if (!options.signal?.aborted) notice(run, text);
      },
      capabilities: services.capabilities,
      clients: services.clients,
      // The preselection's cost, kept apart from the turns' usage (result.sideUsage, usage events).
      onUsage: (report) => addSideUsage(run, "preselect", report.usage),
    },
    config,
  );
  return preselect(call.endpoint, call.model, discovery.loading.catalog, question(run.messages), {
    ...call.options,
    ...(config.preselectKeywords ? { keywords: true } : {}),
  });
}

/**
 * Phase, before the first step: the run's tools opened — a preselection made where the run asks
 * for one and the host gave none (with a notice naming it), carried and preselected tools loaded,
 * and, proxied, the preselection written after the question as a `load_tools` exchange the model
 * did not make (told to watchers, `onMessage` and `toolCalls` like any call). Throws what
 * `onMessage` throws.
 */
export async function openDiscovery(run: LoopRun): Promise<void> {
  const discovery = run.discovery;
  if (!discovery) return;
  const { loading } = discovery;
  const picked =
    discovery.preselected.length === 0 && (run.options.preselect ?? run.config.preselect) === true;
  const chosen = picked ? await selectTools(run, discovery) : discovery.preselected;
  throwIfStopped(run);
  const start = loading.start({ loaded: discovery.loaded, preselected: chosen });
  discovery.loaded = start.loaded;
  discovery.preselected = start.preselected;
  if (picked && start.preselected.length > 0) {
    notice(run, PRESELECTED_NOTICE + start.preselected.map((name) => hostName(run.names, name)).join(", "));
  }
  const exchange = loading.preselection(start.preselected, run.messages);
  const [call, answer] = exchange.messages as ChatMessage[];
  const first = call?.role === "assistant" ? call.tool_calls?.[0] : undefined;
  const wrote = first?.type === "function" ? first : undefined;
  if (!call || !answer || !wrote) return;
  discovery.counts.toolsLoaded += exchange.names.length;
  // The host's names, as `preselected` and every other callback give them; the text is the transcript's.
  const request: DispatchRequest = {
    id: wrote.id,
    name: wrote.function.name,
    args: { names: exchange.names.map((name) => hostName(run.names, name)) },
    raw: wrote.function.arguments,
  };
  emitEvent(run, { kind: "tool-call", id: request.id, name: request.name, args: preview(request.raw ?? "") });
  tell(run.options.onToolCall, { ...request, args: { names: [...(request.args.names as string[])] } });
  const content = typeof answer.content === "string" ? answer.content : "";
  const result: CallResult = { id: request.id, name: request.name, ok: true, content, source: "loop" };
  emitEvent(run, { kind: "tool-result", ...result, content: preview(content) });
  tell(run.options.onToolResult, { ...result }); // a copy: what the watcher does to it is its own
  run.toolCalls.push({ id: request.id, name: request.name, source: "loop", ok: true });
  try {
    await append(run, 0, call);
  } catch (error) {
    run.messages.push(answer); // the call is in: its answer goes with it
    throw error;
  }
  await append(run, 0, answer);
}

/** One step's tool array and system prompt: every tool in eager mode, else as the mode lays it out. */
export function stepTools(
  run: LoopRun,
  number: number,
): { tools: readonly ToolDefinition[]; system: string } {
  const discovery = run.discovery;
  if (!discovery) return { tools: run.tools, system: run.system };
  const request = discovery.loading.request({
    step: number - 1,
    loaded: discovery.loaded,
    preselected: discovery.preselected,
    routing: discovery.routing,
    ...(run.system ? { system: run.system } : {}),
  });
  return { tools: request.tools as ToolDefinition[], system: request.system ?? "" };
}

/**
 * A step's planned `tool_choice` as the wire spells it, checked against what the step declares: a
 * named tool under its wire name; on demand, a catalogued tool not loaded yet is loaded first (and
 * counted), so the step declares it; proxied, a catalogued tool is reached only through
 * `call_tool`, which is what is named. Throws `LoopOptionError` (`invalid-option`) for a name the
 * step cannot reach and for `"required"` on a step with no tools.
 */
export function stepChoice(
  run: LoopRun,
  number: number,
  choice: ToolChoice | undefined,
): ToolChoice | undefined {
  if (choice === undefined) return undefined;
  const declared = () => stepTools(run, number).tools.map((tool) => tool.function.name);
  const wire = typeof choice === "object" ? wireName(run.names, choice.function.name) : undefined;
  const discovery = run.discovery;
  // The names a choice may reach, as the message lists them: in a loading mode, the catalogued ones.
  const known = discovery
    ? discovery.loading.catalog.flatMap((server) =>
        server.tools.map((tool) => hostName(run.names, tool.name)),
      )
    : run.tools.map((tool) => hostName(run.names, tool.function.name));
  const listed = wire !== undefined && catalogued(run, wire);
  let names = declared();
  // A choice naming a meta-tool as it is named is the meta-tool's, whatever uncatalogued host tool
  // shares its wire name; one naming a host tool by its own (renamed) name is that tool's.
  const meta = typeof choice === "object" && choice.function.name === wire && META_NAMES.includes(wire);
  if (discovery && wire !== undefined && !listed && !meta && hostHas(run, wire, false)) {
    throw new LoopOptionError(
      "invalid-option",
      "beforeStep",
      `beforeStep planned a toolChoice that names the tool "${hostName(run.names, wire)}", which the catalogue ` +
        `does not list: ${MODE_RUN[discovery.loading.mode as keyof typeof MODE_RUN]} run never declares or runs a ` +
        `tool outside it. List the tool in the catalogue, or name a catalogued one (${known.join(", ") || "none"}).`,
    );
  }
  if (wire !== undefined && !names.includes(wire) && listed && discovery) {
    if (discovery.loading.mode === "proxy") {
      checkReachable(choice, CALL_TOOL_NAME, names, known);
      return { type: "function", function: { name: CALL_TOOL_NAME } };
    }
    // Checked before anything of the run changes: a refused choice loads nothing.
    const loaded = [...discovery.loaded, wire];
    names = discovery.loading
      .request({
        step: number - 1,
        loaded,
        preselected: discovery.preselected,
        routing: discovery.routing,
        ...(run.system ? { system: run.system } : {}),
      })
      .tools.map((tool) => tool.function.name);
    if (!names.includes(wire)) throw shortlistOnly(run, wire, names, "preselect it");
    discovery.loaded = loaded;
    discovery.counts.toolsLoaded++;
  }
  // On demand, the first step of an exclusive preselection declares its shortlist alone, without
  // `load_tools`: a choice naming it names a tool the run has, but not on that step.
  if (meta && wire === LOAD_TOOLS_NAME && !names.includes(wire) && discovery?.loading.mode === "ondemand") {
    throw shortlistOnly(run, wire, names, "name one of them");
  }
  checkReachable(choice, wire, names, known);
  return wire === undefined ? choice : { type: "function", function: { name: wire } };
}

/**
 * The refusal of a toolChoice naming `wire` on the first step of an exclusive preselection, which
 * declares `shortlist` alone; `remedy` says what to do on that step besides routing "append".
 */
function shortlistOnly(
  run: LoopRun,
  wire: string,
  shortlist: readonly string[],
  remedy: string,
): LoopOptionError {
  return new LoopOptionError(
    "invalid-option",
    "beforeStep",
    `beforeStep planned a toolChoice that names the tool "${hostName(run.names, wire)}", which the first step ` +
      "of an exclusive preselection does not declare: it declares the shortlist alone " +
      `(${shortlist.map((name) => hostName(run.names, name)).join(", ")}). On that step, ${remedy}, or use ` +
      'preselectRouting "append".',
  );
}

/** The tools recovered calls may name: every tool, and the step's meta-tools in a loading mode. */
export function recoverableTools(run: LoopRun): readonly ToolDefinition[] {
  if (!run.discovery) return run.tools;
  const meta = stepTools(run, 2).tools.filter((tool) => !run.tools.includes(tool));
  return [...run.tools, ...(meta as ToolDefinition[])];
}

/**
 * How `runCalls` routes a step's calls in a loading mode (`undefined` in eager mode): a
 * `load_tools` answered by the loop, never dispatched; a `call_tool` unwrapped to the tool it names
 * under the call's own id (unless, on demand, the host has a tool of that name); a catalogued tool
 * called unloaded loaded on the way; a name outside the catalogue refused with a result the model
 * reads. What is loaded and counted changes only as each call's turn comes (a stopped call loads
 * nothing). `number` is the step the calls were made on (1 for the run's first request), where known.
 */
export function callRouter(
  run: LoopRun,
  number?: number,
): ((request: DispatchRequest) => CallRouting | undefined) | undefined {
  const discovery = run.discovery;
  if (!discovery) return undefined;
  // The step the calls were made on (a refusal on the first step of an exclusive preselection names
  // the shortlist that step offered); unknown, as any step after the first.
  const step =
    number === undefined
      ? {}
      : { step: number - 1, preselected: discovery.preselected, routing: discovery.routing };
  const { counts } = discovery;
  let loaded = discovery.loaded;
  // Proxied, what is loaded is read off the transcript: this step's earlier loads are not in it
  // yet, so their answers are handed along, and a later load of the step sees what they delivered.
  const answered: ChatMessage[] = [];
  const unknown = (names: readonly string[]) => {
    const seen = discovery.unknownSeen;
    for (const name of names) {
      if (counts.unknownToolNames.length >= UNKNOWN_NAMES_KEPT) return;
      const kept = keptName(name);
      if (seen.has(kept)) continue;
      seen.add(kept);
      counts.unknownToolNames.push(kept);
    }
  };
  /** What the router reads of the step so far: what is loaded, and the transcript with this step's loads. */
  const state = () => ({
    loaded,
    messages: answered.length > 0 ? [...run.messages, ...answered] : run.messages,
    ...step,
  });
  // A call whose arguments cannot be read, to a name outside the catalogue: answered for the name
  // and counted, as the same call with readable arguments is, never told to write its arguments
  // again for a tool that does not exist. Asked of the router with no arguments and without the
  // step's plan of loads changing (a refusal changes nothing loaded).
  const byName = (request: DispatchRequest) => {
    const name = wireName(run.names, request.name);
    if (name === LOAD_TOOLS_NAME || name === CALL_TOOL_NAME) return undefined;
    const route = discovery.loading.route({ id: request.id, name, args: {} }, state());
    if (route.kind !== "refuse" || route.error.code !== "unknown-tool") return undefined;
    return { answer: { ok: false, content: route.content }, onRun: () => unknown(route.unknown) };
  };
  const router = holdingNumbers((request: DispatchRequest): CallRouting | undefined => {
    const name = wireName(run.names, request.name);
    // A load holding a number JS cannot hold loads nothing: runCalls refuses it as written.
    if (name === LOAD_TOOLS_NAME && holdsHeld(request.args)) return undefined;
    const route = discovery.loading.route(
      {
        id: request.id,
        name,
        args:
          name === CALL_TOOL_NAME && !hostHas(run, CALL_TOOL_NAME)
            ? innerWire(run, request.args)
            : name === LOAD_TOOLS_NAME
              ? loadWire(run, request.args)
              : request.args,
        ...(request.raw !== undefined ? { raw: request.raw } : {}),
      },
      state(),
    );
    // A call holding a number JS cannot hold changes nothing loaded or counted unless the tool it
    // reaches takes it: otherwise runCalls refuses it (as written, or as that tool refuses it).
    const heldInner = route.kind === "dispatch" && holdsHeld(route.args);
    // A name outside the catalogue is refused for its name, whatever number it holds: no tool takes
    // the number, and an answer about the number alone had the model write it again only to hear
    // then that the tool does not exist (and the name went uncounted).
    const outside = route.kind === "refuse" && route.error.code === "unknown-tool";
    if (!outside && (heldInner || holdsHeld(request.args))) {
      if (route.kind !== "dispatch" || (!route.proxied && route.name === name)) return undefined;
      const settled = settleHeld(innerCall(run, request.id, route), run.hostTools);
      if (hasOwnKey(settled, "refusal")) return { dispatch: innerCall(run, request.id, route) };
      // A number held outside what reaches the tool (beside call_tool's name and arguments): runCalls
      // refuses the call as written, so it loads nothing, and a later call of the step does not
      // carry its load.
      if (heldOutside(request.args, settled.values)) return undefined;
    }
    const after = route.loaded;
    loaded = after;
    if (route.kind === "load") {
      // The call beside its answer: the step's assistant message may not be in the transcript yet
      // (routing comes before it is appended), and only an answer to a load call the transcript
      // holds counts as holding definitions.
      answered.push(
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: request.id, type: "function", function: { name: LOAD_TOOLS_NAME, arguments: "{}" } },
          ],
        },
        { role: "tool", tool_call_id: request.id, content: route.content },
      );
      return {
        answer: { ok: true, content: route.content },
        onRun: () => {
          discovery.loaded = after;
          counts.toolsLoaded += route.fresh.length;
          counts.redundantLoads += route.repeated.length;
          unknown(route.resolution.unknown);
        },
      };
    }
    if (route.kind === "refuse") {
      return { answer: { ok: false, content: route.content }, onRun: () => unknown(route.unknown) };
    }
    const onRun = () => {
      discovery.loaded = after;
      if (route.loadedNow !== undefined) counts.toolsLoaded++;
    };
    // As the model called it, unless the route names another tool: call_tool unwrapped, or a
    // catalogued tool spelled another way (files.read_file, Read_File).
    if (!route.proxied && route.name === name) return { dispatch: request, onRun };
    const inner = innerCall(run, request.id, route);
    return { dispatch: inner, onRun };
  });
  return answeringNames(router, byName);
}

/**
 * Whether the host has a tool of this wire name that the catalogue lists (`listed`, the default),
 * or at all: only a listed one is reached in a loading mode (on demand, a host's catalogued
 * `call_tool` is run as its own tool).
 */
function hostHas(run: LoopRun, wire: string, listed = true): boolean {
  return (
    run.tools.some((tool) => tool.type === "function" && tool.function.name === wire) &&
    (!listed || catalogued(run, wire))
  );
}

/**
 * A `call_tool`'s arguments with the tool it names under the wire's name: the host's name of a
 * renamed, catalogued tool (`fs.read` for `fs_read`) is taken as a direct call to it is. Others as
 * they were.
 */
function innerWire(run: LoopRun, args: Record<string, unknown>): Record<string, unknown> {
  const key = ["name", "tool", "tool_name"].find((k) => args[k] !== undefined);
  const given = key === undefined ? undefined : args[key];
  if (key === undefined || typeof given !== "string") return args;
  const wire = run.names.toWire.get(given.trim());
  // An uncatalogued tool is refused under the name the model wrote, as a direct call is.
  return wire === undefined || !catalogued(run, wire) ? args : { ...args, [key]: wire };
}

/**
 * The host's names for the wire's, as the model's calls are renamed to them (`takeCalls`). In a
 * loading mode a meta-tool's name the loop answers itself stays the meta-tool's: a host tool the
 * catalogue leaves out whose name goes on the wire as `load_tools` or `call_tool` (`load.tools`,
 * another server's) is never reached, so the model's `load_tools` is never told, counted or kept
 * in the transcript as that tool (proxied, what is loaded is read off the calls named `load_tools`).
 */
export function callNames(run: LoopRun): ReadonlyMap<string, string> {
  const { toHost } = run.names;
  if (!run.discovery) return toHost;
  const meta = META_NAMES.filter((name) => toHost.has(name) && unreached(run, name));
  if (meta.length === 0) return toHost;
  const names = new Map(toHost);
  for (const name of meta) names.delete(name);
  return names;
}

/**
 * The host tools whose schemas read the step's calls (`runCalls`' `tools`): in a loading mode, not
 * one the catalogue leaves out whose name goes on the wire as a meta-tool's (`load_tools`,
 * `load.tools`), which is never reached: its schema would read the model's own `load_tools` or
 * `call_tool` as that tool's.
 */
export function callSchemas(run: LoopRun): readonly ToolDefinition[] {
  if (!run.discovery) return run.hostTools;
  const reads = (tool: ToolDefinition) =>
    tool.type !== "function" || !unreached(run, wireName(run.names, tool.function.name));
  return run.hostTools.every(reads) ? run.hostTools : run.hostTools.filter(reads);
}

/**
 * Whether a host tool going on the wire as `wire` is never reached in this loading run: `wire` is
 * a meta-tool's name the loop answers itself, and the catalogue does not list a tool of it.
 */
function unreached(run: LoopRun, wire: string): boolean {
  return run.discovery !== undefined && META_NAMES.includes(wire) && !catalogued(run, wire);
}

/** Whether the run's catalogue lists a tool of this wire name (only such a tool is reached). */
function catalogued(run: LoopRun, wire: string): boolean {
  return (
    run.discovery?.loading.catalog.some((server) => server.tools.some((tool) => tool.name === wire)) === true
  );
}

/**
 * A `load_tools`' arguments with each renamed tool's host name (`fs.read`) as the wire names it
 * (`fs_read`), as `call_tool` and a direct call take it: `{ names }` with the names read as
 * `loadNames` reads them with the run's catalogue, where one was a host's name. Others as they
 * were (names the load then reads itself, or refuses in words).
 */
function loadWire(run: LoopRun, args: Record<string, unknown>): Record<string, unknown> {
  if (run.names.toWire.size === 0) return args;
  let names: string[];
  try {
    // With the catalogue, as the load itself reads them: an entry that is a catalogued name whole
    // (a server `git hub`) stays one name, not split at its blank.
    names = loadNames(args, run.discovery?.loading.catalog);
  } catch {
    return args;
  }
  const wire = names.map((name) => {
    const renamed = run.names.toWire.get(name);
    return renamed !== undefined && catalogued(run, renamed) ? renamed : name;
  });
  return wire.some((name, i) => name !== names[i]) ? { names: wire } : args;
}

/** A name as `unknownToolNames` keeps it: up to `MAX_NAME_LENGTH` characters, `…` for the rest. */
function keptName(name: string): string {
  if (name.length <= MAX_NAME_LENGTH) return name;
  const cut = /[\uD800-\uDBFF]/.test(name.charAt(MAX_NAME_LENGTH - 1))
    ? MAX_NAME_LENGTH - 1
    : MAX_NAME_LENGTH;
  return `${name.slice(0, cut)}…`;
}

/**
 * The step's calls routed once: `first` routes each call (what `replayedCalls` reads, before
 * anything runs), and `again` hands `runCalls` the same decisions for the same calls, in the same
 * order, rather than routing them a second time (a load expanding its names against the catalogue
 * twice, a transcript read twice). A call handed on as another tool (`call_tool` unwrapped, another
 * spelling) keeps its decision too, but what it hands on is read again out of this reading of the
 * call's arguments (which the earlier reading's objects are not), by a router of its own: which
 * tool a call reaches, and with what, never depends on the calls before it. A call `again` was not
 * handed by `first` in that place, or one holding a number JS cannot hold, is routed afresh — and so
 * is every call after it — by a router that has seen the calls before it, as before. `number` is
 * the step's (1 for the run's first request). Both `undefined` in eager mode.
 */
export function routedOnce(
  run: LoopRun,
  number?: number,
): {
  first: ((request: DispatchRequest) => CallRouting | undefined) | undefined;
  again: ((request: DispatchRequest) => CallRouting | undefined) | undefined;
} {
  const route = callRouter(run, number);
  if (!route) return { first: undefined, again: undefined };
  const router = () => callRouter(run, number) as (request: DispatchRequest) => CallRouting | undefined;
  const keyOf = (request: DispatchRequest) => `${request.id}\u0000${request.name}\u0000${request.raw ?? ""}`;
  const log: { key: string; request: DispatchRequest; routing: CallRouting | undefined }[] = [];
  const first = holdingNumbers((request: DispatchRequest) => {
    const routing = route(request);
    log.push({ key: keyOf(request), request, routing });
    return routing;
  });
  const seen: DispatchRequest[] = [];
  let fresh: ((request: DispatchRequest) => CallRouting | undefined) | undefined;
  const afresh = (request: DispatchRequest) => {
    if (fresh === undefined) {
      fresh = router();
      for (const earlier of seen.slice(0, -1)) fresh(earlier);
    }
    return fresh(request);
  };
  const again = holdingNumbers((request: DispatchRequest) => {
    const entry = fresh ? undefined : log[seen.length];
    seen.push(request);
    // Replayed: an answer (a load, a refusal: what routing spends its time on), a call run as
    // written, and a call handed on as another. One holding a number JS cannot hold is routed
    // afresh: what it hands on is settled out of this reading of its arguments.
    if (entry === undefined || entry.key !== keyOf(request) || holdsHeld(request.args))
      return afresh(request);
    const { routing } = entry;
    if (!routing || !hasOwnKey(routing, "dispatch")) return routing;
    // The decision to run the call as written names the request it was handed: this one, now.
    if (routing.dispatch === entry.request) return { ...routing, dispatch: request };
    // Handed on as another tool: that tool and its arguments read out of this request, by a
    // router of its own (the calls before it change nothing of it); what running it loads and
    // counts (onRun) is the first routing's, made after the calls before it.
    const handed = router()(request);
    if (!handed || !hasOwnKey(handed, "dispatch") || handed.dispatch.name !== routing.dispatch.name) {
      return afresh(request);
    }
    return { ...routing, dispatch: handed.dispatch };
  });
  return { first: sameNameAnswers(first, route), again: sameNameAnswers(again, route) };
}

/** The call a route hands on (a call_tool's inner tool, another spelling's tool) under the call's id. */
function innerCall(
  run: LoopRun,
  id: string,
  route: { name: string; args: Record<string, unknown>; raw?: string | undefined },
): DispatchRequest {
  // Arguments given as an object are written back as text with the model's digits.
  const written = holdsHeld(route.args) ? JSON.stringify(route.args) : undefined;
  return {
    id,
    name: hostName(run.names, route.name),
    args: route.args,
    raw: route.raw === undefined || route.raw === written ? exactArgumentsText(route.args) : route.raw,
  };
}

/**
 * The call as watchers are told of it where it never runs (the step limit): a `call_tool` as the
 * tool it names, under its own id, as when it runs. Loads nothing and counts nothing.
 */
export function watchedCall(run: LoopRun): (request: DispatchRequest) => DispatchRequest {
  const route = callRouter(run);
  return (request) => {
    const decision = route?.(request);
    if (!decision || !hasOwnKey(decision, "dispatch")) return request;
    // Numbers held in the inner arguments are settled by the inner tool's schema, as when it runs.
    const settled = settleHeld(decision.dispatch, run.hostTools);
    return hasOwnKey(settled, "refusal") ? request : { ...settled.request, id: request.id };
  };
}

/** What the result and a failed run carry: loaded and preselected, under the host's names. */
export function discoveryState(run: Pick<LoopRun, "names"> & { discovery?: Discovery | undefined }): {
  loaded: string[];
  preselected: string[];
} {
  const discovery = run.discovery;
  if (!discovery) return { loaded: [], preselected: [] };
  return {
    loaded: discovery.loading.mode === "ondemand" ? discovery.loaded.map((n) => hostName(run.names, n)) : [],
    preselected: discovery.preselected.map((n) => hostName(run.names, n)),
  };
}

/** The load counts for `metrics`: zero in eager mode. */
export function loadMetrics(run: { discovery?: Discovery | undefined }): ToolLoadMetrics {
  const counts = run.discovery?.counts ?? NO_COUNTS();
  return { ...counts, unknownToolNames: [...counts.unknownToolNames] };
}
