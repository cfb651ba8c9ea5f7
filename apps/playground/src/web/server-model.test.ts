// r92d: the web server's HTTP API against a model. A fast-check sequence of what pages and programs
// send it — prompts (some while a run goes), 0–3 event readers joining at random points and some
// reconnecting mid-run with Last-Event-ID, stops (running, finished, unknown), resets, specs (valid,
// invalid, holding secrets), state reads and malformed requests — against the playground's own server
// talking over loopback HTTP to the testkit's endpoint, whose replies the test scripts per run: text,
// a tool step, a hung tool, an error, a cut stream. Checked: every status against the model; every
// reader of a run sees the same events in seq order, no gap, no repeat across its reconnects, ending
// at `done` (`stopped` for a stopped run); after a reset the next run's first request holds no old
// message; every request the endpoint gets is well formed; no key or spec secret in any answer; and
// nothing left open after `close()`.
//
// R92_PAGE_RUNS (default 12) sequences; R92_PAGE_SEED replays one.
import { connect } from "node:net";
import type { RunEvent, SequencedEvent } from "@loopwright/events";
import { type RecordedRequest, type Reply, startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../../test-support/properties.js";
import { startWebServer, WEB_SYSTEM, type WebServer } from "./server.js";

const RUNS = Number(process.env.R92_PAGE_RUNS ?? 12);
const SEED = process.env.R92_PAGE_SEED ? Number(process.env.R92_PAGE_SEED) : undefined;

/** The endpoint's key, and secrets a loaded spec holds: none may come back in any answer. */
const KEY = "sk-r92d-endpoint-KEY-0123456789abcdef";
const SPEC_SECRETS = [
  "sk-r92d-spec-env-SECRET-4242424242",
  "r92d-spec-header-SECRET-77777777",
  "r92d-url-password-SECRET-31337",
  "r92d-url-query-SECRET-27182818",
];

/** One step of a run's script: what the endpoint answers to each of the run's requests, in turn. */
type Step = "text" | "slow" | "tool" | "hang" | "error" | "cut";
const step: fc.Arbitrary<Step> = fc.constantFrom("text", "slow", "tool", "hang", "error", "cut");

type Action =
  | { kind: "start"; plan: Step[] }
  | { kind: "empty-prompt" }
  | { kind: "watch"; reconnectAfter: number | null; run: number; by: "header" | "query" }
  | { kind: "bad-resume"; id: string }
  | { kind: "stop"; which: "current" | "older" | "unknown" }
  | { kind: "reset" }
  | { kind: "spec"; which: "valid" | "invalid" | "secrets" | "url-secrets" | "not-text" }
  | { kind: "state" }
  | { kind: "malformed"; which: "content-type" | "bad-json" | "huge" | "unknown-path" | "traversal" }
  | { kind: "wait" };

const action: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("start" as const),
      plan: fc.array(step, { minLength: 1, maxLength: 3 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "empty-prompt" as const }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("watch" as const),
      reconnectAfter: fc.option(fc.integer({ min: 1, max: 6 })),
      run: fc.integer({ min: 0, max: 3 }),
      by: fc.constantFrom("header" as const, "query" as const),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("bad-resume" as const),
      id: fc.constantFrom("abc", "-1", "1.5", "1e3", "1:2:3", "0x10"),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("stop" as const),
      which: fc.constantFrom("current" as const, "current" as const, "older" as const, "unknown" as const),
    }),
  },
  { weight: 2, arbitrary: fc.constant({ kind: "reset" as const }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("spec" as const),
      which: fc.constantFrom(
        "valid" as const,
        "invalid" as const,
        "secrets" as const,
        "url-secrets" as const,
        "not-text" as const,
      ),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "state" as const }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("malformed" as const),
      which: fc.constantFrom(
        "content-type" as const,
        "bad-json" as const,
        "huge" as const,
        "unknown-path" as const,
        "traversal" as const,
      ),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "wait" as const }) },
);

interface Message {
  role: string;
  content?: unknown;
  tool_calls?: { id: string }[];
  tool_call_id?: string;
}

/** The last user message of a request: the prompt of the run it belongs to, which names its script. */
function lastPrompt(request: RecordedRequest): string {
  const messages = (request.body as { messages?: Message[] }).messages ?? [];
  const users = messages.filter((m) => m.role === "user");
  return String(users.at(-1)?.content ?? "");
}

/** How many of the run's own model turns a request follows (assistant messages after its prompt). */
function turnsSoFar(request: RecordedRequest): number {
  const messages = (request.body as { messages?: Message[] }).messages ?? [];
  let at = messages.length - 1;
  while (at >= 0 && messages[at]!.role !== "user") at--;
  return messages.slice(at + 1).filter((m) => m.role === "assistant").length;
}

/** Every problem with a request's messages: a call unanswered, an answer to no call, roles out of turn. */
export function malformed(messages: Message[]): string[] {
  const problems: string[] = [];
  let open = new Set<string>();
  let previous = "";
  messages.forEach((m, i) => {
    if (m.role === "system") {
      if (i !== 0) problems.push(`system message at ${i}`);
    } else if (m.role === "tool") {
      if (!m.tool_call_id || !open.has(m.tool_call_id)) problems.push(`tool answer to no open call at ${i}`);
      else open.delete(m.tool_call_id);
    } else {
      if (open.size > 0) problems.push(`calls ${[...open].join(", ")} unanswered before ${m.role} at ${i}`);
      if (m.role === previous) problems.push(`two ${m.role} messages in a row at ${i}`);
      open = new Set((m.tool_calls ?? []).map((c) => c.id));
    }
    previous = m.role;
  });
  if (open.size > 0) problems.push(`calls ${[...open].join(", ")} unanswered at the end`);
  const last = messages.at(-1)?.role;
  if (last !== "user" && last !== "tool") problems.push(`the request ends with ${last}`);
  return problems;
}

interface Frame {
  id: string;
  event: SequencedEvent<RunEvent>;
}

/** Everything one reader of a run saw, over its reconnects. */
interface Reading {
  run: number;
  frames: Frame[];
  statuses: number[];
  raw: string[];
}

/**
 * Follows a run's events to their end; after `reconnectAfter` events it drops the connection and
 * comes back with the Last-Event-ID it has, as a browser's EventSource does.
 */
async function follow(
  url: string,
  run: number,
  reconnectAfter: number | null,
  by: "header" | "query" = "header",
): Promise<Reading> {
  const reading: Reading = { run, frames: [], statuses: [], raw: [] };
  let lastId: string | undefined;
  let dropAfter = reconnectAfter;
  for (let attempt = 0; attempt < 20; attempt++) {
    const controller = new AbortController();
    const res = await fetch(lastId && by === "query" ? `${url}?after=${encodeURIComponent(lastId)}` : url, {
      headers: lastId && by === "header" ? { "last-event-id": lastId } : {},
      signal: controller.signal,
    }).catch(() => undefined);
    if (!res) {
      // The server is gone (closed while this reader was between two connections).
      reading.statuses.push(0);
      return reading;
    }
    reading.statuses.push(res.status);
    if (res.status !== 200) {
      reading.raw.push(await res.text());
      return reading;
    }
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let count = 0;
    let ended = false;
    let dropped = false;
    while (!ended && !dropped) {
      const { done, value } = await reader.read();
      if (done) {
        ended = true;
        break;
      }
      const text = decoder.decode(value, { stream: true });
      reading.raw.push(text);
      buffer += text;
      let end = buffer.indexOf("\n\n");
      while (end >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        end = buffer.indexOf("\n\n");
        const id = /^id: (.*)$/m.exec(frame)?.[1];
        const data = /^data: (.*)$/m.exec(frame)?.[1];
        if (id === undefined || data === undefined) continue;
        const event = JSON.parse(data) as SequencedEvent<RunEvent>;
        reading.frames.push({ id, event });
        lastId = id;
        count++;
        if (event.kind === "done") ended = true;
        else if (dropAfter !== null && count >= dropAfter) {
          dropped = true;
          break;
        }
      }
    }
    if (dropped) {
      // Once: the reader then follows to the end.
      dropAfter = null;
      controller.abort();
      continue;
    }
    controller.abort();
    return reading;
  }
  return reading;
}

/** Writes raw bytes on a connection of its own; the status line that came back. */
function rawStatus(port: number, parts: (string | Buffer)[]): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let text = "";
    socket.on("data", (chunk) => {
      text += chunk.toString("latin1");
    });
    socket.on("error", () => {});
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(text);
    };
    socket.on("close", done);
    const timer = setTimeout(done, 3000);
    socket.on("connect", () => {
      for (const part of parts) socket.write(part);
    });
  });
}

/** The handles still open on `port`: its listener, and either end of a connection to it. */
function openOn(port: number): string[] {
  const handles = (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles();
  return handles.flatMap((handle) => {
    const h = handle as {
      localPort?: number;
      remotePort?: number;
      address?: () => unknown;
      destroyed?: boolean;
    };
    const listening =
      typeof h.address === "function" ? (h.address() as { port?: number } | null)?.port : undefined;
    if (h.destroyed) return [];
    if (h.localPort === port || h.remotePort === port || listening === port)
      return [`${h.localPort ?? listening} -> ${h.remotePort}`];
    return [];
  });
}

interface RunModel {
  index: number;
  id: string;
  prompt: string;
  plan: Step[];
  /** Stopped from the page while it was surely running (a hung tool): it ends stopped. */
  stoppedRunning: boolean;
  /** Sent a stop at any time (it may have ended by itself first). */
  stopSent: boolean;
  hangs: boolean;
  readers: Promise<Reading>[];
  /** The index of the endpoint's first request of this run. */
  firstRequest: number;
  /** The conversation was new (a reset, or none yet) when the run started. */
  fresh: boolean;
  /** The runs before it since the conversation was new, oldest first. */
  since: RunModel[];
  /** The system prompt it was asked with: the last applied spec's, else the playground's own. */
  system: string;
}

/**
 * Whether a run's prompt is kept in the conversation for the next run: a run that finished, or one a
 * tool step of which finished before it failed or was stopped; not one that failed
 * before the model finished a turn. Undefined where it turns on when a stop landed.
 */
function kept(run: RunModel): boolean | undefined {
  const ending = run.plan.find((s) => s !== "tool") ?? "text";
  const toolFirst = run.plan[0] === "tool";
  if (run.stopSent) return undefined; // before or after its first turn finished

  if (ending === "error" || ending === "cut") return toolFirst;
  return true;
}

describe("the web server's HTTP API against a model (r92d)", () => {
  let endpoint: TestServer;
  /** The script of each run, by the marker its prompt carries. */
  const plans = new Map<string, Step[]>();
  beforeAll(async () => {
    endpoint = await startServer({
      models: [{ id: "m", context_length: 8192 }],
      replies: (request): Reply => {
        const marker = /\[(r\d+-\d+)\]/.exec(lastPrompt(request))?.[1] ?? "";
        const plan = plans.get(marker) ?? ["text"];
        const turn = turnsSoFar(request);
        const now = plan[turn] ?? "text";
        if (now === "tool")
          return { toolCalls: [{ name: "calculator", arguments: JSON.stringify({ expression: "6 * 7" }) }] };
        if (now === "hang") return { toolCalls: [{ name: "hang_forever", arguments: "{}" }] };
        if (now === "error")
          return {
            type: "error",
            status: 400,
            body: { error: { message: "refused by the script", type: "x" } },
          };
        if (now === "slow") return { content: `a slow answer to ${marker} `.repeat(8), chunkDelayMs: 15 };
        if (now === "cut") return { content: "a reply cut off mid-way, never to end", dropAfterChunk: 2 };
        return { content: `the answer to ${marker}` };
      },
    });
  });
  afterAll(() => endpoint.close());

  it(
    "answers every sequence of requests as the model says",
    async () => {
      let sequence = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.array(action, { minLength: 3, maxLength: 14 }),
          fc.constantFrom("stop" as const, "close" as const, "post-while-closing" as const),
          async (actions, ending) => {
            const closeMidRun = ending === "close";
            sequence++;
            const web: WebServer = await startWebServer({
              endpoint: { baseUrl: endpoint.baseUrl, apiKey: KEY, model: "m", contextLength: 8192 },
              hangTool: true,
            });
            const port = Number(new URL(web.url).port);
            const answers: string[] = [];
            const runs: RunModel[] = [];
            let fresh = true;
            let since: RunModel[] = [];
            /** The system prompt the next run is asked with. */
            let system = WEB_SYSTEM;
            let specs = 0;
            const post = async (path: string, body: unknown, type = "application/json") => {
              const res = await fetch(new URL(path, web.url), {
                method: "POST",
                headers: { "content-type": type },
                body: typeof body === "string" ? body : JSON.stringify(body),
              });
              const text = await res.text();
              answers.push(text);
              return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
            };
            const current = () => runs.at(-1);
            /** The current run surely goes on: its tool hangs and it was not stopped. */
            const surelyRunning = () => {
              const run = current();
              return run?.hangs === true && !run.stopSent;
            };
            /** Waits until the current run ended (its events say `done`), as a page would see it. */
            const settled = async () => {
              const run = current();
              if (!run || surelyRunning()) return;
              const reading = await follow(
                new URL(`api/runs/${run.id}/events`, web.url).href,
                run.index,
                null,
              );
              answers.push(...reading.raw);
            };
            try {
              for (const act of actions) {
                if (act.kind === "start") {
                  const marker = `r${sequence}-${runs.length}`;
                  const prompt = `[${marker}] please ${act.plan.join(" then ")}`;
                  plans.set(marker, act.plan);
                  // A run not surely running may still be finishing: the answer is 201 or 409, never else.
                  const mayRun = !surelyRunning();
                  const firstRequest = endpoint.chatRequests.length;
                  const res = await post("api/runs", { prompt });
                  if (!mayRun) {
                    expect(res.status, "a second run while one hangs").toBe(409);
                    expect(res.body.id).toBe(current()!.id);
                    continue;
                  }
                  expect([201, 409]).toContain(res.status);
                  if (res.status === 409) {
                    expect(res.body.id).toBe(current()!.id);
                    await settled();
                    continue;
                  }
                  // The run before it had ended: its events say so.
                  const before = current();
                  if (before) {
                    const seen = await follow(
                      new URL(`api/runs/${before.id}/events`, web.url).href,
                      before.index,
                      null,
                    );
                    expect(seen.frames.at(-1)?.event.kind).toBe("done");
                  }
                  // A run goes on past a step only through a tool call: its first other step ends it, or hangs.
                  const ending = act.plan.find((s) => s !== "tool") ?? "text";
                  runs.push({
                    index: runs.length,
                    id: String(res.body.id),
                    prompt,
                    plan: act.plan,
                    stoppedRunning: false,
                    stopSent: false,
                    hangs: ending === "hang",
                    readers: [],
                    firstRequest,
                    fresh,
                    since,
                    system,
                  });
                  since = [...since, runs.at(-1)!];
                  fresh = false;
                } else if (act.kind === "empty-prompt") {
                  expect((await post("api/runs", { prompt: " \n " })).status).toBe(400);
                } else if (act.kind === "watch") {
                  const run = runs[runs.length - 1 - Math.min(act.run, runs.length - 1)];
                  if (!run) {
                    expect((await fetch(new URL("api/runs/no-such-run/events", web.url))).status).toBe(404);
                    continue;
                  }
                  run.readers.push(
                    follow(
                      new URL(`api/runs/${run.id}/events`, web.url).href,
                      run.index,
                      act.reconnectAfter,
                      act.by,
                    ),
                  );
                } else if (act.kind === "bad-resume") {
                  const run = current();
                  const url = new URL(`api/runs/${run?.id ?? "none"}/events`, web.url);
                  const res = await fetch(url, { headers: { "last-event-id": act.id } });
                  answers.push(await res.text());
                  expect(res.status, `Last-Event-ID ${JSON.stringify(act.id)}`).toBe(run ? 400 : 404);
                } else if (act.kind === "stop") {
                  const run =
                    act.which === "older" ? runs.at(-2) : act.which === "current" ? current() : undefined;
                  if (!run) {
                    expect(
                      (await post("api/runs/00000000-0000-0000-0000-000000000000/stop", {})).status,
                    ).toBe(404);
                    continue;
                  }
                  const wasRunning = run === current() && surelyRunning();
                  const res = await post(`api/runs/${run.id}/stop`, {});
                  expect(res.status).toBe(202);
                  expect(res.body).toEqual({ id: run.id });
                  if (wasRunning) run.stoppedRunning = true;
                  run.stopSent = true;
                } else if (act.kind === "reset") {
                  const busy = surelyRunning();
                  const res = await post("api/conversation/reset", {});
                  if (busy) {
                    expect(res.status).toBe(409);
                    expect(res.body.id).toBe(current()!.id);
                  } else {
                    expect([200, 409]).toContain(res.status);
                    if (res.status === 200) {
                      expect(res.body).toEqual({ messages: 0 });
                      fresh = true;
                      since = [];
                    } else await settled();
                  }
                } else if (act.kind === "spec") {
                  specs++;
                  const spec = {
                    spec: "loopwright.agent/1",
                    ...(act.which === "valid"
                      ? { prompt: [{ id: "role", text: `The r92d spec's system prompt, number ${specs}.` }] }
                      : {}),
                    model: {
                      name: "m",
                      // Written with a user, a password and a key in its query: refused, never shown.
                      ...(act.which === "url-secrets"
                        ? {
                            endpoint: {
                              baseUrl: `http://r92user:${SPEC_SECRETS[2]}@127.0.0.1:${endpoint.port}/v1?key=${SPEC_SECRETS[3]}`,
                            },
                          }
                        : {}),
                    },
                    ...(act.which === "secrets"
                      ? {
                          bundle: {
                            mcpServers: [
                              {
                                name: "s",
                                url: "https://mcp.example/sse",
                                headers: { "x-api-key": SPEC_SECRETS[1] },
                              },
                              {
                                name: "t",
                                command: "node",
                                args: ["server.js"],
                                env: { TOKEN: SPEC_SECRETS[0] },
                              },
                            ],
                          },
                        }
                      : {}),
                  };
                  const text =
                    act.which === "invalid"
                      ? "{ not a spec"
                      : act.which === "not-text"
                        ? undefined
                        : JSON.stringify(spec);
                  const res = await post("api/spec", text === undefined ? { text: 42 } : { text });
                  if (act.which === "not-text") {
                    expect(res.status).toBe(400);
                    continue;
                  }
                  expect(res.status).toBe(200);
                  const errors = res.body.errors as string[];
                  if (act.which === "invalid" || act.which === "url-secrets") {
                    // Nothing applied: the runs go on as they were.
                    expect(errors.length).toBeGreaterThan(0);
                    expect(res.body.applied).toBeUndefined();
                  } else {
                    expect(errors).toEqual([]);
                    system =
                      act.which === "valid" ? `The r92d spec's system prompt, number ${specs}.` : WEB_SYSTEM;
                  }
                } else if (act.kind === "state") {
                  const res = await fetch(new URL("api/state", web.url));
                  const text = await res.text();
                  answers.push(text);
                  expect(res.status).toBe(200);
                  const state = JSON.parse(text) as { run?: { id: string; ended: boolean }; mode: string };
                  expect(state.mode).toBe("endpoint");
                  expect(state.run?.id).toBe(current()?.id);
                  if (surelyRunning()) expect(state.run?.ended).toBe(false);
                } else if (act.kind === "malformed") {
                  if (act.which === "content-type") {
                    expect((await post("api/runs", { prompt: "hi" }, "text/plain")).status).toBe(415);
                  } else if (act.which === "bad-json") {
                    expect((await post("api/runs", '{"prompt": "unterminated')).status).toBe(400);
                    expect((await post("api/spec", "[1, 2")).status).toBe(400);
                  } else if (act.which === "huge") {
                    const body = Buffer.alloc(1_100_000, "x");
                    const line = await rawStatus(port, [
                      `POST /api/runs HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`,
                      body,
                    ]);
                    answers.push(line);
                    expect(line.split("\r\n")[0]).toBe("HTTP/1.1 413 Payload Too Large");
                  } else if (act.which === "unknown-path") {
                    for (const [method, path] of [
                      ["GET", "api/nothing"],
                      ["POST", "api/runs/x/nothing"],
                      ["DELETE", "api/runs"],
                    ] as const) {
                      const res = await fetch(new URL(path, web.url), {
                        method,
                        headers: { "content-type": "application/json" },
                        ...(method === "POST" ? { body: "{}" } : {}),
                      });
                      answers.push(await res.text());
                      expect(res.status, `${method} ${path}`).toBe(404);
                    }
                  } else {
                    for (const path of [
                      "/..%2f..%2fpackage.json",
                      "/%2e%2e/%2e%2e/package.json",
                      "/assets/..%2f..%2f..%2fREADME.md",
                    ]) {
                      const line = await rawStatus(port, [
                        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`,
                      ]);
                      answers.push(line);
                      expect(line.split("\r\n")[0], path).toBe("HTTP/1.1 404 Not Found");
                    }
                  }
                } else {
                  await new Promise((resolve) => setTimeout(resolve, 100));
                }
              }
              // The end of the sequence: a run still hung is stopped, and every reader follows to the end.
              const last = current();
              let closedMidRun: RunModel | undefined;
              if (last && surelyRunning() && closeMidRun) {
                // Closed while it runs (Ctrl-C): the run ends stopped, its readers told so before they close.
                closedMidRun = last;
                last.stoppedRunning = true;
                last.stopSent = true;
                await web.close();
              } else if (last && surelyRunning()) {
                expect((await post(`api/runs/${last.id}/stop`, {})).status).toBe(202);
                last.stoppedRunning = true;
                last.stopSent = true;
              }
              if (ending === "post-while-closing" && !closedMidRun) {
                // A prompt that comes in while close() waits for the runs: refused, never a run of its own.
                for (const run of runs) await Promise.all(run.readers);
                const closing = web.close();
                const res = await fetch(new URL("api/runs", web.url), {
                  method: "POST",
                  headers: { "content-type": "application/json" },
                  body: JSON.stringify({ prompt: "[late] a prompt sent as the playground closes" }),
                }).then(
                  async (r) => ({ status: r.status, text: await r.text() }),
                  () => ({ status: 0, text: "" }),
                );
                await closing;
                const sent = endpoint.chatRequests.length;
                await new Promise((resolve) => setTimeout(resolve, 300));
                expect([0, 503], res.text).toContain(res.status);
                expect(endpoint.chatRequests.length, "requests after close()").toBe(sent);
                closedMidRun = runs.at(-1);
              }
              for (const run of runs) {
                // One reader more, from the start, after the run ended: the whole run as kept.
                if (run !== closedMidRun && !closedMidRun)
                  run.readers.push(
                    follow(new URL(`api/runs/${run.id}/events`, web.url).href, run.index, null),
                  );
                const readings = await Promise.all(run.readers);
                const whole = [...readings].reverse().find((r) => r.statuses.at(-1) !== 0);
                if (!whole) continue;
                for (const reading of readings) {
                  answers.push(...reading.raw);
                  // Only a reader coming back after close() finds no server.
                  const gone = run === closedMidRun && reading.statuses.at(-1) === 0;
                  const statuses = gone ? reading.statuses.slice(0, -1) : reading.statuses;
                  expect(
                    statuses.every((s) => s === 200),
                    `statuses ${reading.statuses}`,
                  ).toBe(true);
                  const seqs = reading.frames.map((f) => f.event.seq);
                  expect(seqs, `run ${run.index}: seq order, no gap, no repeat`).toEqual(
                    seqs.map((_, i) => i + 1),
                  );
                  expect(reading.frames.map((f) => f.id)).toEqual(seqs.map(String));
                  if (gone) {
                    expect(whole.frames.map((f) => f.event).slice(0, seqs.length)).toEqual(
                      reading.frames.map((f) => f.event),
                    );
                    continue;
                  }
                  expect(reading.frames.at(-1)?.event.kind).toBe("done");
                  expect(reading.frames.map((f) => f.event)).toEqual(whole.frames.map((f) => f.event));
                }
                const done = whole.frames.at(-1)!.event as { stopped?: boolean };
                if (run.stoppedRunning) expect(done.stopped, `run ${run.index} stopped`).toBe(true);
                if (!run.stopSent) expect(done.stopped).toBeUndefined();
              }
              // Every request the endpoint got is well formed, and a run after a reset starts afresh.
              for (const run of runs) {
                // Its first request: the first, from when it was asked for, whose last message is its prompt.
                const first = endpoint.chatRequests
                  .slice(run.firstRequest)
                  .find((r) => lastPrompt(r) === run.prompt && turnsSoFar(r) === 0);
                if (!first) continue;
                const messages = (first.body as { messages: Message[] }).messages;
                if (run.fresh) {
                  expect(
                    messages.map((m) => m.role),
                    `run ${run.index}: after a reset, no old message`,
                  ).toEqual(["system", "user"]);
                }
                expect(messages[0], `run ${run.index}: the system prompt it was asked with`).toEqual({
                  role: "system",
                  content: run.system,
                });
                // The prompts it carries: those of the runs before it since the reset that were kept.
                const carried = messages.filter((m) => m.role === "user").map((m) => String(m.content));
                expect(carried.at(-1)).toBe(run.prompt);
                const before = carried.slice(0, -1);
                const maybe = run.since.filter((r) => kept(r) !== false).map((r) => r.prompt);
                const surely = run.since.filter((r) => kept(r) === true).map((r) => r.prompt);
                expect(maybe, `run ${run.index}: no prompt it should not carry`).toEqual(
                  expect.arrayContaining(before),
                );
                expect(before, `run ${run.index}: every prompt it should carry`).toEqual(
                  expect.arrayContaining(surely),
                );
                expect(before, "in order").toEqual(maybe.filter((p) => before.includes(p)));
              }
              const from = runs[0]?.firstRequest ?? endpoint.chatRequests.length;
              for (const request of endpoint.chatRequests.slice(from)) {
                const messages = (request.body as { messages: Message[] }).messages;
                expect(malformed(messages), JSON.stringify(messages.map((m) => m.role))).toEqual([]);
              }
              for (const text of answers)
                for (const secret of [KEY, ...SPEC_SECRETS]) expect(text).not.toContain(secret);
            } finally {
              await web.close();
            }
            // Nothing of it is left open: no listener, no connection to it. (A keep-alive connection of the
            // process's fetch pool to the endpoint is not the server's: it idles out in seconds.)
            await expect(fetch(web.url)).rejects.toThrow();
            let open = openOn(port);
            for (let look = 0; look < 40 && open.length > 0; look++) {
              await new Promise((resolve) => setTimeout(resolve, 25));
              open = openOn(port);
            }
            expect(open, "the server's sockets after close()").toEqual([]);
          },
        ),
        propertyRuns(RUNS, { ...(SEED !== undefined ? { seed: SEED } : {}), endOnFailure: false }),
      );
    },
    propertyTimeout(120_000),
  );
});
