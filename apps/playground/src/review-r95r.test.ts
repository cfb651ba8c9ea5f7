// Review r95r: what r95b's endpoint hints and start checks still got wrong, through the bundled CLI
// speaking HTTP to the testkit.
import { startServer } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { cliForFile, runCli } from "./cli-build.js";

const main = cliForFile();

describe("the hint under an endpoint's error", () => {
  it.concurrent("does not say nothing answered when a proxy answered 502 naming its own upstream's refusal", async () => {
    // A Node proxy whose backend is down answers with a status and the socket error in its body.
    const proxy = await startServer({
      replies: () => ({
        type: "error",
        status: 502,
        body: {
          error: { message: "upstream request failed: connect ECONNREFUSED 10.0.0.5:8000", code: 502 },
        },
      }),
    });
    try {
      const { code, out } = await runCli(main, ["--prompt", "hi"], { OPENAI_BASE_URL: proxy.baseUrl });
      expect(code).toBe(1);
      expect(out).toContain("error: 502");
      // Was: "(Nothing answered at http://127.0.0.1:…/v1: is the server running there, and does
      // OPENAI_BASE_URL name it?)", sending the user to a URL that did answer.
      expect(out).not.toContain("Nothing answered at");
      expect(proxy.chatRequests.length).toBeGreaterThan(0);
    } finally {
      await proxy.close();
    }
  }, 60_000);
});

describe("--model on the simulator", () => {
  it.concurrent.each([[["--prompt", "hi"]], [[]]])(
    "is refused at the terminal as with --web, before anything runs (%j)",
    async (args) => {
      const { code, out } = await runCli(main, [...args, "--model", "gpt-4o"], {}, "hi\n");
      // Was: accepted silently, the simulator answering as it always does under the chosen name.
      expect(code).toBe(1);
      expect(out.trim()).toBe(
        "error: --model names a model on OPENAI_BASE_URL; the simulator's model is fixed. Set OPENAI_BASE_URL or leave --model out.",
      );
    },
    60_000,
  );
});
