/// <reference lib="dom" />
// Review r95l: under an endpoint's error the terminal says what to check (endpointHint); the page
// showed the raw error only ("Error: Connection error.", "Error: 404 The model … does not exist")
// and left the user to guess which setting was wrong. The page now draws the same advice, as text,
// in the line after the error.
import { type AddressInfo, createServer } from "node:net";
import { startServer, type TestServer } from "@loopwright/testkit";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { askAndSettle, CHROMIUM, FLAGS, hasChromium } from "./e2e-support.js";
import { startWebServer, type WebServer } from "./server.js";

if (!hasChromium) {
  console.warn(`[playground review-r95l e2e] skipped: ${CHROMIUM} is absent (apt-get install -y chromium).`);
}

const KEY = "sk-r95l-do-not-show-0123456789abcdef";
/** A model name with markup in it: drawn as HTML, it would become an element. */
const MODEL = "<b>gone</b>";

/** A loopback port nothing listens on (listened on, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe.skipIf(!hasChromium)("the page's advice under an endpoint's error", () => {
  let model: TestServer;
  const webs: WebServer[] = [];
  let browser: Browser;

  beforeAll(async () => {
    // vLLM's answer to a model it does not serve: a 404 naming the model (not retried).
    model = await startServer({
      replies: [
        {
          type: "error",
          status: 404,
          body: { error: { message: `The model \`${MODEL}\` does not exist.`, code: 404 } },
        },
      ],
      models: [{ id: "served", context_length: 8192 }],
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    for (const web of webs) await web.close();
    await model?.close();
  });

  /** The error line of a run of one prompt against `endpoint`, and the line drawn after it. */
  const failedRun = async (endpoint: { baseUrl: string; apiKey: string; model: string }) => {
    const web = await startWebServer({ endpoint });
    webs.push(web);
    const page = await browser.newPage();
    await page.goto(web.url);
    await page.waitForSelector("body[data-ready=true]");
    await askAndSettle(page, "hello");
    const seen = await page.evaluate(() => {
      const error = document.querySelector("#run .error, .error[role=alert]");
      const next = error?.nextElementSibling;
      return {
        error: error?.textContent ?? "",
        after: next?.className === "notice" ? (next.textContent ?? "") : "",
        elementsInAfter: next?.children.length ?? -1,
        body: document.body.textContent ?? "",
      };
    });
    await page.close();
    return seen;
  };

  it("says to check the server and OPENAI_BASE_URL when nothing answers, and which model when a 404 names it", async () => {
    const port = await closedPort();
    const closed = await failedRun({ baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: KEY, model: "m" });
    expect(closed.error).toMatch(/^Error: /);
    // Was no line after the error: the page had no advice.
    expect(closed.after).toBe(
      `Nothing answered at http://127.0.0.1:${port}/v1: is the server running there, and does OPENAI_BASE_URL name it?`,
    );
    expect(closed.body).not.toContain(KEY);

    const missing = await failedRun({ baseUrl: model.baseUrl, apiKey: KEY, model: MODEL });
    expect(missing.error).toMatch(/^Error: 404\b/);
    expect(missing.after).toContain(`serves no model "${MODEL}": check LOOPWRIGHT_MODEL`);
    // Text, not markup: the model's `<b>` is shown as written, no element made of it.
    expect(missing.elementsInAfter).toBe(0);
    expect(missing.body).not.toContain(KEY);
  }, 90_000);
});
