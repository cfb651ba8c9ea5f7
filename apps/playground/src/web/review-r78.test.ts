// Review r78: what the web server keeps of the runs it ran, over real loopback HTTP.
import { spawn } from "node:child_process";
import { startServer } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { cliForFile, pageUrlOf } from "../cli-build.js";
import { startWebServer } from "./server.js";

// The current src/main.ts, bundled once for the file (cli-build.ts says why).
const main = cliForFile();

describe("the web server's memory of its runs (r78d)", () => {
  it("forgets an ended run, its prompt with it, once its events are let go, and still knows its latest run", async () => {
    const web = await startWebServer({ retainEndedMs: 100, chunkDelayMs: 0 });
    try {
      const post = (path: string, body: unknown) =>
        fetch(`${web.url}${path}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        });
      const stateOf = async (id: string) =>
        (
          (await (await fetch(`${web.url}api/state?run=${id}`)).json()) as {
            run?: { prompt: string; ended: boolean };
          }
        ).run;
      const ids: string[] = [];
      for (const prompt of [`first ${"x".repeat(100_000)}`, "what is 6 * 7"]) {
        const { id } = (await (await post("api/runs", { prompt })).json()) as { id: string };
        // Followed to its end: the stream closes after `done`.
        await (await fetch(`${web.url}api/runs/${id}/events`)).text();
        ids.push(id);
      }
      const [first, last] = ids as [string, string];
      const deadline = Date.now() + 10_000;
      while ((await stateOf(first)) !== undefined && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      // Before, every run (its prompt) stayed for the life of the process: 1,000 runs of 200 kB
      // prompts held about 200 MB after they ended.
      expect(await stateOf(first)).toBeUndefined();
      expect((await fetch(`${web.url}api/runs/${first}/events`)).status).toBe(404);
      // The latest run is still known, ended, its events let go: a page opened now is told so (410).
      expect(await stateOf(last)).toEqual({ id: last, prompt: "what is 6 * 7", ended: true });
      while ((await fetch(`${web.url}api/runs/${last}/events`)).status !== 410 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      await new Promise((r) => setTimeout(r, 300));
      expect((await fetch(`${web.url}api/runs/${last}/events`)).status).toBe(410);
      expect((await post(`api/runs/${last}/stop`, {})).status).toBe(202);
    } finally {
      await web.close();
    }
  }, 30_000);
});

describe("playground --web and LOOPWRIGHT_MODEL (r78d)", () => {
  it("reads an empty LOOPWRIGHT_MODEL as unset, as an empty OPENAI_BASE_URL is: the page's model is the default", async () => {
    const endpoint = await startServer({ scriptedModel: true });
    const child = spawn(process.execPath, [main(), "--web"], {
      env: { ...process.env, OPENAI_BASE_URL: endpoint.baseUrl, LOOPWRIGHT_MODEL: "", NO_COLOR: "1" },
    });
    try {
      const url = await pageUrlOf(child).url;
      // Before, the model was "": every prompt refused once sent.
      const state = (await (await fetch(`${url}api/state`)).json()) as { model: string };
      expect(state.model).toBe("gpt-4o-mini");
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGINT");
        await exited;
      }
      await endpoint.close();
    }
  }, 60_000);
});
