// The shapes of a parsed agent document and of the flat config it resolves to. Written out by
// hand so they read as contracts; `schema.test.ts` proves they agree with the zod schema.

/** A reasoning level a document may ask for; `"off"` asks for none, as an absent one does. */
export type ReasoningEffort = "off" | "none" | "minimal" | "low" | "medium" | "high" | "xhigh" | "max";

/** How a run reaches its tools: all declared up front, loaded on request, or behind a fixed proxy pair. */
export type ToolDiscovery = "eager" | "ondemand" | "proxy";

/** A point in a session where a host runs hooks. */
export type HookEvent =
  | "sessionStart"
  | "beforeTurn"
  | "afterTurn"
  | "beforeCompact"
  | "sessionEnd"
  | "sessionDelete";

/** Where a model is served: a base URL and how long to wait for it, never a key. */
export interface EndpointSpec {
  /** Absolute `http(s)` URL of an OpenAI-compatible API, e.g. `http://127.0.0.1:8080/v1`. */
  baseUrl?: string | undefined;
  /** How long to wait for the model to speak; `0` waits for ever. */
  requestTimeoutSeconds?: number | undefined;
  /** How long the first chunk (prefill) may take. */
  firstTokenSeconds?: number | undefined;
}

/** A side task's own endpoint: the same fields, with the base URL required. */
export interface TaskEndpointSpec extends EndpointSpec {
  baseUrl: string;
}

/** The main model: its name, endpoint and sampling settings. */
export interface ModelSpec {
  /** The name the endpoint knows the model by. `""` is a name of nothing, not "inherit". */
  name?: string | undefined;
  endpoint?: EndpointSpec | undefined;
  /** 0 to 2. */
  temperature?: number | undefined;
  /** Reply ceiling in tokens; `0` sends no ceiling. */
  maxTokens?: number | undefined;
  reasoningEffort?: ReasoningEffort | undefined;
  /** Fields merged into the request body last (sampler settings a model card asks for). Replaced whole by a stronger layer. */
  extraBody?: Record<string, unknown> | undefined;
  /** The served context window in tokens; `0` says it is not known. */
  contextLength?: number | undefined;
}

/** One part of the system prompt, merged across layers by `id`. */
export interface PromptEntry {
  id: string;
  text: string;
}

/** How the run's tools are chosen before it starts. */
export interface PreselectSpec {
  /** Have the loop shortlist tools before the first turn (with `tasks.toolSelect`). */
  enabled?: boolean | undefined;
  /** Try keyword matching first and spend the model only on what the words cannot settle. */
  keywords?: boolean | undefined;
  /** `exclusive`: the first step sees only the shortlist; `append`: the shortlist is loaded beside the catalogue. */
  routing?: "exclusive" | "append" | undefined;
}

/** Which tools the agent reaches and how. */
export interface ToolsSpec {
  /** Absent: every server the host offers. `[]`: none. A list: exactly those. */
  servers?: string[] | undefined;
  discovery?: ToolDiscovery | undefined;
  preselect?: PreselectSpec | undefined;
  /** Run a step's tool calls together rather than one after another. */
  parallel?: boolean | undefined;
  /** Answer an identical repeat call within a step from the first one. */
  dedupe?: boolean | undefined;
  /** Recover tool calls a server left written out as text. */
  recover?: boolean | undefined;
  /** `name`: declare tools in name order (cache-stable); `given`: in the host's order. */
  order?: "name" | "given" | undefined;
}

/** A hook the host runs at some points of a session, merged across layers by `id`. */
export interface HookSpec {
  id: string;
  /**
   * When it runs; `[]` is never. Required, except in an entry that only switches off a weaker
   * layer's hook (`{ "id": "audit", "enabled": false }`).
   */
  events?: HookEvent[] | undefined;
  /** The MCP server that runs it, where a server does. */
  server?: string | undefined;
  /** The tool on that server. */
  tool?: string | undefined;
  /** Its share of the hook context budget, in tokens. */
  maxTokens?: number | undefined;
  timeoutSeconds?: number | undefined;
  /** `false` switches off a hook a weaker layer declared; `{ id, enabled: false }` is enough. */
  enabled?: boolean | undefined;
}

/** A hook of the resolved config: an enabled one, so its `events` are always there. */
export interface ResolvedHook extends HookSpec {
  events: HookEvent[];
}

/** A side task's own model settings; anything absent is the side task's default, never the agent's. */
export interface TaskSpec {
  /** The model the task runs on; not empty and not only blanks (absent: the side task's default). */
  model?: string | undefined;
  endpoint?: TaskEndpointSpec | undefined;
  maxTokens?: number | undefined;
  temperature?: number | undefined;
  reasoningEffort?: ReasoningEffort | undefined;
  extraBody?: Record<string, unknown> | undefined;
}

/** Bounds on a run. */
export interface LimitsSpec {
  /** Tool-calling steps a run may take. */
  maxToolIterations?: number | undefined;
  /** Re-sends of a request that failed transiently. */
  maxRetries?: number | undefined;
  /** Continuations of an answer cut off at the reply ceiling. */
  maxContinuations?: number | undefined;
  /** How long to wait for a server still loading the model; `0` does not wait. */
  loadingTimeoutSeconds?: number | undefined;
  /** Fold the transcript when the window fills (the summary is written by `tasks.compaction`). */
  compact?: boolean | undefined;
}

/** An MCP server shipped inside the document: a command line or a URL. */
export interface BundledServer {
  /** The name `tools.servers` and hooks refer to it by. */
  name: string;
  type?: "stdio" | "http" | "sse" | undefined;
  command?: string | undefined;
  args?: string[] | undefined;
  /** Environment for the command: where credentials go, and what `exportSpec` removes. */
  env?: Record<string, string> | undefined;
  cwd?: string | undefined;
  url?: string | undefined;
  /** Request headers: where credentials go, and what `exportSpec` removes. */
  headers?: Record<string, string> | undefined;
  /**
   * `false` switches off a server a weaker layer bundled; `{ name, enabled: false }` is enough
   * (neither `command` nor `url`).
   */
  enabled?: boolean | undefined;
}

/** What a document carries besides the agent itself. */
export interface BundleSpec {
  mcpServers?: BundledServer[] | undefined;
}

/** A parsed agent document: only fields that passed, no `null` anywhere. */
export interface AgentSpec {
  /** Editor hint; kept, never read. */
  $schema?: string | undefined;
  /** The format and its version, e.g. `"loopwright.agent/1"`. */
  spec: string;
  /** Features a host must understand to run this agent as meant. */
  requires?: string[] | undefined;
  name?: string | undefined;
  description?: string | undefined;
  model?: ModelSpec | undefined;
  prompt?: PromptEntry[] | undefined;
  tools?: ToolsSpec | undefined;
  hooks?: HookSpec[] | undefined;
  tasks?: Record<string, TaskSpec> | undefined;
  limits?: LimitsSpec | undefined;
  bundle?: BundleSpec | undefined;
}

/** A resolved endpoint for a side task: structurally the loop's `Endpoint`, with no key. */
export interface ResolvedTaskEndpoint {
  baseUrl: string;
  /** Always `""`: a document never carries a key. */
  apiKey: string;
  requestTimeoutSeconds?: number | undefined;
  firstTokenSeconds?: number | undefined;
}

/** A side task as the strongest layer naming it stated it, and nothing more. */
export interface ResolvedTask {
  model?: string;
  endpoint?: ResolvedTaskEndpoint;
  maxTokens?: number;
  temperature?: number;
  reasoningEffort?: ReasoningEffort;
  extraBody?: Record<string, unknown>;
}

/** The flat config the loop takes, resolved from layers; structurally `Endpoint & ModelParams & …`. */
export interface ResolvedAgentConfig {
  name?: string;
  description?: string;
  /** `""` when no layer named one. */
  baseUrl: string;
  /** Always `""`; a host that wants a key applies its own rule (`resolveApiKey`) afterwards. */
  apiKey: string;
  /** `""` when no layer named one. */
  model: string;
  requestTimeoutSeconds?: number;
  firstTokenSeconds?: number;
  temperature?: number;
  maxTokens?: number;
  reasoningEffort?: ReasoningEffort;
  extraBody?: Record<string, unknown>;
  contextLength?: number;
  /** The format default (`DEFAULT_MAX_TOOL_ITERATIONS`) when no layer stated one. */
  maxToolIterations: number;
  maxRetries?: number;
  maxContinuations?: number;
  loadingTimeoutSeconds?: number;
  compact?: boolean;
  /** Absent: every server the host offers. `[]`: none. A list: exactly those. */
  servers?: string[];
  toolDiscovery?: ToolDiscovery;
  preselect?: boolean;
  preselectKeywords?: boolean;
  preselectRouting?: "exclusive" | "append";
  parallel?: boolean;
  dedupeToolCalls?: boolean;
  recoverToolCalls?: boolean;
  /** `true`: name order; `false`: the host's order. */
  toolOrder?: boolean;
  /** System prompt parts in order; join them to get the system prompt. */
  prompt: PromptEntry[];
  /** Enabled hooks in order. */
  hooks: ResolvedHook[];
  tasks: Record<string, ResolvedTask>;
  /** Enabled bundled servers, present only when a layer bundled any. */
  mcpServers?: BundledServer[];
}
