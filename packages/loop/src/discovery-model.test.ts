// Whole runs of every discovery mode against a simple model of what tool loading should do. fast-check
// draws a catalogue (2–40 tools, some renamed on the wire, some host tools the catalogue leaves out,
// sometimes a host tool named like a meta-tool), a mode, carried `loaded`, a preselection with either
// routing, and a script of model turns — loads of known, unknown, repeated, over-cap, server and
// pattern names and junk; call_tool as an object, as text, broken; direct calls to unloaded and
// unknown tools — against tools that throw, answer huge output or hang until a stop, with a stop at
// a random call and folds (a beforeStep fold, pruning, compaction) along the way. After each run the
// transcript, what the host was told and dispatched, every request body and the counts are checked
// against the model below. R90_DISCOVERY_RUNS / R90_DISCOVERY_SEED widen or replay the search;
// R90_STATS=1 prints how often each path (stops, overflows, compactions, over-cap loads…) was reached.
import type { RunEvent } from "@loopwright/events";
import { pruneToolResults } from "@loopwright/ledger";
import { SUMMARISER_SYSTEM } from "@loopwright/side-task";
import { type Reply, startServer } from "@loopwright/testkit";
import { type CatalogServer, catalogText, holdsDefinitions } from "@loopwright/tool-loading";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import type { AgentLoopResult } from "./agent-loop.js";
import type { ChatMessage, LoopConfig, ToolDefinition } from "./config.js";
import { AgentLoopError, AgentLoopOverflow, failedRun, LoopOptionError } from "./errors.js";
import { type CallResult, type DispatchRequest, NOT_RUN } from "./run-calls.js";
import { createRuntime } from "./runtime.js";
import { declareTools } from "./tool-names.js";

const LOAD_CAP = 12;
const CARRY_CAP = 16;
const SERVERS = ["alpha", "beta", "gamma"] as const;
const SYSTEM = "S";

type Behaviour = "ok" | "throw" | "huge" | "hang";
/** One host tool: its name, the wire's name for it, its server (none: outside the catalogue). */
interface ToolSpec {
  host: string;
  wire: string;
  server: (typeof SERVERS)[number] | undefined;
  behaviour: Behaviour;
}
type Collision =
  | "none"
  | "call_tool-outside"
  | "load.tools-outside"
  | "call_tool-listed"
  | "load.tools-listed";

/** A name a load or a call writes, drawn abstractly and made concrete against the run's tools. */
type NameSpec =
  | { k: "known"; i: number }
  | { k: "host"; i: number }
  | { k: "upper"; i: number }
  | { k: "server"; s: number }
  | { k: "star"; s: number }
  | { k: "serverTool"; i: number }
  | { k: "outside"; i: number }
  | { k: "unknown"; n: number }
  | { k: "glob"; i: number }
  | { k: "spell"; i: number; how: number }
  | { k: "long"; n: number };
type CallSpec =
  | { c: "load"; names: NameSpec[]; form: "array" | "string" }
  | { c: "loadAll" }
  | { c: "loadJunk"; junk: 0 | 1 | 2 | 3 }
  | { c: "loadMany"; count: number }
  | {
      c: "callTool";
      name: NameSpec;
      form: "object" | "text" | "flat" | "brokenInner" | "brokenRaw" | "noName" | "big" | "bigText";
    }
  | { c: "direct"; name: NameSpec; args: "ok" | "broken" | "big" }
  | { c: "loadBig"; names: NameSpec[] };
interface Case {
  mode: "eager" | "ondemand" | "proxy";
  tools: { kind: "plain" | "renamed" | "outside" | "unicode"; server: number; behaviour: Behaviour }[];
  collision: Collision;
  toolOrder: boolean;
  parallel: boolean;
  dedupe: boolean;
  carried: NameSpec[];
  preselected: NameSpec[] | undefined;
  routing: "exclusive" | "append";
  turns: CallSpec[][];
  stopAtCall: number;
  fold: "none" | "prune" | { at: number } | "compact";
}

const nameSpec: fc.Arbitrary<NameSpec> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ k: fc.constant("known" as const), i: fc.nat(60) }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant("host" as const), i: fc.nat(60) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("upper" as const), i: fc.nat(60) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("server" as const), s: fc.nat(2) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("star" as const), s: fc.nat(2) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("serverTool" as const), i: fc.nat(60) }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant("outside" as const), i: fc.nat(60) }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant("unknown" as const), n: fc.nat(3) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("glob" as const), i: fc.nat(60) }) },
  {
    weight: 1,
    arbitrary: fc.record({ k: fc.constant("long" as const), n: fc.integer({ min: 200, max: 400 }) }),
  },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("spell" as const), i: fc.nat(60), how: fc.nat(3) }) },
);
// A call names one tool: a server's name or a pattern stands for a set, and is only read by a load.
const callName: fc.Arbitrary<NameSpec> = fc.oneof(
  nameSpec,
  // Spellings only a call is read with: gpt-oss's markup after the name, its `json` glued on, blanks.
  fc.record({ k: fc.constant("spell" as const), i: fc.nat(60), how: fc.integer({ min: 4, max: 6 }) }),
);
const callSpec: fc.Arbitrary<CallSpec> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      c: fc.constant("load" as const),
      names: fc.array(nameSpec, { minLength: 0, maxLength: 16, size: "medium" }),
      form: fc.constantFrom("array" as const, "array" as const, "string" as const),
    }),
  },
  { weight: 1, arbitrary: fc.record({ c: fc.constant("loadAll" as const) }) },
  {
    weight: 1,
    arbitrary: fc.record({ c: fc.constant("loadBig" as const), names: fc.array(nameSpec, { maxLength: 4 }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ c: fc.constant("loadMany" as const), count: fc.integer({ min: 20, max: 130 }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ c: fc.constant("loadJunk" as const), junk: fc.constantFrom(0, 1, 2, 3) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      c: fc.constant("callTool" as const),
      name: callName,
      form: fc.constantFrom("object", "text", "flat", "brokenInner", "brokenRaw", "noName", "big", "bigText"),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      c: fc.constant("direct" as const),
      name: callName,
      args: fc.constantFrom("ok" as const, "ok" as const, "broken" as const, "big" as const),
    }),
  },
);
const caseArb: fc.Arbitrary<Case> = fc.record({
  mode: fc.constantFrom("eager", "ondemand", "proxy"),
  tools: fc.array(
    fc.record({
      kind: fc.constantFrom("plain", "plain", "renamed", "outside", "unicode"),
      server: fc.nat(2),
      behaviour: fc.constantFrom<Behaviour>("ok", "ok", "ok", "ok", "throw", "huge", "hang"),
    }),
    { minLength: 2, maxLength: 40, size: "max" },
  ),
  collision: fc.constantFrom<Collision>(
    "none",
    "none",
    "none",
    "call_tool-outside",
    "load.tools-outside",
    "call_tool-listed",
    "load.tools-listed",
  ),
  toolOrder: fc.boolean(),
  parallel: fc.boolean(),
  dedupe: fc.boolean(),
  carried: fc.array(nameSpec, { maxLength: 22, size: "max" }),
  preselected: fc.option(fc.array(nameSpec, { maxLength: 15 }), { nil: undefined }),
  routing: fc.constantFrom("exclusive", "append"),
  turns: fc.array(fc.array(callSpec, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 10 }),
  stopAtCall: fc.oneof(
    { weight: 4, arbitrary: fc.constant(0) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 12 }) },
  ),
  fold: fc.oneof(
    { weight: 4, arbitrary: fc.constant("none" as const) },
    { weight: 1, arbitrary: fc.constant("prune" as const) },
    { weight: 1, arbitrary: fc.record({ at: fc.integer({ min: 1, max: 8 }) }) },
    { weight: 1, arbitrary: fc.constant("compact" as const) },
  ),
});

/** The run's tools as the host declares them, and the catalogue over the listed ones (host names). */
function toolsOf(c: Case): { specs: ToolSpec[]; catalog: CatalogServer[] } {
  const specs: ToolSpec[] = c.tools.map((t, i) => {
    const host =
      t.kind === "renamed"
        ? `fs.r${i}`
        : t.kind === "outside"
          ? `h${i}`
          : t.kind === "unicode"
            ? `検索${i}`
            : `t${i}`;
    return {
      host,
      wire: host,
      // The first tool is always listed: a catalogue of nothing is no catalogue.
      server: t.kind === "outside" && i > 0 ? undefined : SERVERS[t.server],
      behaviour: t.behaviour,
    };
  });
  if (c.collision !== "none") {
    const host = c.collision.startsWith("call_tool") ? "call_tool" : "load.tools";
    const listed = c.collision.endsWith("listed");
    specs.push({ host, wire: host, server: listed ? "alpha" : undefined, behaviour: "ok" });
  }
  // The wire's names as the loop makes them (`fs.r1` → `fs_r1`, `検索3` → `tool_` and a hash).
  const { toWire } = declareTools(specs.map(definition));
  for (const spec of specs) spec.wire = toWire.get(spec.host) ?? spec.host;
  const catalog = SERVERS.map((name) => ({
    name,
    tools: specs
      .filter((s) => s.server === name)
      .map((s) => ({ name: s.host }))
      .sort((a, b) => (a.name < b.name ? -1 : 1)),
  })).filter((server) => server.tools.length > 0);
  return { specs, catalog };
}

const definition = (spec: ToolSpec): ToolDefinition => ({
  type: "function",
  function: {
    name: spec.host,
    description: `Tool ${spec.host}`,
    parameters: { type: "object", properties: { path: { type: "string" } } },
  },
});

/** What a name spec stands for: the text written, and the catalogued wire names a load reaches with it. */
interface Named {
  text: string;
  /** Catalogued tools reached (wire names, in a load's order); empty for a name outside the catalogue. */
  reach: string[];
  /** The one host tool it names, listed or not (for a call), or none. */
  tool: ToolSpec | undefined;
}

function model(c: Case) {
  const { specs, catalog } = toolsOf(c);
  const listed = specs.filter((s) => s.server !== undefined);
  const regular = specs.filter((s) => s.host !== "call_tool" && s.host !== "load.tools");
  const outside = regular.filter((s) => s.server === undefined);
  const catalogued = regular.filter((s) => s.server !== undefined);
  const byWire = new Map(specs.map((s) => [s.wire, s]));
  const serverWires = (name: string) =>
    listed
      .filter((s) => s.server === name)
      .map((s) => s.wire)
      .sort();
  const named = (n: NameSpec): Named => {
    switch (n.k) {
      case "known":
      case "host":
      case "upper":
      case "serverTool": {
        const s = catalogued[n.i % catalogued.length] as ToolSpec;
        const text =
          n.k === "known"
            ? s.wire
            : n.k === "host"
              ? s.host
              : n.k === "upper"
                ? s.wire.toUpperCase()
                : `${s.server}.${s.wire}`;
        return { text, reach: [s.wire], tool: s };
      }
      case "server":
      case "star": {
        const name = SERVERS[n.s] as string;
        const reach = serverWires(name);
        return { text: n.k === "star" ? `${name}.*` : name, reach, tool: undefined };
      }
      case "outside": {
        const s = outside[n.i % Math.max(1, outside.length)];
        return s ? { text: s.host, reach: [], tool: s } : { text: "nope_out", reach: [], tool: undefined };
      }
      case "unknown":
        return { text: `nope${n.n}`, reach: [], tool: undefined };
      case "long":
        // Past 256 characters a name matches nothing, and is counted cut short.
        return { text: `${"long".repeat(n.n / 4)}${n.n}`, reach: [], tool: undefined };
      case "glob": {
        // A pattern over the catalogued names: what it matches, in name order.
        const s = catalogued[n.i % catalogued.length] as ToolSpec;
        const prefix = s.wire.slice(0, 2);
        const reach = listed
          .map((x) => x.wire)
          .filter((w) => w.startsWith(prefix))
          .sort();
        return { text: `${prefix}*`, reach, tool: undefined };
      }
      case "spell": {
        const s = catalogued[n.i % catalogued.length] as ToolSpec;
        const text = [
          `functions.${s.wire}`,
          `${s.server}/${s.wire}`,
          `${s.server}:${s.wire}`,
          `${s.server}__${s.wire}`,
          `${s.wire}<|channel|>analysis`,
          `${s.wire}json`,
          ` ${s.wire} `,
        ][n.how] as string;
        return { text, reach: [s.wire], tool: s };
      }
    }
  };
  return { specs, catalog, listed, byWire, named, serverWires };
}

/** A number JS cannot hold: a tool whose schema takes a string there is handed the digits. */
const BIG = "12345678901234567891";

/** Made-up names, more than `unknownToolNames` keeps (100). */
const manyNames = (count: number) => Array.from({ length: count }, (_, k) => `made_up_${k}`);

/** A name as `unknownToolNames` keeps it: 256 characters, `…` for the rest. */
const keptName = (name: string) => (name.length <= 256 ? name : `${name.slice(0, 256)}…`);

/** The text a call spec writes: its name, its arguments text, and how the model expects it answered. */
interface Written {
  id: string;
  name: string;
  arguments: string;
  spec: CallSpec;
}

function writeCall(m: ReturnType<typeof model>, spec: CallSpec, id: string): Written {
  const args = (value: unknown) => JSON.stringify(value);
  switch (spec.c) {
    case "load": {
      const names = spec.names.map((n) => m.named(n).text);
      return {
        id,
        spec,
        name: "load_tools",
        arguments: args({ names: spec.form === "string" ? names.join(", ") : names }),
      };
    }
    case "loadAll":
      return { id, spec, name: "load_tools", arguments: args({ names: m.listed.map((s) => s.wire) }) };
    case "loadMany":
      return { id, spec, name: "load_tools", arguments: args({ names: manyNames(spec.count) }) };
    case "loadJunk":
      return {
        id,
        spec,
        name: "load_tools",
        arguments: [args({ names: 42 }), args({ names: { a: 1 } }), args({}), args({ names: [null, 7] })][
          spec.junk
        ] as string,
      };
    case "callTool": {
      const name = m.named(spec.name).text;
      const text =
        spec.form === "object"
          ? args({ name, arguments: { path: "a.txt" } })
          : spec.form === "text"
            ? args({ name, arguments: args({ path: "b.txt" }) })
            : spec.form === "flat"
              ? args({ name, path: "c.txt" })
              : spec.form === "brokenInner"
                ? args({ name, arguments: "{{ not json" })
                : spec.form === "brokenRaw"
                  ? `{"name": "${name}", "arguments": {"path": `
                  : spec.form === "big"
                    ? `{"name":${args(name)},"arguments":{"path":${BIG}}}`
                    : spec.form === "bigText"
                      ? args({ name, arguments: `{"path":${BIG}}` })
                      : args({ arguments: {} });
      return { id, spec, name: "call_tool", arguments: text };
    }
    case "direct":
      return {
        id,
        spec,
        name: m.named(spec.name).text,
        arguments:
          spec.args === "broken"
            ? "{{ not json"
            : spec.args === "big"
              ? `{"path":${BIG}}`
              : args({ path: "d.txt" }),
      };
    case "loadBig":
      // A number JS cannot hold beside the names: the load is refused as written, loading nothing.
      return {
        id,
        spec,
        name: "load_tools",
        arguments: `{"names":${args(spec.names.map((n) => m.named(n).text))},"n":${BIG}}`,
      };
  }
}

type Body = { tools?: { function: { name: string } }[]; messages: ChatMessage[] };

/** What the model says one call does: load names, dispatch a tool, refuse (counting unknown names), or depends. */
type Expect =
  | { kind: "load"; reach: string[]; unknown: string[] }
  | { kind: "refuse"; unknown: string[]; set?: boolean }
  | { kind: "dispatch"; tool: string; wire: string | undefined }
  | { kind: "either"; tool: string; wire: string | undefined };

function expectOf(c: Case, m: ReturnType<typeof model>, w: Written): Expect {
  const spec = w.spec;
  const loading = c.mode !== "eager";
  const hostCallTool = c.collision === "call_tool-listed";
  const eagerName = (written: string) => {
    // Eager: the declared tool the name spells — exactly, by host name, with blanks around it,
    // `functions.`, gpt-oss's markup after it, its `json` glued on, in another case — else as written.
    const byWire = (text: string) => m.specs.find((s) => s.wire === text || s.host === text);
    const trimmed = written.trim();
    const markup = trimmed.indexOf("<|");
    const name = (markup > 0 ? trimmed.slice(0, markup).trimEnd() : trimmed).replace(/^functions\./, "");
    const glued = /^(.+?)\s*json$/.exec(name)?.[1];
    const folded = m.specs.filter((s) => s.wire.toLowerCase() === name.toLowerCase());
    const found =
      byWire(written) ??
      byWire(trimmed) ??
      byWire(name) ??
      (glued === undefined ? undefined : m.specs.find((s) => s.wire === glued)) ??
      (folded.length === 1 ? folded[0] : undefined);
    return found?.host ?? written;
  };
  if (!loading) {
    let readable = true;
    try {
      JSON.parse(w.arguments);
    } catch {
      readable = false;
    }
    return {
      kind: readable && !w.arguments.includes(BIG) ? "dispatch" : "either",
      tool: eagerName(w.name),
      wire: undefined,
    };
  }
  if (spec.c === "load" || spec.c === "loadAll" || spec.c === "loadMany") {
    const names =
      spec.c === "loadMany"
        ? manyNames(spec.count).map((text) => ({ text, reach: [] as string[] }))
        : spec.c === "loadAll"
          ? m.listed.map((s) => ({ text: s.wire, reach: [s.wire] }))
          : spec.names.map(m.named);
    const reach: string[] = [];
    const unknown: string[] = [];
    for (const n of names) {
      if (n.reach.length === 0) unknown.push(n.text);
      for (const r of n.reach) if (!reach.includes(r)) reach.push(r);
    }
    return { kind: "load", reach, unknown };
  }
  if (spec.c === "loadJunk" || spec.c === "loadBig") return { kind: "refuse", unknown: [] };
  if (spec.c === "callTool" && !(c.mode === "ondemand" && hostCallTool)) {
    if (spec.form === "noName") return { kind: "refuse", unknown: [] };
    const n = m.named(spec.name);
    if (n.reach.length !== 1 || n.tool === undefined) {
      // As for a direct call: call_tool's own arguments unreadable are refused before the name is read.
      if (spec.form === "brokenRaw") return { kind: "refuse", unknown: [] };
      return { kind: "refuse", unknown: [n.text], set: n.reach.length > 0 };
    }
    const tool = n.tool;
    return spec.form === "brokenInner" || spec.form === "brokenRaw"
      ? { kind: "either", tool: tool.host, wire: tool.wire }
      : { kind: "dispatch", tool: tool.host, wire: tool.wire };
  }
  // A direct call (or, on demand, the host's own catalogued call_tool).
  if (spec.c === "callTool") {
    return {
      kind: spec.form === "brokenRaw" || spec.form.startsWith("big") ? "either" : "dispatch",
      tool: "call_tool",
      wire: "call_tool",
    };
  }
  const n = m.named(spec.name);
  if (n.reach.length !== 1 || n.tool === undefined || spec.name.k === "serverTool") {
    // server.tool spelled as a direct call reaches the tool too; the rest are outside the catalogue.
    if (spec.name.k === "serverTool" && n.tool) {
      return { kind: spec.args === "broken" ? "either" : "dispatch", tool: n.tool.host, wire: n.tool.wire };
    }
    // Arguments that cannot be read do not matter for a name outside the catalogue: answered and
    // counted for the name, as readable ones are (review-r90-discovery.test.ts pins the answer).
    return { kind: "refuse", unknown: [n.text], set: n.reach.length > 0 };
  }
  return { kind: spec.args === "broken" ? "either" : "dispatch", tool: n.tool.host, wire: n.tool.wire };
}

/** Every tool call a transcript holds answered exactly once, in order, right after its call. */
function answeredInOrder(messages: readonly ChatMessage[]): string[] {
  const faults: string[] = [];
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i] as ChatMessage;
    if (message.role === "tool") {
      faults.push(`tool message at ${i} (${message.tool_call_id}) answers no call right before it`);
      continue;
    }
    if (message.role !== "assistant" || !message.tool_calls?.length) continue;
    const ids = message.tool_calls.map((call) => call.id);
    const answers = messages
      .slice(i + 1, i + 1 + ids.length)
      .map((m) => (m.role === "tool" ? m.tool_call_id : `(${m.role})`));
    if (JSON.stringify(answers) !== JSON.stringify(ids))
      faults.push(`calls ${ids.join(",")} at ${i} answered ${answers.join(",")}`);
    i += ids.length;
  }
  return faults;
}

/** Names whose definition a proxied load answer in `messages` holds (only answers to load_tools calls). */
function heldIn(messages: readonly ChatMessage[]): Set<string> {
  const loads = new Set<string>();
  const held = new Set<string>();
  for (const message of messages) {
    if (message.role === "assistant") {
      for (const call of message.tool_calls ?? []) {
        if (call.type === "function" && call.function.name === "load_tools") loads.add(call.id);
      }
    }
    if (message.role !== "tool" || !loads.has(message.tool_call_id) || typeof message.content !== "string")
      continue;
    for (const line of message.content.split("\n")) {
      try {
        const read = JSON.parse(line) as { name?: unknown };
        if (typeof read?.name === "string") held.add(read.name);
      } catch {
        // a line of words, not a definition
      }
    }
  }
  return held;
}

const isSummary = (body: Body) => body.messages[0]?.content === SUMMARISER_SYSTEM;

const STATS: Record<string, number> = {};
const stat = (key: string) => {
  STATS[key] = (STATS[key] ?? 0) + 1;
};

/** A catalogued tool under a meta-tool's wire name is refused before anything is sent. */
const refusedAtStart = (c: Case) =>
  (c.mode !== "eager" && c.collision === "load.tools-listed") ||
  (c.mode === "proxy" && c.collision === "call_tool-listed");

/**
 * An earlier exchange of the conversation: a long question, a proxied load of the first few
 * catalogued tools (written by a run of its own, so the definitions are the loop's bytes), an answer.
 */
async function earlierLoad(m: ReturnType<typeof model>, tools: ToolDefinition[]): Promise<ChatMessage[]> {
  const names = m.listed.slice(0, 3).map((s) => s.wire);
  const server = await startServer({
    replies: [
      { toolCalls: [{ id: "early_1", name: "load_tools", arguments: JSON.stringify({ names }) }] },
      { content: "Earlier: loaded." },
    ],
  });
  try {
    const earlier = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim", toolDiscovery: "proxy" },
      messages: [{ role: "user", content: `An earlier question. ${"context ".repeat(1500)}` }],
      tools,
      catalog: m.catalog,
      dispatch: () => "unused",
    });
    return earlier.messages;
  } finally {
    await server.close();
  }
}

async function runCase(c: Case): Promise<void> {
  const m = model(c);
  const loading = c.mode !== "eager";
  const tools = m.specs.map(definition);
  const scripted: Written[][] = c.turns.map((turn, t) =>
    turn.map((spec, k) => writeCall(m, spec, `c${t}_${k}`)),
  );
  const replies: Reply[] = [
    ...scripted.map((turn) => ({
      toolCalls: turn.map(({ id, name, arguments: a }) => ({ id, name, arguments: a })),
    })),
    { content: "All done." },
  ];
  let mainIndex = 0;
  const server = await startServer({
    replies: (request) => {
      if (isSummary(request.body as Body)) return { content: "Summary: tools were loaded and run." };
      return replies[Math.min(mainIndex++, replies.length - 1)] as Reply;
    },
  });
  const stop = new AbortController();
  const dispatched: DispatchRequest[] = [];
  const told: DispatchRequest[] = [];
  const results: CallResult[] = [];
  const events: RunEvent[] = [];
  let toldCount = 0;
  const carried = c.carried.map((n) => m.named(n).text);
  const preselected = c.preselected?.map((n) => m.named(n).text);
  const question: ChatMessage = { role: "user", content: "Use the tools." };
  // Compacting, the run continues a conversation whose earlier question loaded tools proxied: a
  // fold cuts at a user message, so that earlier stretch (and the definitions it holds) is what goes.
  const history = c.fold === "compact" && !c.collision.endsWith("listed") ? await earlierLoad(m, tools) : [];
  // Pruning (which must keep what holds definitions) or a fold back to the question at a step.
  const foldAt = typeof c.fold === "object" ? c.fold.at + 1 : undefined;
  const beforeStep =
    c.fold === "prune"
      ? (messages: readonly ChatMessage[]) =>
          pruneToolResults(messages as Parameters<typeof pruneToolResults>[0], {
            keepLast: 1,
            maxChars: 10,
          }) as ChatMessage[]
      : foldAt !== undefined
        ? (_messages: readonly ChatMessage[], step: number) => (step === foldAt ? [question] : undefined)
        : undefined;
  // Compacting, a small window with a summariser; a step limit no script reaches.
  const config: LoopConfig = {
    baseUrl: server.baseUrl,
    model: "sim",
    toolDiscovery: c.mode,
    toolOrder: c.toolOrder,
    maxToolIterations: 30,
    maxRetries: 0,
    ...(c.fold === "compact"
      ? { compact: true, contextLength: 3000, tasks: { compaction: { model: "sim" } } }
      : {}),
  };
  let outcome: unknown;
  try {
    outcome = await createRuntime().runAgentLoop({
      config,
      system: SYSTEM,
      messages: [...history, question],
      tools,
      catalog: m.catalog,
      loaded: carried,
      ...(loading && preselected ? { preselected, preselectRouting: c.routing } : {}),
      dedupeToolCalls: c.dedupe,
      parallel: c.parallel,
      signal: stop.signal,
      ...(beforeStep ? { beforeStep } : {}),
      dispatch: async (request, signal) => {
        dispatched.push(request);
        const spec = m.specs.find((s) => s.host === request.name);
        if (spec?.behaviour === "throw") throw new Error(`${request.name} broke`);
        if (spec?.behaviour === "huge") return `${request.name}:${"x".repeat(40_000)}`;
        if (spec?.behaviour === "hang") {
          // Hangs until the run is stopped; the stop comes from here, as a user's would while it hangs.
          setTimeout(() => stop.abort(new Error("stopped by the user")), 1);
          await new Promise((resolve) => signal?.addEventListener("abort", resolve, { once: true }));
          return "late";
        }
        // Enough text that a small window fills within a few steps and compaction folds.
        return `ran ${request.name}: ${"lorem ipsum ".repeat(c.fold === "compact" ? 40 : 1)}`;
      },
      onToolCall: (request) => {
        told.push(request);
        if (++toldCount === c.stopAtCall) stop.abort(new Error("stopped by the user"));
      },
      onToolResult: (result) => results.push(result),
      onEvent: (event) => events.push(event),
    });
  } catch (error) {
    outcome = error;
  } finally {
    await server.close();
  }
  const finished = typeof outcome === "object" && outcome !== null && "turn" in outcome;
  stat(
    `${c.mode} ${finished ? "finished" : String((outcome as Error)?.constructor?.name)} ${(outcome as Error)?.message?.slice(0, 40)}`,
  );
  if (server.chatRequests.some((r) => isSummary(r.body as Body))) stat("compacted");

  if (refusedAtStart(c)) {
    const cause = (outcome as { cause?: unknown }).cause ?? outcome;
    expect(LoopOptionError.isInstance(cause) && cause.code === "tool-name-collision", String(outcome)).toBe(
      true,
    );
    expect(server.chatRequests).toHaveLength(0);
    return;
  }
  if (!finished) {
    const stopped =
      AgentLoopError.isInstance(outcome) && (outcome as Error).message === "stopped by the user";
    expect(stopped || AgentLoopOverflow.isInstance(outcome), `unexpected end: ${String(outcome)}`).toBe(true);
  }
  const state = (finished ? (outcome as AgentLoopResult) : failedRun(outcome)) as NonNullable<
    ReturnType<typeof failedRun>
  >;
  expect(state).toBeDefined();
  const bodies = server.chatRequests.map((r) => r.body as Body).filter((b) => !isSummary(b));

  // Every call in the transcript handed back, and in every request, is answered once, in order.
  expect(answeredInOrder(state.messages)).toEqual([]);
  for (const body of bodies)
    expect(answeredInOrder(body.messages.filter((x) => x.role !== "system"))).toEqual([]);

  // The model, call by call, in the order the loop answered them.
  const answers = new Map(results.map((r) => [r.id, r]));
  const dispatchedIds = new Map(dispatched.map((d) => [d.id, d]));
  const wire = (host: string) => m.specs.find((s) => s.host === host)?.wire ?? host;
  const hostOf = (w: string) => m.byWire.get(w)?.host ?? w;
  // What starts loaded: the newest 16 carried names still catalogued, then the preselection.
  const listedWire = new Set(m.listed.map((s) => s.wire));
  const startCarried: string[] = [];
  if (c.mode === "ondemand") {
    const carriedWire = carried.map((n) => (m.specs.find((s) => s.host === n && s.server) ? wire(n) : n));
    for (let i = carriedWire.length - 1; i >= 0 && startCarried.length < CARRY_CAP; i--) {
      const name = carriedWire[i] as string;
      if (listedWire.has(name) && !startCarried.includes(name)) startCarried.unshift(name);
    }
  }
  const pre: string[] = [];
  if (loading) {
    for (const name of preselected ?? []) {
      const w = m.specs.find((s) => s.host === name && s.server) ? wire(name) : name;
      if (listedWire.has(w) && !pre.includes(w) && pre.length < LOAD_CAP) pre.push(w);
    }
  }
  const loaded =
    c.mode === "ondemand" ? [...startCarried, ...pre.filter((n) => !startCarried.includes(n))] : [];
  // Proxied, the preselection leaves out what the conversation already holds.
  const heldBefore = heldIn(history);
  let toolsLoaded = c.mode === "proxy" ? pre.filter((n) => !heldBefore.has(n)).length : 0;
  let redundantLoads = 0;
  const unknownNames: string[] = [];
  const countUnknown = (names: readonly string[]) => {
    for (const name of names.map(keptName)) {
      if (unknownNames.length < 100 && !unknownNames.includes(name)) unknownNames.push(name);
    }
  };
  const exclusiveFirst = c.mode === "ondemand" && c.routing === "exclusive" && pre.length > 0;
  const catalogLine = loading
    ? catalogText(
        m.catalog.map((s) => ({ name: s.name, tools: s.tools.map((t) => ({ name: wire(t.name) })) })),
        { mode: c.mode as "ondemand" | "proxy" },
      )
    : "";
  const fullSystem = loading ? `${SYSTEM}\n\n${catalogLine}` : SYSTEM;
  const folds = c.fold !== "none" && c.fold !== "prune";
  let previousTools: string | undefined;
  for (const [r, body] of bodies.entries()) {
    // The system text: the same bytes on every step, the catalogue never marked with what is loaded.
    const system = body.messages[0]?.role === "system" ? String(body.messages[0].content) : "";
    const expected = r === 0 && exclusiveFirst ? SYSTEM : fullSystem;
    if (folds && c.fold === "compact")
      expect(system.startsWith(expected), `system of request ${r}`).toBe(true);
    else expect(system, `system of request ${r}`).toBe(expected);
    const names = (body.tools ?? []).map((t) => t.function.name);
    if (c.mode === "eager") expect([...names].sort()).toEqual(m.specs.map((s) => s.wire).sort());
    if (c.mode === "proxy") {
      expect([...names].sort()).toEqual(["call_tool", "load_tools"]);
      if (previousTools !== undefined) expect(JSON.stringify(body.tools)).toBe(previousTools);
    }
    if (c.mode === "ondemand") {
      const want = r === 0 && exclusiveFirst ? [...pre] : ["load_tools", ...loaded];
      expect([...names].sort(), `tools of request ${r}`).toEqual([...new Set(want)].sort());
      // With the caller's order kept, a step's tool array starts with the one before it, byte for byte.
      if (!c.toolOrder && previousTools !== undefined && !(r === 1 && exclusiveFirst)) {
        const before = JSON.parse(previousTools) as unknown[];
        expect(JSON.stringify(body.tools?.slice(0, before.length)), `tool prefix of request ${r}`).toBe(
          previousTools,
        );
      }
    }
    previousTools = JSON.stringify(body.tools);
    // The step's calls, in order, as the model expects them handled.
    const turn = scripted[r];
    if (!turn) continue;
    const held = c.mode === "proxy" ? heldIn(body.messages) : new Set<string>();
    for (const w of turn) {
      const answer = answers.get(w.id);
      // A call the stop reached first runs nothing and loads nothing.
      if (!answer || answer.content === NOT_RUN) continue;
      const e = expectOf(c, m, w);
      const ran = dispatchedIds.get(w.id);
      if (e.kind === "load") {
        const has = c.mode === "proxy" ? held : new Set(loaded);
        const fresh = e.reach.filter((n) => !has.has(n)).slice(0, LOAD_CAP);
        if (e.reach.filter((n) => !has.has(n)).length > LOAD_CAP) stat(`${c.mode} over cap`);
        if (c.mode === "proxy" && fresh.some((n) => heldBefore.has(n))) stat("proxy reload after fold");
        redundantLoads += e.reach.filter((n) => has.has(n)).length;
        toolsLoaded += fresh.length;
        countUnknown(e.unknown);
        expect(answer.source, `${w.id} load answered by the loop`).toBe("loop");
        expect(ran, `${w.id}: load_tools dispatched`).toBeUndefined();
        if (c.mode === "proxy") {
          for (const n of fresh) {
            expect(answer.content, `${w.id} proxied load sends ${n}`).toContain(`{"name":"${n}"`);
            held.add(n);
          }
        } else loaded.push(...fresh);
        continue;
      }
      if (e.kind === "refuse") {
        expect(ran, `${w.id} refused yet dispatched`).toBeUndefined();
        expect(answer.ok, `${w.id} refused`).toBe(false);
        // A server's name or a pattern is answered with the tools it stands for (r90), except on
        // the first step of an exclusive preselection, which points at its shortlist.
        if (e.set && !(r === 0 && exclusiveFirst))
          expect(answer.content, `${w.id} ${w.name}`).toMatch(/stands for/);
        countUnknown(e.unknown);
        continue;
      }
      stat(`${c.mode} ${e.kind} ${ran ? "ran" : "not"}`);
      if (e.kind === "either" && !ran) continue;
      // A number JS cannot hold reaches a tool whose schema takes a string there as the model's digits.
      if (ran && w.arguments.includes(BIG) && e.tool !== "call_tool") {
        expect(ran.args.path, `${w.id} ${w.arguments}`).toBe(BIG);
      }
      if (c.dedupe && !ran && answer.source === "repeat") {
        // Shares the answer of the same call earlier in the step, which ran (and loaded what it needed).
        const same = turn.find(
          (x) =>
            x !== w && answers.get(x.id)?.source === "dispatched" && dispatchedIds.get(x.id)?.name === e.tool,
        );
        expect(same, `${w.id} repeats a call of ${e.tool} that ran`).toBeDefined();
        continue;
      }
      // Dispatched as the model's inner tool, under the call's own id, never as a meta-tool.
      expect(ran?.name, `${w.id} (${w.name} ${w.arguments}) dispatched as`).toBe(e.tool);
      if (c.mode === "ondemand" && e.wire && listedWire.has(e.wire) && !loaded.includes(e.wire)) {
        loaded.push(e.wire);
        toolsLoaded++;
      }
    }
  }
  // Dispatch, the watchers, the events and toolCalls see each dispatched call once, under its id, as the tool it runs.
  const toldById = new Map(told.map((t) => [t.id, t.name]));
  const eventNames = new Map(
    events.flatMap((e) => (e.kind === "tool-call" ? [[e.id, e.name] as const] : [])),
  );
  const outcomeNames = new Map(state.toolCalls.map((t) => [t.id, t.name]));
  expect(new Set(dispatched.map((d) => d.id)).size).toBe(dispatched.length);
  for (const d of dispatched) {
    // Loading, the meta-tools are the loop's own: only the host's catalogued call_tool (on demand) runs.
    if (loading && !(d.name === "call_tool" && c.collision === "call_tool-listed")) {
      expect(["load_tools", "call_tool", "load.tools"]).not.toContain(d.name);
    }
    expect(toldById.get(d.id), `${d.id} told`).toBe(d.name);
    expect(eventNames.get(d.id), `${d.id} event`).toBe(d.name);
    expect(outcomeNames.get(d.id), `${d.id} in toolCalls`).toBe(d.name);
  }
  // A load is told, answered and accounted as load_tools by the loop, never as a host tool of that wire name.
  const outcomes = new Map(state.toolCalls.map((t) => [t.id, t]));
  expect(outcomes.size, "toolCalls holds each call once").toBe(state.toolCalls.length);
  for (const w of scripted.flat()) {
    if (!loading || w.name !== "load_tools" || !toldById.has(w.id)) continue;
    expect(toldById.get(w.id)).toBe("load_tools");
    const accounted = outcomes.get(w.id);
    if (accounted)
      expect([accounted.name, accounted.source]).toEqual(["load_tools", answers.get(w.id)?.source]);
  }
  // Every call this run's transcript holds is accounted for once in toolCalls.
  for (const x of state.messages) {
    if (x.role !== "assistant") continue;
    for (const call of x.tool_calls ?? [])
      if (/^c\d+_\d+$/.test(call.id)) expect(outcomes.has(call.id), call.id).toBe(true);
  }
  // The transcript keeps what the model wrote: the meta-tools under their own names, arguments as written.
  const kept = new Map(
    state.messages
      .flatMap((x) => (x.role === "assistant" ? (x.tool_calls ?? []) : []))
      .map((call) => [call.id, call]),
  );
  for (const w of scripted.flat()) {
    const call = kept.get(w.id);
    if (call?.type !== "function") continue;
    if (loading && (w.name === "load_tools" || w.name === "call_tool")) {
      expect(call.function.name, `${w.id} kept as written`).toBe(w.name);
      if (!w.arguments.endsWith(": ") && !w.arguments.includes("{{") && !w.arguments.includes(BIG))
        expect(call.function.arguments).toBe(w.arguments);
    }
  }
  // A prune never clears a proxied answer that holds definitions.
  if (c.mode === "proxy") {
    for (const body of bodies) {
      for (const x of body.messages) {
        if (x.role !== "tool") continue;
        const whole = answers.get(x.tool_call_id)?.content;
        if (whole !== undefined && holdsDefinitions({ role: "tool", content: whole }))
          expect(x.content).toBe(whole);
      }
    }
  }
  // What comes back: loaded and preselected as the model has them, under the host's names.
  expect(state.loaded, "loaded").toEqual(c.mode === "ondemand" ? loaded.map(hostOf) : []);
  expect(state.preselected, "preselected").toEqual(pre.map(hostOf));
  if (finished) {
    const { metrics } = outcome as AgentLoopResult;
    expect({
      toolsLoaded: metrics.toolsLoaded,
      redundantLoads: metrics.redundantLoads,
      unknownToolNames: metrics.unknownToolNames,
    }).toEqual({ toolsLoaded, redundantLoads, unknownToolNames: unknownNames });
  }
  if (c.mode === "ondemand" && carried.length > CARRY_CAP) stat("carried over cap");
  if (unknownNames.length > 0) stat("unknown counted");
}

describe("tool discovery, whole runs against a model", () => {
  it(
    "every mode answers, dispatches, declares and counts as the model says",
    async () => {
      const seed = process.env.R90_DISCOVERY_SEED;
      await fc.assert(
        fc.asyncProperty(caseArb, runCase),
        propertyRuns(Number(process.env.R90_DISCOVERY_RUNS ?? 120), {
          ...(seed ? { seed: Number(seed) } : {}),
        }),
      );
      if (process.env.R90_STATS) console.log(Object.entries(STATS).sort());
    },
    propertyTimeout(600_000),
  );
});
