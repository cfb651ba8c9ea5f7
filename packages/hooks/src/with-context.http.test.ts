import type { MessageLike } from "@loopwright/ledger";
import { countTokens, renderPrompt, startServer, type TestServer } from "@loopwright/testkit";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHooks, type HookRunner, turnIndex } from "./index.js";

let server: TestServer;
let client: OpenAI;

beforeAll(async () => {
  server = await startServer({
    prefixCache: true,
    replies: (_request, index) => ({ content: `Answer number ${index}: noted, and the plan stands.` }),
  });
  client = new OpenAI({ baseURL: server.baseUrl, apiKey: "test-key", maxRetries: 0 });
});

afterAll(async () => {
  await server.close();
});

/** A message as the host stores it: what the user typed, and what the hooks added beside it. */
type Stored = MessageLike & { hookContext?: string; hookPreface?: string };

/** A memory hook whose recall differs every turn, as a real one's does. */
const run: HookRunner<{ session: { id: string } }> = (_event, input) => {
  const turn = "turn" in input ? input.turn : undefined;
  return [
    { id: "memory", ok: true, context: `Recalled for turn ${turn}: the release is on Friday ${turn}.` },
  ];
};

/** Sends one request; answers the reply as the host stores it and what the server said the prompt cost. */
async function send(messages: MessageLike[]) {
  const completion = await client.chat.completions.create({
    model: "sim",
    messages: messages as OpenAI.ChatCompletionMessageParam[],
  });
  const reply = completion.choices[0]?.message.content ?? "";
  return {
    reply: { role: "assistant", content: reply } as MessageLike,
    prompt: completion.usage?.prompt_tokens ?? 0,
    cached: completion.usage?.prompt_tokens_details?.cached_tokens ?? 0,
  };
}

/** The messages a request carried, as the server received them, each as its JSON text. */
function received(index: number): string[] {
  const body = JSON.parse((server.chatRequests[index] as { raw: string }).raw) as { messages: unknown[] };
  return body.messages.map((message) => JSON.stringify(message));
}

describe("a host storing context beside its question, over HTTP to a server with a prefix cache", () => {
  it("rebuilds every earlier question byte for byte, so each request only adds a tail: no cache break", async () => {
    const hooks = createHooks();
    const session: Stored[] = [{ role: "system", content: "You are the release assistant." }];
    const questions = ["When do we ship?", "Who signs off?", "And the changelog?"];
    const results: { prompt: number; cached: number; sent: number }[] = [];
    for (const [turn, prompt] of questions.entries()) {
      // Every earlier question put back exactly as it was sent, from what was stored beside it.
      const history = session.reduce<MessageLike[]>(
        (sent, message, at) => hooks.withContext(sent, at, message.hookContext ?? "", message.hookPreface),
        session.map(({ hookContext: _c, hookPreface: _p, ...message }) => message),
      );
      const asked = [...history, { role: "user", content: prompt }];
      const gathered = await hooks.gather(
        run,
        "beforeTurn",
        { prompt, turn: turnIndex(asked) },
        { session: { id: "s-1" } },
      );
      expect(gathered.context).toContain(`Recalled for turn ${turn}`);
      const request = hooks.withContext(asked, asked.length - 1, gathered.context, gathered.preface);
      const { reply, prompt: promptTokens, cached } = await send(request);
      results.push({ prompt: promptTokens, cached, sent: server.chatRequests.length - 1 });
      session.push(
        { role: "user", content: prompt, hookContext: gathered.context, hookPreface: gathered.preface },
        reply,
      );
      // The host changes its mind about the preface and the budget mid-session; stored questions must not.
      hooks.configure({ preface: `Preface as of turn ${turn + 1}:`, maxTokens: 30 + turn });
    }
    for (let i = 1; i < results.length; i++) {
      const previous = results[i - 1] as (typeof results)[number];
      const current = results[i] as (typeof results)[number];
      // The server saw the previous request's messages again, unchanged, at the front of this one…
      expect(received(current.sent).slice(0, received(previous.sent).length)).toEqual(
        received(previous.sent),
      );
      // …so the whole previous prompt came from its cache.
      expect(current.cached).toBe(previous.prompt);
    }
    // The stored questions are what the user typed; the context sits beside them.
    expect(session.filter((m) => m.role === "user").map((m) => m.content)).toEqual(questions);
  });

  it("loses the cache from the first question on when the host sends it bare the next turn", async () => {
    const hooks = createHooks();
    const first: MessageLike[] = [
      { role: "system", content: "You are the release assistant." },
      { role: "user", content: "When do we ship?" },
    ];
    const gathered = await hooks.gather(
      run,
      "beforeTurn",
      { prompt: "When do we ship?", turn: 0 },
      {
        session: { id: "s-2" },
      },
    );
    const sent = hooks.withContext(first, 1, gathered.context, gathered.preface);
    const one = await send(sent);
    const two = await send([...first, one.reply, { role: "user", content: "Who signs off?" }]);
    const shared = countTokens(
      renderPrompt({ messages: first.slice(0, 1) }).replace(/<\|assistant\|>\n$/, ""),
    );
    expect(two.cached).toBeLessThan(one.prompt);
    expect(two.cached).toBeLessThanOrEqual(shared + 3);
  });
});
