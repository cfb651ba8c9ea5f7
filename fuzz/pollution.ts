/**
 * The polluted-prototype sweep: `pnpm fuzz:pollution [--scenario plain|llamacpp|ondemand|proxy]
 * [--names a,b,…] [--values string,true,1,object,array,function] [--verbose] [--show]`
 * (`--verbose`: each name as it is set; `--show`: where each finding's run first differs).
 *
 * Some code in a host's process that sets `Object.prototype.x` (prototype pollution: a vulnerable
 * merge or query parser in any dependency hands it to an attacker) must change nothing loopwright
 * does. This sweep reads every field name the packages' sources name (`.name`, `["name"]`,
 * `"name":`), sets each on `Object.prototype` in turn (a string, `true`, then `1`), runs one whole
 * `runAgentLoop` over the testkit's loopback server, and compares what the run returned, which tools
 * it ran, the events it told and every raw request body with a clean run's. A name that changes
 * anything is run again before it is reported (a timing difference under load is not a finding).
 *
 * Four scenarios: `plain` (two tool calls, then an answer), `llamacpp` (the llamacpp personality,
 * a 429 first, fenced reasoning, almost-JSON arguments, parallel calls, a prefix cache), `ondemand`
 * and `proxy` (a load, then `call_tool` and a loaded tool called directly). About four minutes a
 * scenario on two cores. It is a finding tool, not a CI step: what it found is pinned by the
 * packages' review tests.
 *
 * Names only Node's HTTP stack, its fetch (undici) or the openai SDK read, on objects they build
 * themselves, are reported apart (`OUTSIDE`): loopwright cannot hand those a prototype-less object.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
// The built packages, as a host runs them (`pnpm fuzz:pollution` builds them first): run from
// source through tsx, each named function is made by a helper that calls Object.defineProperty
// with a literal descriptor, which a polluted `get` or `set` breaks in the tool, not in the packages.
import { createRuntime } from "../packages/loop/dist/index.js";
import {
  type PersonalityName,
  type Reply,
  startServer,
  withPollutedPrototype,
} from "../packages/testkit/dist/index.js";

const SCENARIOS = ["plain", "llamacpp", "ondemand", "proxy"] as const;
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
  // ("Getter must be a function", in node:internal/deps/undici). loopwright's own descriptors have
  // no prototype (scripts/check-descriptors.mjs); the openai SDK reads `value` of the result
  // objects of its header iterator.
  "get",
  "set",
  "value",
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
function scenario(which: Scenario): {
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

// The host's callbacks, made once, here: a function made while a name is set would be named by
// tsx's helper (Object.defineProperty with a literal descriptor), which a polluted `get` breaks.
// What the sweep runs while a name is set makes no named function of its own.
const ran: string[] = [];
const told: string[] = [];
const dispatch = ({ name, args }: { name: string; args: unknown }) => {
  ran.push(`${name} ${JSON.stringify(args)}`);
  return name === "clock" ? "12:00" : "sunny";
};
const onEvent = (event: { kind: string; text?: string }) =>
  void told.push(event.kind === "notice" ? `notice: ${event.text}` : event.kind);

/** One run of `which`, as text: what it returned, ran, told and sent (server-measured times as 0). */
async function run(which: Scenario): Promise<string> {
  const { replies, personality, options } = scenario(which);
  const server = await startServer({ replies, ...(personality ? { personality } : {}), prefixCache: true });
  ran.length = 0;
  told.length = 0;
  let out: unknown;
  try {
    const runtime = createRuntime();
    const { config, ...rest } = options as { config?: Record<string, unknown> };
    const result = await runtime.runAgentLoop({
      ...(rest as { messages: never; tools: never }),
      config: { baseUrl: server.baseUrl, model: "m", apiKey: "k", ...config },
      dispatch,
      onEvent,
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
    out = { error: error instanceof Error ? error.message : String(error) };
  } finally {
    await server.close();
  }
  const text = JSON.stringify({ out, ran, told, sent: server.chatRequests.map((request) => request.raw) });
  // What differs from run to run whatever is set: times, and which turn was the slowest.
  return text
    .replace(/(\\?"slowestTurn\\?":\{\\?"turn\\?"):\d+/g, "$1:0")
    .replace(/(\\?"(?:[A-Za-z]*Ms|ms)\\?"):[\d.]+/g, "$1:0");
}

/** `run(which)` with `Object.prototype[name] = value`, taken out again; a crash or a hang as text. */
async function pollutedRun(which: Scenario, name: string, value: unknown): Promise<string> {
  // A run that hangs is a finding too: the timer keeps the process alive until it answers for it
  // (an unref'd one let the process end, silently, once a hung run held nothing else open).
  let timer: NodeJS.Timeout | undefined;
  const answered = withPollutedPrototype({ [name]: value }, () =>
    Promise.race([
      run(which),
      new Promise<string>((resolve) => {
        timer = setTimeout(() => resolve("no answer in 5 s"), 5_000);
      }),
    ]),
  );
  return answered
    .catch((error: unknown) =>
      error instanceof Error ? `threw: ${show ? error.stack : error.message}` : `threw: ${String(error)}`,
    )
    .finally(() => clearTimeout(timer));
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

const verbose = process.argv.includes("--verbose");
const show = process.argv.includes("--show");

/** Where `polluted` first parts from `clean`, with some text either side of it, for `--show`. */
function firstDifference(clean: string, polluted: string): string {
  let at = 0;
  while (at < clean.length && clean[at] === polluted[at]) at++;
  const from = Math.max(0, at - 120);
  return `clean …${clean.slice(from, at + 200)}… / polluted …${polluted.slice(from, at + 200)}…`;
}
// Where the sweep is, for the guard below. A run whose pollution leaves the process with nothing to
// wait on (its promise pending, no socket, no timer) would otherwise end it silently, mid-sweep,
// with exit code 0: it is reported instead, with the name that did it.
let current = "the clean run";
let finished = false;
process.on("beforeExit", () => {
  if (finished) return;
  console.error(`The sweep stopped at ${current}: the run left nothing to wait on and never answered.`);
  process.exit(2);
});

const clean = await run(which);
const found = new Map<string, string[]>();
for (const [index, name] of names.entries()) {
  for (const [kind, make] of values) {
    current = `${name} (${kind}), name ${index + 1} of ${names.length}`;
    if (verbose) console.error(current);
    if ((await pollutedRun(which, name, make())) === clean) continue;
    const again = await pollutedRun(which, name, make());
    if (again === clean) continue; // once only: timing under load
    found.set(name, [...(found.get(name) ?? []), kind]);
    if (show) console.error(`${name} (${kind}): ${firstDifference(clean, again)}`);
  }
  if ((index + 1) % 200 === 0) console.error(`${index + 1} of ${names.length} names`);
}
finished = true;
const ours = [...found].filter(([name]) => !OUTSIDE.has(name));
const theirs = [...found].filter(([name]) => OUTSIDE.has(name));
const list = (entries: [string, string[]][]) =>
  entries.map(([name, kinds]) => `${name} (${kinds.join(", ")})`);
console.log(`scenario ${which}: ${names.length} names, each set to ${valueKinds.join(", ")} in turn.`);
console.log(`Changed the run, in loopwright's code: ${ours.length}`);
for (const line of list(ours)) console.log(`  ${line}`);
console.log(`Changed the run, read only by Node, undici or the openai SDK: ${theirs.length}`);
console.log(`  ${list(theirs).join(", ")}`);
process.exit(ours.length > 0 ? 1 : 0);
