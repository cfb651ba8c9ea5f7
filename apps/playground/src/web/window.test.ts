// The window the page shows is asked again while the server has none to give: a llama.cpp server
// still loading its model answers no window, and the one it has once loaded is read on the next
// state — never the "unknown" of the first look kept for the server's lifetime. Over loopback HTTP.
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { startWebServer, type WebServer } from "./server.js";

let endpoint: TestServer | undefined;
let web: WebServer | undefined;
afterEach(async () => {
  await web?.close();
  await endpoint?.close();
  web = undefined;
  endpoint = undefined;
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("the window the web playground reads", () => {
  it("is read again once a loading llama.cpp server has its model up", async () => {
    endpoint = await startServer({ personality: { name: "llamacpp", nCtx: 3000, loadingMs: 3000 } });
    web = await startWebServer({ endpoint: { baseUrl: endpoint.baseUrl, model: "tiny" } });
    const state = async () =>
      ((await (await fetch(new URL("api/state", web?.url))).json()) as { contextLength: number })
        .contextLength;
    expect(await state()).toBe(0);
    // Once loaded, the next look finds the window (asked again, not the first look's 0 kept).
    let found = 0;
    for (let look = 0; look < 100 && found === 0; look++) {
      await sleep(100);
      found = await state();
    }
    expect(found).toBe(3000);
  });
});
