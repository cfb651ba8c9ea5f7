/// <reference lib="dom" />
// The playground's server as another web page sees it, in a real headless Chromium: a page on
// another origin that the user happens to visit cannot start a run (so cannot send the host's key
// anywhere, nor load a spec), and markup a model, a tool or a spec writes is shown as text, never
// run. Against the page as built (dist/web).
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Reply, startServer, type TestServer } from "@loopwright/testkit";
import { type BrowserContext, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { askAndSettle, CHROMIUM, FLAGS, hasChromium } from "./e2e-support.js";
import { startWebServer, type WebServer } from "./server.js";

if (!hasChromium) console.warn(`[playground hostile e2e] skipped: ${CHROMIUM} is absent.`);

/** Markup that sets `window.pwned` if a page ever parses it as HTML. */
const MARKUP = (where: string) =>
  `<img src="x:" onerror="window.pwned='${where}'"><b class="injected">${where}</b>`;

/**
 * One line of 1 MB from a model: markup, a `javascript:` link, a `</textarea>`, entities, a right-to-left
 * override, terminal escapes and a lone surrogate, over and over, with no line break.
 */
const HOSTILE =
  `<script>window.pwned='script'</script><img src="x:" onerror="window.pwned='line'">` +
  `<a href="javascript:window.pwned='link'">link</a></textarea>&lt;&amp;\u202e\x1b]0;title\x07\x1b[2J\ud800 `;
const MEGABYTE_LINE = HOSTILE.repeat(Math.ceil(1_000_000 / HOSTILE.length)).slice(0, 1_000_000);

/**
 * For a describe block: a scripted endpoint giving `replies` in turn and a playground on it, started
 * before its tests and closed after them. Returns the playground, to call inside a test.
 */
function playgroundOn(replies: Reply[]): () => WebServer {
  let web: WebServer | undefined;
  let model: TestServer | undefined;
  beforeAll(async () => {
    model = await startServer({ replies, scriptedModel: { chunkDelayMs: 0 } });
    web = await startWebServer({ endpoint: { baseUrl: model.baseUrl, model: "sim" } });
  });
  afterAll(async () => {
    await web?.close();
    await model?.close();
  });
  return () => {
    if (!web) throw new Error("playgroundOn: the playground starts in beforeAll; call this inside a test.");
    return web;
  };
}

describe.skipIf(!hasChromium)("the playground's server against other pages, in headless Chromium", () => {
  let context: BrowserContext;
  let profile: string;
  beforeAll(async () => {
    profile = await mkdtemp(join(tmpdir(), "loopwright-chromium-"));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: FLAGS,
    });
  }, 60_000);
  afterAll(async () => {
    await context?.close();
    if (profile) await rm(profile, { recursive: true, force: true });
  });

  describe("a page on another origin", () => {
    let web: WebServer;
    let attacker: Server;
    let evil: TestServer;
    beforeAll(async () => {
      evil = await startServer({ scriptedModel: { chunkDelayMs: 0 } });
      web = await startWebServer({ endpoint: { baseUrl: evil.baseUrl, apiKey: "sk-victim-key-1234" } });
      // A page that tries every way a cross-site request can be made without a CORS grant.
      const target = web.url;
      const spec = JSON.stringify({
        text: JSON.stringify({
          spec: "loopwright.agent/1",
          model: { name: "x", endpoint: { baseUrl: evil.baseUrl } },
        }),
      });
      const html = `<!doctype html><form id="f" method="POST" action="${target}api/runs" enctype="text/plain" target="sink">
<input name='{"prompt":"via form","x":"' value='"}'></form><iframe name="sink"></iframe><script>
const tries = [
  fetch("${target}api/runs", { method: "POST", mode: "no-cors", body: '{"prompt":"via no-cors"}' }),
  fetch("${target}api/runs", { method: "POST", mode: "no-cors", headers: { "content-type": "application/json" }, body: '{"prompt":"via no-cors json"}' }),
  fetch("${target}api/runs", { method: "POST", headers: { "content-type": "application/json" }, body: '{"prompt":"via cors"}' }),
  fetch("${target}api/spec", { method: "POST", mode: "no-cors", body: ${JSON.stringify(spec)} }),
  fetch("${target}api/state").then((r) => r.text()),
  new Promise((resolve) => { navigator.sendBeacon("${target}api/runs", '{"prompt":"via beacon"}'); setTimeout(resolve, 300); }),
];
Promise.allSettled(tries).then((results) => {
  window.readState = results[4].status === "fulfilled" ? results[4].value : "";
  document.getElementById("f").submit();
  setTimeout(() => { document.body.dataset.done = "true"; }, 500);
});
</script>`;
      attacker = createServer((_req, res) => res.writeHead(200, { "content-type": "text/html" }).end(html));
      await new Promise<void>((resolve) => attacker.listen(0, "127.0.0.1", resolve));
    });
    afterAll(async () => {
      await web?.close();
      await evil?.close();
      attacker?.closeAllConnections();
      await new Promise((resolve) => attacker?.close(resolve));
    });

    it("cannot start a run, load a spec or read the state: no request reaches the endpoint", async () => {
      const page = await context.newPage();
      const { port } = attacker.address() as AddressInfo;
      // Another origin on this very machine (the port differs), as a local dev server or a visited site is.
      await page.goto(`http://localhost:${port}/`);
      await page.waitForSelector("body[data-done=true]", { timeout: 15_000 });
      expect(await page.evaluate(() => (window as unknown as { readState: string }).readState)).toBe("");
      await page.close();
      const state = (await (await fetch(new URL("api/state", web.url))).json()) as {
        run?: unknown;
        spec?: unknown;
      };
      expect(state.run).toBeUndefined();
      expect(state.spec).toBeUndefined();
      expect(evil.chatRequests).toHaveLength(0);
    }, 30_000);
  });

  describe.skipIf(!existsSync(fileURLToPath(new URL("../../dist/web/index.html", import.meta.url))))(
    "a page on another origin that frames the playground (r77c)",
    () => {
      let web: WebServer;
      let attacker: Server;
      beforeAll(async () => {
        web = await startWebServer({});
        // The playground in an invisible frame over a decoy button: every click the user gives the
        // decoy (Stop, New conversation, a spec pasted by drag and drop) would land on the playground.
        const html = `<!doctype html><button style="position:absolute;top:0">Win a prize</button>
<iframe id="victim" src="${web.url}" style="opacity:0;position:absolute;top:0;width:800px;height:600px"></iframe>`;
        attacker = createServer((_req, res) => res.writeHead(200, { "content-type": "text/html" }).end(html));
        await new Promise<void>((resolve) => attacker.listen(0, "127.0.0.1", resolve));
      });
      afterAll(async () => {
        await web?.close();
        attacker?.closeAllConnections();
        await new Promise((resolve) => attacker?.close(resolve));
      });

      it("is not shown in the frame: the server forbids framing", async () => {
        const page = await context.newPage();
        const { port } = attacker.address() as AddressInfo;
        await page.goto(`http://localhost:${port}/`);
        await page.waitForLoadState("load");
        // Given its time to load and run, as the playground's own tests wait for it.
        await new Promise((resolve) => setTimeout(resolve, 1500));
        const framed = page.frames().filter((frame) => frame !== page.mainFrame());
        expect(framed).toHaveLength(1);
        const ready = await framed[0]!
          .evaluate(
            () => document.querySelector("#prompt") !== null || document.body?.dataset.ready === "true",
          )
          .catch(() => false);
        expect(ready).toBe(false);
        await page.close();
      }, 30_000);
    },
  );

  describe.skipIf(!existsSync(fileURLToPath(new URL("../../dist/web/index.html", import.meta.url))))(
    "markup from a model, a tool and a spec",
    () => {
      const web = playgroundOn([
        {
          reasoning: MARKUP("reasoning"),
          toolCalls: [
            { id: "c1", name: "calculator", arguments: JSON.stringify({ expression: MARKUP("tool") }) },
            { id: "c2", name: "<img src=x: onerror=window.pwned='name'>", arguments: "{}" },
          ],
        },
        { content: MARKUP("answer") },
      ]);

      it("is shown as text and never run", async () => {
        const page = await context.newPage();
        await page.goto(web().url);
        await page.waitForSelector("body[data-ready=true]");
        await page.click("#spec-panel summary");
        await page.fill(
          "#spec-text",
          JSON.stringify({ spec: "loopwright.agent/1", [MARKUP("spec-key")]: MARKUP("spec-value") }),
        );
        await page.click("#spec-form button[type=submit]");
        await page.waitForSelector("#spec-result .field");
        await page.fill("#prompt", MARKUP("prompt"));
        await page.press("#prompt", "Enter");
        await page.waitForSelector("#metrics:not([hidden])", { timeout: 30_000 });
        const text = await page.textContent("body");
        for (const where of ["reasoning", "answer", "prompt", "spec-key"])
          expect(text).toContain(`window.pwned='${where}'`);
        expect(await page.evaluate(() => (window as unknown as { pwned?: string }).pwned)).toBeUndefined();
        expect(await page.$$("img, b.injected")).toHaveLength(0);
        await page.close();
      }, 60_000);
    },
  );

  describe.skipIf(!existsSync(fileURLToPath(new URL("../../dist/web/index.html", import.meta.url))))(
    "a megabyte line from a model (r104b)",
    () => {
      const web = playgroundOn([
        {
          reasoning: MEGABYTE_LINE,
          toolCalls: [
            { id: "c1", name: "calculator", arguments: JSON.stringify({ expression: MEGABYTE_LINE }) },
          ],
          chunkChars: 65_536,
        },
        { content: MEGABYTE_LINE, chunkChars: 65_536 },
        { content: "The next answer." },
      ]);

      // Before, Chromium spent about 20 s laying out each redraw of such a line (its time grows with
      // the square of a line's length once it holds a bidi control): the page did not answer a click
      // for minutes. The page draws the first 100,000 characters of a block and says how many more.
      it("is drawn cut, as text, saying how much is not shown, and the page takes the next prompt", async () => {
        const page = await context.newPage();
        await page.goto(web().url);
        await page.waitForSelector("body[data-ready=true]");
        await askAndSettle(page, "Read me something long.");
        for (const block of [".answer", ".reasoning .body"]) {
          const drawn = (await page.textContent(block)) ?? "";
          expect(drawn.length).toBeLessThan(100_200);
          expect(drawn).toContain(MEGABYTE_LINE.slice(0, 1000));
          expect(drawn).toMatch(
            /\[… 900,000 more characters, not shown: the page draws the first 100,000 of a block\]$/,
          );
        }
        // The loop itself hands a watcher 2,000 characters of a tool's arguments; shown as text.
        expect(await page.textContent(".tool .args")).toContain(`window.pwned='link'`);
        expect(await page.evaluate(() => (window as unknown as { pwned?: string }).pwned)).toBeUndefined();
        expect(await page.$$("#run img, #run script, #run a, #run textarea")).toHaveLength(0);
        await askAndSettle(page, "And now?");
        expect(await page.textContent(".answer")).toBe("The next answer.");
        await page.close();
      }, 180_000);
    },
  );

  describe.skipIf(!existsSync(fileURLToPath(new URL("../../dist/web/index.html", import.meta.url))))(
    "a megabyte error message from an endpoint (r104b)",
    () => {
      const web = playgroundOn([
        { type: "error", status: 400, body: { error: { message: MEGABYTE_LINE, code: 400 } } },
        { content: "The next answer." },
      ]);

      // Before, the status line drew the whole message (`Run failed: …`): 30 s of layout.
      it("is drawn cut in the error line and in the status line, and the page takes the next prompt", async () => {
        const page = await context.newPage();
        await page.goto(web().url);
        await page.waitForSelector("body[data-ready=true]");
        await askAndSettle(page, "Fail, please.");
        const status = (await page.textContent("#status")) ?? "";
        // The error as the endpoint's client words it (`400 {"error":…}`), its first 1,000 characters.
        expect(status).toContain(
          `Run failed: 400 {"error":{"message":"<script>window.pwned='script'</script>`,
        );
        expect(status.length).toBeLessThan(1200);
        expect(status).toMatch(
          / more characters, not shown: the page draws the first 1,000 of a status line\]$/,
        );
        expect(((await page.textContent(".error")) ?? "").length).toBeLessThan(100_200);
        expect(await page.evaluate(() => (window as unknown as { pwned?: string }).pwned)).toBeUndefined();
        await askAndSettle(page, "And now?");
        expect(await page.textContent(".answer")).toBe("The next answer.");
        await page.close();
      }, 180_000);
    },
  );
});
