/// <reference lib="dom" />
// Review r104b: every open tab of the playground follows the live run over its own event stream (an
// idle tab adopts a run another tab started), and Chromium opens at most six connections to one
// host. With six tabs open, a run's six streams took them all: Stop sent nothing (the status line
// said "Stopping…" for as long as the run went on, for ever with a hung tool), and a seventh tab
// did not even load. A tab in the background now lets go of its stream, and picks the run up where
// it left off once it is shown again.

import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM, FLAGS, hasChromium } from "./e2e-support.js";
import { startWebServer, type WebServer } from "./server.js";

if (!hasChromium) {
  console.warn(`[playground review-r104b e2e] skipped: ${CHROMIUM} is absent (apt-get install -y chromium).`);
}

/**
 * Puts `tab` in the background (or back in front) as the browser tells a page: `document.hidden`
 * and a `visibilitychange` event. Headless Chromium shows every tab at once, so the test says it.
 */
const setHidden = (tab: Page, hidden: boolean) =>
  tab.evaluate((hide) => {
    Object.defineProperty(document, "hidden", { configurable: true, get: () => hide });
    Object.defineProperty(document, "visibilityState", {
      configurable: true,
      get: () => (hide ? "hidden" : "visible"),
    });
    document.dispatchEvent(new Event("visibilitychange"));
  }, hidden);

describe.skipIf(!hasChromium)("six tabs of the playground in one browser", () => {
  let web: WebServer;
  let browser: Browser;
  let context: BrowserContext;

  beforeAll(async () => {
    web = await startWebServer({ hangTool: true, chunkDelayMs: 5 });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
    // One context: its tabs share the browser's connections to the playground, as a user's tabs do.
    context = await browser.newContext();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await web?.close();
  });

  it("stop a run from the tab in front while the five others are in the background, and those show the stop once shown", async () => {
    const front = await context.newPage();
    await front.goto(web.url);
    await front.waitForSelector("body[data-ready=true]");
    await front.fill("#prompt", "call hang_forever");
    await front.press("#prompt", "Enter");
    await front.waitForSelector(".tool[data-state='running'] .name:text('hang_forever')");
    // Five more tabs, each following the run live (six streams: every connection Chromium allows).
    const others: Page[] = [];
    for (let i = 0; i < 5; i++) {
      const tab = await context.newPage();
      await tab.goto(web.url);
      await tab.waitForSelector(".tool[data-state='running'] .name:text('hang_forever')");
      others.push(tab);
    }
    for (const tab of others) await setHidden(tab, true);

    await front.click("#stop");
    await front.waitForSelector("#status:text('Run stopped.')", { timeout: 15_000 });
    expect(await front.textContent("#status")).toBe("Run stopped.");

    // A background tab shown again picks the run up after what it drew: stopped, nothing drawn twice.
    const back = others[0]!;
    await setHidden(back, false);
    await back.waitForSelector("#status:text('Run stopped.')", { timeout: 15_000 });
    expect(await back.$$eval(".tool .name", (names) => names.map((n) => n.textContent))).toEqual([
      "hang_forever",
    ]);
    expect(await back.isDisabled("#send")).toBe(false);
  }, 60_000);
});
