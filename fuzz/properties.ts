/**
 * The invariants every public parser keeps, as fast-check properties: round-trip, idempotence,
 * split-equals-whole, and never a raw crash on JSON input (a typed error is an answer). Each case
 * is timed; one over the per-case limit fails the property, and fast-check shrinks it to the
 * smallest input that is still slow.
 */
import fc from "fast-check";
import {
  EndpointConfigError,
  firstTokenMs,
  listedWindow,
  listingEntries,
  timeoutMs,
} from "../packages/client/src/index.js";
import { runMetrics } from "../packages/events/src/index.js";
import { contextTokens, LedgerError } from "../packages/ledger/src/index.js";
import { backoffMs, isOverflow, isTransient, readRefusal } from "../packages/negotiate/src/index.js";
import {
  checkStrictSchema,
  dropOptionalNulls,
  relaxSchema,
  restoreArguments,
  SchemaCompatError,
  sanitizeSchema,
} from "../packages/schema-compat/src/index.js";
import { AgentSpecError, parseSpec, resolveAgentSpec } from "../packages/spec/src/index.js";
import { FenceSplitter, stripThinking } from "../packages/stream/src/index.js";
import {
  parseJson,
  parseToolArguments,
  recoverToolCalls,
  ToolArgumentsError,
} from "../packages/tool-calls/src/index.js";
import { checkSpec, checkText, documents } from "./documents.js";

/** One property: its name and the fast-check property, sized by the run. */
export interface Target {
  name: string;
  // biome-ignore lint/suspicious/noExplicitAny: each property has its own tuple of generated values
  property: (limitMs: number) => fc.IProperty<any>;
  /** The share of the run's cases it takes (1 when unset): a costly property runs fewer. */
  share?: number;
}

/** Runs `fn` and fails the case when it takes longer than `limitMs`. */
function timed<T>(limitMs: number, fn: () => T): T {
  const start = performance.now();
  const value = fn();
  const ms = performance.now() - start;
  if (ms > limitMs) throw new Error(`one case took ${ms.toFixed(0)} ms, over the ${limitMs} ms limit`);
  return value;
}

/** Runs `fn`, allowing only the typed errors `allowed` recognises. */
function typedOnly(fn: () => unknown, allowed: (error: unknown) => boolean): void {
  try {
    fn();
  } catch (error) {
    if (!allowed(error)) throw error;
  }
}

const TOOLS = ["f", "read_file", "write_file"];
const text = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.string({ unit: "binary", maxLength: 200 }),
  fc
    .array(
      fc.constantFrom(
        "{",
        "}",
        "[",
        "]",
        '"',
        "'",
        ":",
        ",",
        "\\",
        "//",
        "#",
        "/*",
        "*/",
        "\n",
        " ",
        "```",
        "```json\n",
        "<tool_call>",
        "</tool_call>",
        "<function=f>",
        "<parameter=a>",
        "[TOOL_CALLS]",
        "to=functions.f",
        "<|channel|>commentary",
        "<|message|>",
        "<think>",
        "</think>",
        '"name": "f"',
        '"arguments": {',
        "True",
        "None",
        "a",
        "1",
      ),
      { maxLength: 60 },
    )
    .map((parts) => parts.join("")),
);
const args = fc
  .dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 })
  .map((v) => JSON.parse(JSON.stringify(v)) as Record<string, unknown>);
const schemaArb = fc.letrec((tie) => ({
  schema: fc.oneof(
    { depthSize: "small" },
    fc.record(
      {
        type: fc.constantFrom("string", "number", "integer", "boolean", "null"),
        pattern: fc.constantFrom("abc", "^.+$", "[^a]", "\\S"),
        format: fc.constantFrom("email", "uri", "date-time"),
        minLength: fc.nat(5),
      },
      { requiredKeys: ["type"] },
    ),
    fc.record(
      {
        type: fc.constant("object"),
        properties: fc.dictionary(fc.string({ maxLength: 6 }), tie("schema"), { maxKeys: 4 }),
        required: fc.array(fc.string({ maxLength: 6 }), { maxLength: 3 }),
        additionalProperties: fc.boolean(),
      },
      { requiredKeys: ["type"] },
    ),
    fc.record(
      { type: fc.constant("array"), items: tie("schema"), minItems: fc.nat(3) },
      { requiredKeys: ["type"] },
    ),
    fc.record({ anyOf: fc.array(tie("schema"), { minLength: 1, maxLength: 3 }) }),
    fc.record({ $ref: fc.constantFrom("#/$defs/a", "#/$defs/b", "#", "#/nowhere") }),
  ),
})).schema;
const rootSchema = fc
  .tuple(schemaArb, schemaArb, schemaArb)
  .map(([root, a, b]) => ({ ...(root as object), $defs: { a, b } }) as Record<string, unknown>);

export const TARGETS: Target[] = [
  {
    name: "parseToolArguments: JSON objects round-trip exactly",
    property: (limit) =>
      fc.property(args, (value) => {
        const read = timed(limit, () => parseToolArguments(JSON.stringify(value)));
        if (JSON.stringify(read.value) !== JSON.stringify(value)) throw new Error("read back differently");
      }),
  },
  {
    name: "parseToolArguments: any text is an object or a ToolArgumentsError",
    property: (limit) =>
      fc.property(text, (raw) =>
        timed(limit, () =>
          typedOnly(() => parseToolArguments(raw, { finishReason: "length" }), ToolArgumentsError.isInstance),
        ),
      ),
  },
  {
    name: "parseToolArguments: JSON values given as values never crash",
    property: (limit) =>
      fc.property(fc.jsonValue(), (value) =>
        timed(limit, () => typedOnly(() => parseToolArguments(value), ToolArgumentsError.isInstance)),
      ),
  },
  {
    name: "parseJson: a JSON reply round-trips; any text answers without throwing",
    property: (limit) =>
      fc.property(fc.jsonValue(), text, (value, noise) => {
        const json = JSON.stringify(value);
        const read = timed(limit, () => parseJson(json));
        if (JSON.stringify(read) !== json) throw new Error("read back differently");
        timed(limit, () => parseJson(noise));
      }),
  },
  {
    name: "recoverToolCalls: a Hermes call round-trips, whatever its strings hold",
    property: (limit) =>
      fc.property(args, text, (value, noise) => {
        const reply = `<tool_call>${JSON.stringify({ name: "write_file", arguments: value })}</tool_call>`;
        const { calls } = timed(limit, () => recoverToolCalls(reply, TOOLS));
        if (calls.length !== 1 || JSON.stringify(calls[0]?.args) !== JSON.stringify(value))
          throw new Error("lost the call");
        timed(limit, () => recoverToolCalls(noise, TOOLS));
      }),
  },
  {
    name: "recoverToolCalls: a reply naming no tool comes back unchanged",
    property: (limit) =>
      fc.property(text, (reply) => {
        const out = timed(limit, () => recoverToolCalls(reply, ["no_such_tool_anywhere"]));
        if (out.text !== reply || out.calls.length > 0) throw new Error("changed a reply with no call");
      }),
  },
  {
    name: "FenceSplitter: any split reads the same as the whole",
    property: (limit) =>
      fc.property(text, fc.array(fc.nat(), { maxLength: 8 }), (reply, cuts) => {
        const whole = stripThinking(reply);
        const at = [...new Set(cuts.map((c) => c % (reply.length + 1)))].sort((a, b) => a - b);
        const splitter = new FenceSplitter();
        timed(limit, () => {
          let from = 0;
          for (const cut of [...at, reply.length]) {
            splitter.push(reply.slice(from, cut));
            from = cut;
          }
          splitter.flush();
        });
        if (splitter.content !== whole.content || splitter.reasoning !== whole.reasoning)
          throw new Error("split differs from whole");
      }),
  },
  {
    name: "sanitizeSchema: strict, idempotent, never a raw crash",
    property: (limit) =>
      fc.property(rootSchema, (schema) => {
        const once = timed(limit, () => sanitizeSchema(schema));
        const twice = timed(limit, () => sanitizeSchema(once));
        if (JSON.stringify(once) !== JSON.stringify(twice)) throw new Error("a second pass changed it");
        if (checkStrictSchema(once).length > 0) throw new Error("not strict");
        timed(limit, () => relaxSchema(schema));
      }),
  },
  {
    name: "schema-compat: JSON values never crash the checkers",
    property: (limit) =>
      fc.property(fc.jsonValue(), (value) =>
        timed(limit, () => {
          typedOnly(() => sanitizeSchema(value), SchemaCompatError.isInstance);
          typedOnly(() => relaxSchema(value), SchemaCompatError.isInstance);
          typedOnly(() => checkStrictSchema(value as never), SchemaCompatError.isInstance);
          typedOnly(() => dropOptionalNulls(value as never, value as never), SchemaCompatError.isInstance);
          typedOnly(() => restoreArguments(value as never, value as never), SchemaCompatError.isInstance);
        }),
      ),
  },
  {
    name: "negotiate: error bodies never crash the classifiers; overflow is never transient",
    property: (limit) =>
      fc.property(
        fc.jsonValue(),
        fc.constantFrom(undefined, 400, 408, 409, 413, 425, 429, 500, 503),
        (body, status) =>
          timed(limit, () => {
            const error = status === undefined ? body : { status, error: body };
            readRefusal(error);
            if (isOverflow(error) && isTransient(error)) throw new Error("both an overflow and transient");
            const wait = backoffMs(status ?? 0, error, { baseMs: 0 });
            if (!Number.isFinite(wait)) throw new Error(`backoffMs answered ${wait}`);
          }),
      ),
  },
  {
    name: "client: listings and timeouts from any JSON never crash",
    property: (limit) =>
      fc.property(fc.jsonValue(), fc.oneof(fc.double(), fc.integer()), (body, seconds) =>
        timed(limit, () => {
          for (const entry of listingEntries(body) ?? []) {
            const window = listedWindow(entry);
            if (window !== undefined && !(Number.isInteger(window) && window >= 1))
              throw new Error(`window ${window}`);
          }
          typedOnly(() => {
            for (const ms of [
              timeoutMs({ requestTimeoutSeconds: seconds }),
              firstTokenMs({ firstTokenSeconds: seconds }),
            ]) {
              if (ms !== undefined && !(ms > 0 && ms <= 2_147_483_647)) throw new Error(`timer ${ms}`);
            }
          }, EndpointConfigError.isInstance);
        }),
      ),
  },
  {
    name: "spec: any JSON document is a result, never a throw",
    property: (limit) =>
      fc.property(fc.jsonValue(), (doc) =>
        timed(limit, () => {
          const { spec } = parseSpec(doc);
          if (spec) typedOnly(() => resolveAgentSpec([spec]), AgentSpecError.isInstance);
        }),
      ),
  },
  {
    // See documents.ts: what each reader promises, and the documented limits left out.
    name: "spec: a pasted document's planted secrets are all taken out, a clean one kept; fixed points",
    property: (limit) =>
      fc.property(
        fc.oneof(documents(false), documents(true)),
        (doc) => void timed(limit, () => checkText(doc)),
      ),
  },
  {
    // A quarter of the cases: one case exports and scans a whole spec holding the document five times.
    name: "spec: a pasted document exports and is flagged where its text readers say, in every place",
    share: 0.25,
    property: (limit) =>
      fc.property(
        fc.oneof(documents(false), documents(true)),
        (doc) => void timed(limit, () => checkSpec(doc)),
      ),
  },
  {
    name: "events: runMetrics adds up any JSON events without throwing",
    property: (limit) =>
      fc.property(
        fc.array(
          fc.oneof(
            fc.jsonValue(),
            fc.record({
              kind: fc.constantFrom("usage", "tool-result", "done"),
              name: fc.string(),
              ok: fc.boolean(),
              turn: fc.jsonValue(),
            }),
          ),
        ),
        (events) => void timed(limit, () => runMetrics(events as never)),
      ),
  },
  {
    name: "ledger: contextTokens answers parts that add up, or a LedgerError",
    property: (limit) =>
      fc.property(
        fc.jsonValue(),
        fc.oneof(fc.constant(undefined), fc.double({ min: 0, max: 1e6, noNaN: true })),
        (messages, promptTokens) =>
          timed(limit, () =>
            typedOnly(() => {
              const parts = contextTokens({ messages } as never, { promptTokens });
              if (parts.system + parts.tools + parts.history + parts.toolResults !== parts.total)
                throw new Error("parts do not add up");
            }, LedgerError.isInstance),
          ),
      ),
  },
];
