import { z } from "zod";

/** The spec token this version writes: the format's name and its major version. */
export const SPEC_TOKEN = "loopwright.agent/1";

/** Matches a spec token of any version, capturing the major. */
export const SPEC_TOKEN_PATTERN = /^loopwright\.agent\/(0|[1-9]\d*)(?:\.(\d+))?$/;

/** The major version of the format this package reads. */
export const SPEC_MAJOR = 1;

/** The `$id` of the published JSON Schema: the file this package ships, where a CDN serves it. */
export const AGENT_SPEC_SCHEMA_ID = "https://unpkg.com/@loopwright/spec/schema/agent.schema.json";

/**
 * The `requires` entries this package understands, each a promise a host makes by accepting the document.
 *
 * - `bundle`: the bundled MCP servers are installed (a call without `{ bundle: true }` refuses it).
 * - `hooks`: the hooks are run.
 * - `tasks`: the side tasks run with the settings given.
 * - `tools.discovery`: the discovery mode is honoured.
 * - `tools.preselect`: tools are preselected as configured.
 * - `limits.compact`: the transcript is compacted when the window fills.
 */
export const SPEC_FEATURES: readonly string[] = Object.freeze([
  "bundle",
  "hooks",
  "tasks",
  "tools.discovery",
  "tools.preselect",
  "limits.compact",
]);

/**
 * Request-body fields the loop owns, which `extraBody` may not set: the keys of
 * `@loopwright/negotiate`'s `OWNED_BODY_FIELDS`, which builds the body (this package depends on no
 * other of the project's, so it keeps the list itself; a test in `@loopwright/loop` holds the two
 * together). `stream_options` is not one: a model's `extraBody` may set it (vLLM's
 * `{ include_usage: true, continuous_usage_stats: true }` puts usage on every chunk), replacing
 * the loop's own `{ include_usage: true }`; it is left out once the endpoint refused it.
 */
export const RESERVED_BODY_FIELDS: readonly string[] = Object.freeze([
  "model",
  "messages",
  "stream",
  "tools",
]);

// Every optional field also takes null, which reads as absent: a nullable column round-trips
// through JSON that way, and the schema should not flag a document the parser accepts. So does
// an entry's value in a map (tasks, env, headers): the parser reads it as an absent entry.
const opt = <T extends z.ZodType>(schema: T) => schema.nullable().optional();

/** Any JSON value, kept as written (a value inside `extraBody`). */
export const FREE_JSON = z.unknown().describe("Any JSON value, sent as written.");

const seconds = z
  .number()
  .min(0)
  .max(86_400 * 365);
const count = z.int().min(0);
// The host and what follows it share no character (the rest starts at a `/`, `?` or `#`), so a
// long string that fails is read once, not retried at every split point between the two.
const urlShape = /^https?:\/\/[^\s/?#]+(?:[/?#]\S*)?$/;
/** Whether the URL parser (the client's, fetch's, tools-mcp's) reads `text`: a port over 65535 or a `^` in a host it does not. */
function parses(text: string): boolean {
  try {
    new URL(text);
    return true;
  } catch {
    return false;
  }
}
// The JSON Schema carries the shape; parseSpec also asks the URL parser, which no pattern can say,
// of a URL holding no `${NAME}` reference: one that does is filled in by a host before it is read
// (tools-mcp's mcpServers(…, { env }) fills a bundled server's; `http://${HOST}:${PORT}/v1`).
const httpUrl = z
  .string()
  .regex(urlShape, "expected an absolute http(s) URL")
  .refine((text) => text.includes("${") || parses(text), "expected an absolute http(s) URL")
  .describe("An absolute http(s) URL.");
// Not only blanks: a host connecting the server refuses a blank name or command (tools-mcp does).
const notBlank = /\S/;
const id = z.string().min(1).max(200);
const effort = z
  .enum(["off", "none", "minimal", "low", "medium", "high", "xhigh", "max"])
  .describe('Reasoning level; "off" asks for none.');
const temperature = z.number().min(0).max(2);
const extraBody = z
  .record(
    z
      .string()
      .regex(
        new RegExp(`^(?!(?:${RESERVED_BODY_FIELDS.join("|")})$)`),
        "the loop owns this request field; extraBody may not set it",
      )
      // JSON.parse makes it an own key, but no request body can carry it as a field (set on the
      // body it is the body's prototype), so the loop's buildBody refuses a config holding one.
      .regex(/^(?!__proto__$)/, "a request body cannot carry a __proto__ field"),
    FREE_JSON,
  )
  .describe("Fields merged into the request body last. Replaced whole by a stronger layer.");

const endpointFields = {
  requestTimeoutSeconds: opt(seconds.describe("How long to wait for the model to speak; 0 waits for ever.")),
  firstTokenSeconds: opt(seconds.describe("How long the first chunk (prefill) may take.")),
};

const endpoint = z
  .strictObject({ baseUrl: opt(httpUrl), ...endpointFields })
  .describe("Where the model is served. Never a key: credentials are the host's.");

const taskEndpoint = z
  .strictObject({ baseUrl: httpUrl, ...endpointFields })
  .describe("A side task's own endpoint. Never a key.");

const model = z
  .strictObject({
    name: opt(z.string().describe("The model name the endpoint knows.")),
    endpoint: opt(endpoint),
    temperature: opt(temperature),
    maxTokens: opt(count.describe("Reply ceiling in tokens; 0 sends no ceiling.")),
    reasoningEffort: opt(effort),
    extraBody: opt(extraBody),
    contextLength: opt(count.describe("The served context window in tokens; 0 says it is not known.")),
  })
  .describe("The main model.");

const promptEntry = z
  .strictObject({ id, text: z.string() })
  .describe(
    "A part of the system prompt. Layers merge entries by id: a new id is appended, a known one replaced.",
  );

const tools = z
  .strictObject({
    servers: opt(
      z
        .array(z.string().min(1))
        .describe("Absent: every server the host offers. []: none. A list: exactly those. Replaced whole."),
    ),
    discovery: opt(z.enum(["eager", "ondemand", "proxy"])),
    preselect: opt(
      z.strictObject({
        enabled: opt(z.boolean()),
        keywords: opt(z.boolean()),
        routing: opt(z.enum(["exclusive", "append"])),
      }),
    ),
    parallel: opt(z.boolean()),
    dedupe: opt(z.boolean()),
    recover: opt(z.boolean()),
    order: opt(z.enum(["name", "given"])),
  })
  .describe("Which tools the agent reaches and how.");

const hook = z
  .strictObject({
    id,
    events: opt(
      z
        .array(
          z.enum(["sessionStart", "beforeTurn", "afterTurn", "beforeCompact", "sessionEnd", "sessionDelete"]),
        )
        .describe("When it runs; [] is never. Required, except in an entry with enabled: false."),
    ),
    server: opt(z.string().min(1)),
    tool: opt(z.string().min(1)),
    maxTokens: opt(count),
    timeoutSeconds: opt(seconds),
    enabled: opt(
      z
        .boolean()
        .describe('false switches off a hook a weaker layer declared; { "id", "enabled": false } is enough.'),
    ),
  })
  // An entry that only switches off a weaker layer's hook needs nothing but its id.
  .refine((entry) => entry.events != null || entry.enabled === false, {
    message: "events is missing",
    path: ["events"],
  })
  .describe("A hook the host runs. Layers merge hooks by id.");

const task = z
  .strictObject({
    // No model has an empty or blank name, and a stated one replaces the host's default for the
    // task (toolSelectModel), which the side task then refuses: it is dropped instead.
    model: opt(
      z
        .string()
        .regex(notBlank, "expected a model name that is not only blanks")
        .describe("A model name, not empty and not only blanks."),
    ),
    endpoint: opt(taskEndpoint),
    maxTokens: opt(count),
    temperature: opt(temperature),
    reasoningEffort: opt(effort),
    extraBody: opt(extraBody),
  })
  .describe("A side task's own settings. Absent fields are the side task's defaults, never the agent's.");

const taskKey = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/, "expected a name such as title or toolSelect");

const limits = z
  .strictObject({
    maxToolIterations: opt(count),
    maxRetries: opt(count),
    maxContinuations: opt(count),
    loadingTimeoutSeconds: opt(seconds),
    compact: opt(z.boolean()),
  })
  .describe("Bounds on a run.");

const bundledServer = z
  .strictObject({
    name: id
      .regex(notBlank, "expected a name that is not only blanks")
      .describe("A name of 1 to 200 characters, not only blanks."),
    type: opt(z.enum(["stdio", "http", "sse"])),
    command: opt(
      z
        .string()
        .regex(notBlank, "expected a command that is not only blanks")
        .describe("A program to run, not empty and not only blanks."),
    ),
    args: opt(z.array(z.string())),
    env: opt(z.record(z.string(), z.string().nullable())),
    cwd: opt(z.string()),
    url: opt(httpUrl),
    headers: opt(z.record(z.string(), z.string().nullable())),
    enabled: opt(
      z
        .boolean()
        .describe(
          'false switches off a server a weaker layer bundled; { "name", "enabled": false } is enough.',
        ),
    ),
  })
  // An entry that only switches off a weaker layer's server (enabled: false) may give neither.
  .refine(
    (server) =>
      (server.command != null) !== (server.url != null) ||
      (server.enabled === false && server.command == null && server.url == null),
    { message: "a bundled server needs exactly one of command (stdio) or url (http)" },
  )
  .refine(
    (server) =>
      server.type == null ||
      (server.command == null && server.url == null) ||
      (server.type === "stdio") === (server.command != null),
    { message: 'type "stdio" goes with command, "http" and "sse" with url' },
  )
  .describe("An MCP server shipped with the agent. Read only by parseSpec(document, { bundle: true }).");

/**
 * The zod schema of an agent document: what each field accepts.
 *
 * `parseSpec` walks it field by field, so one bad value drops that value instead of the document;
 * `safeParse` on it is the all-or-nothing check. The JSON Schema is generated from it.
 */
export const agentSpecSchema = z
  .strictObject({
    $schema: opt(z.string()),
    spec: z
      .string()
      .regex(/^loopwright\.agent\/1(?:\.\d+)?$/, `expected "${SPEC_TOKEN}"`)
      .describe("The format and its major version."),
    requires: opt(
      z
        .array(z.string().min(1))
        .describe(
          `Features a host must understand to run this agent; this version knows ${SPEC_FEATURES.join(", ")}.`,
        ),
    ),
    name: opt(z.string()),
    description: opt(z.string()),
    model: opt(model),
    prompt: opt(z.array(promptEntry)),
    tools: opt(tools),
    hooks: opt(z.array(hook)),
    tasks: opt(
      z.record(taskKey, task.nullable()).describe("Side tasks by name (title, compaction, toolSelect, …)."),
    ),
    limits: opt(limits),
    bundle: opt(
      z
        .strictObject({ mcpServers: opt(z.array(bundledServer)) })
        .describe("What the document ships besides the agent."),
    ),
  })
  .describe("An agent as a versioned, credential-free document.");

/** The JSON Schema of an agent document (draft 2020-12), with `$id`, generated from `agentSpecSchema`. */
export function agentSpecJsonSchema(): Record<string, unknown> {
  const generated = z.toJSONSchema(agentSpecSchema, {
    target: "draft-2020-12",
    io: "input",
    // The rule across a bundled server's fields is a refinement, which JSON Schema cannot read
    // from zod; say it in JSON Schema's own terms so an editor flags it too.
    override: ({ zodSchema, jsonSchema }) => {
      // null reads as absent, so "has a command" means a string is there.
      const has = (field: string, type: "string" | "array" = "string") => ({
        required: [field],
        properties: { [field]: { type } },
      });
      // An entry that only switches off a weaker layer's (enabled: false) needs only its key.
      const switchOff = { required: ["enabled"], properties: { enabled: { const: false } } };
      if (zodSchema === (hook as unknown)) {
        jsonSchema.anyOf = [has("events", "array"), switchOff];
        return;
      }
      if (zodSchema !== (bundledServer as unknown)) return;
      jsonSchema.oneOf = [
        {
          ...has("command"),
          not: has("url"),
          properties: { command: { type: "string" as const }, type: { enum: ["stdio", null] } },
        },
        {
          ...has("url"),
          not: has("command"),
          properties: { url: { type: "string" as const }, type: { enum: ["http", "sse", null] } },
        },
        { ...switchOff, not: { anyOf: [has("command"), has("url")] } },
      ];
    },
  }) as Record<string, unknown>;
  const { $schema, ...rest } = generated;
  return { $schema, $id: AGENT_SPEC_SCHEMA_ID, title: "Loopwright agent document", ...rest };
}
