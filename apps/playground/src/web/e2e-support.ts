// Shared by the page's browser tests (page.e2e.test.ts, hostile.e2e.test.ts) and the server's
// review tests; not part of the app.
import { existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Page } from "playwright-core";

/** Where the machine's Chromium is (TOOLCHAIN.md: Debian's package). */
export const CHROMIUM = "/usr/bin/chromium";
/** Whether it is there; the browser tests skip with a message when it is not. */
export const hasChromium = existsSync(CHROMIUM);
/** Headless flags for a sandbox without GPU, network services or first-run work. */
export const FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/**
 * An endpoint whose model listing answers only after `listingMs`; its chat requests are counted, and
 * so are the listings it has answered (`answered`), for tests that assert something happened before
 * the listing's answer was written rather than within a number of ms.
 */
export async function slowListing(listingMs: number) {
  const chats: string[] = [];
  let listings = 0;
  let answered = 0;
  const server: Server = createServer((req, res) => {
    if (req.url?.includes("/models")) {
      listings++;
      const timer = setTimeout(() => {
        answered++;
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({ object: "list", data: [{ id: "m", object: "model", context_length: 4096 }] }),
        );
      }, listingMs);
      res.on("close", () => clearTimeout(timer));
    } else {
      chats.push(req.url ?? "");
      res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: "not in this test" } }));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    chats,
    listings: () => listings,
    answered: () => answered,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * Sends `prompt` from the page's box and waits until its run has ended: the metrics drawn and the
 * status line past "Starting"/"Running" (finished, failed or stopped).
 */
export async function askAndSettle(page: Page, prompt: string): Promise<void> {
  await page.fill("#prompt", prompt);
  await page.press("#prompt", "Enter");
  await page.waitForFunction(
    () =>
      document.querySelector("#metrics:not([hidden])") !== null &&
      !/Running|Starting/.test(document.getElementById("status")?.textContent ?? ""),
    null,
    { timeout: 30_000 },
  );
}
