/// <reference lib="dom" />
// The web page in a real headless Chromium (Debian's /usr/bin/chromium driven by playwright-core),
// against the page as built (dist/web) and served by the playground's own server, with the testkit
// simulator behind it.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createRedisBus } from "@loopwright/redis";
import { startServer } from "@loopwright/testkit";
import { createClient } from "@redis/client";
import { type BrowserContext, chromium, type Page, type Route } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it, type TestContext } from "vitest";
import { HAS_REDIS, RedisServer } from "../../../../packages/redis/test/redis-server.js";
import { CHROMIUM, FLAGS, hasChromium, slowListing } from "./e2e-support.js";
import { startWebServer, type WebServer } from "./server.js";
import { connectSharedRuns, SHARED_RUNS_DEADLINE_MS } from "./shared-runs.js";

const ARTIFACTS = fileURLToPath(new URL("../../artifacts/", import.meta.url));

if (!hasChromium) {
  console.warn(
    `[playground e2e] skipped: ${CHROMIUM} is absent (install Debian's chromium: apt-get install -y chromium).`,
  );
}

describe.skipIf(!hasChromium)("the playground page in headless Chromium", () => {
  let server: WebServer;
  let context: BrowserContext;
  let profile: string;
  let page: Page;
  const outside: string[] = [];

  beforeAll(async () => {
    if (!existsSync(fileURLToPath(new URL("../../dist/web/index.html", import.meta.url))))
      throw new Error("The page is not built: run `pnpm --filter @loopwright/playground build` first.");
    server = await startWebServer({ hangTool: true, chunkDelayMs: 25 });
    profile = await mkdtemp(join(tmpdir(), "loopwright-chromium-"));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: FLAGS,
      viewport: { width: 360, height: 800 },
    });
    context.on("request", (request) => {
      const url = request.url();
      if (!url.startsWith(server.url) && !url.startsWith("data:")) outside.push(url);
    });
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    await server?.close();
    if (profile) await rm(profile, { recursive: true, force: true });
  });

  beforeEach(async ({ task }) => {
    // A concurrent test opens its own tab (`ownTab`): the shared one is for the tests run one by one.
    if (task.concurrent) return;
    page = context.pages()[0] ?? (await context.newPage());
    await page.goto(server.url);
    await page.waitForSelector("body[data-ready=true]");
  });

  /** A tab of its own for a concurrent test, closed once the test finishes. */
  const ownTab = async (onTestFinished: TestContext["onTestFinished"]) => {
    const tab = await context.newPage();
    onTestFinished(() => tab.close());
    return tab;
  };

  /** Types a prompt, presses Enter, and waits until the page (`on`) follows the new run. */
  const ask = async (prompt: string, on: Page = page) => {
    const before = await on.getAttribute("#run", "data-run");
    await on.fill("#prompt", prompt);
    await on.press("#prompt", "Enter");
    await on.waitForFunction((old) => (document.getElementById("run")?.dataset.run ?? null) !== old, before);
  };
  const finished = (on: Page = page) => on.waitForSelector("#metrics:not([hidden])", { timeout: 30_000 });
  const blocks = () =>
    page.$$eval("#run [data-kind]", (nodes) =>
      nodes.map((n) => {
        const el = n as HTMLElement;
        return `${el.dataset.kind}:${el.querySelector(".name")?.textContent ?? ""}`;
      }),
    );

  it("draws a run with two tool calls: both cards with results, the answer, the context bars and the metrics", async () => {
    await ask("What time is it, and what is 17 * 23?");
    await finished();

    const cards = await page.$$eval(".tool", (nodes) =>
      nodes.map((n) => ({
        name: n.querySelector(".name")?.textContent,
        state: (n as HTMLElement).dataset.state,
        result: n.querySelector(".result")?.textContent,
        took: n.querySelector(".state")?.textContent,
      })),
    );
    expect(cards.map((c) => c.name).sort()).toEqual(["calculator", "clock"]);
    expect(cards.every((c) => c.state === "ok" && /done in \d+ ms/.test(c.took ?? ""))).toBe(true);
    expect(cards.find((c) => c.name === "calculator")?.result).toBe("391");
    expect(cards.find((c) => c.name === "clock")?.result).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(await page.textContent(".turn[data-step='2'] .answer")).toContain("17 * 23 = 391");

    // One bar per turn; its four parts add up to the prompt the turn reported.
    const bars = await page.$$eval(".usage", (boxes) =>
      boxes.map((box) => ({
        parts: [...box.querySelectorAll<HTMLElement>(".seg")].map((s) => Number(s.dataset.tokens)),
        prompt: Number(box.querySelector<HTMLElement>(".prompt-tokens")?.dataset.tokens),
        cache: box.querySelector(".cache")?.textContent,
      })),
    );
    expect(bars).toHaveLength(2);
    for (const bar of bars) {
      expect(bar.parts).toHaveLength(4);
      expect(bar.prompt).toBeGreaterThan(0);
      expect(bar.parts.reduce((a, b) => a + b, 0)).toBe(bar.prompt);
    }
    expect(bars[0]?.cache).toBe("Cache: cold (first request)");
    expect(bars[1]?.cache).toMatch(/^Cache hit: [\d,]+ of [\d,]+ \(\d+%\)$/);

    const metric = (name: string) => page.textContent(`[data-metric='${name}'] dd`);
    expect(await metric("Outcome")).toBe("completed");
    expect(await metric("Turns")).toBe("2");
    expect(await metric("Tool calls")).toBe("2");
    expect(await metric("Tokens")).toMatch(/prompt \([\d,]+ cached\), [\d,]+ completion, [\d,]+ total/);
    expect(await metric("Time to first token")).toMatch(/ms \(mean\)|s \(mean\)/);
    expect(await metric("Tool time")).toMatch(/\d+ ms/);

    // Usable at 360 px: nothing wider than the viewport; and nothing fetched from outside.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360);
    expect(outside).toEqual([]);

    await mkdir(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, "finished-run-360.png"), fullPage: true });
    await page.setViewportSize({ width: 800, height: 900 });
    await page.screenshot({ path: join(ARTIFACTS, "finished-run.png"), fullPage: true });
    await page.setViewportSize({ width: 360, height: 800 });
  }, 60_000);

  it("after a reload mid-run shows every block once and follows the run to its end with no gap", async () => {
    await ask("What time is it, and what is 17 * 23?");
    await page.waitForFunction(
      () => (document.querySelector(".turn[data-step='2'] .answer")?.textContent ?? "").length > 8,
    );
    expect(await page.isHidden("#metrics")).toBe(true); // still running
    await page.reload();
    await page.waitForSelector("body[data-ready=true]");
    await finished();

    expect(await blocks()).toEqual(["tool:calculator", "tool:clock", "text:"]);
    expect(await page.$$eval(".turn", (n) => n.length)).toBe(2);
    expect(await page.$$eval(".usage .bar", (n) => n.length)).toBe(2);
    // The answer as drawn is exactly what the run streamed: read it back off the server's event log.
    const state = (await (await fetch(`${server.url}api/state`)).json()) as { run: { id: string } };
    const log = await (await fetch(`${server.url}api/runs/${state.run.id}/events`)).text();
    const streamed = log
      .split("\n")
      .filter((line) => line.startsWith("data: "))
      .map((line) => JSON.parse(line.slice(6)) as { kind: string; text?: string })
      .filter((event) => event.kind === "output")
      .map((event) => event.text)
      .join("");
    expect(await page.textContent(".answer")).toBe(streamed);
  }, 60_000);

  it("a second tab left open shows a run the first one starts, live, to its end", async () => {
    const other = await context.newPage();
    try {
      await other.goto(server.url);
      await other.waitForSelector("body[data-ready=true]");
      await ask("What is 17 * 23?");
      const id = await page.getAttribute("#run", "data-run");
      // Was never: an idle page learnt of no run but the one it was opened on.
      await other.waitForFunction((want) => document.getElementById("run")?.dataset.run === want, id, {
        timeout: 10_000,
      });
      await other.waitForSelector("#metrics:not([hidden])", { timeout: 30_000 });
      await finished();
      expect(await other.textContent(".tool .result")).toBe("391");
      expect(await other.textContent(".answer")).toBe(await page.textContent(".answer"));
      expect(await other.isEnabled("#send")).toBe(true);
    } finally {
      await other.close();
    }
  }, 60_000);

  it("the stop button ends a run whose tool hangs, with every call answered", async () => {
    await ask("What time is it? Then call hang_forever.");
    await page.waitForSelector(".tool[data-state='running'] .name:text('hang_forever')");
    await page.waitForSelector(".tool[data-state='ok'] .name:text('clock')");
    expect(await page.isDisabled("#reset")).toBe(true); // no new conversation while a run goes
    await page.focus("#stop");
    await page.keyboard.press("Enter");
    await finished();
    // The stop is the run's outcome, not "completed".
    expect(await page.textContent("[data-metric='Outcome'] dd")).toBe("stopped");
    expect(await page.textContent("#status")).toBe("Run stopped.");

    const cards = await page.$$eval(".tool", (nodes) =>
      nodes.map((n) => `${n.querySelector(".name")?.textContent}:${(n as HTMLElement).dataset.state}`),
    );
    expect(cards.sort()).toEqual(["clock:ok", "hang_forever:failed"]);
    expect(await page.textContent(".tool[data-state='failed'] .result")).toMatch(/stopped/i);
    expect(await page.textContent(".notice")).toContain("Stopped");
    expect(await page.isDisabled("#stop")).toBe(true);
    expect(await page.isEnabled("#send")).toBe(true);
  }, 60_000);

  it("says a refused Stop's reason instead of 'Stopping…' while the run goes on", async () => {
    // As a page following another playground's run (--redis) is answered: 409 with the reason.
    await page.route("**/api/runs/*/stop", (route) =>
      route.fulfill({
        status: 409,
        contentType: "application/json",
        body: JSON.stringify({ error: "this run is running on another playground instance" }),
      }),
    );
    try {
      await ask("call hang_forever");
      await page.waitForSelector(".tool[data-state='running'] .name:text('hang_forever')");
      await page.click("#stop");
      await page.waitForFunction(() =>
        document.getElementById("status")?.textContent?.startsWith("Not stopped"),
      );
      expect(await page.textContent("#status")).toBe(
        "Not stopped: this run is running on another playground instance.",
      );
    } finally {
      await page.unroute("**/api/runs/*/stop");
    }
    await page.click("#stop");
    await finished();
  }, 60_000);

  it("New conversation forgets the conversation so far: the next prompt is sent alone", async () => {
    const endpoint = await startServer({ scriptedModel: { chunkDelayMs: 0 } });
    const web = await startWebServer({ endpoint: { baseUrl: endpoint.baseUrl, model: "sim" } });
    try {
      await page.goto(web.url);
      await page.waitForSelector("body[data-ready=true]");
      await ask("what is 6 * 7");
      await finished();
      await page.click("#reset");
      await page.waitForFunction(() =>
        document.getElementById("status")?.textContent?.startsWith("New conversation"),
      );
      expect(await page.$$("#run [data-kind]")).toHaveLength(0);
      expect(await page.isHidden("#metrics")).toBe(true);
      await ask("what is 2 * 3");
      await finished();
      const first = endpoint.chatRequests.find((r) => JSON.stringify(r.body).includes("what is 2 * 3"))!
        .body as { messages: { role: string; content: unknown }[] };
      expect(first.messages.filter((m) => m.role === "user").map((m) => m.content)).toEqual([
        "what is 2 * 3",
      ]);
    } finally {
      await web.close();
      await endpoint.close();
    }
  }, 60_000);

  it("a tab whose prompt lost to another tab's keeps its 'Not started' line and does not take that run as its own", async () => {
    const other = await context.newPage();
    // This page's idle watcher asks for runs started elsewhere every 1.5 s, and follows one it
    // finds, as it should. On a loaded machine it could find the other tab's run before this
    // page's prompt is sent, and this test is about a prompt that loses the race: its looks are
    // held until the refusal is shown, then let through (they must not take the run over).
    let holding = true;
    const held: Route[] = [];
    await page.route("**/api/state", (route) => (holding ? void held.push(route) : route.continue()));
    try {
      await other.goto(server.url);
      await other.waitForSelector("body[data-ready=true]");
      await other.fill("#prompt", "call hang_forever");
      await other.press("#prompt", "Enter");
      await other.waitForSelector(".tool[data-state='running'] .name:text('hang_forever')");
      const theirs = await other.getAttribute("#run", "data-run");
      const mine = await page.getAttribute("#run", "data-run");
      await page.fill("#prompt", "what is 5 * 5");
      await page.press("#prompt", "Enter");
      await page.waitForFunction(() =>
        document.getElementById("status")?.textContent?.startsWith("Not started"),
      );
      holding = false;
      for (const route of held.splice(0)) await route.continue();
      // Two of the idle page's looks for runs started elsewhere (every 1.5 s).
      await page.waitForTimeout(3500);
      expect(await page.textContent("#status")).toBe(
        "Not started: a run is in progress. Your prompt is still in the box.",
      );
      expect(await page.getAttribute("#run", "data-run")).toBe(mine);
      expect(await page.getAttribute("#run", "data-run")).not.toBe(theirs);
      expect(await page.inputValue("#prompt")).toBe("what is 5 * 5");
      await other.click("#stop");
      await other.waitForSelector("#metrics:not([hidden])", { timeout: 30_000 });
    } finally {
      holding = false;
      for (const route of held.splice(0)) await route.continue().catch(() => undefined);
      await page.unroute("**/api/state");
      await other.close();
    }
  }, 60_000);

  it("says a run stopped when the playground server is closed mid-run (Ctrl-C), not 'Running…'", async () => {
    const web = await startWebServer({ hangTool: true });
    await page.goto(web.url);
    await page.waitForSelector("body[data-ready=true]");
    await ask("call hang_forever");
    await page.waitForSelector(".tool[data-state='running'] .name:text('hang_forever')");
    await web.close();
    await page.waitForFunction(
      () => document.getElementById("status")?.textContent === "Run stopped.",
      undefined,
      {
        timeout: 10_000,
      },
    );
    expect(await page.textContent("[data-metric='Outcome'] dd")).toBe("stopped");
    expect(await page.isEnabled("#send")).toBe(true);
  }, 60_000);

  it("says the server is gone when it dies mid-run without a word (killed), not 'Running…'", async () => {
    const endpoint = await startServer({
      replies: [{ content: "Slow answer ".repeat(400), chunkChars: 4, chunkDelayMs: 50 }],
    });
    const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts", "--web", "--port", "0"], {
      cwd: fileURLToPath(new URL("../../", import.meta.url)),
      env: { ...process.env, OPENAI_BASE_URL: endpoint.baseUrl, OPENAI_API_KEY: "", LOOPWRIGHT_MODEL: "sim" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    try {
      let out = "";
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no page address in: ${out}`)), 30_000);
        child.stdout!.on("data", (chunk: Buffer) => {
          out += chunk.toString();
          const found = /Playground page: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out)?.[1];
          if (found) {
            clearTimeout(timer);
            resolve(found);
          }
        });
      });
      await page.goto(url);
      await page.waitForSelector("body[data-ready=true]");
      await ask("an essay, slowly");
      await page.waitForSelector(".answer");
      child.kill("SIGKILL");
      await page.waitForFunction(
        () => document.getElementById("status")?.textContent?.startsWith("Lost the run:"),
        undefined,
        { timeout: 25_000 },
      );
      expect(await page.textContent("#status")).toContain("the playground server did not answer");
      expect(await page.isDisabled("#stop")).toBe(true);
    } finally {
      child.kill("SIGKILL");
      await endpoint.close();
    }
  }, 60_000);

  it("shows a spec's warning beside the field it dropped", async () => {
    const file = join(profile, "agent.json");
    await writeFile(
      file,
      JSON.stringify({
        spec: "loopwright.agent/1",
        name: "Checker",
        model: { name: "loopwright-simulator", temperature: 3 },
        prompt: [{ id: "role", text: "You check things." }],
      }),
    );
    await page.click("#spec-panel summary");
    await page.setInputFiles("#spec-file", file);
    const warning = await page.waitForSelector(".field[data-path='model.temperature'] .warning");
    expect(await warning.textContent()).toMatch(/^model\.temperature: .*dropped/);
    expect(await page.$$eval(".field .warning", (n) => n.length)).toBe(1);
    expect(await page.textContent(".applied")).toContain("Applied “Checker”: model loopwright-simulator");
    await mkdir(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, "spec-warning.png") });
  }, 60_000);

  it("shows the endpoint's window once its slow listing answers, having loaded without waiting for it", async () => {
    const endpoint = await slowListing(8000);
    const web = await startWebServer({ endpoint: { baseUrl: endpoint.baseUrl, model: "m" } });
    try {
      await page.goto(web.url);
      await page.waitForSelector("body[data-ready=true]");
      // Ready before the listing answered (before: the first state read waited for it, 8 s here,
      // 10 s where a listing never answers), with no window to show yet. The order, not a number of
      // ms: the listing's answer is counted when it is written, and on the old code the page could
      // only be ready after that.
      expect(endpoint.answered()).toBe(0);
      expect(await page.textContent("#where")).toBe(`Endpoint ${endpoint.baseUrl}: m`);
      // The idle page's next state reads have it, and the page shows it.
      await page.waitForFunction(
        () => document.querySelector("#where")?.textContent?.endsWith(", window 4,096 tokens"),
        undefined,
        { timeout: 15_000 },
      );
    } finally {
      await web.close();
      await endpoint.close();
    }
  }, 60_000);

  it("against an endpoint: reasoning collapsed, a repeated call shown as a repeat, a cache break with its reason", async () => {
    const endpoint = await startServer({
      models: [{ id: "scripted", context_length: 4096 }],
      replies: [
        {
          reasoning: "The user wants 2 + 2; I will ask the calculator.",
          toolCalls: [
            { name: "calculator", arguments: '{"expression":"2 + 2"}' },
            { name: "calculator", arguments: '{"expression":"2 + 2"}' },
          ],
        },
        // The second request only appends, yet the server reports nothing cached: a cache break.
        { content: "2 + 2 = 4.", usage: { cached_tokens: 0 } },
      ],
    });
    const web = await startWebServer({ endpoint: { baseUrl: endpoint.baseUrl, model: "scripted" } });
    try {
      await page.goto(web.url);
      await page.waitForSelector("body[data-ready=true]");
      expect(await page.textContent("#where")).toBe(
        `Endpoint ${endpoint.baseUrl}: scripted, window 4,096 tokens`,
      );
      await ask("what is 2 + 2?");
      await finished();
      const reasoning = await page.waitForSelector("details.reasoning");
      expect(await reasoning.evaluate((d) => (d as HTMLDetailsElement).open)).toBe(false);
      expect(await reasoning.isVisible()).toBe(true);
      expect(await page.isVisible("details.reasoning .body")).toBe(false);
      await page.focus("details.reasoning summary");
      await page.keyboard.press("Enter");
      expect(await page.textContent("details.reasoning .body")).toBe(
        "The user wants 2 + 2; I will ask the calculator.",
      );
      const cards = await page.$$eval(".tool", (nodes) =>
        nodes.map((n) => ({
          repeat: !(n.querySelector(".badge") as HTMLElement).hidden,
          result: n.querySelector(".result")?.textContent,
        })),
      );
      expect(cards).toEqual([
        { repeat: false, result: "4" },
        { repeat: true, result: "4" },
      ]);
      expect(await page.textContent(".answer")).toBe("2 + 2 = 4.");
      expect(await page.$$eval(".cache", (n) => n.map((c) => c.textContent))).toEqual([
        "Cache: not reported by the endpoint",
        expect.stringMatching(
          /^Cache broke: 0 of [\d,]+ cached — the request only appended; the server dropped the cache$/,
        ),
      ]);
      expect(await page.textContent("[data-metric='Cache breaks'] dd")).toBe("1");
    } finally {
      await web.close();
      await endpoint.close();
    }
  }, 60_000);

  it("against an endpoint whose reply is stopped mid-stream, or breaks off: the turn's usage box says it did not finish", async () => {
    const endpoint = await startServer({
      replies: [
        { content: "Slow answer ".repeat(400), chunkChars: 4, chunkDelayMs: 50 },
        { content: "Cut answer ".repeat(40), chunkChars: 8, dropAfterChunk: 3 },
      ],
    });
    const web = await startWebServer({ endpoint: { baseUrl: endpoint.baseUrl, model: "scripted" } });
    try {
      await page.goto(web.url);
      await page.waitForSelector("body[data-ready=true]");
      await ask("Tell me slowly.");
      await page.waitForSelector(".answer:text('Slow answer')");
      await page.click("#stop");
      await finished();
      expect(await page.textContent("[data-metric='Outcome'] dd")).toBe("stopped");
      expect(await page.$$eval(".ended", (n) => n.map((e) => e.textContent))).toEqual([
        "This turn was stopped before it finished: the counts are only what the endpoint reported by then.",
      ]);
      await ask("Again, please.");
      await finished();
      expect(await page.textContent("[data-metric='Outcome'] dd")).toBe("failed");
      expect(await page.$$eval(".ended", (n) => n.map((e) => e.textContent))).toEqual([
        "This turn failed before it finished: the counts are only what the endpoint reported by then.",
      ]);
    } finally {
      await web.close();
      await endpoint.close();
    }
  }, 60_000);

  it("against an endpoint that streams its scratchpad as content: the answer drawn is the answer alone once a lone </think> arrives", async () => {
    // A template that opened <think> in the prompt, served with no reasoning parser: the plan is
    // drawn as answer until </think> says it was reasoning (a retract event).
    const plan = "The user greets me, so I greet back.";
    const endpoint = await startServer({
      models: [{ id: "scripted", context_length: 4096 }],
      replies: [{ content: `${plan}</think>Hello!`, chunkChars: 4, chunkDelayMs: 20 }],
    });
    const web = await startWebServer({ endpoint: { baseUrl: endpoint.baseUrl, model: "scripted" } });
    try {
      await page.goto(web.url);
      await page.waitForSelector("body[data-ready=true]");
      await ask("hello");
      await finished();
      expect(await page.$$eval(".answer", (n) => n.map((a) => a.textContent))).toEqual(["Hello!"]);
      expect(await page.$$eval("details.reasoning .body", (n) => n.map((b) => b.textContent))).toEqual([
        plan,
      ]);
    } finally {
      await web.close();
      await endpoint.close();
    }
  }, 60_000);

  it("says where the runs go once a loaded spec names an endpoint, instead of the simulator", async () => {
    const endpoint = await startServer({
      models: [{ id: "elsewhere", context_length: 2048 }],
      scriptedModel: true,
    });
    const web = await startWebServer();
    try {
      await page.goto(web.url);
      await page.waitForSelector("body[data-ready=true]");
      expect(await page.textContent("#where")).toMatch(/^Simulator \(a scripted stand-in, not a model\): /);
      await page.click("#spec-panel summary");
      await page.fill(
        "#spec-text",
        JSON.stringify({
          spec: "loopwright.agent/1",
          model: { name: "elsewhere", endpoint: { baseUrl: endpoint.baseUrl } },
        }),
      );
      await page.click("#spec-form button[type=submit]");
      await page.waitForSelector(".applied");
      // Was still "Simulator (a scripted stand-in, not a model): elsewhere" while the runs went there.
      await page.waitForFunction(
        () => document.getElementById("where")?.textContent?.startsWith("Endpoint"),
        undefined,
        { timeout: 10_000 },
      );
      expect(await page.textContent("#where")).toBe(
        `Endpoint ${endpoint.baseUrl}: elsewhere, window 2,048 tokens`,
      );
    } finally {
      await web.close();
      await endpoint.close();
    }
  }, 60_000);

  it("opened after its last run's events were let go: says the run ended and takes the next prompt at once", async () => {
    const web = await startWebServer({ retainEndedMs: 200 });
    try {
      const started = await fetch(`${web.url}api/runs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ prompt: "what is 6 * 7" }),
      });
      const { id } = (await started.json()) as { id: string };
      // Followed to its end (the stream closes after done), then let go by the server.
      await (await fetch(`${web.url}api/runs/${id}/events`)).text();
      const deadline = Date.now() + 10_000;
      while ((await fetch(`${web.url}api/runs/${id}/events`)).status !== 410 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      expect((await fetch(`${web.url}api/runs/${id}/events`)).status).toBe(410);

      await page.goto(web.url);
      await page.waitForSelector("body[data-ready=true]");
      await page.waitForFunction(
        () => !(document.getElementById("send") as HTMLButtonElement).disabled,
        undefined,
        { timeout: 20_000 },
      );
      // Was "Lost this run's events: the server no longer has it. Reload to start again." after six
      // failed reconnects, with the Run button disabled meanwhile — and a reload did the same.
      expect(await page.textContent("#status")).toBe(
        "The last run has ended; its events are no longer kept.",
      );
      expect(await page.isDisabled("#stop")).toBe(true);
      await ask("what is 6 * 7");
      await finished();
      expect(await page.textContent(".tool .result")).toBe("42");
    } finally {
      await web.close();
    }
  }, 60_000);

  it("says a prompt was not started when the playground server is gone, rather than 'Starting…' for ever", async () => {
    const web = await startWebServer();
    await page.goto(web.url);
    await page.waitForSelector("body[data-ready=true]");
    await web.close(); // Ctrl-C in the terminal; the page stays open
    await page.fill("#prompt", "what is 6 * 7");
    await page.press("#prompt", "Enter");
    await page.waitForFunction(
      () => document.getElementById("status")?.textContent?.startsWith("Not started"),
      undefined,
      {
        timeout: 10_000,
      },
    );
    expect(await page.textContent("#status")).toBe(
      "Not started: the playground server did not answer (is it still running?).",
    );
    expect(await page.inputValue("#prompt")).toBe("what is 6 * 7");
    expect(await page.isEnabled("#send")).toBe(true);
  }, 60_000);

  // The four --redis tests run side by side, each in its own tab with its own Redis and playgrounds:
  // most of their time is waiting out Redis deadlines and grace periods.
  it.skipIf(!HAS_REDIS).concurrent(
    "with --redis and Redis not answering: says so on opening and on a prompt, and runs the next prompt once it answers",
    async ({ expect, onTestFinished }) => {
      const page = await ownTab(onTestFinished);
      const redis = await RedisServer.start();
      const admin = createClient({ url: redis.url });
      await admin.connect();
      await admin.configSet("requirepass", "pw-page-8642");
      await admin.quit();
      const web = await startWebServer({ redis: `redis://:pw-page-8642@127.0.0.1:${redis.port}/0?x=1` });
      const reason = `Redis at redis://127.0.0.1:${redis.port}/0 is not reachable: no answer within ${SHARED_RUNS_DEADLINE_MS / 1000} s`;
      const said = (start: string) =>
        page.waitForFunction(
          (text) => document.getElementById("status")?.textContent?.startsWith(text),
          start,
          {
            timeout: 15_000,
          },
        );
      let paused = false;
      try {
        redis.pause();
        paused = true;
        await page.goto(web.url);
        await said("The playground server cannot serve the page now");
        expect(await page.textContent("#status")).toBe(
          `The playground server cannot serve the page now: ${reason}. Reload to try again.`,
        );
        await page.fill("#prompt", "what is 6 * 7");
        await page.press("#prompt", "Enter");
        await said("Not started");
        expect(await page.textContent("#status")).toBe(
          `Not started: ${reason}. Your prompt is still in the box.`,
        );
        expect(await page.inputValue("#prompt")).toBe("what is 6 * 7");

        redis.resume();
        paused = false;
        await page.goto(web.url);
        await page.waitForSelector("body[data-ready=true]");
        // The refused prompt was not run meanwhile: the page has no run to show.
        expect(await page.getAttribute("#run", "data-run")).toBeNull();
        await ask("what is 6 * 7", page);
        await finished(page);
        expect(await page.isEnabled("#send")).toBe(true);
      } finally {
        if (paused) redis.resume();
        await web.close();
        await redis.kill();
      }
    },
    60_000,
  );

  it.skipIf(!HAS_REDIS).concurrent(
    "with --redis, a followed run whose stream and state are refused with 503 (Redis not answering) is retried, not told gone, and followed to its end once Redis answers",
    async ({ expect, onTestFinished }) => {
      const page = await ownTab(onTestFinished);
      const redis = await RedisServer.start();
      // A runs the prompt; the page is on B, which follows A's run through Redis alone.
      const a = await startWebServer({ redis: redis.url, hangTool: true });
      const b = await startWebServer({ redis: redis.url });
      let paused = false;
      let held: (() => void) | undefined;
      const reached = new Promise<void>((seen) => {
        held = seen;
      });
      let release: () => void = () => {};
      const released = new Promise<void>((go) => {
        release = go;
      });
      const answered: string[] = [];
      const record = (response: { status(): number; url(): string }) => {
        const path = new URL(response.url()).pathname;
        if (path.startsWith("/api/")) answered.push(`${response.status()} ${path}`);
      };
      const said = (start: string) =>
        page.waitForFunction(
          (text) => document.getElementById("status")?.textContent?.startsWith(text),
          start,
          { timeout: 20_000 },
        );
      try {
        const started = await fetch(`${a.url}api/runs`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ prompt: "call hang_forever" }),
        });
        expect(started.status).toBe(201);
        const { id } = (await started.json()) as { id: string };
        // The page's first request for the run's stream is held until Redis is paused, then sent to
        // B as it is: B answers it 503 (it cannot look the run up), and the page's look at
        // /api/state?run= is answered 503 too.
        await page.route(`**/api/runs/${id}/events*`, async (route) => {
          held?.();
          await released;
          await route.continue();
        });
        page.on("response", record);
        await page.goto(`${b.url}?run=${id}`);
        await page.waitForSelector("body[data-ready=true]");
        await reached;
        redis.pause();
        paused = true;
        release();
        // Whichever the page says first of "reconnecting" and "no longer has this run".
        await page.waitForFunction(
          () =>
            /reconnecting|no longer has this run/.test(document.getElementById("status")?.textContent ?? ""),
          undefined,
          { timeout: 20_000 },
        );
        // Was "The server no longer has this run (it was restarted); ask again.", the run taken as
        // over, while A was still running it.
        expect(await page.textContent("#status")).toBe("Lost the run's events; reconnecting…");
        expect(await page.isEnabled("#stop")).toBe(true);
        expect(await page.isDisabled("#send")).toBe(true);
        page.off("response", record);
        expect(answered).toEqual(expect.arrayContaining([`503 /api/runs/${id}/events`, "503 /api/state"]));

        await page.unroute(`**/api/runs/${id}/events*`);
        redis.resume();
        paused = false;
        // The page asks again and follows the run: its tool card, then its end when A stops it.
        await page.waitForSelector(".tool[data-state='running'] .name:text('hang_forever')", {
          timeout: 20_000,
        });
        const stop = await fetch(`${a.url}api/runs/${id}/stop`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: "{}",
        });
        expect(stop.status).toBeLessThan(300);
        await said("Run stopped.");
        expect(await page.textContent("[data-metric='Outcome'] dd")).toBe("stopped");
        expect(await page.isEnabled("#send")).toBe(true);
      } finally {
        release();
        page.off("response", record);
        if (paused) redis.resume();
        await page.unrouteAll();
        await a.close();
        await b.close();
        await redis.kill();
      }
    },
    90_000,
  );

  it.skipIf(!HAS_REDIS).concurrent(
    "with --redis, a run whose host died part-way ends on the page with the 'stream is gone' notice, and the page takes the next prompt",
    async ({ expect, onTestFinished }) => {
      const page = await ownTab(onTestFinished);
      const redis = await RedisServer.start();
      const web = await startWebServer({ redis: redis.url });
      try {
        // Another playground runs "crashed" on this Redis; its record says the run has not ended.
        const shared = await connectSharedRuns(redis.url);
        await shared.put({ id: "crashed", prompt: "what is 6 * 7", ended: false });
        await shared.close();
        await page.goto(`${web.url}?run=crashed`);
        await page.waitForSelector("body[data-ready=true]");
        // With the page open, the run writes two events, then its host dies without `done` (its
        // unended runs kept 3 s). The page comes first: a page that came after the stream expired
        // would be told the other thing (cannot tell), after a minute's grace — which is what
        // happened here under CI's load when the events were written before the page loaded.
        const dead = await createRedisBus({
          url: redis.url,
          settings: { retainUnendedMs: 3000 },
          onError: () => {},
        });
        dead.emit("crashed", { kind: "output", text: "half an answer" });
        dead.emit("crashed", { kind: "output", text: ", then nothing" });
        await dead.flushed();
        await dead.close();
        // The watcher's notice carries the last seq read (2): before, the page took it for an event
        // it had drawn and dropped it, and said nothing of the run's emitter being gone.
        const notice = await page.waitForSelector("#run .notice", { timeout: 15_000 });
        expect(await notice.textContent()).toMatch(
          /stream is gone from Redis \(expired\) without its `done`/,
        );
        expect(await page.textContent("#run")).toContain("half an answer, then nothing");
        // No `done` will come: the page stops following the run and takes the next prompt.
        await page.waitForFunction(() => !(document.getElementById("send") as HTMLButtonElement).disabled);
        // The watcher saw the stream expire without `done`: it can say the run's host stopped.
        expect(await page.textContent("#status")).toBe(
          "The run's events are gone from Redis: its host stopped without ending it.",
        );
        expect(await page.isDisabled("#stop")).toBe(true);
        await new Promise((resolve) => setTimeout(resolve, 1500));
        expect(await page.$$eval("#run .notice", (nodes) => nodes.length)).toBe(1);
      } finally {
        await web.close();
        await redis.kill();
      }
    },
    60_000,
  );

  it.skipIf(!HAS_REDIS).concurrent(
    "with --redis, a run whose stream was already gone when the page came is not said to have ended: the page says it cannot tell",
    async ({ expect, onTestFinished }) => {
      const page = await ownTab(onTestFinished);
      const redis = await RedisServer.start();
      const web = await startWebServer({ redis: redis.url, unwrittenGraceMs: 2000 });
      const admin = createClient({ url: redis.url });
      admin.on("error", () => {});
      try {
        // Another playground ran "silent" on this Redis; its record says the run has not ended, and
        // its stream is gone before this page comes: expired (its host died), or lost to a Redis
        // restart or eviction while the run is still working (a long tool call) — Redis cannot say.
        const other = await createRedisBus({
          url: redis.url,
          settings: { retainUnendedMs: 1500 },
          onError: () => {},
        });
        other.emit("silent", { kind: "output", text: "half an answer" });
        await other.flushed();
        await other.close();
        const shared = await connectSharedRuns(redis.url);
        await shared.put({ id: "silent", prompt: "what is 6 * 7", ended: false });
        await shared.close();
        await admin.connect();
        const left = () => admin.exists(["lw:run:silent", "lw:claim:silent"]);
        for (let i = 0; i < 50 && (await left()) !== 0; i++)
          await new Promise((resolve) => setTimeout(resolve, 200));
        expect(await left()).toBe(0);

        await page.goto(`${web.url}?run=silent`);
        await page.waitForSelector("body[data-ready=true]");
        const notice = await page.waitForSelector("#run .notice", { timeout: 15_000 });
        expect(await notice.textContent()).toMatch(/whether it ended cannot be told/);
        await page.waitForFunction(() => !(document.getElementById("send") as HTMLButtonElement).disabled);
        // Was "The run's events are gone from Redis: it ended there, or its host stopped without
        // ending it.", for a run that may still be running elsewhere.
        expect(await page.textContent("#status")).toBe(
          "This run's events are no longer in Redis; it may have ended, or still be running elsewhere. Reload to look again.",
        );
        expect(await page.isDisabled("#stop")).toBe(true);
      } finally {
        admin.destroy();
        await web.close();
        await redis.kill();
      }
    },
    60_000,
  );

  it("shows an endpoint that cannot be reached as an error line, and the run as failed", async () => {
    const closed = await startServer({});
    const baseUrl = closed.baseUrl;
    await closed.close();
    const web = await startWebServer({ endpoint: { baseUrl, model: "gone", contextLength: 1000 } });
    try {
      await page.goto(web.url);
      await page.waitForSelector("body[data-ready=true]");
      await ask("hello?");
      await finished();
      expect(await page.textContent(".error[role='alert']")).toMatch(/^Error: .+/);
      expect(await page.textContent("[data-metric='Outcome'] dd")).toBe("failed");
      expect(await page.isEnabled("#send")).toBe(true);
    } finally {
      await web.close();
    }
  }, 60_000);
});
