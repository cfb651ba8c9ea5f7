// Shared by the page's browser tests (page.e2e.test.ts, hostile.e2e.test.ts); not part of the app.
import { existsSync } from "node:fs";

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
