// The playground's interactive mode, built on `createSession` from @loopwright/agent: one durable
// conversation (a JSONL file under --session <dir>, resumed at start), rendered to the terminal from
// the session's events. AskUser questions are asked on the terminal; Ctrl-C aborts the run in
// progress; text typed during a run (or `/steer text`) is steered into it.
import { createInterface } from "node:readline";
import {
  type AgentTool,
  createSession,
  defineTool,
  listSessions,
  type PendingQuestion,
  type RunMetrics,
  type Session,
  type SessionEvent,
} from "@loopwright/agent";
import { contextLimitFor } from "@loopwright/client";
import type { LoopConfig } from "@loopwright/loop";
import { endpointHint } from "./endpoint-hint.js";
import { callMcp, type PlaygroundMcp } from "./mcp.js";
import { clip, escapeUnseen, phaseMarks, printable, streamed } from "./printable.js";
import { runTool, TOOLS } from "./tools/index.js";

export interface InteractiveOptions {
  config: LoopConfig;
  system: string;
  /** True on the built-in simulator: an error there gets no advice about OPENAI_BASE_URL. */
  onSimulator?: boolean;
  mcp: PlaygroundMcp | undefined;
  /** Where session files live; absent: nothing is stored. */
  sessionDir?: string;
  /** The session to resume (or start) in `sessionDir`; the newest one there when absent. */
  sessionId?: string;
  /**
   * Lines to send instead of reading the terminal (`--prompt` with `--session`): each is sent as if
   * typed, then input ends, so a question the model asks is skipped as at the end of piped input.
   * The exit code is then 1 when a run ended without an answer (failed, stopped, stalled, or at
   * the tool-step limit), as with `--prompt` alone.
   */
  lines?: readonly string[];
  dim: (text: string) => string;
  bold: (text: string) => string;
  /** Whether the output is coloured; without colour, lines `reasoning:` and `answer:` mark where each starts. */
  color?: boolean;
}

/** The playground's three tools and the MCP servers' tools, as agent tools. */
export function playgroundTools(mcp: PlaygroundMcp | undefined): AgentTool[] {
  const builtIn = TOOLS.map((t) =>
    defineTool({
      name: t.function.name,
      description: t.function.description ?? "",
      parameters: (t.function.parameters ?? { type: "object" }) as Record<string, unknown>,
      execute: (args) => runTool(t.function.name, args),
    }),
  );
  const taken = new Set(builtIn.map((t) => t.name));
  const fromMcp = (mcp?.tools ?? [])
    .filter((t) => !taken.has(t.function.name))
    .map((t) =>
      defineTool({
        name: t.function.name,
        description: t.function.description ?? "",
        parameters: (t.function.parameters ?? { type: "object" }) as Record<string, unknown>,
        execute: (args, context) => callMcp(mcp!.pool, t.function.name, args, context.signal),
      }),
    );
  return [...builtIn, ...fromMcp];
}

/**
 * Reads an answer line for one question: an option's text or number, several of them
 * comma-separated for a multi-select question (a repeat counts once), or empty to skip. An option's
 * exact text wins over reading the same digits as a number (options 3 / 5 / 7: `5` is "5", `3` is
 * "3"); otherwise a number from 1 to the option count picks by position, then text matches case
 * aside. Anything else is no answer: `{ refused }` holds a line saying what was not an option and
 * what to type.
 */
function answerFor(
  question: PendingQuestion["questions"][number],
  line: string,
): { answer: string | string[] } | { refused: string } {
  const labels = question.options.map((o) => o.label);
  const pick = (part: string): string | undefined => {
    const exact = labels.find((l) => l === part);
    if (exact !== undefined) return exact;
    if (/^\d+$/.test(part)) {
      const position = Number(part);
      if (position >= 1 && position <= labels.length) return labels[position - 1];
    }
    return labels.find((l) => l.toLowerCase() === part.toLowerCase());
  };
  const range = labels.length === 1 ? "1" : `1-${labels.length}`;
  const refuse = (part: string) => ({
    refused: `not an option: ${JSON.stringify(part)}. Type ${question.multiSelect ? `numbers ${range} (comma-separated)` : `a number ${range}`}, an option's text, or an empty line to skip.`,
  });
  const text = line.trim();
  if (text === "") return { answer: "" };
  const whole = pick(text);
  if (!question.multiSelect) return whole === undefined ? refuse(text) : { answer: whole };
  // An option whose text holds a comma is still one option when typed whole.
  if (whole !== undefined) return { answer: [whole] };
  const chosen: string[] = [];
  for (const part of text.split(",").map((p) => p.trim())) {
    if (part === "") continue;
    const label = pick(part);
    if (label === undefined) return refuse(part);
    if (!chosen.includes(label)) chosen.push(label);
  }
  return { answer: chosen };
}

/** What `/steer` without text is told. */
const STEER_USAGE = "(/steer needs the text to steer with: /steer <text>)";

/**
 * The text of a `/steer` line (`""` for `/steer` with none), read as the line is trimmed;
 * `undefined` for a line that is not one (`/steering` is not).
 */
function steerCommand(line: string): string | undefined {
  const match = /^\/steer(?:\s+(.*))?$/s.exec(line.trim());
  return match ? (match[1] ?? "").trim() : undefined;
}

/** What a line naming no command is told (`/quit`): nothing is sent to the model. */
function unknownCommand(name: string): string {
  return `(no command ${printable(name)}: /help lists them; nothing was sent. To ask it as written, start the line with //)`;
}

/** What `/help` prints: the commands the interactive mode reads. */
const HELP = [
  "/steer <text>  steer the run in progress (with none going, ask <text>)",
  "/exit          leave (as Ctrl-D, or Ctrl-C at the prompt)",
  "/help          this list",
  '//name …       ask "/name …" as written (a first word of one slash and a name is read as a command)',
].join("\n");

/**
 * A line that reads as a command other than `/steer`: `help`, `exit`, an unknown command's
 * `/name` (a first word of one slash then letters, `/quit`: not `/etc/hosts`), or `undefined`.
 */
function otherCommand(
  line: string,
): { kind: "help" | "exit" } | { kind: "unknown"; name: string } | undefined {
  const match = /^\/([A-Za-z][\w-]*)(?=\s|$)/.exec(line.trim());
  if (!match) return undefined;
  const name = match[1]!;
  if (name === "steer") return undefined;
  if (name === "help" && line.trim() === "/help") return { kind: "help" };
  if (name === "exit" && line.trim() === "/exit") return { kind: "exit" };
  return { kind: "unknown", name: `/${name}` };
}

/** A line beginning `//`: the question it asks, with one slash taken off (`//tmp is full` asks `/tmp is full`). */
function escapedSlash(line: string): string | undefined {
  const trimmed = line.trim();
  return trimmed.startsWith("//") ? trimmed.slice(1) : undefined;
}

/** How long the start waits for the endpoint's model listing before going on with no window. */
const WINDOW_LOOKUP_MS = 3000;

/**
 * The window the session compacts against: LOOPWRIGHT_CONTEXT_LENGTH when set, else what the
 * endpoint lists for the model (`contextLimitFor`), else 0 (no compaction). A listing that does not
 * answer within {@link WINDOW_LOOKUP_MS}, or an endpoint that cannot be reached, gives 0: the first
 * prompt says what is wrong with the endpoint, not the start.
 */
async function sessionWindow(config: LoopConfig): Promise<number> {
  const operator = Number(process.env.LOOPWRIGHT_CONTEXT_LENGTH ?? 0);
  if (operator > 0) return operator;
  return contextLimitFor({ baseUrl: config.baseUrl, apiKey: config.apiKey, model: config.model }, undefined, {
    signal: AbortSignal.timeout(WINDOW_LOOKUP_MS),
  }).catch(() => 0);
}

export async function runInteractive(options: InteractiveOptions): Promise<number> {
  const { dim, bold } = options;
  const write = (text: string) => process.stdout.write(text);

  let sessionId = options.sessionId;
  if (options.sessionDir && sessionId === undefined) {
    sessionId = (await listSessions(options.sessionDir))[0]?.id;
  }
  // With a known window, the session folds its oldest talk at 75 % of it: LOOPWRIGHT_CONTEXT_LENGTH,
  // else the window the endpoint lists (as the web page draws against). Before, only the variable
  // turned it on: a long conversation on llama.cpp's 4096 tokens ended in an overflow that failed
  // every later prompt too, its advice ("compact it") something the terminal offers no way to do.
  const window = await sessionWindow(options.config);
  const session: Session = await createSession({
    config: window > 0 ? { ...options.config, contextLength: window } : options.config,
    ...(window > 0 ? { autoCompact: true } : {}),
    maxTurns: options.config.maxToolIterations ?? 8,
    system: options.system,
    tools: playgroundTools(options.mcp),
    builtInTools: { askUser: true, todoWrite: true },
    ...(options.sessionDir ? { sessionDir: options.sessionDir } : {}),
    ...(sessionId !== undefined ? { sessionId } : {}),
  });
  if (options.sessionDir) {
    const count = session.messages.length;
    write(
      `${dim(
        count > 0
          ? `(session ${escapeUnseen(session.sessionId)}: resumed, ${count} message${count === 1 ? "" : "s"} from ${escapeUnseen(session.filePath ?? "")})`
          : `(session ${escapeUnseen(session.sessionId)}: new, stored in ${escapeUnseen(session.filePath ?? "")})`,
      )}\n`,
    );
    // Notices from resuming (a torn last line dropped) are already in the timeline.
    for (const entry of session.getSnapshot().timeline) {
      if (entry.type === "notice") write(`${dim(`(${printable(entry.text)})`)}\n`);
    }
  }

  const queued: string[] = [...(options.lines ?? [])];
  const scripted = options.lines !== undefined;
  let failed = false;
  let question: PendingQuestion | undefined;
  let answers: (string | string[])[] = [];
  let toolCalls = 0;
  const toolNames = new Map<string, string>();
  let metrics: RunMetrics | undefined;
  let inputEnded = false;
  let wake: (() => void) | undefined;
  const poke = () => {
    wake?.();
    wake = undefined;
  };

  const askNext = () => {
    if (!question) return;
    const q = question.questions[answers.length];
    if (!q) return;
    write(`\n${bold("?")} ${printable(q.question)}${q.multiSelect ? dim(" (several: 1,3)") : ""}\n`);
    q.options.forEach((o, i) => {
      write(
        `  ${i + 1}. ${escapeUnseen(o.label)}${o.description ? dim(` — ${escapeUnseen(o.description)}`) : ""}\n`,
      );
    });
    write(dim("answer (a number or an option's text; empty to skip)> "));
  };
  /** At the end of input no line can answer: the questions left are skipped, as an empty line skips one. */
  const skipAtEnd = () => {
    if (!inputEnded) return;
    while (question) {
      write("\n");
      answerLine("");
    }
  };
  const answerLine = (line: string) => {
    if (!question) return;
    const q = question.questions[answers.length]!;
    const read = answerFor(q, line);
    // Not an option: the same question is asked again, and the next line answers it.
    if ("refused" in read) {
      write(`${dim(printable(read.refused))}\n`);
      return askNext();
    }
    answers.push(read.answer);
    if (answers.length < question.questions.length) return askNext();
    const waiting = question;
    const given = answers;
    question = undefined;
    answers = [];
    try {
      session.submitAnswer(waiting.id, given);
    } catch (error) {
      // A stop already answered it: nothing waits for this answer.
      if (session.pendingQuestion?.id !== waiting.id) return;
      // Refused all the same (answerFor reads only offered options): the group still waits. It is
      // asked again from its first question, or, with no line left to come, stopped.
      write(`\n${dim(`(${printable(error instanceof Error ? error.message : String(error))})`)}\n`);
      if (inputEnded) {
        write(`${dim("(no input left to answer it: the run is stopped)")}\n`);
        session.abort();
        return;
      }
      question = waiting;
      askNext();
    }
  };

  const marks = phaseMarks(options.color ?? false);
  session.onEvent((event: SessionEvent) => {
    switch (event.type) {
      case "assistant_delta":
        write(marks.answer() + streamed(event.text));
        break;
      case "thinking_delta":
        write(marks.thinking() + dim(streamed(event.text)));
        break;
      case "assistant_retract":
        marks.reset();
        // As the --prompt mode says it: what was printed stays printed; the reasoning follows, dimmed.
        write(`\n${dim("(↑ that was reasoning, not the answer)")}\n`);
        break;
      case "thinking_retract":
        // Printed reasoning stays printed: say that its end was a tool call, not reasoning.
        write(`\n${dim("(↑ the end of that reasoning was a tool call written as text)")}\n`);
        break;
      case "tool_start":
        marks.reset();
        toolCalls++;
        toolNames.set(event.id, event.name);
        write(`\n${dim(`→ ${escapeUnseen(event.name)} ${clip(event.argsSummary)}`)}\n`);
        break;
      case "tool_end":
        write(
          `${dim(`${event.isError ? "✗" : "←"} ${escapeUnseen(toolNames.get(event.id) ?? "tool")}: ${clip(event.result)}`)}\n`,
        );
        break;
      case "notice":
        write(`\n${dim(`(${printable(event.text)})`)}\n`);
        break;
      case "todos_changed":
        if (event.todos.length > 0) {
          write(
            `\n${dim(event.todos.map((t) => `[${t.status === "completed" ? "x" : " "}] ${escapeUnseen(t.content)}`).join("\n"))}\n`,
          );
        }
        break;
      case "run_metrics":
        metrics = event;
        break;
      case "question":
        question = event;
        answers = [];
        askNext();
        // Lines already typed (or piped) answer it first.
        while (question && queued.length > 0) answerLine(queued.shift()!);
        skipAtEnd();
        break;
      default:
        break;
    }
  });

  const stop = (): boolean => {
    if (!session.running) return false;
    session.abort();
    return true;
  };

  // Scripted lines (--prompt with --session) are the whole input: the terminal is not read.
  const rl = scripted
    ? undefined
    : createInterface({ input: process.stdin, output: process.stdout, terminal: process.stdin.isTTY });
  if (scripted) inputEnded = true;
  const steerable = process.stdin.isTTY === true;
  rl?.on("line", (line) => {
    // A stop answers a waiting question itself: the line is then no answer to it.
    if (question && session.pendingQuestion?.id !== question.id) {
      question = undefined;
      answers = [];
    }
    if (question) return answerLine(line);
    const steer = steerCommand(line);
    // `/steer` with no text steers nothing (and is no question for the model either).
    if (steer === "") return write(`${dim(STEER_USAGE)}\n`);
    const command = otherCommand(line);
    // Typed during a run, `/help` and a mistyped command answer at once: neither is text to steer
    // with. Otherwise (piped, or nothing running) they wait their turn in the queue below.
    if (session.running && steerable && command?.kind === "help") return write(`${dim(HELP)}\n`);
    if (session.running && steerable && command?.kind === "unknown")
      return write(`${dim(unknownCommand(command.name))}\n`);
    if (session.running && (steer !== undefined || (steerable && line.trim() && command?.kind !== "exit"))) {
      const text = steer ?? escapedSlash(line) ?? line.trim();
      session.agent.steer(text);
      write(`${dim(`(steering: ${clip(text, 80)})`)}\n`);
      return;
    }
    queued.push(line);
    poke();
  });
  rl?.on("close", () => {
    inputEnded = true;
    // A stop answers a waiting question itself; one still waiting is skipped.
    if (question && session.pendingQuestion?.id !== question.id) question = undefined;
    skipAtEnd();
    poke();
  });
  // In a terminal, readline takes Ctrl-C itself: abort the run in progress, or leave at the prompt.
  rl?.on("SIGINT", () => {
    if (!stop()) rl.close();
  });
  // Piped input: Ctrl-C reaches the process.
  const onSigint = () => {
    if (!stop()) process.exit(130);
  };
  process.on("SIGINT", onSigint);

  const nextLine = async (): Promise<string | undefined> => {
    for (;;) {
      if (queued.length > 0) return queued.shift();
      if (inputEnded) return undefined;
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
  };

  try {
    for (;;) {
      if (!inputEnded) write(`\n${bold("you>")} `);
      const line = await nextLine();
      if (line === undefined) break;
      // Scripted lines (--prompt with --session) are questions as written, as --prompt alone sends
      // its text: `/exit` there is not a command that ends the session with nothing asked.
      if (!scripted && line.trim() === "/exit") break;
      // `/steer text` with no run to steer is asked as a question; `/steer` alone asks nothing.
      const steer = scripted ? undefined : steerCommand(line);
      if (steer === "") {
        write(`${dim(STEER_USAGE)}\n`);
        continue;
      }
      // Piped lines reach here whole (the line handler above only answers a terminal's at once).
      const command = scripted ? undefined : otherCommand(line);
      if (command?.kind === "help") {
        write(`${dim(HELP)}\n`);
        continue;
      }
      if (command?.kind === "unknown") {
        write(`${dim(unknownCommand(command.name))}\n`);
        continue;
      }
      const text = steer ?? (scripted ? undefined : escapedSlash(line)) ?? line.trim();
      if (!text) continue;
      toolCalls = 0;
      metrics = undefined;
      marks.reset();
      const result = await session.prompt(text);
      question = undefined;
      answers = [];
      // Any end short of an answer fails a scripted run, as the same ends fail --prompt alone.
      if (result.status !== "ok") failed = true;
      if (result.status === "aborted") write(`\n${bold("error:")} Stopped by Ctrl-C.\n`);
      else if (result.status === "error") {
        write(`\n${bold("error:")} ${printable(result.error ?? "The run failed.")}\n`);
        const hint = options.onSimulator
          ? undefined
          : endpointHint(result.error ?? "", options.config.baseUrl, options.config.model);
        if (hint) write(`${dim(`(${printable(hint)})`)}\n`);
      } else if (result.status !== "ok") write(`\n${dim(`(run ended: ${result.status})`)}\n`);
      const m = metrics as RunMetrics | undefined;
      if (m) {
        const prompt = m.cacheInputTokens + m.missInputTokens;
        write(
          `\n${dim(`[${toolCalls} tool call${toolCalls === 1 ? "" : "s"}; tokens: ${prompt} prompt (${m.cacheInputTokens} cached), ${m.outputTokens} completion, ${prompt + m.outputTokens} total]`)}\n`,
        );
      }
    }
    write("\n");
    return scripted && failed ? 1 : 0;
  } finally {
    process.off("SIGINT", onSigint);
    rl?.close();
    session.dispose();
  }
}
