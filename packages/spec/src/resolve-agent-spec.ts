import { asSpec } from "./as-spec.js";
import { AgentSpecError } from "./errors.js";
import { cloneJson, setOwn } from "./json.js";
import type {
  AgentSpec,
  BundledServer,
  HookSpec,
  PromptEntry,
  ResolvedAgentConfig,
  ResolvedHook,
  ResolvedTask,
  TaskSpec,
} from "./types.js";

/** `maxToolIterations` when no layer states one: the loop needs a number, and this is the format's. */
export const DEFAULT_MAX_TOOL_ITERATIONS = 50;

/** Entries merged by key across layers: a new key appends, a known key is replaced in place. */
class Keyed<T> {
  readonly items: T[] = [];
  /** Where each key sits in `items`, so a merge is linear in the entries however many there are. */
  private readonly at = new Map<string, number>();

  constructor(private readonly key: (entry: T) => string) {}

  merge(entries: readonly T[] | undefined): void {
    for (const entry of entries ?? []) {
      const key = this.key(entry);
      const at = this.at.get(key);
      if (at === undefined) {
        this.at.set(key, this.items.length);
        this.items.push(entry);
      } else {
        this.items[at] = entry;
      }
    }
  }
}

/** Copies a JSON object (extraBody) so the config shares nothing with the layers. */
const copyBody = (body: Record<string, unknown>) => cloneJson(body) as Record<string, unknown>;

function resolveTask(task: TaskSpec): ResolvedTask {
  const out: ResolvedTask = {};
  if (task.model !== undefined) out.model = task.model;
  if (task.endpoint !== undefined) out.endpoint = { ...task.endpoint, apiKey: "" };
  if (task.maxTokens !== undefined) out.maxTokens = task.maxTokens;
  if (task.temperature !== undefined) out.temperature = task.temperature;
  if (task.reasoningEffort !== undefined) out.reasoningEffort = task.reasoningEffort;
  if (task.extraBody !== undefined) out.extraBody = copyBody(task.extraBody);
  return out;
}

/**
 * Lays agent specs over each other, weakest first, into the flat config the loop takes.
 *
 * Absent inherits and nothing else does: a field a stronger layer states wins, whatever its value.
 * `tools.servers` and `extraBody` are replaced whole, never unioned; `prompt`, `hooks` and
 * `bundle.mcpServers` merge by id (name), a known id replaced in place; `tasks` merge by key and a
 * task holds only what the layer naming it stated. Hooks and servers with `enabled: false` are
 * left out. `apiKey` is always `""`: a host that wants a key applies its own rule afterwards.
 * Throws `AgentSpecError` when `layers` is not a list or a layer would not pass `parseSpec` as it is.
 */
export function resolveAgentSpec(layers: readonly AgentSpec[]): ResolvedAgentConfig {
  if (!Array.isArray(layers)) {
    throw new AgentSpecError(
      "not-a-list",
      "resolveAgentSpec: layers must be a list of parsed specs, weakest first, e.g. resolveAgentSpec([hostSpec, spec]).",
    );
  }
  // Array.from visits a hole too (map skips it), so a sparse list is refused at the hole.
  const specs = Array.from(layers, (layer, index) => asSpec(layer, "resolveAgentSpec", `layer ${index}`));
  const config: ResolvedAgentConfig = {
    baseUrl: "",
    apiKey: "",
    model: "",
    maxToolIterations: DEFAULT_MAX_TOOL_ITERATIONS,
    prompt: [],
    hooks: [],
    tasks: {},
  };
  const prompt = new Keyed<PromptEntry>((entry) => entry.id);
  const hooks = new Keyed<HookSpec>((hook) => hook.id);
  const servers = new Keyed<BundledServer>((server) => server.name);
  let bundled = false;
  for (const spec of specs) {
    if (spec.name !== undefined) config.name = spec.name;
    if (spec.description !== undefined) config.description = spec.description;
    const model = spec.model ?? {};
    if (model.name !== undefined) config.model = model.name;
    const endpoint = model.endpoint ?? {};
    if (endpoint.baseUrl !== undefined) config.baseUrl = endpoint.baseUrl;
    if (endpoint.requestTimeoutSeconds !== undefined)
      config.requestTimeoutSeconds = endpoint.requestTimeoutSeconds;
    if (endpoint.firstTokenSeconds !== undefined) config.firstTokenSeconds = endpoint.firstTokenSeconds;
    if (model.temperature !== undefined) config.temperature = model.temperature;
    if (model.maxTokens !== undefined) config.maxTokens = model.maxTokens;
    if (model.reasoningEffort !== undefined) config.reasoningEffort = model.reasoningEffort;
    if (model.extraBody !== undefined) config.extraBody = copyBody(model.extraBody);
    if (model.contextLength !== undefined) config.contextLength = model.contextLength;

    const limits = spec.limits ?? {};
    if (limits.maxToolIterations !== undefined) config.maxToolIterations = limits.maxToolIterations;
    if (limits.maxRetries !== undefined) config.maxRetries = limits.maxRetries;
    if (limits.maxContinuations !== undefined) config.maxContinuations = limits.maxContinuations;
    if (limits.loadingTimeoutSeconds !== undefined)
      config.loadingTimeoutSeconds = limits.loadingTimeoutSeconds;
    if (limits.compact !== undefined) config.compact = limits.compact;

    const tools = spec.tools ?? {};
    if (tools.servers !== undefined) config.servers = [...tools.servers];
    if (tools.discovery !== undefined) config.toolDiscovery = tools.discovery;
    if (tools.preselect?.enabled !== undefined) config.preselect = tools.preselect.enabled;
    if (tools.preselect?.keywords !== undefined) config.preselectKeywords = tools.preselect.keywords;
    if (tools.preselect?.routing !== undefined) config.preselectRouting = tools.preselect.routing;
    if (tools.parallel !== undefined) config.parallel = tools.parallel;
    if (tools.dedupe !== undefined) config.dedupeToolCalls = tools.dedupe;
    if (tools.recover !== undefined) config.recoverToolCalls = tools.recover;
    if (tools.order !== undefined) config.toolOrder = tools.order === "name";

    prompt.merge(spec.prompt);
    hooks.merge(spec.hooks);
    for (const [key, task] of Object.entries(spec.tasks ?? {})) setOwn(config.tasks, key, resolveTask(task));
    if (spec.bundle?.mcpServers !== undefined) {
      bundled = true;
      servers.merge(spec.bundle.mcpServers);
    }
  }
  config.prompt = prompt.items.map((entry) => ({ ...entry }));
  config.hooks = hooks.items
    // A hook that is not switched off has its events (parseSpec drops one without).
    .filter((hook): hook is ResolvedHook => hook.enabled !== false && hook.events !== undefined)
    .map((hook) => ({ ...hook, events: [...hook.events] }));
  if (bundled) {
    config.mcpServers = servers.items
      .filter((server) => server.enabled !== false)
      .map((server) => cloneJson(server) as BundledServer);
  }
  return config;
}
