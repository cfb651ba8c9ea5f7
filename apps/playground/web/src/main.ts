// The playground page: asks the local server for a run, follows its events over SSE and draws them.
import type { RunEvent, SequencedEvent } from "@loopwright/events";
import { RunView, renderMetrics, shownPart } from "./run-view.js";
import { renderSpec, type SpecReport } from "./spec-view.js";
import "./style.css";

interface State {
  /** Where the next run goes: the simulator, or an endpoint (the playground's, or one a loaded spec names). */
  mode: "simulator" | "endpoint";
  /** That endpoint, without userinfo and query; absent on the simulator. */
  baseUrl?: string;
  model: string;
  contextLength: number;
  spec?: SpecReport;
  run?: { id: string; prompt: string; ended: boolean };
}

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const runBox = $<HTMLElement>("run");
const metricsBox = $<HTMLElement>("metrics");
const status = $<HTMLParagraphElement>("status");
const promptBox = $<HTMLTextAreaElement>("prompt");
const send = $<HTMLButtonElement>("send");
const stop = $<HTMLButtonElement>("stop");
const reset = $<HTMLButtonElement>("reset");

let contextLength = 0;
let current:
  | {
      id: string;
      source?: EventSource;
      events: SequencedEvent[];
      ended: boolean;
      /** Lets go of the run's stream while the tab is in the background. */
      pause?: () => void;
      /** Follows the run again, after the last event drawn, once the tab is shown. */
      resume?: () => void;
    }
  | undefined;

function setRunning(running: boolean): void {
  send.disabled = running;
  stop.disabled = !running;
  reset.disabled = running;
  runBox.setAttribute("aria-busy", String(running));
}

/**
 * A line the user has to read (a prompt not started, a stop refused): the idle watcher does not
 * write over it, nor adopt another tab's run in its place, until the user does something else.
 */
let sticky = false;
function tell(text: string, keep = false): void {
  status.textContent = text;
  sticky = keep;
}

async function api<T>(path: string, init?: RequestInit): Promise<{ status: number; body: T }> {
  const res = await fetch(path, {
    ...init,
    headers: init?.method === "POST" ? { "content-type": "application/json" } : undefined,
  });
  return { status: res.status, body: (await res.json()) as T };
}

/** Follows one run from its first event: a reload replays it whole, then the live part follows. */
function follow(id: string, prompt: string): void {
  current?.source?.close();
  const run = {
    id,
    events: [] as SequencedEvent[],
    ended: false,
    source: undefined as EventSource | undefined,
    pause: undefined as (() => void) | undefined,
    resume: undefined as (() => void) | undefined,
  };
  current = run;
  runBox.dataset.run = id;
  // The page's address names the run, so it can be opened elsewhere (another playground on the same --redis).
  const address = new URL(location.href);
  address.searchParams.set("run", id);
  history.replaceState(null, "", address);
  const view = new RunView(runBox, prompt, contextLength);
  metricsBox.hidden = true;
  metricsBox.replaceChildren();
  setRunning(true);
  let lastSeq = 0;
  /** The id the server sent with the last event drawn (`<seq>:<token>` from Redis): what a fresh source resumes after. */
  let lastId = "";
  let frame = 0;
  let failures = 0;
  /** Set while the stream is down and the browser keeps retrying (a server that went away). */
  let lost: ReturnType<typeof setTimeout> | undefined;
  let toldLost = false;
  /**
   * Set while the tab is in the background and holds no stream. Chromium opens at most six
   * connections to one host, and every open tab follows the live run: six tabs' streams took them
   * all, so Stop (and a seventh tab's page) waited for the run to end — for ever, with a hung tool.
   */
  let paused = false;
  const draw = () => {
    frame = 0;
    view.update(run.events);
  };
  const connect = (after: string) => {
    // The browser's own reconnect sends Last-Event-ID; a fresh source after an error says ?after=.
    const source = new EventSource(
      `/api/runs/${encodeURIComponent(id)}/events${after ? `?after=${encodeURIComponent(after)}` : ""}`,
    );
    run.source = source;
    source.onmessage = (message) => {
      const event = JSON.parse(message.data as string) as SequencedEvent<RunEvent>;
      // Never draw an event twice: skip what is at or below the last seq drawn — except a watcher's
      // own last word (a `notice` with `dropped: 0`: "the run's stream is gone"), never stored and
      // never sent twice, which carries the last seq its watcher read.
      if (event.seq < lastSeq || (event.seq === lastSeq && !(event.kind === "notice" && event.dropped === 0)))
        return;
      lastSeq = event.seq;
      lastId = message.lastEventId || String(event.seq);
      run.events.push(event);
      if (!frame) frame = requestAnimationFrame(draw);
      // A watcher's last word (`dropped: 0`: the run's stream is gone, whether or not it ended — the
      // notice says which when it can): no `done` will come, so the page stops following the run.
      const gone = event.kind === "notice" && event.dropped === 0;
      // Only a stream the watcher saw expire without `done` says the run's host stopped. One already
      // missing when it looked may belong to a run that ended, or to one still running elsewhere
      // whose stream was lost to a Redis restart or eviction and that stayed quiet past the grace.
      const hostStopped = gone && /without its `done`/.test(event.text);
      if (event.kind === "done" || gone) {
        run.ended = true;
        source.close();
        cancelAnimationFrame(frame);
        draw();
        renderMetrics(metricsBox, run.events, contextLength);
        setRunning(false);
        tell(
          hostStopped
            ? "The run's events are gone from Redis: its host stopped without ending it."
            : gone
              ? "This run's events are no longer in Redis; it may have ended, or still be running elsewhere. Reload to look again."
              : event.kind === "done" && event.stopped === true
                ? "Run stopped."
                : // A run that ended on an error said "Run finished." under its error (the endpoint
                  // down, a 404): the same rule as the metrics' outcome, `failed` once it erred.
                  (failedWith(run.events) ?? "Run finished."),
        );
        promptBox.focus();
      }
    };
    source.onopen = () => {
      failures = 0;
      clearTimeout(lost);
      lost = undefined;
      if (toldLost && current === run && !run.ended) {
        toldLost = false;
        setRunning(true);
        tell("Running… (the playground server answers again)");
      }
    };
    source.onerror = () => {
      if (run.ended || current !== run) return;
      // CONNECTING: the browser reconnects by itself, sending Last-Event-ID — also, for ever, to a
      // server that is gone; a few seconds of that and the page asks the server and says what it
      // found. CLOSED: the server refused (restarted, or the run is gone).
      if (source.readyState === EventSource.CLOSED) {
        clearTimeout(lost);
        lost = undefined;
        void refused(source);
      } else if (lost === undefined) {
        lost = setTimeout(() => void stillLost(source), LOST_MS);
      }
    };
  };
  /** Connects after `after`, or, in a tab in the background, once the tab is shown. */
  const open = (after: string) => {
    if (document.hidden) paused = true;
    else connect(after);
  };
  run.pause = () => {
    if (run.ended || current !== run || !run.source) return;
    run.source.close();
    run.source = undefined;
    clearTimeout(lost);
    lost = undefined;
    paused = true;
  };
  run.resume = () => {
    if (!paused || run.ended || current !== run) return;
    paused = false;
    failures = 0;
    connect(lastId);
  };
  /** The stream has been down for LOST_MS with the browser still retrying: is the server there at all? */
  const stillLost = async (source: EventSource) => {
    lost = undefined;
    if (run.ended || current !== run || run.source !== source) return;
    if (source.readyState === EventSource.OPEN) return;
    const reached = await api<State>(`/api/state?run=${encodeURIComponent(id)}`).then(
      () => true,
      () => false,
    );
    if (run.ended || current !== run || run.source !== source || source.readyState === EventSource.OPEN)
      return;
    toldLost = true;
    setRunning(false);
    tell(
      reached
        ? "Lost the run's events; reconnecting…"
        : `Lost the run: ${NO_SERVER} Its end is unknown; the page goes on once the server answers again.`,
    );
    // Still down: ask again later (the browser keeps retrying the stream meanwhile).
    lost = setTimeout(() => void stillLost(source), LOST_MS * 2);
  };
  /** After a refused stream: a run that ended (its events let go) or that the server no longer knows is over; else retry a few times, then say so. */
  const refused = async (source: EventSource) => {
    const known = await api<State>(`/api/state?run=${encodeURIComponent(id)}`).then(
      // An error answer (503: Redis not reachable) says nothing of the run: retried like no answer.
      ({ status: code, body }) => (code === 200 ? (body.run ?? "unknown") : ("unreachable" as const)),
      () => "unreachable" as const,
    );
    if (run.ended || current !== run || run.source !== source) return;
    if (known === "unknown" || (known !== "unreachable" && known.ended)) {
      run.ended = true;
      setRunning(false);
      status.textContent =
        known === "unknown"
          ? "The server no longer has this run (it was restarted, or the run ended long enough ago to be forgotten); ask again."
          : "The last run has ended; its events are no longer kept.";
      return;
    }
    failures++;
    if (failures > 5) {
      status.textContent = "Lost this run's events: the server did not answer. Reload to try again.";
      setRunning(false);
      return;
    }
    status.textContent = "Lost the run's events; reconnecting…";
    setTimeout(() => {
      if (current === run && !run.ended) open(lastId);
    }, 1000);
  };
  open("");
}

/**
 * The most characters of an endpoint's error the status line draws (the error's own line in the run
 * draws up to `SHOWN_MAX`): a 1 MB error message holding bidi controls froze the page for 30 s there.
 */
const STATUS_ERROR_MAX = 1000;

/** The status line of a run that ended on an error (its last one, as the run's view shows it), else undefined. */
function failedWith(events: SequencedEvent[]): string | undefined {
  const error = events.findLast((event) => event.kind === "error") as { message?: unknown } | undefined;
  return error
    ? `Run failed: ${typeof error.message === "string" ? shownPart(error.message, STATUS_ERROR_MAX) : "see above"}`
    : undefined;
}

/** What the page says when the playground server did not answer a request (stopped, or not reachable). */
const NO_SERVER = "the playground server did not answer (is it still running?).";
/** How long a run's stream may be down, the browser retrying, before the page says so. */
const LOST_MS = 3000;
/** True while the idle watcher's last look at the server failed. */
let serverGone = false;
/** True while the server answers its state with an error (with --redis: Redis not reachable). */
let serverTroubled = false;

/** How often an idle page asks whether a run was started elsewhere. */
const WATCH_MS = 1500;
/** The newest run the server named when last asked: a newer one was started elsewhere. */
let newest: string | undefined;
/** True while this page's own prompt is being started. */
let asking = false;

/**
 * The server's newest run (any tab's, or with --redis any playground's); null when it did not
 * answer; `error` when it answered that it cannot tell (503: Redis not reachable).
 */
function newestRun(): Promise<{ run?: State["run"]; state?: State; error?: string } | null> {
  return api<State & { error?: string }>("/api/state").then(
    ({ status: code, body }) =>
      code === 200 ? { run: body.run, state: body } : { error: body.error ?? `the server answered ${code}` },
    () => null,
  );
}

/** While the page is idle, a run started in another tab (or another playground on the same --redis) is followed. */
function watchForRuns(): void {
  setInterval(watchOnce, WATCH_MS);
}

/** One look of the idle watcher; none from a tab in the background, which would only hold a stream. */
async function watchOnce(): Promise<void> {
  if (document.hidden || asking || (current && !current.ended)) return;
  const answer = await newestRun();
  if (answer === null) {
    // The server is gone (Ctrl-C in its terminal): say so rather than look ready.
    if (!serverGone && !sticky && !asking) tell(`The playground server is gone: ${NO_SERVER}`);
    serverGone = true;
    return;
  }
  if (answer.error !== undefined) {
    // Said while it lasts (a prompt would be refused for the same reason).
    if (!sticky && !asking) tell(`The playground server cannot serve runs now: ${answer.error}.`);
    serverTroubled = true;
    serverGone = false;
    return;
  }
  if (serverGone || serverTroubled) {
    serverGone = false;
    serverTroubled = false;
    if (!sticky && !asking) tell("The playground server answers again.");
  }
  // A window the server could not give when the page loaded (the endpoint's listing slow to
  // answer) is shown once a later state has it.
  if (answer.state && answer.state.contextLength > 0 && contextLength === 0) showWhere(answer.state);
  const run = answer.run;
  if (!run || run.id === newest) return;
  newest = run.id;
  // A page whose own prompt was refused keeps saying so; it does not show the other run as its own.
  if (asking || sticky || (current && !current.ended) || run.id === current?.id) return;
  tell("Following a run started in another tab or playground…");
  follow(run.id, run.prompt);
}

// A tab in the background lets go of its run's stream, and one shown again picks the run up (or
// looks at once for a run started while it was away).
document.addEventListener("visibilitychange", () => {
  if (document.hidden) current?.pause?.();
  else if (current && !current.ended) current.resume?.();
  else if (document.body.dataset.ready === "true") void watchOnce();
});

async function ask(prompt: string): Promise<void> {
  tell("Starting…");
  asking = true;
  const answer = await api<{ id?: string; error?: string }>("/api/runs", {
    method: "POST",
    body: JSON.stringify({ prompt }),
  })
    .catch(() => undefined)
    .finally(() => {
      asking = false;
    });
  if (!answer) {
    tell(`Not started: ${NO_SERVER}`, true);
    return;
  }
  const { status: code, body } = answer;
  if (code !== 201 || !body.id) {
    // Another tab's run (409 names it): that one is not this page's, so the watcher leaves it.
    if (code === 409 && body.id) newest = body.id;
    tell(`Not started: ${body.error ?? code}. Your prompt is still in the box.`, true);
    return;
  }
  tell("Running…");
  promptBox.value = "";
  newest = body.id;
  follow(body.id, prompt);
}

$<HTMLFormElement>("ask").addEventListener("submit", (event) => {
  event.preventDefault();
  const prompt = promptBox.value.trim();
  if (prompt && !send.disabled) void ask(prompt);
});
promptBox.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    $<HTMLFormElement>("ask").requestSubmit();
  }
});
stop.addEventListener("click", () => {
  if (!current || current.ended) return;
  tell("Stopping…");
  void api<{ error?: string }>(`/api/runs/${encodeURIComponent(current.id)}/stop`, {
    method: "POST",
    body: "{}",
  }).then(
    ({ status: code, body }) => {
      // A refusal (409: the run is another playground's) is told; the run goes on.
      if (code !== 202) tell(`Not stopped: ${body.error ?? `the server answered ${code}`}.`, true);
    },
    () => tell(`Not stopped: ${NO_SERVER}`, true),
  );
});
reset.addEventListener("click", () => {
  if (current && !current.ended) return;
  void api<{ error?: string }>("/api/conversation/reset", { method: "POST", body: "{}" }).then(
    ({ status: code, body }) => {
      if (code !== 200) {
        tell(`Not reset: ${body.error ?? `the server answered ${code}`}.`, true);
        return;
      }
      current?.source?.close();
      current = undefined;
      runBox.replaceChildren();
      delete runBox.dataset.run;
      metricsBox.hidden = true;
      metricsBox.replaceChildren();
      const address = new URL(location.href);
      address.searchParams.delete("run");
      history.replaceState(null, "", address);
      tell("New conversation: the next prompt starts afresh.");
      promptBox.focus();
    },
    () => tell(`Not reset: ${NO_SERVER}`, true),
  );
});

const specText = $<HTMLTextAreaElement>("spec-text");
const specResult = $<HTMLElement>("spec-result");
async function loadSpec(text: string): Promise<void> {
  try {
    const { body } = await api<SpecReport & { error?: string }>("/api/spec", {
      method: "POST",
      body: JSON.stringify({ text }),
    });
    renderSpec(specResult, body);
    await refreshWhere();
  } catch (error) {
    status.textContent =
      error instanceof StateError
        ? `The playground server cannot tell where runs go: ${error.message}.`
        : `Spec not loaded: ${NO_SERVER}`;
  }
}
$<HTMLFormElement>("spec-form").addEventListener("submit", (event) => {
  event.preventDefault();
  void loadSpec(specText.value);
});
$<HTMLInputElement>("spec-file").addEventListener("change", async (event) => {
  const file = (event.target as HTMLInputElement).files?.[0];
  if (!file) return;
  specText.value = await file.text();
  await loadSpec(specText.value);
});

/** The server answered its state with an error (503 with --redis when Redis is not reachable). */
class StateError extends Error {}

async function refreshWhere(): Promise<State> {
  const wanted = new URLSearchParams(location.search).get("run");
  const answer = await api<State & { error?: string }>(
    `/api/state${wanted ? `?run=${encodeURIComponent(wanted)}` : ""}`,
  );
  if (answer.status !== 200)
    throw new StateError(answer.body.error ?? `the server answered ${answer.status}`);
  showWhere(answer.body);
  return answer.body;
}

/** Where runs go, and the window the page draws against. */
function showWhere(state: State): void {
  contextLength = state.contextLength;
  const window = state.contextLength > 0 ? `, window ${state.contextLength.toLocaleString("en")} tokens` : "";
  $<HTMLParagraphElement>("where").textContent =
    state.mode === "simulator"
      ? `Simulator (a scripted stand-in, not a model): ${state.model}${window}`
      : `Endpoint ${state.baseUrl}: ${state.model}${window}`;
}

async function boot(): Promise<void> {
  const state = await refreshWhere();
  if (state.spec) {
    renderSpec(specResult, state.spec);
    $<HTMLDetailsElement>("spec-panel").open = true;
  }
  if (state.run) follow(state.run.id, state.run.prompt);
  else setRunning(false);
  newest = (await newestRun())?.run?.id;
  watchForRuns();
  document.body.dataset.ready = "true";
}

boot().catch((error: unknown) => {
  status.textContent =
    error instanceof StateError
      ? `The playground server cannot serve the page now: ${error.message}. Reload to try again.`
      : `Could not reach the playground server: ${String(error)}`;
});
