// The prompt-cache benchmark, run by `pnpm bench`: the scripted 30-step task (task.ts) over a
// catalogue of T = 100 and T = 300 tools (catalogue.ts), driven in each discovery mode, every
// request rendered by the testkit's prefix-cache model (renderPrompt: the tool array first, then
// the messages) and tokenised with a real BPE (gpt-tokenizer, o200k_base) so the counts are the
// ones a server would charge. Per mode: prompt tokens, cached, uncached (prefilled), tool-array
// tokens and cache hit %, against an all-tools eager run of the same task in the same process.
// Numbers are printed, never asserted.
//
// Where the requests come from is one function, `requestsFor`: the loop itself. `runAgentLoop` runs
// the task against a testkit server scripted with the task's calls (the model's part), with the
// mode as `config.toolDiscovery`; the bodies are what it hands `onRequest`, and the load counts are
// its own `metrics`. The package's builders (drive.ts) are the cross-check: the loop must send the
// same number of requests and count the same loads, or the benchmark stops.
//
// The loop is imported by path, not as a package: it depends on tool-loading, and a devDependency
// back would make a cycle in the workspace graph. Its dependencies resolve from packages/loop.

import { readdirSync, readFileSync } from "node:fs";
import {
  commonPrefixLength,
  liveServerPath,
  renderPrompt,
  startLive,
  startServer,
  type TurnReply,
} from "@loopwright/testkit";
import { encode } from "gpt-tokenizer";
import { createRuntime } from "../../loop/src/index.js";
import { holdsDefinitions } from "../src/load-result.js";
import { CALL_TOOL_NAME, LOAD_TOOLS_NAME } from "../src/meta-tools.js";
import { type Body, drive, type TaskStep } from "../src/test-support/drive.js";
import { createToolLoading, type ToolDiscovery } from "../src/tool-loading.js";
import { type Toolset, toolset } from "./catalogue.js";
import { TASK } from "./task.js";

interface Row {
  label: string;
  requests: number;
  prompt: number;
  cached: number;
  uncached: number;
  toolArray: number;
  /** Requests whose cached prefix fell short of 90% of the previous prompt. */
  breaks: number;
  /**
   * Tokens prefilled a second time: of each request, the part of the previous prompt the cache did
   * not serve (a changed head makes the server process the transcript behind it again). Zero for a
   * run whose every request extends the one before.
   */
  again: number;
  /** The last request's prompt: what a run that never re-prefills pays in all (each token once). */
  last: number;
  /** Uncached where the cache also holds each reply after its prompt, as llama.cpp's slot does. */
  uncachedWithReplies: number;
  toolsLoaded: number;
  redundantLoads: number;
  /** Tokens of the definitions the run's load results carry (proxy). */
  definitionTokens: number;
}

interface Variant {
  label: string;
  mode: ToolDiscovery;
  preselected?: string[];
  routing?: "exclusive" | "append";
}

/** The model's side of the task in a mode: one scripted turn per step, then the answer. */
function script(variant: Variant, tools: Toolset): TurnReply[] {
  const start = createToolLoading({ mode: variant.mode, ...tools }).start({
    preselected: variant.preselected,
  });
  // A model handed a shortlist does not load it again: only the rest of the first load is asked for.
  const firstLoad = TASK.firstLoad.filter((name) => !start.preselected.includes(name));
  const steps: TaskStep[] =
    variant.mode === "eager" || firstLoad.length === 0
      ? TASK.steps
      : [{ uses: [], load: firstLoad }, ...TASK.steps];
  const turns = steps.map((step, i): TurnReply => {
    const calls: { id: string; name: string; arguments: string }[] = [];
    if (variant.mode !== "eager" && step.load?.length) {
      calls.push({
        id: `call_${i}_load`,
        name: LOAD_TOOLS_NAME,
        arguments: JSON.stringify({ names: step.load }),
      });
    }
    step.uses.forEach((use, k) => {
      const id = `call_${i}_${k}`;
      const args = variant.mode === "proxy" ? { name: use.tool, arguments: use.args } : use.args;
      const name = variant.mode === "proxy" ? CALL_TOOL_NAME : use.tool;
      calls.push({ id, name, arguments: JSON.stringify(args) });
    });
    return { content: "", toolCalls: calls, usage: { prompt_tokens: 1, completion_tokens: 1 } };
  });
  return [...turns, { content: TASK.answer, usage: { prompt_tokens: 1, completion_tokens: 1 } }];
}

/** The request bodies one run of the task sends in a mode: `runAgentLoop` against the testkit. */
async function requestsFor(variant: Variant, tools: Toolset) {
  const server = await startServer({ replies: script(variant, tools) });
  const results = new Map(
    TASK.steps.flatMap((step) => step.uses.map((use) => [JSON.stringify([use.tool, use.args]), use.result])),
  );
  const bodies: Body[] = [];
  try {
    const run = await createRuntime().runAgentLoop({
      config: {
        baseUrl: server.baseUrl,
        model: "sim",
        toolDiscovery: variant.mode,
        ...(variant.routing ? { preselectRouting: variant.routing } : {}),
        maxToolIterations: 100,
        dedupeToolCalls: false,
      },
      system: TASK.system,
      messages: [{ role: "user", content: TASK.question }],
      tools: tools.tools as never,
      catalog: tools.catalog,
      ...(variant.preselected ? { preselected: variant.preselected } : {}),
      onRequest: (request) => bodies.push(request as unknown as Body),
      dispatch: ({ name, args }) => {
        const result = results.get(JSON.stringify([name, args]));
        if (result === undefined)
          throw new Error(`the script has no ${name} call with ${JSON.stringify(args)}`);
        return result;
      },
    });
    // The cross-check: the package's builders driven the same way count the same.
    const expected = drive(TASK, {
      mode: variant.mode,
      ...tools,
      preselected: variant.preselected,
      routing: variant.routing,
    });
    const failed = run.toolCalls.filter((call) => !call.ok);
    if (
      failed.length > 0 ||
      expected.bodies.length !== bodies.length ||
      expected.toolsLoaded !== run.metrics.toolsLoaded ||
      expected.redundantLoads !== run.metrics.redundantLoads
    ) {
      throw new Error(
        `${variant.label}: the loop sent ${bodies.length} requests and loaded ${run.metrics.toolsLoaded} ` +
          `(${run.metrics.redundantLoads} again), with ${failed.length} failed calls; the builders say ` +
          `${expected.bodies.length}, ${expected.toolsLoaded} and ${expected.redundantLoads}.`,
      );
    }
    return {
      bodies,
      messages: run.messages,
      toolsLoaded: run.metrics.toolsLoaded,
      redundantLoads: run.metrics.redundantLoads,
    };
  } finally {
    await server.close();
  }
}

const tokenCounts = new Map<string, number>();
function tokens(text: string): number {
  let n = tokenCounts.get(text);
  if (n === undefined) {
    n = encode(text).length;
    tokenCounts.set(text, n);
  }
  return n;
}

/**
 * What a definition costs on real servers: the tools/list answers of the published MCP servers in
 * bench/servers, each tool as a request would declare it, tokenised like the synthetic catalogue.
 */
function realDefinitionSizes() {
  const dir = new URL("./servers/", import.meta.url);
  const files = readdirSync(dir).filter((file) => file.endsWith(".json"));
  const sizes = files
    .flatMap((file) => {
      const server = JSON.parse(readFileSync(new URL(file, dir), "utf8")) as {
        tools: { name: string; description?: string; inputSchema: unknown }[];
      };
      return server.tools.map((tool) =>
        tokens(
          JSON.stringify({
            type: "function",
            function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
          }),
        ),
      );
    })
    .sort((a, b) => a - b);
  const at = (q: number) => sizes[Math.min(sizes.length - 1, Math.floor(q * sizes.length))] ?? 0;
  return {
    servers: files.length,
    tools: sizes.length,
    mean: sizes.reduce((n, size) => n + size, 0) / sizes.length,
    median: at(0.5),
    p90: at(0.9),
  };
}

/**
 * Runs bodies through a fresh prefix cache (the testkit's model, BPE tokens): `cached` is the
 * longest token prefix a request shares with an earlier prompt, as the testkit server reports it.
 * A server also keeps the tokens it generated, so `uncachedWithReplies` counts a prefix shared with
 * an earlier prompt followed by its reply (the next body's assistant message) as cached too.
 */
function measure(
  label: string,
  bodies: Body[],
): Omit<Row, "toolsLoaded" | "redundantLoads" | "definitionTokens"> {
  const seen: string[][] = [];
  const seenWithReplies: string[][] = [];
  const row = {
    label,
    requests: bodies.length,
    prompt: 0,
    cached: 0,
    uncached: 0,
    toolArray: 0,
    breaks: 0,
    again: 0,
    last: 0,
    uncachedWithReplies: 0,
  };
  let previous = 0;
  bodies.forEach((body, i) => {
    const ids = encode(renderPrompt(body)).map(String);
    let cached = 0;
    for (const earlier of seen) cached = Math.max(cached, commonPrefixLength(ids, earlier));
    let cachedR = 0;
    for (const earlier of seenWithReplies) cachedR = Math.max(cachedR, commonPrefixLength(ids, earlier));
    seen.push(ids);
    seenWithReplies.push(ids);
    const reply = bodies[i + 1]?.messages[body.messages.length];
    if (reply?.role === "assistant") {
      const rendered = renderPrompt({ tools: body.tools, messages: [...body.messages, reply] });
      seenWithReplies.push(encode(rendered.slice(0, -"<|assistant|>\n".length)).map(String));
    }
    if (previous > 0 && cached < 0.9 * previous) row.breaks++;
    row.again += Math.max(0, previous - cached);
    previous = ids.length;
    row.last = ids.length;
    row.prompt += ids.length;
    row.cached += cached;
    row.uncached += ids.length - cached;
    row.uncachedWithReplies += ids.length - cachedR;
    row.toolArray += body.tools.length > 0 ? tokens(JSON.stringify(body.tools)) : 0;
  });
  return row;
}

/** The modes replayed on the live server: the all-tools baseline and the three ways of loading. */
const LIVE_VARIANTS = ["eager (all tools)", "ondemand", "proxy", "proxy + preselect"];

/**
 * Sends each body to a fresh llama-server (one slot, so every request meets the cache the one
 * before it left) as the loop sent it, with max_tokens 1 since only the prompt is measured, and
 * adds up what the server says it processed: usage.prompt_tokens, prompt_tokens_details.cached_tokens
 * and timings.prompt_n (the tokens it prefilled for the request).
 */
async function replayLive(bodies: Body[]) {
  const server = await startLive({ contextSize: 131_072, slots: 1 });
  const counts = { requests: 0, prompt: 0, cached: 0, prefilled: 0, last: 0, ms: 0 };
  const started = Date.now();
  try {
    for (const body of bodies) {
      const { stream_options: _, ...rest } = body as unknown as Record<string, unknown>;
      const response = await fetch(`${server.baseUrl}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ ...rest, model: "tiny", stream: false, max_tokens: 1 }),
      });
      const text = await response.text();
      if (!response.ok)
        throw new Error(`llama-server refused request ${counts.requests + 1}: ${text.slice(0, 300)}`);
      const reply = JSON.parse(text) as {
        usage: { prompt_tokens: number; prompt_tokens_details?: { cached_tokens?: number } };
        timings: { prompt_n: number };
      };
      counts.requests++;
      counts.prompt += reply.usage.prompt_tokens;
      counts.cached += reply.usage.prompt_tokens_details?.cached_tokens ?? 0;
      counts.prefilled += reply.timings.prompt_n;
      counts.last = reply.usage.prompt_tokens;
    }
  } finally {
    await server.stop();
  }
  counts.ms = Date.now() - started;
  return counts;
}

const pct = (a: number, b: number) => `${((100 * a) / b).toFixed(1)}%`;
const k = (n: number) => n.toLocaleString("en-US");

const PRESELECTED = ["list_issues", "get_issue", "search_files", "read_file"];
const VARIANTS: Variant[] = [
  { label: "eager (all tools)", mode: "eager" },
  { label: "ondemand", mode: "ondemand" },
  {
    label: "ondemand + preselect (exclusive)",
    mode: "ondemand",
    preselected: PRESELECTED,
    routing: "exclusive",
  },
  { label: "ondemand + preselect (append)", mode: "ondemand", preselected: PRESELECTED, routing: "append" },
  { label: "proxy", mode: "proxy" },
  { label: "proxy + preselect", mode: "proxy", preselected: PRESELECTED },
];

const real = realDefinitionSizes();
console.log(
  `Real definitions (bench/servers: ${real.tools} tools from ${real.servers} published MCP servers): ` +
    `${real.mean.toFixed(0)} tokens on average, median ${real.median}, 90th percentile ${real.p90}.`,
);
const verdicts: string[] = [];
const liveVerdicts: string[] = [];
for (const size of [100, 300]) {
  const tools = toolset(size);
  const perTool = tokens(JSON.stringify(tools.tools)) / tools.tools.length;
  console.log(
    `\nT = ${size} tools on ${tools.catalog.length} servers, ${perTool.toFixed(0)} tokens a definition; ${TASK.steps.length}-step task`,
  );
  const rows: Row[] = [];
  const sent = new Map<string, Body[]>();
  let declaredArray = 0; // eager's tool array as the loop declares it (sanitized: strict schemas)
  for (const variant of VARIANTS) {
    const run = await requestsFor(variant, tools);
    sent.set(variant.label, run.bodies);
    if (variant.mode === "eager") declaredArray = tokens(JSON.stringify(run.bodies[0]?.tools ?? []));
    const definitionTokens = run.messages
      .filter(holdsDefinitions)
      .flatMap((message) => String(message.content).split("\n"))
      .filter((line) => line.startsWith("{"))
      .reduce((n, line) => n + tokens(line), 0);
    rows.push({
      ...measure(variant.label, run.bodies),
      toolsLoaded: run.toolsLoaded,
      redundantLoads: run.redundantLoads,
      definitionTokens,
    });
  }
  const eager = rows[0] as Row;
  console.table(
    rows.map((row) => ({
      mode: row.label,
      requests: row.requests,
      prompt: k(row.prompt),
      cached: k(row.cached),
      uncached: k(row.uncached),
      "tool array": k(row.toolArray),
      "hit %": pct(row.cached, row.prompt),
      "hit % +replies": pct(row.prompt - row.uncachedWithReplies, row.prompt),
      breaks: row.breaks,
      "prefilled again": k(row.again),
      "uncached vs eager": `${(row.uncached / eager.uncached).toFixed(3)}×`,
      "+replies cached": `${(row.uncachedWithReplies / eager.uncachedWithReplies).toFixed(3)}×`,
      "prompt vs eager": `${(row.prompt / eager.prompt).toFixed(3)}×`,
      loaded: row.toolsLoaded,
      redundant: row.redundantLoads,
    })),
  );
  const proxy = rows.find((row) => row.label === "proxy") as Row;
  const target = size === 100 ? 0.25 : 0.1;
  const ratio = proxy.uncached / eager.uncached;
  const hit = proxy.cached / proxy.prompt;
  // What any mode must prefill however it loads: everything eager prefilled except its tool array
  // (the question, each reply and each result). Proxy sends all of that too, plus what it loads.
  const toolArray = declaredArray;
  const floor = (eager.uncached - toolArray) / eager.uncached;
  // Extrapolated: with every definition s times as big, eager prefills (E + s·A) and proxy
  // (P + s·D), where A is the tool array and D the definitions proxy loaded. The target holds from
  // s = (P − r·E) / (r·A − D).
  const E = eager.uncached - toolArray;
  const P = proxy.uncached - proxy.definitionTokens;
  const scale = (P - target * E) / (target * toolArray - proxy.definitionTokens);
  const breakEven =
    scale > 0 && target * toolArray > proxy.definitionTokens
      ? `${Math.ceil(scale * perTool)} tokens`
      : "no size";
  verdicts.push(
    `T=${size}: proxy re-prefill ${ratio.toFixed(3)}× eager (target ≤ ${target}×: ${ratio <= target ? "met" : "NOT met"}; ` +
      `${(proxy.uncachedWithReplies / eager.uncachedWithReplies).toFixed(3)}× with replies cached), ` +
      `hit ${pct(proxy.cached, proxy.prompt)} (target ≥ 97%: ${hit >= 0.97 ? "met" : "NOT met"}; ` +
      `${pct(proxy.prompt - proxy.uncachedWithReplies, proxy.prompt)} with replies cached). ` +
      `Floor for this task: the transcript alone is ${floor.toFixed(3)}× eager's uncached; ` +
      `the ratio target would hold from about ${breakEven} a definition (this catalogue: ${perTool.toFixed(0)}; ` +
      `real servers: ${real.mean.toFixed(0)}). Proxy prefilled ${k(proxy.again)} tokens a second time ` +
      `(eager ${k(eager.again)}, ondemand ${k((rows[1] as Row).again)}); a run that prefills every token once ` +
      `can hit at most ${pct(proxy.prompt - proxy.last, proxy.prompt)} of proxy's prompts, and no run of ` +
      `${proxy.requests} requests whose prompts never shrink can pass 1 − 1/${proxy.requests} = ` +
      `${pct(proxy.requests - 1, proxy.requests)}.`,
  );
  if (liveServerPath) {
    const live: Record<string, string | number>[] = [];
    let eagerLive = 0;
    for (const label of LIVE_VARIANTS) {
      const bodies = sent.get(label) ?? [];
      const sim = rows.find((row) => row.label === label) as Row;
      const counts = await replayLive(bodies);
      if (label === "eager (all tools)") eagerLive = counts.prefilled;
      live.push({
        mode: label,
        requests: counts.requests,
        prompt: k(counts.prompt),
        cached: k(counts.cached),
        prefilled: k(counts.prefilled),
        "hit %": pct(counts.cached, counts.prompt),
        "prefilled vs eager": `${(counts.prefilled / eagerLive).toFixed(3)}×`,
        "simulator said": `${(sim.uncached / eager.uncached).toFixed(3)}×`,
        "ceiling hit %": pct(counts.prompt - counts.last, counts.prompt),
        seconds: (counts.ms / 1000).toFixed(1),
      });
    }
    console.log(
      `\nT = ${size} on a real llama.cpp server (LOOPWRIGHT_LIVE_LLAMA: its tiny.gguf, Llama-3 BPE, Qwen2.5 ` +
        "template; one slot, a fresh server per mode): each request as the loop sent it, max_tokens 1. " +
        "prompt, cached and prefilled are the server's own usage.prompt_tokens, cached_tokens and timings.prompt_n.",
    );
    console.table(live);
    liveVerdicts.push(
      `T=${size} on llama.cpp: proxy prefilled ${live.find((r) => r.mode === "proxy")?.["prefilled vs eager"] ?? "?"} ` +
        `of eager's tokens, hit ${live.find((r) => r.mode === "proxy")?.["hit %"] ?? "?"}.`,
    );
  }
}
if (!liveServerPath)
  console.log(
    "\n(The same requests replayed on a real llama.cpp server are skipped: set LOOPWRIGHT_LIVE_LLAMA to a folder " +
      "holding llama-server and tiny.gguf.)",
  );
verdicts.push(...liveVerdicts);
console.log(`\n${verdicts.join("\n")}`);
