// The prompt-cache benchmark, run by `pnpm bench`: the scripted 30-step task (task.ts) over a
// catalogue of T = 100 and T = 300 tools (catalogue.ts), driven in each discovery mode, every
// request rendered by the testkit's prefix-cache model (renderPrompt: the tool array first, then
// the messages) and tokenised with a real BPE (gpt-tokenizer, o200k_base) so the counts are the
// ones a server would charge. Per mode: prompt tokens, cached, uncached (prefilled), tool-array
// tokens and cache hit %, against an all-tools eager run of the same task in the same process.
// Numbers are printed, never asserted.
//
// Where the requests come from is one function, `requestsFor`. Today it is the package's own
// builders under a scripted model (drive.ts); once the loop takes `toolDiscovery`, it becomes the
// bodies `runAgentLoop` hands `onRequest` against a testkit server scripted with the same calls.
import { commonPrefixLength, renderPrompt } from "@loopwright/testkit";
import { encode } from "gpt-tokenizer";
import { holdsDefinitions } from "../src/load-result.js";
import { type Body, drive } from "../src/test-support/drive.js";
import type { ToolDiscovery } from "../src/tool-loading.js";
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

/** The request bodies one run of the task sends in a mode. */
function requestsFor(variant: Variant, tools: Toolset) {
  return drive(TASK, {
    mode: variant.mode,
    ...tools,
    preselected: variant.preselected,
    routing: variant.routing,
  });
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
    previous = ids.length;
    row.prompt += ids.length;
    row.cached += cached;
    row.uncached += ids.length - cached;
    row.uncachedWithReplies += ids.length - cachedR;
    row.toolArray += body.tools.length > 0 ? tokens(JSON.stringify(body.tools)) : 0;
  });
  return row;
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

const verdicts: string[] = [];
for (const size of [100, 300]) {
  const tools = toolset(size);
  const perTool = tokens(JSON.stringify(tools.tools)) / tools.tools.length;
  console.log(
    `\nT = ${size} tools on ${tools.catalog.length} servers, ${perTool.toFixed(0)} tokens a definition; ${TASK.steps.length}-step task`,
  );
  const rows: Row[] = VARIANTS.map((variant) => {
    const run = requestsFor(variant, tools);
    const definitionTokens = run.messages
      .filter(holdsDefinitions)
      .flatMap((message) => String(message.content).split("\n"))
      .filter((line) => line.startsWith("{"))
      .reduce((n, line) => n + tokens(line), 0);
    return {
      ...measure(variant.label, run.bodies),
      toolsLoaded: run.toolsLoaded,
      redundantLoads: run.redundantLoads,
      definitionTokens,
    };
  });
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
  const toolArray = tokens(JSON.stringify(tools.tools));
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
      `the ratio target would hold from about ${breakEven} a definition (this catalogue: ${perTool.toFixed(0)}).`,
  );
}
console.log(`\n${verdicts.join("\n")}`);
