/**
 * The whole loop against a real llama.cpp server (b9749, the tiny model with Qwen2.5's template), at
 * random: fast-check draws loop configurations — 0–4 tools with JSON Schemas of the shapes users
 * write, tool_choice, tool discovery with a catalogue, tools that answer, throw or hang until stopped,
 * a stop at some moment, a step limit, a long history that must be folded to fit — and each is one
 * real run against ONE server, seen through a loopback recorder that keeps every request and status.
 * What every run must hold: it ends in a result or a typed error; every refusal the server sent was
 * answered (a later request of the run went through, or the run ended in an error); every call in
 * the transcript is answered; what a tool received validates against the schema the host wrote; one
 * usage event a turn; and the transcript handed back is one the server takes when sent again.
 * `R92_LIVE_RUNS` (default 3) and `R92_LIVE_SEED` run more, or one again. Skipped with a message
 * where LOOPWRIGHT_LIVE_LLAMA names no live server.
 */
import { appendFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { RunEvent } from "@loopwright/events";
import { type LiveServer, liveServerPath, startLive } from "@loopwright/testkit";
import { Ajv2020 } from "ajv/dist/2020.js";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import type { ChatMessage, ToolDefinition } from "./config.js";
import { AgentLoopError, AgentLoopOverflow, LoopOptionError, ToolIterationLimit } from "./errors.js";
import { createRuntime } from "./runtime.js";

if (!liveServerPath)
  console.warn(
    "loop live model tests skipped: set LOOPWRIGHT_LIVE_LLAMA to a folder holding llama-server and tiny.gguf to run them.",
  );

const RUNS = Number(process.env.R92_LIVE_RUNS ?? "3") || 3;
const SEED = process.env.R92_LIVE_SEED === undefined ? undefined : Number(process.env.R92_LIVE_SEED);
/** Each slot's window: small, so a long history overflows it unless the loop folds it. */
const SLOT = 1024;

// ---------- random schemas, of the shapes users write ----------

type Schema = Record<string, unknown>;

const ODD = fc.constantFrom(
  "plain words",
  'a "quoted" word',
  "back\\slash and \\n written out",
  "line one\nline two",
  "emoji \u{1F680} and accents éà",
  "braces {{ not a template }} {% raw %}",
  "</tool_call> <|im_end|> markup",
  "tab\there",
  "",
);

const leaf: fc.Arbitrary<Schema> = fc.oneof(
  fc.record(
    {
      type: fc.constant("string"),
      description: ODD,
      enum: fc.uniqueArray(fc.constantFrom("red", "green", "blue", "a b", 'q"t', "ünï"), {
        minLength: 1,
        maxLength: 4,
      }),
    },
    { requiredKeys: ["type", "enum"] },
  ),
  fc.record(
    {
      type: fc.constant("string"),
      description: ODD,
      format: fc.constantFrom("date", "time", "date-time", "uuid", "email", "uri"),
    },
    { requiredKeys: ["type", "format"] },
  ),
  fc.record(
    {
      type: fc.constant("string"),
      pattern: fc.constantFrom("^[a-z]+$", "^[A-Z]{2}-\\d{3}$", "^\\w+@\\w+\\.com$", "^(yes|no)$"),
    },
    { requiredKeys: ["type", "pattern"] },
  ),
  fc.record(
    {
      type: fc.constant("string"),
      minLength: fc.integer({ min: 0, max: 3 }),
      maxLength: fc.integer({ min: 4, max: 12 }),
    },
    { requiredKeys: ["type"] },
  ),
  fc.record(
    {
      type: fc.constantFrom("integer", "number"),
      minimum: fc.integer({ min: -100, max: 0 }),
      maximum: fc.integer({ min: 1, max: 1000 }),
      exclusiveMinimum: fc.integer({ min: -200, max: -101 }),
      multipleOf: fc.constantFrom(1, 2, 5),
    },
    { requiredKeys: ["type"] },
  ),
  fc.constant({ type: "boolean" }),
  fc.record({ const: fc.constantFrom("fixed", 3, true) }),
  fc.constant({ type: ["string", "null"] }),
  // Less common, still written: floats for bounds, mixed enums, OpenAPI's nullable, tuples, uniqueness,
  // conditionals and negation, maps by pattern, counted properties.
  fc.record(
    {
      type: fc.constant("number"),
      minimum: fc.constantFrom(0.5, -1.25, 0),
      exclusiveMaximum: fc.constantFrom(2.5, 100, 1e6),
    },
    { requiredKeys: ["type"] },
  ),
  fc.constant({ enum: [1, "one", null, true] }),
  fc.constant({ type: ["integer", "string"] }),
  fc.constant({ type: "string", nullable: true, default: "x", examples: ["a"], title: "T" }),
  fc.constant({ type: "array", prefixItems: [{ type: "string" }, { type: "integer" }], items: false }),
  fc.constant({ type: "array", items: { type: "integer" }, uniqueItems: true, minItems: 1, maxItems: 3 }),
  fc.constant({ type: "string", not: { const: "bad" } }),
  // Parsed, so no object literal here holds a `then` (a thenable, to a linter); the schema does.
  fc.constant(
    JSON.parse('{"type":"object","if":{"properties":{"a":{"const":1}}},"then":{"required":["b"]}}'),
  ),
  fc.constant({
    type: "object",
    patternProperties: { "^x_": { type: "string" } },
    additionalProperties: false,
  }),
  fc.constant({ type: "object", minProperties: 1, maxProperties: 2 }),
  fc.constant({ allOf: [{ type: "object", properties: { a: { type: "string" } } }, { required: ["a"] }] }),
  fc.constant({ type: "string", pattern: "^(?!x)[a-z]{2,4}$" }),
  fc.constant({ type: "string", pattern: "^\\p{L}+$" }),
  fc.constant({ type: "string", format: "regex" }),
  fc.constant({ type: "string", maxLength: 2000 }),
  fc.constant({ type: "array", items: { type: "string" }, minItems: 2, maxItems: 200 }),
  fc.constant({ type: "integer", minimum: 10, maximum: 1 }),
);

const node: fc.Memo<Schema> = fc.memo((depth: number) => {
  if (depth <= 1) return leaf;
  return fc.oneof(
    { weight: 3, arbitrary: leaf },
    {
      weight: 1,
      arbitrary: fc.record(
        {
          type: fc.constant("array"),
          items: node(depth - 1),
          minItems: fc.integer({ min: 0, max: 1 }),
          maxItems: fc.integer({ min: 2, max: 3 }),
        },
        { requiredKeys: ["type", "items"] },
      ),
    },
    { weight: 1, arbitrary: objectOf(node(depth - 1)) },
    {
      weight: 1,
      arbitrary: fc
        .array(node(depth - 1), { minLength: 2, maxLength: 3 })
        .chain((options) => fc.constantFrom({ anyOf: options }, { oneOf: options })),
    },
  );
});

function objectOf(child: fc.Arbitrary<Schema>): fc.Arbitrary<Schema> {
  return fc
    .record({
      props: fc.dictionary(
        fc.constantFrom(
          "city",
          "count",
          "when",
          "tags",
          "opts",
          "x_y",
          "naïve",
          "a-b",
          "id",
          "with space",
          'q"uote',
          "$ref",
          "\u{1F600}",
          "",
        ),
        child,
        {
          minKeys: 0,
          maxKeys: 3,
        },
      ),
      requiredMask: fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
      additional: fc.constantFrom<unknown>(undefined, false, true, { type: "string" }),
      description: fc.option(ODD, { nil: undefined }),
    })
    .map(({ props, requiredMask, additional, description }) => {
      const names = Object.keys(props);
      const required = names.filter((_, i) => requiredMask[i]);
      return {
        type: "object",
        properties: props,
        ...(required.length > 0 ? { required } : {}),
        ...(additional === undefined ? {} : { additionalProperties: additional }),
        ...(description === undefined ? {} : { description }),
      };
    });
}

/** A tool's parameters: an object, sometimes with its parts in `$defs` and reached by `$ref`. */
const parameters: fc.Arbitrary<Schema> = fc
  .tuple(objectOf(node(3)), fc.constantFrom("none", "$defs", "definitions", "recursive"), node(2))
  .map(([schema, refs, shared]) => {
    const properties = schema.properties as object;
    if (refs === "$defs")
      return { ...schema, $defs: { shared }, properties: { ...properties, ref: { $ref: "#/$defs/shared" } } };
    if (refs === "definitions")
      return {
        ...schema,
        definitions: { shared },
        properties: { ...properties, ref: { $ref: "#/definitions/shared" } },
      };
    if (refs === "recursive")
      // A tree: a node's children are nodes (the root itself, by "#").
      return {
        ...schema,
        properties: { ...properties, children: { type: "array", items: { $ref: "#" }, maxItems: 2 } },
      };
    return schema;
  });

type Behaviour = "answer" | "throw" | "hang";

interface ToolDraw {
  name: string;
  description: string;
  parameters: Schema;
  behaviour: Behaviour;
}

const toolDraw = (name: string): fc.Arbitrary<ToolDraw> =>
  fc.record({
    name: fc.constant(name),
    description: ODD,
    parameters,
    behaviour: fc.constantFrom<Behaviour>("answer", "answer", "throw", "hang"),
  });

const tools: fc.Arbitrary<ToolDraw[]> = fc
  .integer({ min: 0, max: 4 })
  .chain((n) =>
    fc.tuple(
      ...Array.from({ length: n }, (_, i) =>
        toolDraw(["get_weather", "lookup", "fs.read", "send_note"][i] ?? `t${i}`),
      ),
    ),
  );

interface Draw {
  tools: ToolDraw[];
  toolChoice: "auto" | "required" | "none" | undefined;
  discovery: "eager" | "ondemand" | "proxy";
  stopAfterMs: number | undefined;
  maxToolIterations: number;
  history: number;
  compact: boolean;
  maxTokens: number;
}

const draws: fc.Arbitrary<Draw> = fc.record({
  tools,
  toolChoice: fc.constantFrom<Draw["toolChoice"]>(undefined, "auto", "required", "none"),
  discovery: fc.constantFrom<Draw["discovery"]>("eager", "eager", "ondemand", "proxy"),
  stopAfterMs: fc.oneof(
    { weight: 3, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: 4000 }) },
  ),
  maxToolIterations: fc.integer({ min: 1, max: 3 }),
  history: fc.constantFrom(0, 0, 2, 12),
  compact: fc.boolean(),
  maxTokens: fc.integer({ min: 16, max: 64 }),
});

// ---------- a loopback recorder in front of the server ----------

interface Seen {
  path: string;
  body: Record<string, unknown> | undefined;
  status: number;
  text: string;
}

/** Passes every request on to `upstream` and keeps it, with the status and (for a refusal) the body. */
async function recorder(upstream: string): Promise<{ server: Server; url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks);
      const entry: Seen = { path: req.url ?? "", body: undefined, status: 0, text: "" };
      try {
        entry.body =
          raw.length > 0 ? (JSON.parse(raw.toString("utf8")) as Record<string, unknown>) : undefined;
      } catch {
        entry.body = undefined;
      }
      seen.push(entry);
      const ac = new AbortController();
      res.on("close", () => ac.abort());
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        if (typeof v === "string" && k !== "host" && k !== "content-length") headers[k] = v;
      fetch(`${upstream}${req.url}`, {
        method: req.method ?? "GET",
        headers,
        ...(raw.length > 0 ? { body: raw } : {}),
        signal: ac.signal,
      })
        .then(async (response) => {
          entry.status = response.status;
          res.writeHead(response.status, Object.fromEntries(response.headers));
          if (!response.body) return void res.end();
          const reader = response.body.getReader();
          const decoder = new TextDecoder();
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            if (response.status >= 400 || entry.text.length < 4000)
              entry.text += decoder.decode(value, { stream: true });
            res.write(value);
          }
          res.end();
        })
        .catch(() => {
          if (entry.status === 0) entry.status = -1;
          res.destroy();
        });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}`, seen };
}

// ---------- checks ----------

const ajv = new Ajv2020({ strict: false, allErrors: true });
for (const [name, re] of Object.entries({
  date: /^\d{4}-\d{2}-\d{2}$/,
  time: /^\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})?$/,
  "date-time": /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|z|[+-]\d{2}:\d{2})?$/,
  uuid: /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/,
  email: /^[^\s@]+@[^\s@]+$/,
  uri: /^[a-zA-Z][a-zA-Z0-9+.-]*:\S*$/,
}))
  ajv.addFormat(name, re);

/**
 * The original schema as far as a grammar holds the model to it: the keywords schema-compat's
 * README says go to the description (a pattern with a lookaround or `\p{…}`, uniqueness, `not`,
 * conditionals, property counts, `multipleOf`, a `regex` format) are left out, and `oneOf` is read
 * as `anyOf` (strict mode sends it so; branches that overlap make a value valid twice). What these
 * leave unchecked is the tool's own validation to name, as the README says.
 */
function enforced(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(enforced);
  if (typeof schema !== "object" || schema === null) return schema;
  const out: Record<string, unknown> = {};
  const { minimum, maximum } = schema as { minimum?: unknown; maximum?: unknown };
  // Bounds that admit no value go to the description, with a notice.
  const empty = typeof minimum === "number" && typeof maximum === "number" && minimum > maximum;
  for (const [key, value] of Object.entries(schema)) {
    if (empty && (key === "minimum" || key === "maximum")) continue;
    if (
      ["uniqueItems", "not", "if", "then", "else", "minProperties", "maxProperties", "multipleOf"].includes(
        key,
      )
    )
      continue;
    if (key === "pattern" && typeof value === "string" && /\(\?|\\p/.test(value)) continue;
    if (key === "format" && value === "regex") continue;
    if (key === "properties" || key === "$defs" || key === "definitions" || key === "patternProperties") {
      out[key] = Object.fromEntries(Object.entries(value as object).map(([k, v]) => [k, enforced(v)]));
      continue;
    }
    out[key === "oneOf" ? "anyOf" : key] = enforced(value);
  }
  return out;
}

/** Which ids of the transcript's calls no tool message answers. */
function unanswered(messages: readonly ChatMessage[]): string[] {
  const asked: string[] = [];
  const answered = new Set<string>();
  for (const m of messages) {
    const calls = (m as { tool_calls?: { id: string }[] }).tool_calls;
    if (m.role === "assistant" && Array.isArray(calls)) for (const c of calls) asked.push(c.id);
    if (m.role === "tool") answered.add((m as { tool_call_id: string }).tool_call_id);
  }
  return asked.filter((id) => !answered.has(id));
}

const typed = (error: unknown): boolean =>
  AgentLoopError.isInstance(error) ||
  ToolIterationLimit.isInstance(error) ||
  error instanceof AgentLoopOverflow ||
  error instanceof LoopOptionError;

(liveServerPath ? describe : describe.skip)(
  "the whole loop at random, against a live llama.cpp server",
  () => {
    let live: LiveServer;
    let rec: Awaited<ReturnType<typeof recorder>>;
    beforeAll(async () => {
      live = await startLive({ contextSize: SLOT * 2, slots: 2 });
      rec = await recorder(live.origin);
    }, 90_000);
    afterAll(async () => {
      await new Promise<void>((resolve) => (rec ? rec.server.close(() => resolve()) : resolve()));
      await live?.stop();
    }, 20_000);

    it("every run ends typed, answers every call and refusal, hands tools valid arguments, and leaves a transcript the server takes", {
      timeout: propertyTimeout(40_000 + RUNS * 70_000),
    }, async () => {
      await fc.assert(
        fc.asyncProperty(draws, async (draw) => {
          const from = rec.seen.length;
          const received: { name: string; args: unknown }[] = [];
          const events: RunEvent[] = [];
          const controller = new AbortController();
          const timers: NodeJS.Timeout[] = [];
          if (draw.stopAfterMs !== undefined)
            timers.push(setTimeout(() => controller.abort(), draw.stopAfterMs));
          // The run's own bound (a shared CPU runs the tiny model at a few tokens a second, so a
          // slow run is stopped, not failed); a run that does not end once stopped is a hang, and
          // fails the property rather than the test's timeout.
          let hung: (error: Error) => void = () => {};
          const hang = new Promise<never>((_, reject) => {
            hung = reject;
          });
          timers.push(
            setTimeout(() => {
              controller.abort(new Error("watchdog"));
              timers.push(
                setTimeout(() => hung(new Error("hang: the run did not end once stopped")), 30_000),
              );
            }, 60_000),
          );
          const definitions: ToolDefinition[] = draw.tools.map((t) => ({
            type: "function",
            function: { name: t.name, description: t.description, parameters: t.parameters },
          }));
          const history: ChatMessage[] = [];
          for (let i = 0; i < draw.history; i++)
            history.push(
              {
                role: "user",
                content: `Question ${i}: ${"tell me about the weather in many towns ".repeat(8)}`,
              },
              { role: "assistant", content: `Answer ${i}: ${"it was sunny and mild there ".repeat(8)}` },
            );
          const messages: ChatMessage[] = [
            ...history,
            { role: "user", content: "What is the weather in Paris?" },
          ];
          let outcome:
            | { ok: true; messages: ChatMessage[] }
            | { ok: false; error: unknown; messages: ChatMessage[] };
          try {
            const running = createRuntime().runAgentLoop({
              config: {
                baseUrl: `${rec.url}/v1`,
                model: "tiny",
                maxTokens: draw.maxTokens,
                temperature: 0,
                requestTimeoutSeconds: 50,
                maxRetries: 1,
                maxRetryWaitSeconds: 2,
                toolTimeoutSeconds: 3,
                maxToolIterations: draw.maxToolIterations,
                toolDiscovery: draw.discovery,
                contextLength: SLOT,
                ...(draw.compact
                  ? { compact: true, tasks: { compaction: { model: "tiny", maxTokens: 48 } } }
                  : {}),
              },
              system: "You answer briefly.",
              messages,
              tools: definitions,
              ...(draw.discovery === "eager" || definitions.length === 0
                ? {}
                : {
                    catalog: [
                      {
                        name: "tools",
                        tools: draw.tools.map((t) => ({ name: t.name, description: t.description })),
                      },
                    ],
                  }),
              ...(draw.toolChoice === undefined
                ? {}
                : { beforeStep: () => ({ toolChoice: draw.toolChoice }) }),
              signal: controller.signal,
              onEvent: (event) => events.push(event),
              dispatch: ({ name, args }, signal) => {
                received.push({ name, args });
                const tool = draw.tools.find((t) => t.name === name);
                if (tool?.behaviour === "throw") throw new Error(`tool ${name} failed`);
                if (tool?.behaviour === "hang")
                  return new Promise((_, reject) =>
                    signal?.addEventListener("abort", () => reject(new Error("stopped"))),
                  );
                return `result of ${name}`;
              },
            });
            const result = await Promise.race([running, hang]);
            outcome = { ok: true, messages: result.messages };
          } catch (error) {
            const run = (error as { run?: { messages?: ChatMessage[] } }).run;
            outcome = { ok: false, error, messages: run?.messages ?? [] };
          } finally {
            for (const t of timers) clearTimeout(t);
          }
          const seen = rec.seen.slice(from);
          const label = JSON.stringify({ ...draw, tools: draw.tools.map((t) => t.name) });
          const why = !outcome.ok
            ? `${(outcome.error as Error)?.name}: ${(outcome.error as Error)?.message}`
            : "ok";
          console.log(
            `[r92f] ${label} -> ${why.slice(0, 300)}; requests ${seen.map((s) => `${s.path}:${s.status}`).join(" ")}`,
          );
          for (const s of seen)
            if (s.status >= 400) console.log(`[r92f]   refused ${s.status}: ${s.text.slice(0, 400)}`);
          if (process.env.R92_LOG)
            appendFileSync(
              process.env.R92_LOG,
              `${JSON.stringify({
                draw,
                why,
                notices: events.filter((e) => e.kind === "notice").map((e) => (e as { text?: string }).text),
                seen: seen.map((s) => ({
                  path: s.path,
                  status: s.status,
                  text: s.status >= 400 ? s.text : "",
                })),
              })}\n`,
            );

          // Ends in a result or a typed error naming what was wrong.
          if (!outcome.ok) {
            expect(typed(outcome.error), `untyped: ${why}`).toBe(true);
            expect((outcome.error as Error).message.length).toBeGreaterThan(0);
            expect((outcome.error as Error).message).not.toMatch(/^hang:/);
          }
          // Every refusal answered: a later request of the run went through, or the run failed.
          const refusedAt = seen.findIndex((s) => s.status >= 400 || s.status === -1);
          if (refusedAt >= 0 && outcome.ok)
            expect(
              seen.slice(refusedAt + 1).some((s) => s.status === 200),
              `refusal left unanswered: ${seen[refusedAt]?.text.slice(0, 300)}`,
            ).toBe(true);
          // Every call in the transcript answered.
          expect(unanswered(outcome.messages)).toEqual([]);
          // What each tool received validates against the schema its host wrote.
          for (const { name, args } of received) {
            const tool = draw.tools.find((t) => t.name === name);
            if (!tool) continue;
            const validate = ajv.compile(enforced(tool.parameters) as object);
            expect(
              validate(args),
              `${name} got ${JSON.stringify(args)}: ${ajv.errorsText(validate.errors)}`,
            ).toBe(true);
          }
          // One usage event a turn.
          const turns = events.filter((e) => e.kind === "turn").length;
          const usages = events.filter((e) => e.kind === "usage").length;
          expect(usages).toBe(turns);
          // The transcript handed back is one the server takes, sent again as it is.
          const last = [...seen].reverse().find((s) => s.path.endsWith("/chat/completions") && s.body?.tools);
          // Rendered, not answered: /apply-template reads the request as /chat/completions does
          // (messages, tools) and renders the prompt, without a reply whose first token could be a
          // cut-off call the server's parser then fails on.
          const again = await fetch(`${live.origin}/apply-template`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({
              messages: [{ role: "system", content: "You answer briefly." }, ...outcome.messages],
              ...(last?.body?.tools ? { tools: last.body.tools } : {}),
            }),
          });
          const text = await again.text();
          const overflowed = !outcome.ok && outcome.error instanceof AgentLoopOverflow;
          if (!(overflowed && /exceed_context_size|context/i.test(text)))
            expect(again.status, `the server refused the transcript again: ${text.slice(0, 400)}`).toBe(200);
        }),
        propertyRuns(RUNS, { ...(SEED === undefined ? {} : { seed: SEED }), endOnFailure: true }),
      );
    });
  },
);
