#!/usr/bin/env node
// The loopwright playground: an agent with a clock, a calculator and a file reader, streamed to the
// terminal. Against OPENAI_BASE_URL / OPENAI_API_KEY / LOOPWRIGHT_MODEL when set, and against the
// testkit's scripted simulator on a loopback server when not.
import { createInterface } from "node:readline/promises";
import { parseArgs } from "node:util";
import type { RunEvent } from "@loopwright/events";
import {
  type AgentLoopResult,
  type ChatMessage,
  errorMessage,
  failedRun,
  type LoopConfig,
  runAgentLoop,
} from "@loopwright/loop";
import { startServer } from "@loopwright/testkit";
import { partialAnswer, settleRun } from "./conversation.js";
import { endpointHint } from "./endpoint-hint.js";
import { runInteractive } from "./interactive.js";
import { callMcp, loadMcp } from "./mcp.js";
import { clip, escapeUnseen, phaseMarks, printable, streamed } from "./printable.js";
import { runTool, TOOLS } from "./tools/index.js";
import { shownText, shownUrl, unusableBaseUrl } from "./web/spec.js";

const SYSTEM =
  "You are a helpful assistant in a terminal. Use the tools when they help: clock for the time, " +
  "calculator for arithmetic, read_file for files under the current directory. Answer briefly.";

// Output piped into a reader that has gone (`--prompt … | head -1`): nothing more can be shown.
// Leave at once with exit 1, not with a stack trace for the unhandled EPIPE; the MCP pool's reaper
// stops the servers it started.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code !== "EPIPE") throw error;
  process.exit(1);
});

// `pnpm playground` (the root's script) runs this package's `start` through `pnpm --dir
// apps/playground`, which starts it in apps/playground: `--mcp servers.json`, `--spec`, `--session .sessions`, a found
// ./.mcp.json and `read_file` were all read there, not where the user typed the command (the repo's
// root, as the READMEs show), so `--mcp servers.json` written there was "no such file". pnpm passes
// the directory it was started in as INIT_CWD: work from there, only when started as that script.
if (
  process.env.npm_lifecycle_event === "start" &&
  process.env.npm_package_name === "@loopwright/playground" &&
  process.env.INIT_CWD
) {
  process.chdir(process.env.INIT_CWD);
}

const color = process.stdout.isTTY && !process.env.NO_COLOR;
const dim = (text: string) => (color ? `\x1b[2m${text}\x1b[22m` : text);
const bold = (text: string) => (color ? `\x1b[1m${text}\x1b[22m` : text);

// Without colour, lines `reasoning:` and `answer:` mark where each starts.
const marks = phaseMarks(color);

function show(event: RunEvent): void {
  switch (event.kind) {
    case "output":
      process.stdout.write(marks.answer() + streamed(event.text));
      break;
    case "thinking":
      process.stdout.write(marks.thinking() + dim(streamed(event.text)));
      break;
    case "retract":
      // A lone </think>: the answer text just printed was reasoning. What is printed stays printed
      // (it may have wrapped or scrolled away), so say so; the reasoning follows, dimmed.
      marks.reset();
      process.stdout.write(`\n${dim("(↑ that was reasoning, not the answer)")}\n`);
      break;
    case "tool-call":
      marks.reset();
      process.stdout.write(`\n${dim(`→ ${escapeUnseen(event.name)} ${clip(event.args)}`)}\n`);
      break;
    case "tool-result":
      process.stdout.write(
        `${dim(`${event.ok ? "←" : "✗"} ${escapeUnseen(event.name)}: ${clip(event.content)}`)}\n`,
      );
      break;
    case "notice":
      process.stdout.write(`\n${dim(`(${printable(event.text)})`)}\n`);
      break;
    default:
      break;
  }
}

/**
 * The scheme-like start of a value (`http//`, `htp://`, `http:/`): a short word of scheme
 * characters and slashes, with or without its colon. A `user:password` has no slash after its
 * colon, so it never reads as one.
 */
const SCHEME_LEAD = /^[A-Za-z][A-Za-z0-9+.-]{0,9}:?\/+/;

/**
 * The host-looking part of what follows a refused value's scheme-like start (and its credentials):
 * a bracketed IPv6 address or a name, up to the first `:`, `/`, `?` or `#`, then a `:port` only
 * when the port is all digits.
 */
const HOST_LOOKING = /^(?:\[[^\]/?#@]*\]|[^:/?#@[\]]*)(?::\d+(?=$|[/?#]))?/;

/**
 * A refused OPENAI_BASE_URL as the error may show it: only its scheme-like start (if any) and its
 * host-looking part. Whatever stands between that start and its last `@` (a `user:password`,
 * however the scheme before it is misspelt or missing) is `[credentials]`; a `:` after the host
 * whose port is not all digits (`http://admin:password`, its `@host` left off), a path, a query
 * (`?api_key=…`) or a fragment is cut to `…`, values and all — a refused value is one no URL
 * parser reads, so its parts cannot be told apart any better. With no scheme-like start and no
 * `@`, a value whose host-looking part has no dot and no port or path after it (a key pasted in
 * place of the URL) is shown as `…` alone.
 */
function shownBaseUrl(value: string): string {
  const lead = SCHEME_LEAD.exec(value)?.[0] ?? "";
  const at = value.lastIndexOf("@");
  const hidden = at >= lead.length ? "[credentials]@" : "";
  const rest = value.slice(hidden ? at + 1 : lead.length);
  const host = HOST_LOOKING.exec(rest)?.[0] ?? "";
  // With no scheme and no `@` before it, a word that is no host (no dot in it, no port or path
  // after it) is what was pasted in place of a URL — a key, when the two variables were swapped —
  // and is shown as `…` alone.
  if (
    lead === "" &&
    hidden === "" &&
    !host.includes(".") &&
    !/^(?::\d|\/)/.test(rest.slice(host.length)) &&
    !/:\d+$/.test(host)
  )
    return "…";
  const cut =
    rest.length > host.length ? `${rest[host.length] === ":" ? ":" : (rest[host.length] ?? "")}…` : "";
  return `${lead}${hidden}${host ? shownText(host) : ""}${cut}`;
}

/** Why a refused OPENAI_BASE_URL is not an http(s) URL, naming only its scheme-like start. */
function baseUrlFault(value: string): string {
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(value)?.[1];
  if (scheme === undefined) {
    const lead = SCHEME_LEAD.exec(value)?.[0];
    return lead === undefined
      ? "it does not start with http:// or https://"
      : `it starts with ${JSON.stringify(lead)}, not http:// or https://`;
  }
  if (!/^https?$/i.test(scheme)) return `its scheme is ${JSON.stringify(scheme)}`;
  return 'the URL parser refuses it (check the host and port; a "/", "@", "#" or ":" in a user name or password must be percent-encoded)';
}

/**
 * What is wrong with the flags and environment, before anything starts: a flag the mode does not
 * read, or a value that cannot be used. `undefined` where nothing is.
 */
function flagError(
  values: {
    prompt?: string | undefined;
    model?: string | undefined;
    web?: boolean | undefined;
    spec?: string | undefined;
    mcp?: string | undefined;
    port?: string | undefined;
    session?: string | undefined;
    "session-id"?: string | undefined;
    redis?: string | undefined;
  },
  env: Record<string, string | undefined>,
): string | undefined {
  const baseUrl = env.OPENAI_BASE_URL;
  if (baseUrl) {
    let protocol = "";
    try {
      protocol = new URL(baseUrl).protocol;
    } catch {
      // Not a URL at all: refused below.
    }
    if (protocol !== "http:" && protocol !== "https:") {
      return `OPENAI_BASE_URL must be an http:// or https:// URL (as http://localhost:8080/v1), not ${JSON.stringify(shownBaseUrl(baseUrl))}: ${baseUrlFault(baseUrl)}.`;
    }
    // The client refuses such a URL at each request, with advice in its own API's words (`apiKey`,
    // `headers`): the playground started, printed the URL cut, and then failed every prompt.
    const unusable = unusableBaseUrl(baseUrl);
    if (unusable !== undefined) {
      return `OPENAI_BASE_URL carries ${unusable}, which the client refuses (a network error would print it): give it as ${shownUrl(baseUrl)} (a key goes in OPENAI_API_KEY).`;
    }
  }
  // An empty --model names no model: every request would be refused, each only once it is sent.
  if (values.model !== undefined && values.model.trim() === "") {
    return "--model needs a model's name at the endpoint (as gpt-4o-mini); it was given an empty one.";
  }
  const window = env.LOOPWRIGHT_CONTEXT_LENGTH;
  if (window !== undefined && window.trim() !== "" && !/^[1-9]\d*$/.test(window.trim())) {
    return `LOOPWRIGHT_CONTEXT_LENGTH must be a whole number of tokens above 0 (as 8192), not ${JSON.stringify(window)}.`;
  }
  // The simulator answers whatever model is named: a --model there would be sent and ignored, the
  // user believing it chose something. Refused alike at the terminal and with --web.
  if (values.model !== undefined && !baseUrl) {
    return `--model ${values.web ? "with --web " : ""}names a model on OPENAI_BASE_URL; the simulator's model is fixed. Set OPENAI_BASE_URL or leave --model out.`;
  }
  if (values.web) {
    for (const flag of ["prompt", "session", "session-id"] as const) {
      if (values[flag] !== undefined) return `--${flag} is read at the terminal only, not with --web.`;
    }
    // An empty one would be no Redis at all, under a line saying the runs are shared through it.
    if (values.redis !== undefined && values.redis.trim() === "") {
      return "--redis needs a Redis URL (as redis://127.0.0.1:6379); it was given an empty one.";
    }
    return undefined;
  }
  if (values.redis !== undefined)
    return "--redis is read with --web only (the web page's runs are what it shares).";
  for (const flag of ["spec", "port"] as const) {
    if (values[flag] !== undefined) return `--${flag} is read with --web only.`;
  }
  // An empty --session would store nothing, under a session the user asked to keep.
  if (values.session !== undefined && values.session.trim() === "") {
    return "--session needs a directory to keep the conversation in (as .sessions); it was given an empty one.";
  }
  if (values.mcp !== undefined && values.mcp.trim() === "") {
    return "--mcp needs the path of a .mcp.json file (as servers.json); it was given an empty one.";
  }
  if (values["session-id"] !== undefined && values.session === undefined) {
    return "--session-id names a session in a --session directory: give --session <dir> too.";
  }
  if (values.prompt !== undefined && values.prompt.trim() === "") {
    return "--prompt needs some text to send.";
  }
  return undefined;
}

/**
 * `LOOPWRIGHT_MODEL`, where it names a model: an empty (or blank) one is read as unset, as an
 * empty `OPENAI_BASE_URL` and `LOOPWRIGHT_CONTEXT_LENGTH` are.
 */
function envModel(env: Record<string, string | undefined>): string | undefined {
  const model = env.LOOPWRIGHT_MODEL;
  return model === undefined || model.trim() === "" ? undefined : model;
}

/** One question at the terminal: the line typed, or "" on Ctrl-C or Ctrl-D. */
async function askOnce(question: string): Promise<string> {
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  const controller = new AbortController();
  rl.on("SIGINT", () => controller.abort());
  const closed = new Promise<string>((resolve) => rl.once("close", () => resolve("")));
  try {
    return await Promise.race([rl.question(question, { signal: controller.signal }).catch(() => ""), closed]);
  } finally {
    rl.close();
  }
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      prompt: { type: "string", short: "p" },
      model: { type: "string", short: "m" },
      mcp: { type: "string" },
      help: { type: "boolean", short: "h" },
      web: { type: "boolean" },
      spec: { type: "string" },
      port: { type: "string" },
      session: { type: "string" },
      "session-id": { type: "string" },
      redis: { type: "string" },
    },
  });
  if (values.help) {
    console.log(
      'usage: pnpm playground [--prompt "…"] [--model name] [--mcp servers.json] [--session dir [--session-id id]]\n' +
        "       pnpm playground --web [--spec agent.json] [--port n] [--redis url]   (a local web page)\n" +
        "Against OPENAI_BASE_URL / OPENAI_API_KEY / LOOPWRIGHT_MODEL when set, the built-in simulator otherwise.\n" +
        "MCP servers come from --mcp; a ./.mcp.json found here is started only when you say yes at the terminal.",
    );
    return 0;
  }
  const refused = flagError(values, process.env);
  if (refused !== undefined) {
    console.log(`error: ${refused}`);
    return 1;
  }
  if (values.web) {
    if (values.mcp !== undefined)
      console.log("warning: --mcp is not read with --web yet: the page has the three built-in tools.");
    return (await import("./web/cli.js")).runWeb(values);
  }

  // Before the simulator starts, so a bad file leaves nothing running. A ./.mcp.json found here is
  // started only when the user, asked at the terminal, says so.
  const mcp = await loadMcp(values.mcp, {
    onNotice: (text) => console.log(dim(`(${printable(text)})`)),
    ...(process.stdin.isTTY && process.stdout.isTTY ? { ask: askOnce } : {}),
  });
  if (mcp) console.log(dim(printable(mcp.summary)));
  const tools = [...TOOLS, ...(mcp?.tools ?? [])];
  const builtIn = new Set(TOOLS.map((t) => t.function.name));

  const baseUrl = process.env.OPENAI_BASE_URL;
  const simulator = baseUrl ? undefined : await startServer({ scriptedModel: true, prefixCache: true });
  const config: LoopConfig = simulator
    ? { baseUrl: simulator.baseUrl, model: values.model ?? "loopwright-simulator", maxToolIterations: 8 }
    : {
        baseUrl: baseUrl!,
        apiKey: process.env.OPENAI_API_KEY ?? "",
        model: values.model ?? envModel(process.env) ?? "gpt-4o-mini",
        maxToolIterations: 8,
      };
  console.log(
    dim(
      simulator
        ? `Simulator: the testkit's scripted model at ${simulator.baseUrl} (set OPENAI_BASE_URL to use a real endpoint).`
        : `Endpoint: ${shownUrl(config.baseUrl)}, model ${escapeUnseen(config.model)}`,
    ),
  );

  const history: ChatMessage[] = [];
  // One controller per question: Ctrl-C stops the answer in progress, not every later one.
  let running: AbortController | undefined;
  const stop = (): boolean => {
    if (!running || running.signal.aborted) return false;
    running.abort(new Error("Stopped by Ctrl-C."));
    return true;
  };

  const ask = async (prompt: string): Promise<AgentLoopResult | undefined> => {
    const controller = new AbortController();
    running = controller;
    const seen = partialAnswer();
    try {
      const result = await runAgentLoop({
        config,
        system: SYSTEM,
        messages: [...history, { role: "user", content: prompt }],
        tools,
        dispatch: ({ name, args }, signal) =>
          builtIn.has(name) || !mcp ? runTool(name, args) : callMcp(mcp.pool, name, args, signal),
        dedupeToolCalls: (request) => builtIn.has(request.name) || !mcp || mcp.pool.dedupe(request),
        signal: controller.signal,
        onEvent: (event) => {
          seen.see(event);
          show(event);
        },
      });
      history.splice(0, history.length, ...result.messages);
      const { prompt: p, completion, total, cached } = result.usage;
      process.stdout.write(
        `\n${dim(`[${result.steps} request${result.steps === 1 ? "" : "s"}, ${result.toolCalls.length} tool call${result.toolCalls.length === 1 ? "" : "s"}; tokens: ${p} prompt (${cached} cached), ${completion} completion, ${total} total]`)}\n`,
      );
      return result;
    } catch (error) {
      // A failed prompt is not left for a next one to be joined onto (see settleRun). `ask` runs one
      // --prompt, so its notice ("send it again") is not printed; the interactive session tells its own.
      const settled = settleRun(history, failedRun(error)?.messages, controller.signal.aborted, seen.text);
      history.splice(0, history.length, ...settled.messages);
      const message = errorMessage(error);
      process.stdout.write(`\n${bold("error:")} ${printable(message)}\n`);
      const hint = simulator ? undefined : endpointHint(message, config.baseUrl, config.model);
      if (hint) process.stdout.write(`${dim(`(${printable(hint)})`)}\n`);
      return undefined;
    } finally {
      running = undefined;
    }
  };

  // With --prompt, Ctrl-C reaches the process: the first stops the answer in progress, and one with
  // nothing running leaves. The interactive mode handles its own.
  const onSigint = () => {
    if (!stop()) process.exit(130);
  };
  process.on("SIGINT", onSigint);
  try {
    // With --session, one prompt goes into the stored conversation (resumed, or new) and is kept.
    if (values.prompt !== undefined && values.session === undefined) {
      return (await ask(values.prompt)) ? 0 : 1;
    }
    process.off("SIGINT", onSigint);
    return await runInteractive({
      config,
      system: SYSTEM,
      onSimulator: simulator !== undefined,
      mcp,
      ...(values.session !== undefined ? { sessionDir: values.session } : {}),
      ...(values["session-id"] !== undefined ? { sessionId: values["session-id"] } : {}),
      ...(values.prompt !== undefined ? { lines: [values.prompt] } : {}),
      dim,
      bold,
      color,
    });
  } finally {
    process.off("SIGINT", onSigint);
    await mcp?.pool.close();
    await simulator?.close();
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    // A path from the command line (--mcp, --session) may be quoted in it.
    process.stdout.write(`error: ${printable(errorMessage(error))}\n`);
    process.exitCode = 1;
  },
);
