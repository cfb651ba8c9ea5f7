/**
 * The polluted-prototype sweep: `pnpm fuzz:pollution [--scenario plain|llamacpp|ondemand|proxy|
 * agent|sidetask|mcp] [--names a,b,…] [--values string,true,1,object,array,function] [--show]
 * [--print-clean] [--fresh-pool]`.
 *
 * Some code in a host's process that sets `Object.prototype.x` (prototype pollution: a vulnerable
 * merge or query parser in any dependency hands it to an attacker) must change nothing loopwright
 * does. This sweep reads every field name the packages' sources name (`.name`, `["name"]`,
 * `"name":`), sets each on `Object.prototype` in turn (a string, `true`, then `1`), runs the whole
 * scenario over the testkit's loopback server, and compares what it returned, which tools it ran,
 * the events it told and every raw request body with a clean run's. A name that changes
 * anything is run again before it is reported (a timing difference under load is not a finding).
 *
 * Seven scenarios. Four are one `runAgentLoop`: `plain` (two tool calls, then an answer),
 * `llamacpp` (the llamacpp personality, a 429 first, fenced reasoning, almost-JSON arguments,
 * parallel calls, a prefix cache), `ondemand` and `proxy` (a load, then `call_tool` and a loaded
 * tool called directly). `agent` is a session with a file (a host tool that steers a message in,
 * AskUser answered, TodoWrite, two prompts, the file read back); `sidetask` a run that compacts
 * (the summary a side task) after a preselection, then `preselect` over a catalogue; `mcp`
 * server-everything's tools through the MCP pool over stdio, two called by a run (the pool started
 * once, clean, and kept: `--fresh-pool` starts one per run, for `--names`, though the SDK's Ajv
 * fails every listing under any enumerable field). Four minutes or more a
 * scenario on two cores. `--show` prints where each polluted run parted from the clean one,
 * `--print-clean` the clean run alone. It is a finding tool, not a CI step: what it found is pinned
 * by the packages' review tests.
 *
 * Names only Node's HTTP stack, its fetch (undici) or the openai SDK read, on objects they build
 * themselves, are reported apart (`OUTSIDE`): loopwright cannot hand those a prototype-less object.
 */
// The packages as built (`pnpm fuzz:pollution` builds them first), not their sources through tsx:
// tsx keeps function names with a helper that calls `Object.defineProperty` with a descriptor
// inheriting from Object.prototype, so a polluted `.get` or `.set` threw in code the published
// packages do not have (and ended a sweep at `get`, with no word, its prototype left polluted).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AgentTool,
  createSession,
  listSessions,
  readSessionFile,
  type Session,
  sessionPath,
} from "../packages/agent/dist/index.js";
import { createClientPool } from "../packages/client/dist/index.js";
import { createRuntime } from "../packages/loop/dist/index.js";
import { createCapabilityStore } from "../packages/negotiate/dist/index.js";
import { preselect, SUMMARISER_SYSTEM } from "../packages/side-task/dist/index.js";
import {
  type PersonalityName,
  type RecordedRequest,
  type Reply,
  startServer,
  withPollutedPrototype,
} from "../packages/testkit/dist/index.js";
import { createMcpPool, type McpPool } from "../packages/tools-mcp/dist/index.js";

const LOOP_SCENARIOS = ["plain", "llamacpp", "ondemand", "proxy"] as const;
const SCENARIOS = [...LOOP_SCENARIOS, "agent", "sidetask", "mcp"] as const;
type LoopScenario = (typeof LOOP_SCENARIOS)[number];
type Scenario = (typeof SCENARIOS)[number];

/**
 * Read by Node (http, net, events, timers), undici or the openai SDK on objects of their own, or
 * by the language itself (`return` on every iterator a `for…of` leaves early): a finding there is
 * theirs. Checked in this sweep's runs on 2026-12-06.
 */
const OUTSIDE = new Set([
  // The openai SDK reads this from process.env (which inherits from Object.prototype) as the client
  // does; the client refuses one that is not a string, by name (EndpointConfigError).
  "OPENAI_CUSTOM_HEADERS",
  // The SDK's per-request options (a polluted maxRetries has it retry on its own).
  "maxRetries",
  // Node's fetch (undici): its Request constructor reads these of the init it builds.
  "required",
  "type",
  "aborted",
  "body",
  "cancel",
  "connect",
  "connectTimeout",
  "error",
  "fetchOptions",
  // undici's Client reads it of the options it builds for each new origin: a bare fetch() in Node
  // 20.20 with Object.prototype.keepAliveTimeout = "x" throws "invalid keepAliveTimeout" (checked
  // 2026-12-08; the sweep's llamacpp scenario read it as loopwright's, each request timing out).
  "keepAliveTimeout",
  "finish",
  "format",
  "handle",
  "headers",
  "mode",
  "pause",
  "reset",
  "resume",
  "return",
  "signal",
  "size",
  "socket",
  "start",
  "status",
  "timeout",
  "window",
  // Node's bundled undici names its functions through Object.defineProperty with a literal
  // descriptor as it first loads a part of itself, which a polluted `get` or `set` breaks
  // ("Getter must be a function", in node:internal/deps/undici); so does the naming helper tsx puts
  // around each named function this file makes while a name is set. The openai SDK's header
  // iterator reads `value` of its results. loopwright's own descriptors and Proxy handlers have no
  // prototype (scripts/check-descriptors.mjs in pnpm lint; each package's protoless tests), found in
  // r86 when `value` and `writable` broke runs given a getter among their options.
  "get",
  "set",
  "value",
  // As functions (`--values function`): Node's stream constructors take an inherited `read`,
  // `write` or `destroy` function as the stream's own (options.read → _read), so every socket,
  // every fetch body and process.stdout itself stop working: a plain fetch from Node, with no
  // loopwright code, hangs the same way (checked 2026-12-06).
  "read",
  "write",
  "destroy",
]);

/** Names the process cannot run with at all (every promise, every conversion). */
const NEVER = new Set([
  "then",
  "toJSON",
  "constructor",
  "prototype",
  "__proto__",
  "valueOf",
  "toString",
  "length",
]);

/** Every field name the packages' sources read or write, in their order. */
function fieldNames(): string[] {
  const files = execFileSync("git", ["ls-files", "packages/*/src/*.ts", "packages/*/src/**/*.ts"], {
    encoding: "utf8",
  })
    .split("\n")
    .filter((file) => file !== "" && !file.includes(".test.") && !file.includes("test-support"));
  const names = new Set<string>();
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    for (const match of text.matchAll(/[\w\])?]\??\.([A-Za-z_$][\w$]*)/g)) names.add(match[1] as string);
    for (const match of text.matchAll(/\[\s*"([A-Za-z_$][\w$-]*)"\s*\]/g)) names.add(match[1] as string);
    for (const match of text.matchAll(/"([a-z_][a-z0-9_]*)"\s*:/g)) names.add(match[1] as string);
  }
  return [...names].filter((name) => !NEVER.has(name)).sort();
}

const tool = (name: string, properties: Record<string, unknown> = {}) => ({
  type: "function" as const,
  function: { name, description: `The ${name} tool.`, parameters: { type: "object", properties } },
});

/**
 * The script and options of one scenario, every key written (`undefined` where unused): this file
 * reads them by destructuring, which would read a key left out through the prototype it pollutes.
 */
function scenario(which: LoopScenario): {
  replies: Reply[];
  personality: PersonalityName | undefined;
  options: Record<string, unknown>;
} {
  switch (which) {
    case "plain":
      return {
        personality: undefined,
        replies: [
          {
            toolCalls: [
              { name: "get_weather", arguments: '{"city": "Paris"}' },
              { name: "clock", arguments: "{}" },
            ],
          },
          { content: "It is sunny." },
        ],
        options: {
          config: {},
          messages: [
            { role: "system", content: "Be brief." },
            { role: "user", content: "The weather in Paris?" },
          ],
          tools: [
            tool("get_weather", { city: { type: "string" }, days: { type: "integer", minimum: 1 } }),
            tool("clock"),
          ],
        },
      };
    case "llamacpp":
      return {
        personality: "llamacpp",
        replies: [
          {
            type: "error",
            status: 429,
            body: { error: { message: "slow down" } },
            headers: { "retry-after": "0" },
          },
          {
            content: "Let me check",
            reasoning: "thinking hard",
            reasoningAs: "fence",
            toolCalls: [
              { name: "get_weather", arguments: "{city: 'Paris', days: 2,}" },
              { name: "clock", arguments: "" },
            ],
          },
          { content: "<think>ok</think>It is sunny." },
        ],
        options: {
          config: { contextLength: 4096, maxTokens: 64, temperature: 0.2 },
          system: "Be brief.",
          parallel: true,
          messages: [{ role: "user", content: "The weather in Paris?" }],
          tools: [
            tool("get_weather", { city: { type: "string" }, days: { type: "integer", minimum: 1 } }),
            tool("clock"),
          ],
        },
      };
    default: {
      const proxy = which === "proxy";
      return {
        personality: undefined,
        replies: [
          { toolCalls: [{ id: "l1", name: "load_tools", arguments: '{"names":["fs.read","nope"]}' }] },
          {
            toolCalls: [
              { id: "c1", name: "call_tool", arguments: '{"name":"fs.read","arguments":{"path":"a.txt"}}' },
              proxy
                ? {
                    id: "c2",
                    name: "call_tool",
                    arguments: '{"name":"fs_read","arguments":"{\\"path\\":\\"b.txt\\"}"}',
                  }
                : { id: "c2", name: "fs_read", arguments: '{"path":"b.txt"}' },
            ],
          },
          { content: "done" },
        ],
        options: {
          config: { toolDiscovery: which, maxToolIterations: 5 },
          runId: "sweep",
          messages: [{ role: "user", content: "Read notes.txt" }],
          tools: [tool("fs.read", { path: { type: "string" } }), tool("fs.write"), tool("list_pods")],
        },
      };
    }
  }
}

/** What differs from run to run whatever is set: times, ids made fresh, which turn was the slowest. */
function normalise(text: string): string {
  return text
    .replace(/(\\?"slowestTurn\\?":\{\\?"turn\\?"):\d+/g, "$1:0")
    .replace(
      /(\\?"(?:[A-Za-z]*Ms|ms|[A-Za-z]*[Ee]lapsed|[A-Za-z]*At|at|time|timestamp|pid)\\?"):[\d.]+/g,
      "$1:0",
    )
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g, "<time>")
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "<uuid>")
    .replace(/\/tmp\/pollution-[\w-]+/g, "<dir>")
    .replace(/127\.0\.0\.1:\d+/g, "<host>");
}

/** A thrown error as text: its message, or what was thrown. */
const said = (error: unknown) => ({ error: error instanceof Error ? error.message : String(error) });

/** One run of `which`, as text: what it returned, ran, told and sent (times and fresh ids made alike). */
async function run(which: Scenario): Promise<string> {
  switch (which) {
    case "agent":
      return normalise(await runAgent());
    case "sidetask":
      return normalise(await runSideTask());
    case "mcp":
      return normalise(await runMcp());
    default:
      return normalise(await runLoop(which));
  }
}

/** One `runAgentLoop` of a loop scenario: its result, the tools it ran, its events, every request body. */
async function runLoop(which: LoopScenario): Promise<string> {
  const { replies, personality, options } = scenario(which);
  const server = await startServer({ replies, ...(personality ? { personality } : {}), prefixCache: true });
  const ran: string[] = [];
  const told: string[] = [];
  let out: unknown;
  try {
    const runtime = createRuntime();
    const { config, ...rest } = options as { config?: Record<string, unknown> };
    const result = await runtime.runAgentLoop({
      ...(rest as { messages: never; tools: never }),
      config: { baseUrl: server.baseUrl, model: "m", apiKey: "k", ...config },
      dispatch: ({ name, args }) => {
        ran.push(`${name} ${JSON.stringify(args)}`);
        return name === "clock" ? "12:00" : "sunny";
      },
      onEvent: (event) => void told.push(event.kind === "notice" ? `notice: ${event.text}` : event.kind),
    });
    out = {
      stop: result.stopReason,
      messages: result.messages,
      usage: result.usage,
      loaded: result.loaded,
      metrics: result.metrics,
      bus: runtime.bus.history("sweep").map((event) => event.kind),
    };
  } catch (error) {
    out = said(error);
  } finally {
    await server.close();
  }
  return JSON.stringify({ out, ran, told, sent: server.chatRequests.map((request) => request.raw) });
}

const QUESTIONS = JSON.stringify({
  questions: [
    { header: "Units", question: "Which units?", options: [{ label: "metric" }, { label: "imperial" }] },
    { question: "Which days?", options: [{ label: "today" }, { label: "tomorrow" }], multiSelect: true },
  ],
});

/**
 * `agent`: a session with a file in a fresh folder. The first prompt's run calls the host's tool
 * (which steers a message in while it runs), the built-in AskUser (answered by the host) and
 * TodoWrite, then answers; a second prompt; the file read back. Its messages, snapshot, events, the
 * file's text, what reading it gives and every request body.
 */
async function runAgent(): Promise<string> {
  const server = await startServer({
    replies: [
      { toolCalls: [{ id: "w1", name: "get_weather", arguments: '{"city":"Paris"}' }] },
      { toolCalls: [{ id: "a1", name: "AskUser", arguments: QUESTIONS }] },
      {
        toolCalls: [
          {
            id: "t1",
            name: "TodoWrite",
            arguments: JSON.stringify({
              todos: [
                { content: "Look up Paris", status: "completed" },
                { content: "Tell the user", status: "completed" },
              ],
            }),
          },
        ],
      },
      { content: "Sunny, 21 degrees." },
      { content: "You are welcome." },
    ],
  });
  const dir = mkdtempSync(join(tmpdir(), "pollution-agent-"));
  const events: unknown[] = [];
  let out: unknown;
  try {
    let session: Session | undefined;
    const weather: AgentTool = {
      name: "get_weather",
      description: "The weather in a city.",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      execute: (args) => {
        session?.agent.steer("Also say the temperature.");
        return `sunny in ${(args as { city: string }).city}`;
      },
    };
    session = await createSession({
      config: { baseUrl: server.baseUrl, model: "m", apiKey: "k" },
      sessionDir: dir,
      sessionId: "sweep",
      tools: [weather],
      builtInTools: { askUser: true, todoWrite: true },
    });
    const open = session;
    open.onEvent((event) => {
      events.push(event);
      if (event.type === "question") open.submitAnswer(event.id, ["metric", ["today"]]);
    });
    const first = await open.prompt("The weather in Paris?");
    const second = await open.prompt("Thanks.");
    const snapshot = open.getSnapshot();
    const messages = open.messages;
    const todos = open.todos;
    await open.close();
    const file = sessionPath(dir, "sweep");
    out = {
      first,
      second,
      messages,
      snapshot,
      todos,
      text: readFileSync(file, "utf8"),
      read: readSessionFile(file),
      listed: listSessions(dir),
    };
  } catch (error) {
    out = said(error);
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return JSON.stringify({ out, events, sent: server.chatRequests.map((request) => request.raw) });
}

/** A long history: a 1600-token window folds it before the first request. */
function longHistory(): { role: string; content: string }[] {
  const history: { role: string; content: string }[] = [];
  for (const chapter of ["one", "two", "three", "four"]) {
    history.push(
      { role: "user", content: `Summarise chapter ${chapter}.` },
      { role: "assistant", content: `Chapter ${chapter}: ${"lorem ".repeat(250).trim()}` },
    );
  }
  history.push({ role: "user", content: "Read chapter five from notes.txt, then summarise it." });
  return history;
}

const CATALOG = [
  {
    name: "fs",
    label: "Files",
    tools: [
      { name: "read_file", description: "Read a file" },
      { name: "write_file", description: "Write a file" },
    ],
  },
  { name: "maps", tools: [{ name: "maps_elevation", description: "Get elevation data for a place" }] },
];

/** The side task a request is, by its system prompt: the summary, the preselection, or the run's turn. */
function sideTaskOf(request: RecordedRequest): "summary" | "preselect" | "turn" {
  const body = request.body as { messages?: { content?: unknown }[] } | undefined;
  const system = String(body?.messages?.[0]?.content ?? "");
  if (system === SUMMARISER_SYSTEM) return "summary";
  return system.startsWith("You choose which tools") ? "preselect" : "turn";
}

/**
 * `sidetask`: a run whose small window folds its history into a summary asked of the model (the
 * compaction side task), with `preselect` choosing its tools from a catalogue first; then
 * `preselect` itself over the catalogue. The run's result, the preselection's answer and notices,
 * and every request body.
 */
async function runSideTask(): Promise<string> {
  let turns = 0;
  const server = await startServer({
    replies: (request) => {
      const task = sideTaskOf(request);
      if (task === "summary") return { content: "<think>hmm</think>Notes: chapters one to four." };
      if (task === "preselect") return { content: '{"tools":["read_file","no_such_tool"]}' };
      turns += 1;
      return turns === 1
        ? { toolCalls: [{ id: "r1", name: "read_file", arguments: '{"path":"notes.txt"}' }] }
        : { content: "Chapter five: the end." };
    },
  });
  const ran: string[] = [];
  const told: string[] = [];
  const notices: string[] = [];
  let out: unknown;
  try {
    const result = await createRuntime().runAgentLoop({
      config: {
        baseUrl: server.baseUrl,
        model: "m",
        apiKey: "k",
        maxRetries: 0,
        contextLength: 1600,
        compact: true,
        toolDiscovery: "ondemand",
        preselect: true,
        tasks: { compaction: { model: "m" }, toolSelect: { model: "small" } },
      },
      messages: longHistory() as never,
      tools: [
        tool("read_file", { path: { type: "string" } }),
        tool("write_file", { path: { type: "string" } }),
        tool("maps_elevation"),
      ],
      catalog: CATALOG,
      dispatch: ({ name, args }) => {
        ran.push(`${name} ${JSON.stringify(args)}`);
        return "Chapter five: the end.";
      },
      onEvent: (event) => void told.push(event.kind === "notice" ? `notice: ${event.text}` : event.kind),
    });
    const chosen = await preselect(
      { baseUrl: server.baseUrl, apiKey: "k" },
      "small",
      CATALOG,
      "How high above sea level is Denver?",
      {
        keywords: true,
        clients: createClientPool(),
        capabilities: createCapabilityStore(),
        onNotice: (text: string) => void notices.push(text),
      },
    );
    out = {
      stop: result.stopReason,
      messages: result.messages,
      usage: result.usage,
      sideUsage: result.sideUsage,
      preselected: result.preselected,
      loaded: result.loaded,
      metrics: result.metrics,
      chosen,
      notices,
    };
  } catch (error) {
    out = said(error);
  } finally {
    await server.close();
  }
  return JSON.stringify({ out, ran, told, sent: server.chatRequests.map((request) => request.raw) });
}

const EVERYTHING = "packages/tools-mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
/**
 * The MCP pool of the `mcp` scenario: started once, clean, and kept (a stdio server takes half a
 * second to start: one per run would make a sweep of 1,500 names take an hour), or one per run with
 * `--fresh-pool` (for `--names`, to sweep the connection itself). Replaced when a run left it broken.
 */
let sharedPool: McpPool | undefined;
const freshPool = process.argv.includes("--fresh-pool");
const newPool = () =>
  createMcpPool([{ name: "everything", command: process.execPath, args: [EVERYTHING, "stdio"] }]);

/**
 * `mcp`: server-everything's tools, listed through `@loopwright/tools-mcp`'s pool over stdio, handed
 * to a run that calls two of them (through `pool.call`, deduped by `pool.dedupe`). What the pool
 * listed, what the run returned, ran and told, and every request body.
 */
async function runMcp(): Promise<string> {
  const server = await startServer({
    replies: [
      {
        toolCalls: [
          { id: "e1", name: "everything__echo", arguments: '{"message":"hello"}' },
          { id: "s1", name: "everything__get-sum", arguments: '{"a":2,"b":40}' },
        ],
      },
      { content: "42, and hello." },
    ],
  });
  if (!freshPool) sharedPool ??= newPool();
  const pool = sharedPool !== undefined && !freshPool ? sharedPool : newPool();
  const ran: string[] = [];
  const told: string[] = [];
  let out: unknown;
  try {
    const tools = await pool.tools();
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "m", apiKey: "k", maxToolIterations: 3 },
      messages: [{ role: "user", content: "Echo hello, and add 2 and 40." }],
      tools,
      dispatch: ({ name, args }, signal) => {
        ran.push(`${name} ${JSON.stringify(args)}`);
        return pool.call(name, args, signal);
      },
      dedupeToolCalls: (request) => pool.dedupe(request),
      onEvent: (event) => void told.push(event.kind === "notice" ? `notice: ${event.text}` : event.kind),
    });
    out = {
      tools,
      status: pool.status(),
      policy: pool.policy("everything__get-sum"),
      stop: result.stopReason,
      messages: result.messages,
      usage: result.usage,
    };
  } catch (error) {
    out = said(error);
  } finally {
    await server.close();
    if (freshPool) await pool.close();
    else if (pool.status()[0]?.state !== "connected") {
      // A run that broke the connection would fail every run after it: the next one starts afresh.
      sharedPool = undefined;
      await pool.close();
    }
  }
  return JSON.stringify({ out, ran, told, sent: server.chatRequests.map((request) => request.raw) });
}

/** `run(which)` with `Object.prototype[name] = value`, taken out again; a crash or a hang as text. */
async function pollutedRun(which: Scenario, name: string, value: unknown): Promise<string> {
  // A run that hangs is a finding too: the timer keeps the process alive until it answers for it
  // (an unref'd one let the process end, silently, once a hung run held nothing else open).
  let timer: NodeJS.Timeout | undefined;
  let answered: Promise<string>;
  try {
    answered = withPollutedPrototype({ [name]: value }, () =>
      Promise.race([
        run(which),
        new Promise<string>((resolve) => {
          timer = setTimeout(() => resolve("no answer in 5 s"), 5_000);
        }),
      ]),
    );
  } catch (error) {
    answered = Promise.reject(error);
  }
  return answered
    .catch((error: unknown) => `threw: ${error instanceof Error ? error.message : String(error)}`)
    .finally(() => {
      clearTimeout(timer);
      // Whatever threw where, the next name starts from a clean prototype.
      delete (Object.prototype as Record<string, unknown>)[name];
    });
}

function flag(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
}

const which = (flag("--scenario") ?? "plain") as Scenario;
if (!SCENARIOS.includes(which))
  throw new Error(`--scenario is one of ${SCENARIOS.join(", ")}; got ${which}.`);
const names = flag("--names")?.split(",") ?? fieldNames();
/**
 * What each name is set to, in turn (`--values`, comma-separated; the first three by default). An
 * object, an array or a function reaches further than a primitive: code that checks `typeof x ===
 * "object"` or calls what it finds takes it in. Each is a fresh value per run.
 */
const VALUES: Record<string, () => unknown> = {
  string: () => "P0LLUTED",
  true: () => true,
  "1": () => 1,
  object: () => ({ p0lluted: "P0LLUTED" }),
  array: () => ["P0LLUTED"],
  function: () =>
    function polluted() {
      return "P0LLUTED";
    },
};
const valueKinds = flag("--values")?.split(",") ?? ["string", "true", "1"];
for (const kind of valueKinds)
  if (!Object.hasOwn(VALUES, kind))
    throw new Error(`--values takes ${Object.keys(VALUES).join(", ")}; got ${kind}.`);
const values = valueKinds.map((kind) => [kind, VALUES[kind] as () => unknown] as const);
// Node's own code may throw where a polluted name reaches it outside any run (a socket's listener):
// the process goes on, and the name is reported with what its runs gave.
process.on("uncaughtException", () => {});
process.on("unhandledRejection", () => {});

/** With `--show`: where a polluted run first parted from the clean one, a little of each. */
const show = process.argv.includes("--show");
function parting(clean: string, polluted: string): string {
  let at = 0;
  while (at < clean.length && clean[at] === polluted[at]) at += 1;
  const from = Math.max(0, at - 80);
  return `    clean:    …${clean.slice(from, at + 220)}\n    polluted: …${polluted.slice(from, at + 220)}`;
}

// A polluted run that ends the process (something read calls `process.exit`, or leaves the event
// loop empty) would end the sweep with no word: it names the name it was running.
let running: string | undefined;
process.on("exit", () => {
  if (running !== undefined) console.error(`The sweep ended while running ${running}.`);
});

const clean = await run(which);
if (process.argv.includes("--print-clean")) {
  // What the scenario compares, to check that it reaches what it means to.
  console.log(clean);
  await sharedPool?.close();
  process.exit(0);
}
const found = new Map<string, string[]>();
for (const [index, name] of names.entries()) {
  for (const [kind, make] of values) {
    running = `${name} (${kind})`;
    if ((await pollutedRun(which, name, make())) === clean) continue;
    const again = await pollutedRun(which, name, make());
    if (again === clean) continue; // once only: timing under load
    found.set(name, [...(found.get(name) ?? []), kind]);
    if (show) console.error(`${name} (${kind}):\n${parting(clean, again)}`);
  }
  if ((index + 1) % 200 === 0) console.error(`${index + 1} of ${names.length} names`);
}
running = undefined;
const ours = [...found].filter(([name]) => !OUTSIDE.has(name));
const theirs = [...found].filter(([name]) => OUTSIDE.has(name));
const list = (entries: [string, string[]][]) =>
  entries.map(([name, kinds]) => `${name} (${kinds.join(", ")})`);
console.log(`scenario ${which}: ${names.length} names, each set to ${valueKinds.join(", ")} in turn.`);
console.log(`Changed the run, in loopwright's code: ${ours.length}`);
for (const line of list(ours)) console.log(`  ${line}`);
console.log(`Changed the run, read only by Node, undici or the openai SDK: ${theirs.length}`);
console.log(`  ${list(theirs).join(", ")}`);
await sharedPool?.close();
process.exit(ours.length > 0 ? 1 : 0);
