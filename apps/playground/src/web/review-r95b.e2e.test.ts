/// <reference lib="dom" />
// Review r95b, the page as a first-time user meets it: a run that ended on an error is said to
// have failed in the status line, as its metrics say (`Outcome: failed`), not "Run finished.".
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { startServer, type TestServer } from "@loopwright/testkit";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { askAndSettle, CHROMIUM, FLAGS, hasChromium } from "./e2e-support.js";
import { startWebServer, type WebServer } from "./server.js";

if (!hasChromium) {
  console.warn(`[playground review-r95b e2e] skipped: ${CHROMIUM} is absent (apt-get install -y chromium).`);
}

describe.skipIf(!hasChromium)("the page's status line after a run ends", () => {
  let model: TestServer;
  let web: WebServer;
  let browser: Browser;

  beforeAll(async () => {
    if (!existsSync(fileURLToPath(new URL("../../dist/web/index.html", import.meta.url))))
      throw new Error("The page is not built: run `pnpm --filter @loopwright/playground build` first.");
    // The first prompt is refused as a wrong base URL is (404, not retried); the second is answered.
    model = await startServer({
      replies: [
        { type: "error", status: 404, body: { error: { message: "File Not Found", code: 404 } } },
        { content: "hello there" },
      ],
      models: [{ id: "m", context_length: 8192 }],
    });
    web = await startWebServer({ endpoint: { baseUrl: model.baseUrl, apiKey: "k", model: "m" } });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await web?.close();
    await model?.close();
  });

  it("says the run failed, with its error, and a later answered run finished", async () => {
    const page = await browser.newPage();
    await page.goto(web.url);
    await page.waitForSelector("body[data-ready=true]");
    const settled = async (prompt: string) => {
      await askAndSettle(page, prompt);
      return { status: await page.textContent("#status"), metrics: await page.textContent("#metrics") };
    };
    const failed = await settled("hello");
    expect(failed.metrics).toContain("failed");
    // Was "Run finished." under the error.
    expect(failed.status).toMatch(/^Run failed: .*404/);
    const answered = await settled("hello again");
    expect(answered.metrics).toContain("completed");
    expect(answered.status).toBe("Run finished.");
    await page.close();
  }, 60_000);
});
