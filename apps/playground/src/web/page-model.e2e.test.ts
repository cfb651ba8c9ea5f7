/// <reference lib="dom" />
// A person at the playground's page, at random, in a real headless Chromium: a fast-check sequence
// of 5–20 things one does (send a prompt of any kind, stop at once / mid-reply / after the end, send
// while a reply streams, reload, a second tab, an older run's address, a new conversation), against
// the playground's own server talking over HTTP to the testkit's scripted model, whose replies are
// random too (text, reasoning, the playground's tools, slow first bytes, errors mid-stream, 429 with
// retry-after, a cut-off at the ceiling). After each step the page is checked against the server:
// its run's events, its state, and the endpoint's key that must never show.
//
// R90_PAGE_RUNS (default 3) sequences; R90_PAGE_SEED replays one. R90_PAGE_SHRINK=1 shrinks a failure
// (slow: every try drives the browser).
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import type { RunEvent, SequencedEvent } from "@loopwright/events";
import { type Reply, startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../../test-support/properties.js";
import { CHROMIUM, FLAGS, hasChromium } from "./e2e-support.js";
import { startWebServer, type WebServer } from "./server.js";

if (!hasChromium) console.warn(`[playground page-model e2e] skipped: ${CHROMIUM} is absent.`);

const RUNS = Number(process.env.R90_PAGE_RUNS ?? 8);
const SEED = process.env.R90_PAGE_SEED ? Number(process.env.R90_PAGE_SEED) : undefined;

/** The endpoint's key: it must never reach the page, its requests' answers or a run's events. */
const KEY = "sk-r90f-page-model-KEY-0123456789abcdef";
const TMP = fileURLToPath(new URL("../../.tmp/", import.meta.url));
const SECRET_FILE = join(TMP, "r90f-page-model.env");

/** Stands, in a scripted reply, for the authorization header the request came with. */
const QUOTE = "<<authorization>>";

/** Markup that leaves a trace (an element, `window.pwned`) if the page ever parses it as HTML. */
const MARKUP = `<img src="x:" onerror="window.pwned=1"><b class="injected">bold?</b><script>window.pwned=2</script>`;

/** A prompt as typed; a huge one by its length only, so a counterexample stays readable. */
type Prompt = string | { huge: number };
const typed = (p: Prompt) =>
  typeof p === "string" ? p : "huge ".repeat(Math.ceil(p.huge / 5)).slice(0, p.huge);
const prompt: fc.Arbitrary<Prompt> = fc.oneof(
  fc.constantFrom("", "   \n\t "),
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.string({ unit: "grapheme-ascii", maxLength: 20 }).map((s) => `${MARKUP} ${s}`),
  fc.constantFrom(
    "**bold** _it_ `code` [a](javascript:alert(1))\n# heading\n- item",
    "what is 17 * 23?",
    "naïve café 日本語 🧪👩‍👩‍👧 \u202eRTL",
  ),
  fc.integer({ min: 20_000, max: 200_000 }).map((huge) => ({ huge })),
  // Over the server's 1 MB body: refused (413), the prompt kept in the box.
  fc.constant({ huge: 1_050_000 }),
);

const text = fc.oneof(
  fc.string({ unit: "grapheme", minLength: 1, maxLength: 60 }),
  fc.constant(`${MARKUP} from the model`),
  fc.constant("**md** <i>not italics</i> &amp; &lt;b&gt;"),
);
const delays = fc.record({
  chunkChars: fc.integer({ min: 1, max: 12 }),
  chunkDelayMs: fc.integer({ min: 0, max: 25 }),
  firstByteDelayMs: fc.constantFrom(0, 0, 50, 300),
});
const toolCall = fc.oneof(
  fc.constant({ name: "clock", arguments: "{}" }),
  fc
    .constantFrom("17 * 23", "1/0", "2^10", "(((")
    .map((e) => ({ name: "calculator", arguments: JSON.stringify({ expression: e }) })),
  fc.constant("secret").map(() => ({
    name: "read_file",
    arguments: JSON.stringify({ path: relative(process.cwd(), SECRET_FILE) }),
  })),
  fc.constant({ name: "calculator", arguments: '{"expression": "1+' }),
);
/** One reply of the model to one chat request. */
const reply: fc.Arbitrary<Reply> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc
      .record({ content: text, reasoning: fc.option(text, { nil: undefined }) })
      .chain((t) => delays.map((d) => ({ ...t, ...d }))),
  },
  {
    weight: 3,
    arbitrary: fc
      .record({
        content: fc.option(text, { nil: undefined }),
        toolCalls: fc.array(toolCall, { minLength: 1, maxLength: 2 }),
      })
      .chain((t) => delays.map((d) => ({ ...t, ...d }))),
  },
  {
    weight: 1,
    arbitrary: text.map((content) => ({
      content,
      chunkChars: 3,
      errorMidStream: { afterChunk: 2, error: { message: "upstream fell over" } },
    })),
  },
  {
    weight: 1,
    arbitrary: fc.constant<Reply>({
      type: "error",
      status: 429,
      body: { error: { message: "slow down" } },
      headers: { "retry-after": "0" },
    }),
  },
  { weight: 1, arbitrary: text.map((content) => ({ content, finishReason: "length" })) },
  // An endpoint (or a proxy before it) that quotes, in its error, the authorization it was sent.
  {
    weight: 1,
    arbitrary: fc.constantFrom<Reply>(
      { type: "error", status: 401, body: { error: { message: `Incorrect API key provided: ${QUOTE}.` } } },
      {
        content: "a",
        chunkChars: 1,
        errorMidStream: { afterChunk: 1, error: { message: `quota of ${QUOTE} used up` } },
      },
    ),
  },
);

/** Which tab a step is done in: the first, or the second when one is open. */
type Tab = 0 | 1;
type Action =
  | { t: "send"; tab: Tab; prompt: Prompt; script: Reply[]; stop: "none" | "at-once" | "mid" | "after" }
  | { t: "stop"; tab: Tab }
  | { t: "wait"; tab: Tab }
  | { t: "reload"; tab: Tab }
  | { t: "second-tab" }
  | { t: "older"; tab: Tab; pick: number }
  | { t: "reset"; tab: Tab }
  | { t: "spec"; tab: Tab; which: "model" | "other-endpoint" | "markup" | "broken" };
const tab = fc.constantFrom<Tab>(0, 0, 1);

const action: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constant("send" as const),
      tab,
      prompt,
      script: fc.array(reply, { minLength: 1, maxLength: 3 }),
      stop: fc.constantFrom("none", "none", "at-once", "mid", "after"),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("stop" as const), tab }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("wait" as const), tab }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("reload" as const), tab }) },
  { weight: 2, arbitrary: fc.constant({ t: "second-tab" as const }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("older" as const), tab, pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("reset" as const), tab }) },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant("spec" as const),
      tab,
      which: fc.constantFrom("model", "other-endpoint", "markup", "broken"),
    }),
  },
);

const stats = { compared: 0, stopped: 0 };

/** Clicks a button if it is enabled now (a run may end between a look and a click); true if clicked. */
async function press(tab: Page, selector: string): Promise<boolean> {
  return tab.$eval(selector, (b) => {
    const button = b as HTMLButtonElement;
    if (button.disabled) return false;
    button.click();
    return true;
  });
}

/** What the textarea makes of a typed prompt and the page sends: line breaks as `\n`, trimmed. */
const sent = (typed: string) => typed.replace(/\r\n?/g, "\n").trim();

describe.skipIf(!hasChromium)("a person at the playground page, at random (fast-check model)", () => {
  let context: BrowserContext;
  let profile: string;
  beforeAll(async () => {
    await mkdir(TMP, { recursive: true });
    await writeFile(SECRET_FILE, `OPENAI_API_KEY=${KEY}\n`);
    profile = await mkdtemp(join(tmpdir(), "loopwright-chromium-"));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: FLAGS,
      viewport: { width: 800, height: 900 },
    });
  }, 60_000);
  afterAll(async () => {
    await context?.close();
    if (profile) await rm(profile, { recursive: true, force: true });
    await rm(SECRET_FILE, { force: true });
  });

  it(
    "keeps every prompt, reply, stop and key where they belong, step after step",
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(action, { minLength: 5, maxLength: 20 }), async (actions) => {
          await session(actions);
        }),
        propertyRuns(RUNS, {
          ...(SEED !== undefined ? { seed: SEED } : {}),
          endOnFailure: !process.env.R90_PAGE_SHRINK,
          verbose: true,
        }),
      );
      if (process.env.R90_PAGE_STATS) console.log(stats);
    },
    propertyTimeout(600_000),
  );

  async function session(actions: Action[]): Promise<void> {
    let script: Reply[] = [];
    const model: TestServer = await startServer({
      replies: (request) => {
        const next = script.shift() ?? { content: "(the script ran out: a plain answer)", chunkDelayMs: 1 };
        return JSON.parse(
          JSON.stringify(next).replaceAll(
            QUOTE,
            String(request.headers.authorization ?? "(none)").replace(/^Bearer /, ""),
          ),
        ) as Reply;
      },
      models: [{ id: "m-r90", context_length: 8192 }],
    });
    const web: WebServer = await startWebServer({
      endpoint: { baseUrl: model.baseUrl, apiKey: KEY, model: "m-r90" },
    });
    const url = web.url;
    /** Every answer the page's own requests got (the event streams are read from the server below). */
    const answers: string[] = [];
    const listen = (tab: Page) =>
      tab.on("response", (response) => {
        if (response.url().includes("/events")) return;
        response.text().then(
          (body) => answers.push(body),
          () => {},
        );
      });
    /** The runs the person started, in order, with what the page sent. */
    const runs: { id: string; prompt: string }[] = [];
    const page = await context.newPage();
    listen(page);
    const api = async <T>(path: string): Promise<T> => (await (await fetch(url + path)).json()) as T;
    const log = async (id: string): Promise<SequencedEvent<RunEvent>[]> => {
      const body = await (await fetch(`${url}api/runs/${id}/events`)).text();
      return body
        .split("\n")
        .filter((line) => line.startsWith("data: "))
        .map((line) => JSON.parse(line.slice(6)) as SequencedEvent<RunEvent>);
    };
    const ended = async (id: string) =>
      (await api<{ run?: { ended: boolean } }>(`api/state?run=${id}`)).run?.ended ?? true;
    /** Waits until the server says the run ended (the model's delays are short: seconds at most). */
    const untilEnded = async (id: string) => {
      for (let i = 0; i < 200 && !(await ended(id)); i++) await new Promise((r) => setTimeout(r, 50));
      expect(await ended(id), `run ${id} never ended`).toBe(true);
    };
    const ready = async (tab: Page) => tab.waitForSelector("body[data-ready=true]", { timeout: 10_000 });
    const idle = (tab: Page) =>
      tab.waitForFunction(
        () =>
          !(document.getElementById("send") as HTMLButtonElement).disabled &&
          (document.getElementById("stop") as HTMLButtonElement).disabled &&
          document.getElementById("run")?.getAttribute("aria-busy") === "false",
        undefined,
        { timeout: 5_000 },
      );

    /** What must hold on a tab at any moment the person looks. */
    /**
     * An idle tab adopts a run another tab started (its watcher asks every 1.5 s) at any moment, also
     * while it is being checked: the check is made again when the tab moved on meanwhile.
     */
    const check = async (tab: Page, where: string): Promise<void> => {
      for (let tries = 0; ; tries++) {
        const following = await tab.getAttribute("#run", "data-run");
        await checkOnce(tab, where);
        if ((await tab.getAttribute("#run", "data-run")) === following || tries === 3) return;
      }
    };
    const checkOnce = async (tab: Page, where: string) => {
      const seen = await tab.evaluate(() => ({
        injected: document.querySelectorAll(".injected, #run img, #run script, #run a").length,
        pwned: (window as unknown as { pwned?: unknown }).pwned,
        html: document.documentElement.outerHTML,
        run: document.getElementById("run")?.dataset.run,
        you: [...document.querySelectorAll("#run .you .said")].map((n) => n.textContent),
      }));
      expect(seen.injected, `${where}: markup rendered as HTML`).toBe(0);
      expect(seen.pwned, `${where}: markup ran`).toBeUndefined();
      expect(seen.html.includes(KEY), `${where}: the key is on the page`).toBe(false);
      if (!seen.run) {
        expect(seen.you, `${where}: a prompt shown with no run`).toEqual([]);
        return;
      }
      const mine = runs.find((r) => r.id === seen.run);
      expect(mine, `${where}: the page follows a run nobody started`).toBeDefined();
      expect(seen.you, `${where}: the prompt shown once, as sent`).toEqual([mine!.prompt]);
      if (!(await ended(seen.run))) return;
      // The run ended: the page says so within moments, and shows exactly what the run streamed.
      const settled = await Promise.all([
        idle(tab),
        tab.waitForSelector("#metrics:not([hidden])", { timeout: 5_000 }),
      ]).then(
        () => true,
        () => false,
      );
      if (!settled) {
        // Moved on to another run meanwhile (`check` looks again), or really stuck.
        if ((await tab.getAttribute("#run", "data-run")) !== seen.run) return;
        throw new Error(`${where}: the page stays busy after run ${seen.run} ended`);
      }
      const events = await log(seen.run);
      expect(JSON.stringify(events).includes(KEY), `${where}: the key in the run's events`).toBe(false);
      const drawn = await tab.evaluate(() => ({
        answer: [...document.querySelectorAll("#run .answer")].map((n) => n.textContent).join(""),
        reasoning: [...document.querySelectorAll("#run .reasoning .body")].map((n) => n.textContent).join(""),
        outcome: document.querySelector("[data-metric='Outcome'] dd")?.textContent,
        run: document.getElementById("run")?.dataset.run,
      }));
      // The tab moved on to another run while this one was read: `check` looks again.
      if (drawn.run !== seen.run) return;
      const done = events.find((e) => e.kind === "done");
      const join = (kind: string) =>
        events
          .filter((e) => e.kind === kind)
          .map((e) => (e as { text: string }).text)
          .join("");
      stats.compared++;
      if (done && "stopped" in done) stats.stopped++;
      if (!events.some((e) => e.kind === "retract" || e.kind === "thinking-retract")) {
        expect(drawn.answer, `${where}: the answer as streamed, nothing lost or doubled`).toBe(
          join("output"),
        );
        expect(drawn.reasoning, `${where}: the reasoning as streamed`).toBe(join("thinking"));
      }
      expect(done, `${where}: an ended run has its done`).toBeDefined();
      if (done && "stopped" in done && done.stopped)
        expect(drawn.outcome, `${where}: stopped`).toBe("stopped");
      else expect(drawn.outcome, `${where}: not stopped`).not.toBe("stopped");
    };

    /** The open tabs: the first, and a second one on the same server while the person keeps it open. */
    const tabs: Page[] = [page];
    try {
      await page.goto(url);
      await ready(page);
      for (const [n, step] of actions.entries()) {
        const where = `step ${n} (${step.t}${"tab" in step ? ` in tab ${step.tab}` : ""})`;
        const tab = ("tab" in step ? tabs[step.tab] : undefined) ?? page;
        switch (step.t) {
          case "send": {
            const before = await tab.getAttribute("#run", "data-run");
            const busy = await tab.isDisabled("#send");
            const last = runs.at(-1);
            const going = last !== undefined && !(await ended(last.id));
            script = [...step.script];
            const text = typed(step.prompt);
            await tab.fill("#prompt", text);
            await tab.press("#prompt", "Enter");
            const want = sent(text);
            await tab
              .waitForFunction(
                (old) =>
                  (document.getElementById("run")?.dataset.run ?? null) !== old ||
                  /^Not started/.test(document.getElementById("status")?.textContent ?? ""),
                before,
                { timeout: busy || !want ? 300 : 10_000 },
              )
              .catch(() => {});
            // Busy at the look, the page may have gone idle before the key press (the run it showed,
            // another tab's, ended: a stop pressed at once there) and sent the prompt after all: the
            // box emptied, and the run it started may show later than the 300 ms given a busy page.
            if (busy && want && (await tab.inputValue("#prompt")) === "")
              await tab
                .waitForFunction(
                  (old) => (document.getElementById("run")?.dataset.run ?? null) !== old,
                  before,
                  { timeout: 10_000 },
                )
                .catch(() => {});
            const now = await tab.getAttribute("#run", "data-run");
            if (now !== before && now && !runs.some((r) => r.id === now)) {
              expect(want, `${where}: an empty prompt started a run`).not.toBe("");
              runs.push({ id: now, prompt: want });
              expect(await tab.inputValue("#prompt"), `${where}: the box emptied once sent`).toBe("");
              if (step.stop === "at-once") await press(tab, "#stop");
              else if (step.stop === "mid") {
                await tab
                  .waitForSelector("#run .answer, #run .tool, #run .reasoning", { timeout: 3_000 })
                  .catch(() => {});
                await press(tab, "#stop");
              } else if (step.stop === "after") {
                await untilEnded(now);
                await idle(tab);
                // A click on the disabled button, as a person would try: nothing may happen.
                await tab.$eval("#stop", (b) => (b as HTMLButtonElement).click());
              }
            } else {
              // Not sent: an empty prompt, the page busy, or the server refused it (another tab's run
              // going); a page that was idle with a prompt and no run going must have started it.
              const status = (await tab.textContent("#status")) ?? "";
              const over = Buffer.byteLength(JSON.stringify({ prompt: want })) > 1_000_000;
              // Between the look and the key press the tab may have taken up another tab's run (its
              // watcher): busy then, it sends nothing, and the prompt stays in the box.
              const adopted = now !== before;
              if (want && !busy && !adopted && !over && !going)
                throw new Error(`${where}: an idle page did not start the prompt (status: ${status})`);
              if (want && !busy && !adopted)
                expect(status, `${where}: why not`).toMatch(
                  over ? /^Not started: request body over 1 MB/ : /^Not started: a run is in progress/,
                );
              expect(await tab.inputValue("#prompt"), `${where}: the prompt left in the box`).toBe(
                text.replace(/\r\n?/g, "\n"),
              );
              await tab.fill("#prompt", "");
            }
            break;
          }
          case "stop":
            await press(tab, "#stop");
            break;
          case "wait": {
            const id = await tab.getAttribute("#run", "data-run");
            if (id) await untilEnded(id);
            break;
          }
          case "reload":
            await tab.reload();
            await ready(tab);
            break;
          case "second-tab": {
            const other = tabs[1];
            if (other) {
              tabs.pop();
              await other.close();
              break;
            }
            const fresh = await context.newPage();
            tabs.push(fresh);
            listen(fresh);
            await fresh.goto(url);
            await ready(fresh);
            const latest = runs.at(-1);
            if (latest)
              expect(await fresh.getAttribute("#run", "data-run"), `${where}: the newest run`).toBe(
                latest.id,
              );
            break;
          }
          case "older": {
            if (runs.length === 0) break;
            const run = runs[step.pick % runs.length]!;
            await tab.goto(`${url}?run=${run.id}`);
            await ready(tab);
            expect(await tab.getAttribute("#run", "data-run"), `${where}: opens that run`).toBe(run.id);
            break;
          }
          case "reset":
            if (await press(tab, "#reset")) {
              await tab.waitForFunction(
                () =>
                  /^New conversation|^Not reset/.test(document.getElementById("status")?.textContent ?? ""),
                undefined,
                { timeout: 5_000 },
              );
            }
            break;
          case "spec": {
            const doc = {
              model: JSON.stringify({ spec: "loopwright.agent/1", model: { name: "m-r90-b" } }),
              // The same endpoint by another name: the key is not for it.
              "other-endpoint": JSON.stringify({
                spec: "loopwright.agent/1",
                model: { name: "m-other", endpoint: { baseUrl: `http://localhost:${model.port}/v1` } },
              }),
              markup: JSON.stringify({
                spec: "loopwright.agent/1",
                model: { name: MARKUP },
                [MARKUP]: MARKUP,
              }),
              broken: `{"spec": "loopwright.agent/1", ${MARKUP}`,
            }[step.which];
            await tab.$eval("#spec-panel", (d) => {
              (d as HTMLDetailsElement).open = true;
            });
            await tab.fill("#spec-text", doc);
            await tab.click("#spec-form button[type=submit]");
            await tab.waitForFunction(
              () => (document.getElementById("spec-result")?.childElementCount ?? 0) > 0,
              undefined,
              {
                timeout: 5_000,
              },
            );
            if (step.which === "other-endpoint")
              await tab.waitForFunction(
                (port) =>
                  document
                    .getElementById("where")
                    ?.textContent?.startsWith(`Endpoint http://localhost:${port}/v1`),
                model.port,
                { timeout: 5_000 },
              );
            break;
          }
        }
        for (const [i, each] of tabs.entries()) await check(each, `${where}, tab ${i}`);
      }
      // At the end: every run ends, and each one's events and the page's answers are free of the key.
      for (const run of runs) await untilEnded(run.id);
      for (const [i, each] of tabs.entries()) await check(each, `at the end, tab ${i}`);
      for (const run of runs) {
        const events = await log(run.id);
        expect(JSON.stringify(events).includes(KEY)).toBe(false);
        expect(events.filter((e) => e.kind === "done")).toHaveLength(1);
      }
      expect(answers.filter((a) => a.includes(KEY))).toEqual([]);
      // The key went only to the endpoint it was given for, never to one a loaded spec named.
      const elsewhere = model.requests.filter((r) => !String(r.headers.host).startsWith("127.0.0.1:"));
      expect(elsewhere.filter((r) => JSON.stringify(r.headers).includes(KEY))).toEqual([]);
    } finally {
      for (const each of tabs) await each.close();
      await web.close();
      await model.close();
    }
  }
});
