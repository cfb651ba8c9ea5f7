#!/usr/bin/env node
// An MCP server written by hand over stdio (no SDK) for the r89 pool model (src/pool-model.test.ts):
// every call says what the server does with it, so a random test can steer each one.
//
//   `act`   (not read-only) takes `mode` (required, one of MODES) and `tag` (a string), and `ms`:
//             ok        answers `ok <tag>`, after `ms` (default 0)
//             rpc-error answers a JSON-RPC error whose message holds the server's API_KEY
//             is-error  answers `isError` content whose text holds API_KEY
//             huge      answers `bytes` (default 200 000) characters of text
//             image     answers a small PNG as image content, with a line of text
//             change    takes `extras` (names): its tools become act, peek and those; it sends
//                       notifications/tools/list_changed, then answers `changed <tag>`
//             exit      writes API_KEY to stderr and exits (code 3) without answering
//             crash     throws (an uncaught error naming API_KEY: stack on stderr, exit code 1)
//             garbage   writes lines that are no JSON-RPC message to stdout, then answers ok
//             hang      never answers
//             bad-result answers a result whose `content` is no list
//             twice     answers `ok <tag>`, then again (the same id) `again <tag>`
//             ask       asks the client first (`ping`, then `elicitation/create`, then
//                       `sampling/createMessage`) and answers `ok <tag>` with what it was told:
//                       `asked <ping>/<elicit>/<sampling>`, each `result` or `error`
//             stray     answers a request id never used, then `ok <tag>`
//           Each answer ends with ` most=<n>`: how many `act` calls ran at once at most so far.
//   `peek`  (read-only) the same modes, not counted in `most`.
//   any extra tool answers `extra <name>`.
//   A hook's call (`{ event, input, context }`) is read as its `input` says.
// A `mode` not in MODES, or no `tag`, is refused with -32602, as a server checking its schema does.
// BOOT=1: right after its first tools/list is answered, the tools become act, peek and `boot`, and
// notifications/tools/list_changed is sent (a server registering tools as it starts).
// LOG=<file>: each notifications/cancelled is appended as a line `cancelled <tag>` (the tag of the
// call it cancels), and each call as `call <tag>`.
import { appendFileSync, existsSync } from "node:fs";
import { createInterface } from "node:readline";

const KEY = process.env.API_KEY ?? "no-key";
const LOG = process.env.LOG;
const MODES = [
  "ok",
  "rpc-error",
  "is-error",
  "huge",
  "image",
  "change",
  "exit",
  "crash",
  "garbage",
  "hang",
  "bad-result",
  "twice",
  "stray",
  "ask",
];
// A 1x1 PNG.
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

// LINGER=1: stays up after its stdin ends (a close has to signal it); gone by itself after two minutes.
if (process.env.LINGER === "1") {
  setInterval(() => {}, 1_000);
  setTimeout(() => process.exit(0), 120_000).unref();
}
// FAIL_FILE=<file>: while that file exists the server refuses to start (a restart that fails).
if (process.env.FAIL_FILE && existsSync(process.env.FAIL_FILE)) {
  process.stderr.write(`refusing to start; key ${KEY}\n`);
  process.exit(1);
}

const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);
const log = (line) => {
  if (LOG) appendFileSync(LOG, `${line}\n`);
};
const schema = {
  type: "object",
  properties: {
    mode: { type: "string", enum: MODES },
    tag: { type: "string" },
    ms: { type: "number" },
    bytes: { type: "number" },
    extras: { type: "array", items: { type: "string" } },
  },
  required: ["mode", "tag"],
};
let extras = [];
let booted = false;
const tools = () => [
  { name: "act", description: "Does what `mode` says.", inputSchema: schema },
  { name: "peek", inputSchema: schema, annotations: { readOnlyHint: true } },
  ...extras.map((name) => ({ name, inputSchema: { type: "object", properties: {} } })),
];

/** What the server asked the client, by its request id: told the client's reply. */
const pending = new Map();
/** Each call under way by request id: its tag (for the cancellation log), and whether `most` counts it. */
const tags = new Map();
let running = 0;
let most = 0;
const text = (t) => ({ content: [{ type: "text", text: `${t} most=${most}` }] });

function call(id, name, args) {
  if (name !== "act" && name !== "peek") {
    if (extras.includes(name)) return send({ jsonrpc: "2.0", id, result: text(`extra ${name}`) });
    return send({ jsonrpc: "2.0", id, error: { code: -32602, message: `Unknown tool: ${name}` } });
  }
  // A hook's call ({ event, input, context }) says what to do in its input.
  if (args.event !== undefined) args = args.input ?? {};
  const { mode, tag } = args;
  if (!MODES.includes(mode) || typeof tag !== "string")
    return send({ jsonrpc: "2.0", id, error: { code: -32602, message: "Invalid arguments: mode and tag" } });
  log(`call ${tag}`);
  const counted = name === "act";
  tags.set(id, { tag, counted });
  if (counted) {
    running++;
    most = Math.max(most, running);
  }
  const answer = (message) => {
    if (counted) running--;
    tags.delete(id);
    send({ jsonrpc: "2.0", id, ...message });
  };
  const after = (fn) => setTimeout(fn, Number(args.ms ?? 0));
  switch (mode) {
    case "ok":
      return after(() => answer({ result: text(`ok ${tag}`) }));
    case "rpc-error":
      return after(() => answer({ error: { code: -32000, message: `refused ${tag} with key ${KEY}` } }));
    case "is-error":
      return after(() =>
        answer({
          result: { content: [{ type: "text", text: `failed ${tag} with key ${KEY}` }], isError: true },
        }),
      );
    case "huge":
      return after(() =>
        answer({ result: { content: [{ type: "text", text: "x".repeat(Number(args.bytes ?? 200_000)) }] } }),
      );
    case "image":
      return after(() =>
        answer({
          result: {
            content: [
              { type: "text", text: `image ${tag}` },
              { type: "image", data: PNG, mimeType: "image/png" },
            ],
          },
        }),
      );
    case "change":
      extras = Array.isArray(args.extras) ? args.extras.map(String) : [];
      send({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
      return after(() => answer({ result: text(`changed ${tag}`) }));
    case "exit":
      return after(() => {
        process.stderr.write(`exiting during ${tag}; key ${KEY}\n`);
        process.exit(3);
      });
    case "crash":
      return after(() => {
        throw new Error(`crashed during ${tag}; key ${KEY}`);
      });
    case "garbage":
      process.stdout.write(`not json ${tag}\n{"half": \n[1,2,3]\n{"jsonrpc":"2.0"}\n`);
      // The call's id with neither result nor error, and a parse error reported for no request.
      send({ jsonrpc: "2.0", id });
      send({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } });
      return after(() => answer({ result: text(`ok ${tag}`) }));
    case "hang":
      return;
    case "bad-result":
      return after(() => answer({ result: { content: `not a list ${tag}` } }));
    case "twice":
      return after(() => {
        answer({ result: text(`ok ${tag}`) });
        send({ jsonrpc: "2.0", id, result: text(`again ${tag}`) });
      });
    case "ask": {
      // Each question the server asks the client, in turn; the call is answered once all three are.
      const asked = [];
      const ask = (method, params) =>
        new Promise((resolve) => {
          const askId = `ask-${tag}-${asked.length}`;
          pending.set(askId, (reply) => {
            asked.push(reply.error ? "error" : "result");
            resolve();
          });
          send({ jsonrpc: "2.0", id: askId, method, params });
        });
      return void (async () => {
        await ask("ping", {});
        await ask("elicitation/create", {
          message: "Which?",
          requestedSchema: { type: "object", properties: { x: { type: "string" } } },
        });
        await ask("sampling/createMessage", {
          messages: [{ role: "user", content: { type: "text", text: "hi" } }],
          maxTokens: 5,
        });
        answer({ result: text(`ok ${tag} asked ${asked.join("/")}`) });
      })();
    }
    case "stray":
      // An answer to a request never made, then the real one.
      send({ jsonrpc: "2.0", id: 987654, result: text(`stray ${tag}`) });
      return after(() => answer({ result: text(`ok ${tag}`) }));
  }
}

/** A line read as JSON, or undefined for a line that is none (skipped, as a client's garbage). */
function parsed(line) {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}

createInterface({ input: process.stdin }).on("line", (line) => {
  const message = parsed(line);
  if (typeof message !== "object" || message === null) return;
  const { id, method, params } = message;
  if (method === undefined && pending.has(id)) {
    const reply = pending.get(id);
    pending.delete(id);
    return reply(message);
  }
  if (method === "notifications/cancelled") {
    const call = tags.get(params?.requestId);
    log(`cancelled ${call?.tag ?? `#${params?.requestId}`}`);
    // A cancelled call runs no more: it is not counted as running beside the next one.
    if (call?.counted) running--;
    tags.delete(params?.requestId);
    return;
  }
  if (id === undefined) return;
  if (method === "initialize")
    return send({
      jsonrpc: "2.0",
      id,
      result: {
        protocolVersion: params.protocolVersion,
        capabilities: { tools: { listChanged: true } },
        serverInfo: { name: process.env.NAME ?? "r89", version: "1.0.0" },
      },
    });
  if (method === "tools/list") {
    send({ jsonrpc: "2.0", id, result: { tools: tools() } });
    if (process.env.BOOT === "1" && !booted) {
      booted = true;
      extras = ["boot"];
      send({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
    }
    return;
  }
  if (method === "tools/call") return call(id, params.name, params.arguments ?? {});
  send({ jsonrpc: "2.0", id, result: {} });
});
