// Findings of round r90's page model (page-model.e2e.test.ts), pinned: what a closed web playground
// leaves behind. Browser-free (the model's last check, "the server holds no run, watcher or timer
// once the page is gone and the server closed", is read here off the process itself).
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startWebServer } from "./server.js";

/** Collects garbage now: `--expose-gc` set at run time, `gc` read from a fresh context. */
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;
const timers = () => process.getActiveResourcesInfo().filter((name) => name === "Timeout").length;

let model: TestServer | undefined;
beforeEach(async () => {
  model = await startServer({
    replies: () => ({ content: "ok", chunkDelayMs: 0 }),
    models: [{ id: "m", context_length: 100_000_000 }],
  });
});
afterEach(async () => {
  await model?.close();
  model = undefined;
});

/** Asks one prompt on `web` and reads its events to the end. */
async function ask(url: string, prompt: string): Promise<string> {
  const started = await fetch(`${url}api/runs`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ prompt }),
  });
  const { id } = (await started.json()) as { id: string };
  return (await fetch(`${url}api/runs/${id}/events`)).text();
}

describe("a closed web playground", () => {
  it("leaves no timer of its own running (it kept a process waiting 2 s after every close)", async () => {
    const web = await startWebServer({ endpoint: { baseUrl: model!.baseUrl, apiKey: "k", model: "m" } });
    expect(await ask(web.url, "hello")).toContain('"kind":"done"');
    const before = timers();
    await web.close();
    // Was: the 2 s bound on the runs' endings stayed scheduled (ref'd) after close() returned.
    expect(timers()).toBeLessThanOrEqual(before);
  }, 30_000);

  it("lets go of its runs, their prompts, the conversation and the events it buffered", async () => {
    // What the server was started with is held by every closure of it: while anything of the server
    // is still reachable, so is this object.
    let options: Parameters<typeof startWebServer>[0] | undefined = {
      endpoint: { baseUrl: model!.baseUrl, apiKey: "k", model: "m" },
    };
    const held = new WeakRef(options);
    let web: Awaited<ReturnType<typeof startWebServer>> | undefined = await startWebServer(options);
    options = undefined;
    for (let i = 0; i < 3; i++) expect(await ask(web.url, `prompt ${i}`)).toContain('"kind":"done"');
    await web.close();
    web = undefined;
    for (let i = 0; i < 5 && held.deref(); i++) {
      await new Promise((resolve) => setImmediate(resolve));
      gc();
    }
    // Was: each ended run's "forget it later" timer (unref'd, so unseen) held the whole server —
    // every prompt, the conversation, the bus's events — for `retainEndedMs`, 10 minutes by
    // default, after close().
    expect(held.deref()).toBeUndefined();
  }, 30_000);
});
