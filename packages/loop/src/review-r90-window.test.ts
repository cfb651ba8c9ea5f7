import { SUMMARY_LEAD } from "@loopwright/ledger";
import { countTokens, renderPrompt, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage, ToolDefinition } from "./config.js";
import { createRuntime } from "./index.js";

// Review r90 (window model): with compact on and tasks.compaction the run's own model at its own
// endpoint, the summariser was handed the run's window only once a refusal had named one. The first
// fold of a stretch near the window — one question's long answer, folded when the next question
// came — sent the summary request whole to a server the loop had been told the size of
// (contextLength): llama.cpp refused it with its 400, and only then was the stretch cut and the
// summary asked again ("did not fit sim's window"). Now the summariser is sized to the run's window
// from the first fold.

const WINDOW = 2000;
// Two messages of 2,450 characters: each under the summariser's cut of a message, together (with its
// prompt) just past the window, while the request that carried them fitted it.
const HALF = 2450;
const PAGE: ToolDefinition = {
  type: "function",
  function: { name: "page", description: "A page", parameters: { type: "object", properties: {} } },
};
const WORDS = ["alpha", "be", "gamma", "delta", "epsilonic", "zeta", "eta", "theta", "io", "kappa"];
const prose = (n: number): string => {
  let out = "";
  for (let i = 0; out.length < n; i++) out += `${WORDS[i % WORDS.length]} `;
  return out.slice(0, n);
};

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

type Body = { messages: ChatMessage[]; stream?: boolean };

describe("compact on the run's own model: the summary request fits the window the loop was told", () => {
  it("sizes the first summary to contextLength, so no request the server gets reaches its window", async () => {
    let turns = 0;
    server = await startServer({
      personality: { name: "llamacpp", nCtx: WINDOW },
      replies: (request) => {
        if ((request.body as Body).stream !== true) return { content: "Summary: the user asked for pages." };
        turns++;
        return turns === 1
          ? { toolCalls: [{ id: "c1", name: "page", arguments: "{}" }] }
          : { content: "Here is page one." };
      },
    });
    const notices: string[] = [];
    const result = await createRuntime().runAgentLoop({
      config: {
        baseUrl: server.baseUrl,
        model: "sim",
        maxRetries: 0,
        maxTokens: 64,
        contextLength: WINDOW,
        compact: true,
        tasks: { compaction: { model: "sim", maxTokens: 256 } },
      },
      messages: [
        { role: "user", content: "Question 0: tell me everything." },
        {
          role: "assistant",
          content: "",
          tool_calls: [{ id: "c0", type: "function", function: { name: "page", arguments: "{}" } }],
        },
        { role: "tool", tool_call_id: "c0", content: prose(HALF) },
        { role: "assistant", content: prose(HALF) },
        { role: "user", content: "Question 1: read me page one." },
      ],
      tools: [PAGE],
      dispatch: () => "Page one: short.",
      onEvent: (event) => {
        if (event.kind === "notice") notices.push(event.text);
      },
    });
    const sizes = (server as TestServer).chatRequests.map((r) => ({
      summary: (r.body as Body).stream !== true,
      tokens: countTokens(renderPrompt(r.body as Body)),
    }));
    // A fold was made, by one summary request, and every request fitted the server's window.
    expect(sizes.filter((s) => s.summary)).toHaveLength(1);
    expect(sizes.filter((s) => s.tokens >= WINDOW)).toEqual([]);
    expect(notices.join("\n")).not.toContain("did not fit");
    expect(String(result.messages[0]?.content).startsWith(SUMMARY_LEAD)).toBe(true);
    expect(result.messages.at(-1)?.content).toBe("Here is page one.");
  });
});
