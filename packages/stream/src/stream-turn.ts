import { isAbortSignal, listenForAbort } from "./abort-listeners.js";
import type { ChunkLike } from "./chunk.js";
import { EndpointSilent, type EndpointSilentCode, jsonText, quotedText, StreamError } from "./errors.js";
import type { Fence } from "./fences.js";
import { ownChunk } from "./own-chunk.js";
import { held } from "./own-field.js";
import { CutShort, EndedUnsaid, openReply, streamErrorMaker } from "./reply-body.js";
import type { ToolCallProgress } from "./tool-call-assembler.js";
import type { Turn } from "./turn.js";
import { chunkError, TurnReader } from "./turn-reader.js";

/** The longest delay a Node timer takes; longer ones fire at once. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * How long, at most, the rest of a stream is waited for once the server has said why it finished:
 * the usage chunk, `[DONE]` or the close. Re-armed by every chunk after the finish reason; with
 * `idleMs` set, the shorter of the two. A server that then says nothing more has finished its turn,
 * and the connection is closed for it.
 */
export const FINISH_GRACE_MS = 5000;

/** The request body `streamTurn` sends: any chat-completions body; `stream: true` is set for you. */
export interface ChatBody {
  model: string;
  messages: readonly unknown[];
  stream?: boolean | null;
}

/** The per-request options `streamTurn` hands the client (the openai SDK's `RequestOptions` fit). */
export interface RequestOptionsLike {
  signal?: AbortSignal;
  timeout?: number;
}

/**
 * The narrowest client `streamTurn` reads: `chat.completions.create` answering with a chunk stream.
 *
 * An `OpenAI` instance from the `openai` SDK fits it, as does any object of that shape (answering
 * with the stream or a promise of it).
 */
export interface ChatClientLike {
  chat: {
    completions: {
      create(
        body: ChatBody,
        options?: RequestOptionsLike,
      ): PromiseLike<AsyncIterable<ChunkLike>> | AsyncIterable<ChunkLike>;
    };
  };
}

/**
 * One box per attempt, set to `true` by the first chunk carrying text, reasoning or a tool-call piece.
 *
 * A caller with its own retry budget reads it afterwards to know whether anything was shown; the
 * content-free `{"role":"assistant"}` opening chunk does not set it.
 */
export interface ProducedBox {
  value: boolean;
}

/**
 * Options of `streamTurn`: abort signal, watchdog allowances, callbacks, produced box, fences.
 *
 * A key not listed here is refused as `invalid-argument` (a misspelt allowance would otherwise leave
 * the turn with no watchdog); `null` reads as absent for every option.
 */
export interface StreamTurnOptions {
  /** Aborts the request at any phase; the promise rejects with `signal.reason`. */
  signal?: AbortSignal | undefined;
  /**
   * Silence allowed between chunks once the reply has started, in ms: re-armed on every chunk, so
   * a reply still arriving is never cut off. Also bounds the wait for the first chunk unless
   * `firstChunkMs` is given. Absent, `0` or `Infinity`: no limit.
   */
  idleMs?: number | undefined;
  /**
   * Silence allowed before the first chunk that carries something (prefill), in ms; a content-free
   * opening chunk does not end it. Defaults to `idleMs`.
   */
  firstChunkMs?: number | undefined;
  /** Set to `true` on the first chunk carrying text, reasoning or a tool-call piece. */
  produced?: ProducedBox | undefined;
  /**
   * Told each piece of answer text as it arrives (never text inside a fence, never a half marker).
   * Text before a lone closing `</think>` is given as answer until that marker arrives, then taken
   * back through `onRetract`.
   */
  onOutput?: ((text: string) => void) | undefined;
  /**
   * Told how many characters (UTF-16 code units, as `String#length` counts) at the end of the answer
   * text already given to `onOutput` turned out to be reasoning: a closing `</think>` arrived with no
   * opening one (the chat template opened the scratchpad in the prompt). Called before that text is
   * given to `onThinking`; a display takes it back from the answer it drew. `startInReasoning: true`
   * means it is never needed.
   */
  onRetract?: ((chars: number) => void) | undefined;
  /**
   * Told once, when a closing marker arrives with no opening one (the chat template opened the
   * scratchpad in the prompt): everything before it in this reply is reasoning. Called before
   * `onRetract`, and also when nothing is to be taken back (the marker came first, or in the same
   * piece as the text before it, or `startInReasoning` said so up front); the turn then has
   * `scratchpadClosed: true`. A caller that sent an answer so far as a prefill (a continuation)
   * takes that back here too.
   */
  onScratchpadClosed?: (() => void) | undefined;
  /** Told each piece of reasoning: the server's reasoning fields and fenced text in content. */
  onThinking?: ((text: string) => void) | undefined;
  /** Told each piece of a tool call as it arrives, with the call's progress so far. */
  onToolCallDelta?: ((progress: ToolCallProgress) => void) | undefined;
  /** Fences to take out of the content; `[]` reads all content as answer. Default `DEFAULT_FENCES`. */
  fences?: readonly Fence[] | undefined;
  /**
   * The content starts inside a scratchpad (the template opened it in the prompt). A server that
   * sends reasoning in a field of its own before any content has parsed the scratchpad out, so its
   * content is read as answer.
   */
  startInReasoning?: boolean | undefined;
  /**
   * What a tool call the server sent without an id is named by, before its position in the turn
   * (`0`, `1`, …). Default (also for `null`) `"call_"`. Servers that send no ids (some llama.cpp,
   * Ollama and LM Studio builds) get `call_0` onward on every turn, so a loop of your own would put
   * `call_0` into its transcript once per step and a tool result would answer two calls by one id:
   * a prefix unique to the step (`` `call_${step}_` ``) keeps them apart. Ids the server sent are
   * kept as sent.
   */
  idPrefix?: string | null | undefined;
}

type Stop =
  | { kind: "abort"; reason: unknown }
  | { kind: "silent"; code: EndpointSilentCode; limit: number; waited: number }
  | { kind: "finished" };

const STOPPED = Symbol("stopped");

/** Lets the read be interrupted at once, whatever the client does with its abort signal. */
class Waiter {
  private reject: ((reason: unknown) => void) | undefined;
  private stopped = false;

  wait<T>(promise: PromiseLike<T>): Promise<T> {
    if (this.stopped) return Promise.reject(STOPPED);
    return new Promise<T>((resolve, reject) => {
      this.reject = reject;
      promise.then(resolve, reject);
    });
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  stop(): void {
    this.stopped = true;
    this.reject?.(STOPPED);
  }
}

/** Why `pull` stopped early: the stream failed, or the caller's callback threw. */
class Failure {
  constructor(
    readonly from: "stream" | "callback",
    readonly error: unknown,
  ) {}
}

/** An error the server sent as a chunk the client passed on instead of throwing. */
class ErrorChunk extends Error {
  override readonly name = "ErrorChunk";
  constructor(readonly error: unknown) {
    super(`The stream carried an error chunk: ${jsonText(error)}`);
  }
}

/**
 * Reads every chunk into `take`, settling when the stream ends or on the first failure.
 *
 * One settled promise per chunk, as a `for await` would make, and nothing more: the whole read is
 * wrapped once by the waiter, which is what lets a halt end it at once.
 */
function pull(
  iterator: AsyncIterator<ChunkLike>,
  take: (chunk: ChunkLike) => void,
  waiter: Waiter,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onNext = (next: IteratorResult<ChunkLike>): void => {
      if (waiter.isStopped) return;
      if (next.done) {
        resolve();
        return;
      }
      try {
        take(next.value);
      } catch (error) {
        reject(error instanceof Failure ? error : new Failure("callback", error));
        return;
      }
      if (!waiter.isStopped) step();
    };
    const onError = (error: unknown): void => {
      if (!waiter.isStopped) reject(new Failure("stream", error));
    };
    const step = (): void => {
      let next: Promise<IteratorResult<ChunkLike>>;
      try {
        // Promise.resolve: an iterator may answer a result itself rather than a promise of one (a
        // sync iterator handed on as async), which `for await` reads as well.
        next = Promise.resolve(iterator.next());
      } catch (error) {
        onError(error);
        return;
      }
      next.then(onNext, onError);
    };
    step();
  });
}

/** One timer for both allowances, re-armed lazily: a chunk only records the time. */
class Watchdog {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private last: number;
  private phase: EndpointSilentCode = "first-chunk";
  private done = false;

  constructor(
    private readonly firstMs: number | undefined,
    private readonly idleMs: number | undefined,
    private readonly fire: (code: EndpointSilentCode, limit: number, waited: number) => void,
  ) {
    this.last = performance.now();
    this.schedule(this.limit());
  }

  /** A chunk arrived; `carried` says whether it carried something (ends the first-chunk phase). */
  tick(carried: boolean): void {
    if (this.phase === "first-chunk") {
      if (!carried) return;
      this.phase = "idle";
      if (this.idleMs === undefined) {
        this.stop();
        return;
      }
      this.last = performance.now();
      // The timer was set for the prefill allowance; the idle one is usually shorter and governs now.
      if (this.timer !== undefined) clearTimeout(this.timer);
      this.schedule(this.idleMs);
      return;
    }
    this.last = performance.now();
  }

  stop(): void {
    this.done = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private limit(): number {
    return (
      (this.phase === "first-chunk" ? (this.firstMs ?? this.idleMs) : this.idleMs) ?? Number.POSITIVE_INFINITY
    );
  }

  private schedule(ms: number): void {
    this.timer = setTimeout(() => this.check(), Math.max(1, Math.min(Math.ceil(ms), MAX_TIMER_MS)));
  }

  private check(read = false): void {
    this.timer = undefined;
    if (this.done) return;
    const limit = this.limit();
    const waited = performance.now() - this.last;
    if (waited < limit) {
      this.schedule(limit - waited);
      return;
    }
    if (!read) {
      this.timer = afterPendingReads(() => this.check(true));
      return;
    }
    this.done = true;
    this.fire(this.phase, limit, waited);
  }
}

/**
 * Calls `then` once the reads already waiting have been taken: a timer that comes due while the
 * host's event loop is held up (a long synchronous task, a process stalled by the machine) is run
 * before the network reads that arrived meanwhile, so the silence it measures is the host's own. The
 * next timer runs after them (Node reads the network between two rounds of timers).
 */
function afterPendingReads(then: () => void): ReturnType<typeof setTimeout> {
  return setTimeout(then, 0);
}

/**
 * The wait after the finish reason: started by the first chunk that carries it, started again by
 * every chunk after it (lazily, as the watchdog is: a chunk only records the time), and fired once
 * `ms` have passed with nothing more.
 */
class Grace {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private last = 0;
  private done = false;

  constructor(
    private readonly ms: number,
    private readonly fire: () => void,
  ) {}

  /** A chunk arrived once the finish reason had been read. */
  arm(): void {
    this.last = performance.now();
    if (this.timer === undefined && !this.done) this.schedule(this.ms);
  }

  stop(): void {
    this.done = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(ms: number): void {
    this.timer = setTimeout(() => this.check(), Math.max(1, Math.min(Math.ceil(ms), MAX_TIMER_MS)));
  }

  private check(read = false): void {
    this.timer = undefined;
    if (this.done) return;
    const waited = performance.now() - this.last;
    if (waited < this.ms) {
      this.schedule(this.ms - waited);
      return;
    }
    if (!read) {
      this.timer = afterPendingReads(() => this.check(true));
      return;
    }
    this.done = true;
    this.fire();
  }
}

function allowance(name: string, value: unknown): number | undefined {
  // `null` is absent, as it is for every other option (and for negotiate's).
  if (value == null || value === 0 || value === Number.POSITIVE_INFINITY) return undefined;
  if (typeof value !== "number" || Number.isNaN(value) || value < 0) {
    throw new StreamError(
      "invalid-argument",
      `streamTurn: ${name} must be a positive number of milliseconds (or 0/absent for no limit); got ${String(value)}.`,
    );
  }
  return value;
}

/** Every option key `streamTurn` reads; any other key is refused (a misspelt one would be ignored). */
const OPTION_KEYS: readonly (keyof StreamTurnOptions)[] = [
  "signal",
  "idleMs",
  "firstChunkMs",
  "produced",
  "onOutput",
  "onRetract",
  "onScratchpadClosed",
  "onThinking",
  "onToolCallDelta",
  "fences",
  "startInReasoning",
  "idPrefix",
];

/** Refuses a key `streamTurn` does not read, naming it and, for a near miss in case, the one meant. */
function checkOptionKeys(opts: object): void {
  for (const key of Object.keys(opts)) {
    if ((OPTION_KEYS as readonly string[]).includes(key)) continue;
    const meant = OPTION_KEYS.find((known) => known.toLowerCase() === key.toLowerCase());
    throw new StreamError(
      "invalid-argument",
      `streamTurn: unknown option "${key}"${meant ? ` (did you mean "${meant}"?)` : ""}; the options are ${OPTION_KEYS.join(", ")}.`,
    );
  }
}

/** Refuses an option of the wrong type up front, before a request is sent, naming it. */
function checkOptions(opts: StreamTurnOptions): void {
  const invalid = (name: string, what: string) =>
    new StreamError("invalid-argument", `streamTurn: ${name} must be ${what}.`);
  checkOptionKeys(opts);
  if (opts.signal != null && !isAbortSignal(opts.signal)) throw invalid("signal", "an AbortSignal");
  for (const name of [
    "onOutput",
    "onRetract",
    "onScratchpadClosed",
    "onThinking",
    "onToolCallDelta",
  ] as const) {
    if (opts[name] != null && typeof opts[name] !== "function") throw invalid(name, "a function");
  }
  if (opts.produced != null && typeof opts.produced !== "object") {
    throw invalid("produced", "a { value: boolean } box");
  }
  if (opts.startInReasoning != null && typeof opts.startInReasoning !== "boolean") {
    throw invalid(
      "startInReasoning",
      `true or false (absent or null: false); got ${kindOf(opts.startInReasoning)}`,
    );
  }
  if (opts.idPrefix != null && typeof opts.idPrefix !== "string") {
    throw invalid("idPrefix", `a string (absent or null: "call_"); got ${kindOf(opts.idPrefix)}`);
  }
}

function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "string" ? JSON.stringify(value) : typeof value;
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("This operation was aborted", "AbortError");
}

/**
 * Closes an abandoned request: our signal, the stream's own controller (the openai SDK's), and the
 * iterator. Best effort: a client's failure while closing must not hide why the read stopped.
 */
function close(
  controller: AbortController,
  stream: AsyncIterable<ChunkLike> | undefined,
  iterator: AsyncIterator<ChunkLike> | undefined,
): void {
  controller.abort();
  try {
    (stream as { controller?: { abort?: () => void } } | undefined)?.controller?.abort?.();
  } catch {
    // The request is already aborted through our signal.
  }
  try {
    Promise.resolve(iterator?.return?.()).then(undefined, () => undefined);
  } catch {
    // Same: nothing more to close.
  }
}

/**
 * Whether an event's object carries a member a chunk is read for (`choices`, `usage`, Groq's
 * `x_groq`, llama.cpp's `timings`): `{}`, or `{"hello": 1}`, is no chunk.
 */
function carriesChunk(chunk: object): boolean {
  return "choices" in chunk || "usage" in chunk || "x_groq" in chunk || "timings" in chunk;
}

function isAsyncIterable(value: unknown): value is AsyncIterable<ChunkLike> {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as Partial<AsyncIterable<unknown>>)[Symbol.asyncIterator] === "function"
  );
}

function classify(error: unknown, partial: Turn, produced: boolean): StreamError {
  if (error instanceof SyntaxError) {
    return new StreamError(
      "malformed-chunk",
      `A line of the stream was not valid JSON (${error.message}); the turn could not be read to its end. The server sent a malformed chunk: retry, or report it to the server's maintainers.`,
      { cause: error, partial, produced },
    );
  }
  if (
    typeof error === "object" &&
    error !== null &&
    "error" in error &&
    (error as { status?: unknown }).status === undefined
  ) {
    const serverError = (error as { error: unknown }).error;
    const message =
      typeof serverError === "object" && serverError !== null
        ? (serverError as { message?: unknown }).message
        : undefined;
    // The server's message where it wrote one as text; otherwise the whole error written out (a
    // message that is an object or null read "[object Object]" or "null", naming nothing).
    const inner =
      typeof serverError === "string"
        ? serverError
        : typeof message === "string" && message !== ""
          ? message
          : jsonText(serverError);
    return new StreamError(
      "server-error",
      `The server sent an error in the middle of the stream: ${quotedText(inner)}. The reply so far is in \`partial\`; what to do depends on the error (a context or token limit, an overloaded server).`,
      { cause: error, serverError, partial, produced },
    );
  }
  const detail = error instanceof Error ? error.message : String(error);
  return new StreamError(
    "connection-lost",
    `The connection failed before the stream ended (${detail}). The reply so far is in \`partial\`; retry the request.`,
    { cause: error, partial, produced },
  );
}

/**
 * Streams one chat-completion turn and reads it back into a `Turn`.
 *
 * Sends `body` with `stream: true` through `client.chat.completions.create` and reads every chunk:
 * answer text (fenced scratchpad taken out), reasoning from every field servers use, tool calls
 * reassembled from their pieces, usage and the finish reason, telling the callbacks as it goes.
 * With `idleMs` or `firstChunkMs` a watchdog is armed and the client's own request timeout is
 * switched off for this request (`timeout` set to the longest a timer takes).
 *
 * Resolves with the turn when the stream ends after a finish reason or `[DONE]` (one that ends with
 * neither, read from the body, was cut short: `connection-lost`), and also when the server
 * said why it finished and then went silent without closing: once the finish reason has been read,
 * the rest (usage, `[DONE]`, the close) is waited for `FINISH_GRACE_MS` (5 s; the shorter `idleMs`
 * when set) after the last chunk, with or without a watchdog, and the connection is then closed for
 * it. Rejects with:
 * - `EndpointSilent` when an allowance runs out (the connection is closed);
 * - `signal.reason` when `signal` aborts (the connection is closed);
 * - `StreamError` for an error object inside the stream, a malformed chunk, a dropped connection or
 *   a body that ended unfinished (with the turn so far as `partial`), a 200 reply that is not a stream (`not-a-stream`, naming
 *   what came back; a whole completion from a server that ignored `stream: true` is read as the
 *   turn, however long), or an argument or option it cannot use (refused before anything is sent);
 * - the client's own error, unchanged, when the request fails before the stream starts (an HTTP
 *   error status, for example), so a caller can read the server's refusal.
 * Never leaves a request open behind it and never rejects unhandled.
 */
export async function streamTurn<Body extends ChatBody>(
  client: ChatClientLike,
  body: Body,
  options: StreamTurnOptions = {},
): Promise<Turn> {
  const create = (client as Partial<ChatClientLike> | null)?.chat?.completions?.create;
  if (typeof create !== "function") {
    throw new StreamError(
      "invalid-argument",
      "streamTurn: client must have chat.completions.create (an OpenAI client or one of its shape).",
    );
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new StreamError("invalid-argument", "streamTurn: body must be a chat-completions request object.");
  }
  if (options != null && (typeof options !== "object" || Array.isArray(options))) {
    throw new StreamError(
      "invalid-argument",
      `streamTurn: options must be an object of options (or absent); got ${kindOf(options)}.`,
    );
  }
  // The keys the host gave are checked as given; each option then read once, where the options
  // hold it: never one a polluted Object.prototype holds (`startInReasoning = true` read every
  // answer as reasoning).
  checkOptionKeys(options ?? {});
  // Every key written, `undefined` where absent: a key left out of the copy would be read through
  // Object.prototype again.
  const read: Record<string, unknown> = {};
  for (const key of OPTION_KEYS) read[key] = options == null ? undefined : held(options, key);
  const opts = read as StreamTurnOptions;
  checkOptions(opts);
  const idleMs = allowance("idleMs", opts.idleMs);
  const firstChunkMs = allowance("firstChunkMs", opts.firstChunkMs);
  const signal = opts.signal;
  if (signal?.aborted) throw abortReason(signal);

  const produced = opts.produced ?? undefined;
  let reader: TurnReader;
  try {
    reader = new TurnReader({
      fences: opts.fences ?? undefined,
      startInReasoning: opts.startInReasoning ?? undefined,
      idPrefix: opts.idPrefix ?? undefined,
      onOutput: opts.onOutput ?? undefined,
      onRetract: opts.onRetract ?? undefined,
      onScratchpadClosed: opts.onScratchpadClosed ?? undefined,
      onThinking: opts.onThinking ?? undefined,
      onToolCallDelta: opts.onToolCallDelta ?? undefined,
      onProduced: produced
        ? () => {
            produced.value = true;
          }
        : undefined,
    });
  } catch (error) {
    // The fence table is checked as the splitter is built: a malformed one is an option it cannot use.
    if (!(error instanceof TypeError)) throw error;
    throw new StreamError("invalid-argument", `streamTurn: ${error.message}`, { cause: error });
  }
  const controller = new AbortController();
  const waiter = new Waiter();
  let stopped: Stop | undefined;
  let stream: AsyncIterable<ChunkLike> | undefined;
  let iterator: AsyncIterator<ChunkLike> | undefined;
  let complete = false;

  const halt = (why: Stop): void => {
    if (stopped !== undefined || complete) return;
    stopped = why;
    waiter.stop();
    controller.abort(why.kind === "abort" ? why.reason : undefined);
  };
  const onAbort = (): void => halt({ kind: "abort", reason: abortReason(signal!) });
  const stopListening = signal ? listenForAbort(signal, onAbort) : undefined;
  const watchdog =
    idleMs !== undefined || firstChunkMs !== undefined
      ? new Watchdog(firstChunkMs, idleMs, (code, limit, waited) =>
          halt({ kind: "silent", code, limit, waited }),
        )
      : undefined;

  // Once the server has said why it finished, only the usage chunk and [DONE] may follow: a server
  // that sends neither and keeps the connection open is not waited on for ever, watchdog or not.
  const grace = new Grace(Math.min(idleMs ?? FINISH_GRACE_MS, FINISH_GRACE_MS), () =>
    halt({ kind: "finished" }),
  );

  const requestOptions: RequestOptionsLike = { signal: controller.signal };
  if (watchdog) requestOptions.timeout = MAX_TIMER_MS;

  const stoppedError = (why: Exclude<Stop, { kind: "finished" }>, cause?: unknown): unknown => {
    if (why.kind === "abort") return why.reason;
    return new EndpointSilent(
      why.code,
      why.limit,
      Math.round(why.waited),
      reader.snapshot(),
      reader.hasProduced,
      {
        cause,
      },
    );
  };

  try {
    try {
      stream = await waiter.wait(
        // Promise.resolve: a client may answer with a stream directly rather than a promise of one.
        // openReply: a 200 that is not a stream is read for what it is, never as an empty turn.
        Promise.resolve(
          openReply(
            create.call(client.chat.completions, { ...body, stream: true }, requestOptions),
            streamErrorMaker(client),
          ),
        ),
      );
    } catch (error) {
      // No chunk has been read yet, so the grace (armed by a chunk) cannot have stopped the wait.
      if (stopped !== undefined && stopped.kind !== "finished") {
        throw stoppedError(stopped, error === STOPPED ? undefined : error);
      }
      throw error;
    }
    if (!isAsyncIterable(stream)) {
      throw new StreamError(
        "not-a-stream",
        "streamTurn: chat.completions.create did not answer with a stream (an async-iterable of chunks). Check that the client streams when the body says stream: true.",
      );
    }
    iterator = stream[Symbol.asyncIterator]();
    let chunks = 0;
    // An event whose JSON is no object (`null`, `42`, `"x"`, `[]`), or an object with nothing a
    // chunk carries (`{}`), is no chunk: skipped among good ones, but a stream of nothing else has no
    // turn in it.
    let stray: unknown;
    let strays = 0;
    const take = (sent: ChunkLike): void => {
      if (sent === null || typeof sent !== "object" || Array.isArray(sent)) {
        if (strays++ === 0) stray = sent;
        return;
      }
      // Its own fields only: never one a polluted Object.prototype holds.
      const chunk = ownChunk(sent);
      const serverError = chunkError(chunk);
      if (serverError !== undefined) {
        chunks++;
        throw new Failure("stream", new ErrorChunk(serverError));
      }
      if (!carriesChunk(chunk)) {
        if (strays++ === 0) stray = chunk;
        return;
      }
      chunks++;
      const carried = reader.read(chunk);
      watchdog?.tick(carried);
      if (reader.finished) grace.arm();
    };
    try {
      await waiter.wait(pull(iterator, take, waiter));
    } catch (error) {
      if (error instanceof Failure) {
        // A callback's exception is the caller's, passed on as is; the stream's own is classified.
        if (error.from === "callback") throw error.error;
        // Cut short after the server said why it finished: only the usage chunk or [DONE] was lost,
        // and the turn is whole (as when such a server goes silent instead).
        if (stopped === undefined && error.error instanceof CutShort && reader.finished) {
          complete = true;
          return reader.finish();
        }
        // Ended with neither [DONE] nor a finish reason: cut short, unless nothing came at all (no
        // stream, below). A clean end is no proof of a whole turn (a proxy ends its own response
        // cleanly when its upstream goes), and a half answer must not read as a quiet whole one.
        const empty = error.error instanceof EndedUnsaid && chunks === 0;
        if (stopped === undefined && !empty)
          throw classify(error.error, reader.snapshot(), reader.hasProduced);
      } else if (error !== STOPPED) throw error;
    }
    if (stopped === undefined && chunks === 0 && strays > 0) {
      const first = jsonText(stray);
      throw new StreamError(
        "not-a-stream",
        `The server answered a stream with no chunk in it: its ${strays === 1 ? "one event was" : `${strays} events were`} JSON but no chunk object, one with choices or usage (the first: ${first.length > 200 ? `${first.slice(0, 200)}…` : first}), so there is no turn to read. Check the base URL and any proxy in front of the server.`,
        { partial: reader.snapshot() },
      );
    }
    if (stopped === undefined && chunks === 0) {
      throw new StreamError(
        "not-a-stream",
        "The server answered a stream with no chunks in it (an empty body, or only [DONE]): there is no turn to read. Check the base URL and any proxy in front of the server.",
        { partial: reader.snapshot() },
      );
    }
    if (stopped !== undefined) {
      // The server said why it finished, then kept the connection open: the turn is whole (the
      // connection is closed for it below).
      if (stopped.kind === "finished" || (stopped.kind === "silent" && reader.finished))
        return reader.finish();
      throw stoppedError(stopped);
    }
    complete = true;
    return reader.finish();
  } finally {
    watchdog?.stop();
    grace.stop();
    stopListening?.();
    if (!complete) close(controller, stream, iterator);
  }
}
