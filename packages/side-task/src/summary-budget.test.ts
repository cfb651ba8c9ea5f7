/**
 * The summariser's overall input budget, over HTTP against the testkit wearing llama.cpp's
 * personality with a small window: a stretch longer than the compaction model's window is shown with
 * its middle left out (a marker says how much), keeping the question it started with and the newest
 * messages, so the compaction succeeds where the request used to be refused as too big.
 */
import { type MessageLike, planCompaction, runCompaction } from "@loopwright/ledger";
import { countTokens, renderPrompt, startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { bodies, isolated, userContent } from "../test/wire.js";
import { SideTaskError } from "./errors.js";
import { SUMMARISER_SYSTEM, summariser, transcriptText } from "./summariser.js";
import { fitStretch } from "./summary-budget.js";

let server: TestServer | undefined;
afterEach(() => server?.close());

/** A long run of short questions and long tool results: far more than a 4,096-token window holds. */
function longRun(exchanges: number): MessageLike[] {
  const messages: MessageLike[] = [{ role: "system", content: "You are a build assistant." }];
  for (let i = 0; i < exchanges; i++) {
    messages.push({ role: "user", content: `Question ${i}: check the build log of job ${i}.` });
    messages.push({
      role: "assistant",
      content: "",
      tool_calls: [
        { id: `c${i}`, type: "function", function: { name: "read_log", arguments: `{"job":${i}}` } },
      ],
    });
    messages.push({
      role: "tool",
      tool_call_id: `c${i}`,
      content: `job ${i}: ${"step passed, ".repeat(120)}`,
    });
    messages.push({ role: "assistant", content: `Job ${i} passed.` });
  }
  messages.push({ role: "user", content: "Now summarise the week." });
  return messages;
}

/** An OpenAI-compatible host that takes the no-thinking hint the summariser sends. */
const HOSTED = { name: "openai", extraParams: ["chat_template_kwargs"] } as const;

function planFor(messages: MessageLike[]) {
  const plan = planCompaction(messages, { limit: 4000, used: 3900 });
  if (!plan) throw new Error("planCompaction made no plan");
  return plan;
}

describe("a stretch longer than the compaction model's window", () => {
  it("is cut in the middle to the window the refusal names, and the compaction succeeds", async () => {
    server = await startServer({
      personality: { name: "llamacpp", nCtx: 4096 },
      replies: [{ content: "Jobs 0 to 19 passed; the user wants a weekly summary." }],
    });
    const notices: string[] = [];
    const messages = longRun(20);
    const plan = planFor(messages);
    const summarise = summariser({ baseUrl: server.baseUrl }, "small", {
      ...isolated(),
      onNotice: (m) => notices.push(m),
    });
    const fold = await runCompaction(messages, plan, summarise);
    expect(fold?.summary).toBe("Jobs 0 to 19 passed; the user wants a weekly summary.");
    // The first request was refused as too big; the second, cut to the window it named, was answered.
    expect(server.chatRequests).toHaveLength(2);
    const shown = String(userContent(bodies(server)[1] ?? {}));
    expect(shown).toMatch(/\[user\]\nQuestion 0: check the build log of job 0\./);
    // The newest message folded closes what it was shown.
    const newest = messages[plan.through - 1];
    expect(newest?.role).toBe("assistant");
    expect(shown.endsWith(`[assistant]\n${String(newest?.content)}`)).toBe(true);
    expect(shown).not.toMatch(/Question 10:/);
    expect(shown).toMatch(
      /\[… \d+ entries of the conversation left out here \(\d[\d,]* characters\) to fit the model's window …\]/,
    );
    expect(notices.join("\n")).toMatch(/4096 tokens/);
    // The same summariser's next fold starts within what the refusal taught it: one request, answered.
    server.enqueue({ content: "Still passing." });
    await expect(runCompaction(messages, plan, summarise)).resolves.toMatchObject({
      summary: "Still passing.",
    });
    expect(server.chatRequests).toHaveLength(3);
  });

  it("reads the window from vLLM's words too, and the retried summary fits it", async () => {
    server = await startServer({
      personality: { name: "vllm", maxModelLen: 4096 },
      replies: [{ content: "Jobs passed." }],
    });
    const messages = longRun(20);
    const summarise = summariser({ baseUrl: server.baseUrl }, "small", isolated());
    await expect(runCompaction(messages, planFor(messages), summarise)).resolves.toMatchObject({
      summary: "Jobs passed.",
    });
    expect(server.chatRequests).toHaveLength(2);
    expect(String(userContent(bodies(server)[1] ?? {}))).toMatch(/left out here/);
  });

  it("asks for no more reply than the window's budget left room for, so vLLM takes it (contextLength)", async () => {
    // A window under twice the 1,024-token ceiling: the budget leaves half of it for the reply, and
    // vLLM refuses a prompt plus max_tokens over max_model_len.
    server = await startServer({
      personality: { name: "vllm", maxModelLen: 1200 },
      replies: [{ content: "Jobs passed." }],
    });
    const notices: string[] = [];
    const messages = longRun(20);
    const summarise = summariser({ baseUrl: server.baseUrl }, "small", {
      ...isolated(),
      contextLength: 1200,
      onNotice: (m) => notices.push(m),
    });
    await expect(runCompaction(messages, planFor(messages), summarise)).resolves.toMatchObject({
      summary: "Jobs passed.",
    });
    expect(notices).toEqual([]);
    expect(server.chatRequests).toHaveLength(1);
    expect(bodies(server)[0]?.max_tokens).toBe(600);
  });

  it("asks for no more reply than the refusal's window leaves room for when it retries (vLLM)", async () => {
    server = await startServer({
      personality: { name: "vllm", maxModelLen: 1200 },
      replies: [{ content: "Jobs passed." }, { content: "Still passing." }],
    });
    const messages = longRun(20);
    const summarise = summariser({ baseUrl: server.baseUrl }, "small", isolated());
    await expect(runCompaction(messages, planFor(messages), summarise)).resolves.toMatchObject({
      summary: "Jobs passed.",
    });
    expect(server.chatRequests).toHaveLength(2);
    expect(bodies(server)[0]?.max_tokens).toBe(1024);
    expect(bodies(server)[1]?.max_tokens).toBe(600);
    // The next fold starts within what the refusal taught, reply room included: one request.
    await expect(runCompaction(messages, planFor(messages), summarise)).resolves.toMatchObject({
      summary: "Still passing.",
    });
    expect(server.chatRequests).toHaveLength(3);
    expect(bodies(server)[2]?.max_tokens).toBe(600);
  });

  it("is cut before sending when the host gives the model's window as contextLength", async () => {
    server = await startServer({
      personality: { name: "llamacpp", nCtx: 4096 },
      replies: [{ content: "Jobs passed." }],
    });
    const messages = longRun(20);
    const summarise = summariser({ baseUrl: server.baseUrl }, "small", {
      ...isolated(),
      contextLength: 4096,
    });
    await expect(runCompaction(messages, planFor(messages), summarise)).resolves.toMatchObject({
      summary: "Jobs passed.",
    });
    expect(server.chatRequests).toHaveLength(1);
    expect(String(userContent(bodies(server)[0] ?? {}))).toMatch(/left out here/);
  });

  it("holds the user turn to inputChars, the notes so far kept", async () => {
    server = await startServer({ replies: [{ content: "Notes." }, { content: "Notes." }] });
    const messages = longRun(20);
    const summarise = summariser({ baseUrl: server.baseUrl }, "small", { ...isolated(), inputChars: 3000 });
    await summarise(messages.slice(1, -1), "Earlier: CI was set up.");
    const shown = String(userContent(bodies(server)[0] ?? {}));
    expect(shown.length).toBeLessThanOrEqual(3000);
    expect(shown).toMatch(/^Notes so far:\nEarlier: CI was set up\./);
    expect(shown).toMatch(/Job 19 passed\.$/);
    // Without a budget or a window, nothing is left out.
    const whole = summariser({ baseUrl: server.baseUrl }, "small", isolated());
    await whole(messages.slice(1, -1), undefined);
    expect(String(userContent(bodies(server)[1] ?? {}))).not.toMatch(/left out here/);
  });

  it("refuses a budget or a window that is not a positive whole number, naming it", () => {
    for (const bad of [0, -1, 1.5, Number.NaN, "4096"]) {
      expect(() =>
        summariser({ baseUrl: "http://127.0.0.1:9/v1" }, "m", { inputChars: bad as never }),
      ).toThrow(SideTaskError);
      expect(() =>
        summariser({ baseUrl: "http://127.0.0.1:9/v1" }, "m", { contextLength: bad as never }),
      ).toThrow(/contextLength/);
    }
  });
});

describe("a summary that runs out of llama.cpp's window rather than into its ceiling", () => {
  /** The tokens the testkit counts for the summariser's first request over `stretch`. */
  function firstPrompt(stretch: MessageLike[]): number {
    const user = `The conversation to take notes of:\n\n${transcriptText(stretch)}`;
    return countTokens(
      renderPrompt({
        messages: [
          { role: "system", content: SUMMARISER_SYSTEM },
          { role: "user", content: user },
        ],
      }),
    );
  }

  it("is read as the window running out: cut to the window prompt plus completion filled and asked once more, but not remembered with no window known", async () => {
    // llama.cpp takes a prompt that fits and writes until its window is full (capture
    // 29-near-context-limit: prompt 4079 + completion 17 = n_ctx 4096, max_tokens 100): the first
    // summary stops 12 tokens in, with finish_reason "length", far short of its 1,024-token ceiling.
    const messages = longRun(2);
    const plan = planCompaction(messages, { limit: 1000, used: 990 });
    if (!plan) throw new Error("planCompaction made no plan");
    const stretch = messages.slice(plan.from, plan.through);
    const prompt = firstPrompt(stretch);
    const nCtx = prompt + 12;
    server = await startServer({
      personality: { name: "llamacpp", nCtx },
      replies: [
        { content: "notes ".repeat(600) },
        { content: "Jobs 0 to 3 passed." },
        { content: "Still passing." },
      ],
    });
    const notices: string[] = [];
    const summarise = summariser({ baseUrl: server.baseUrl }, "small", {
      ...isolated(),
      onNotice: (m) => notices.push(m),
    });
    await expect(runCompaction(messages, plan, summarise)).resolves.toMatchObject({
      summary: "Jobs 0 to 3 passed.",
    });
    expect(server.chatRequests).toHaveLength(2);
    expect(notices).toEqual([
      `The summary from small ran out of its window (${nCtx} tokens: ${prompt} of prompt, 12 of reply), as read from its stop short of the 1024-token ceiling (no known window was reached); its input was cut to fit and the summary asked for again, and later summaries are not held to that window.`,
    ]);
    expect(notices.join("\n")).not.toMatch(/reply ceiling/);
    const [first, second] = bodies(server);
    expect(first?.max_tokens).toBe(1024);
    // Asked again within the window: half of it for the reply, the rest for a cut input.
    expect(nCtx).toBeLessThan(2048);
    expect(second?.max_tokens).toBe(Math.floor(nCtx / 2));
    const shown = String(userContent(second ?? {}));
    expect(shown.length).toBeLessThan(String(userContent(first ?? {})).length);
    expect(shown).toMatch(/\[user\]\nQuestion 0: check the build log of job 0\./);
    // The window was only read from the stop (a hosted model's cap on its reply stops it so too):
    // the next summary is asked as the first was, whole, with the whole ceiling.
    await expect(runCompaction(messages, plan, summarise)).resolves.toMatchObject({
      summary: "Still passing.",
    });
    expect(server.chatRequests).toHaveLength(3);
    expect(bodies(server)[2]?.max_tokens).toBe(1024);
    expect(userContent(bodies(server)[2] ?? {})).toBe(userContent(first ?? {}));
  });

  it("is remembered where prompt plus completion reached the window given as contextLength", async () => {
    // The host knows the window; the server's tokenizer counts the prompt higher than the estimate,
    // and the reply stops where prompt plus completion reach it: evidence the window ran out.
    const messages = longRun(6);
    const plan = planCompaction(messages, { limit: 1000, used: 990 });
    if (!plan) throw new Error("planCompaction made no plan");
    const window = 3000;
    server = await startServer({
      personality: HOSTED,
      replies: [
        {
          content: "notes ".repeat(40),
          finishReason: "length",
          usage: { prompt_tokens: window - 20, completion_tokens: 20 },
        },
        { content: "Jobs passed." },
        { content: "Still passing." },
      ],
    });
    const notices: string[] = [];
    const summarise = summariser({ baseUrl: server.baseUrl }, "small", {
      ...isolated(),
      contextLength: window,
      onNotice: (m) => notices.push(m),
    });
    await expect(runCompaction(messages, plan, summarise)).resolves.toMatchObject({
      summary: "Jobs passed.",
    });
    expect(notices).toEqual([
      `The summary from small ran out of its window (${window} tokens: ${window - 20} of prompt, 20 of reply); its input was cut to fit and the summary asked for again.`,
    ]);
    const [first, second] = bodies(server);
    const cut = String(userContent(second ?? {}));
    expect(cut.length).toBeLessThan(String(userContent(first ?? {})).length);
    // The next summary starts within the size the window held by the server's count: one request.
    await expect(runCompaction(messages, plan, summarise)).resolves.toMatchObject({
      summary: "Still passing.",
    });
    expect(server.chatRequests).toHaveLength(3);
    expect(userContent(bodies(server)[2] ?? {})).toBe(cut);
  });
  it("says the window ran out again, as read from the stops, when the second ask stops short of its ceiling at the guessed window too", async () => {
    const messages = longRun(4);
    const plan = planCompaction(messages, { limit: 1000, used: 990 });
    if (!plan) throw new Error("planCompaction made no plan");
    const nCtx = firstPrompt(messages.slice(plan.from, plan.through)) + 12;
    server = await startServer({
      personality: { name: "llamacpp", nCtx },
      replies: () => {
        const n = server?.chatRequests.length ?? 0;
        if (n === 1) return { content: "notes ".repeat(600) };
        // Its tokenizer counted the cut prompt far above the estimate: the window fills 3 tokens in.
        return { content: "notes ".repeat(600), usage: { prompt_tokens: nCtx - 3, completion_tokens: 3 } };
      },
    });
    const notices: string[] = [];
    const summarise = summariser({ baseUrl: server.baseUrl }, "small", {
      ...isolated(),
      onNotice: (m) => notices.push(m),
    });
    await expect(runCompaction(messages, plan, summarise)).resolves.toBeUndefined();
    expect(server.chatRequests).toHaveLength(2);
    // The window was only guessed from the first stop: the notice says what the two stops read.
    expect(notices[1]).toBe(
      `The summary from small ran out of its window again (${nCtx} tokens, as read from its stops short of the ceiling: ${nCtx - 3} of prompt, 3 of reply) before it was finished; the transcript was left as it was.`,
    );
  });

  it("is still the ceiling where the reply spent every token of the max_tokens it was sent", async () => {
    server = await startServer({
      personality: { name: "llamacpp", nCtx: 8192 },
      replies: [{ content: "notes ".repeat(2000) }],
    });
    const notices: string[] = [];
    const messages = longRun(4);
    const plan = planCompaction(messages, { limit: 1000, used: 990 });
    if (!plan) throw new Error("planCompaction made no plan");
    const summarise = summariser({ baseUrl: server.baseUrl }, "small", {
      ...isolated(),
      onNotice: (m) => notices.push(m),
    });
    await expect(runCompaction(messages, plan, summarise)).resolves.toBeUndefined();
    expect(server.chatRequests).toHaveLength(1);
    expect(notices).toEqual([
      "The summary from small was cut off at its reply ceiling; the transcript was left as it was.",
    ]);
  });
});

describe("a length reply short of its ceiling that reaches no window known (a hosted model's own cap)", () => {
  /** A provider that caps every reply at 300 tokens whatever max_tokens says. */
  const capped = (prompt: number) => ({
    content: "notes ".repeat(300),
    finishReason: "length",
    usage: { prompt_tokens: prompt, completion_tokens: 300 },
  });

  it("asks that summary again once, and leaves the next summary's max_tokens and input as they were", async () => {
    const messages = longRun(3);
    const plan = planCompaction(messages, { limit: 1000, used: 990 });
    if (!plan) throw new Error("planCompaction made no plan");
    server = await startServer({
      personality: HOSTED,
      replies: [capped(900), { content: "Jobs passed." }, { content: "Still passing." }],
    });
    const notices: string[] = [];
    const summarise = summariser({ baseUrl: server.baseUrl }, "hosted", {
      ...isolated(),
      onNotice: (m) => notices.push(m),
    });
    await expect(runCompaction(messages, plan, summarise)).resolves.toMatchObject({
      summary: "Jobs passed.",
    });
    expect(notices).toEqual([
      "The summary from hosted ran out of its window (1200 tokens: 900 of prompt, 300 of reply), as read from its stop short of the 1024-token ceiling (no known window was reached); its input was cut to fit and the summary asked for again, and later summaries are not held to that window.",
    ]);
    await expect(runCompaction(messages, plan, summarise)).resolves.toMatchObject({
      summary: "Still passing.",
    });
    expect(server.chatRequests).toHaveLength(3);
    const [first, , next] = bodies(server);
    expect(next?.max_tokens).toBe(first?.max_tokens);
    expect(next?.max_tokens).toBe(1024);
    expect(userContent(next ?? {})).toBe(userContent(first ?? {}));
  });

  it("leaves a given contextLength's later summaries as they were when the stop reaches short of it", async () => {
    const messages = longRun(3);
    const plan = planCompaction(messages, { limit: 1000, used: 990 });
    if (!plan) throw new Error("planCompaction made no plan");
    server = await startServer({
      personality: HOSTED,
      replies: [capped(900), { content: "Jobs passed." }, { content: "Still passing." }],
    });
    const summarise = summariser({ baseUrl: server.baseUrl }, "hosted", {
      ...isolated(),
      contextLength: 8192,
    });
    await expect(runCompaction(messages, plan, summarise)).resolves.toBeDefined();
    await expect(runCompaction(messages, plan, summarise)).resolves.toMatchObject({
      summary: "Still passing.",
    });
    const [first, , next] = bodies(server);
    expect(next?.max_tokens).toBe(1024);
    expect(next?.max_tokens).toBe(first?.max_tokens);
    expect(userContent(next ?? {})).toBe(userContent(first ?? {}));
  });

  it("says the reply stopped short of its ceiling, not that a window ran out, when the second ask stops so too", async () => {
    const messages = longRun(3);
    const plan = planCompaction(messages, { limit: 1000, used: 990 });
    if (!plan) throw new Error("planCompaction made no plan");
    server = await startServer({
      personality: HOSTED,
      replies: [capped(900), capped(400)],
    });
    const notices: string[] = [];
    const summarise = summariser({ baseUrl: server.baseUrl }, "hosted", {
      ...isolated(),
      onNotice: (m) => notices.push(m),
    });
    await expect(runCompaction(messages, plan, summarise)).resolves.toBeUndefined();
    expect(server.chatRequests).toHaveLength(2);
    expect(bodies(server)[1]?.max_tokens).toBe(600);
    expect(notices[1]).toBe(
      "The summary from hosted stopped 300 tokens in, short of its 600-token ceiling and of any window known (400 tokens of prompt), before it was finished; the transcript was left as it was.",
    );
  });

  it("says the second ask hit its ceiling, not that the guessed window ran out, when it spends the max_tokens it was sent", async () => {
    // The ask sized the input and max_tokens to fill the guessed 1,200 tokens between them: a reply
    // that writes its whole ceiling lands on the guess, which is no evidence of a window.
    const messages = longRun(3);
    const plan = planCompaction(messages, { limit: 1000, used: 990 });
    if (!plan) throw new Error("planCompaction made no plan");
    server = await startServer({
      personality: HOSTED,
      replies: [
        capped(900),
        {
          content: "notes ".repeat(600),
          finishReason: "length",
          usage: { prompt_tokens: 600, completion_tokens: 600 },
        },
      ],
    });
    const notices: string[] = [];
    const summarise = summariser({ baseUrl: server.baseUrl }, "hosted", {
      ...isolated(),
      onNotice: (m) => notices.push(m),
    });
    await expect(runCompaction(messages, plan, summarise)).resolves.toBeUndefined();
    expect(server.chatRequests).toHaveLength(2);
    expect(bodies(server)[1]?.max_tokens).toBe(600);
    expect(notices).toHaveLength(2);
    expect(notices[1]).toBe(
      "The summary from hosted was cut off at its reply ceiling; the transcript was left as it was.",
    );
  });

  it("still says the window ran out when the second ask fills a window a refusal named, its ceiling spent", async () => {
    // The window is known from vLLM's refusal: prompt plus completion reaching it is evidence.
    server = await startServer({
      personality: { name: "vllm", maxModelLen: 1200 },
      replies: [
        {
          content: "notes ".repeat(600),
          finishReason: "length",
          usage: { prompt_tokens: 600, completion_tokens: 600 },
        },
      ],
    });
    const notices: string[] = [];
    const messages = longRun(20);
    const summarise = summariser({ baseUrl: server.baseUrl }, "small", {
      ...isolated(),
      onNotice: (m) => notices.push(m),
    });
    await expect(runCompaction(messages, planFor(messages), summarise)).resolves.toBeUndefined();
    expect(server.chatRequests).toHaveLength(2);
    expect(bodies(server)[1]?.max_tokens).toBe(600);
    expect(notices[1]).toBe(
      "The summary from small ran out of its window (1200 tokens) before it was finished; the transcript was left as it was.",
    );
  });
});

describe("fitStretch", () => {
  it("stays within the room, keeps the question and the newest entry, in order (fast-check)", () => {
    // The case a random run found once (r81): a cut that leaves "[            ]" alone on its line.
    const cut = fitStretch(
      [`[tool result]\n[            ]${" ".repeat(76)}`, `[tool result]\n${" ".repeat(293)}`],
      412,
    );
    expect(
      cut.startsWith("[tool result]\n\\[            ]\n[… 48 characters of this entry left out …]"),
    ).toBe(true);
    // An entry's own "\[" is kept as written (seed -1011845634): the cut adds no backslash to it.
    const own = fitStretch([`[user]\n\\[${" ".repeat(420)}`], 400);
    expect(own.startsWith("[user]\n\\[ ")).toBe(true);
    expect(own.length).toBeLessThanOrEqual(400);
    // size "max": blocks up to 600 characters, so stretches overflow rooms of 400 and more and the
    // cutting code runs (fast-check's default size keeps strings far shorter).
    const block = fc
      .tuple(
        fc.constantFrom("[user]", "[assistant]", "[tool result]"),
        fc.string({ maxLength: 600, size: "max" }),
      )
      .map(([header, text]) => `${header}\n${text}`);
    fc.assert(
      fc.property(
        fc.array(block, { minLength: 1, maxLength: 30 }),
        fc.integer({ min: 400, max: 6000 }),
        (blocks, room) => {
          const out = fitStretch(blocks, room);
          const whole = blocks.join("\n\n");
          if (whole.length <= room) {
            expect(out).toBe(whole);
            return;
          }
          expect(out.length).toBeLessThanOrEqual(room);
          expect(out).toMatch(/left out/);
          // A marker for dropped entries counts at least one.
          expect(out).not.toMatch(/\[… 0 entr/);
          const found = blocks.findIndex((b) => b.startsWith("[user]\n"));
          const question = blocks[Math.max(found, 0)] as string;
          // A line a cut leaves looking like a header ("[    ]" cut off the rest of its line) is
          // shown with a backslash before its bracket, as documented (seed 1917180145 drew one
          // within the question's first 20 characters). The entries may hold backslashes before
          // brackets of their own (seed -1011845634: a question "\[" and blanks), so the output and
          // the entries are compared with every backslash before a bracket read past, on both
          // sides; a backslash the head's cut leaves at its end is dropped from what is looked for.
          const read = out.replace(/\\+(?=\[)/g, "");
          const head = question
            .slice(0, 20)
            .replace(/\\+(?=\[)/g, "")
            .replace(/\\+$/, "");
          // The question opens the text, or follows the marker where it closes the stretch.
          if (found === blocks.length - 1 && found > 0) expect(read).toContain(`window …]\n\n${head}`);
          else expect(read.startsWith(head)).toBe(true);
          const newest = blocks.at(-1) as string;
          expect(read.endsWith(newest.slice(-20).replace(/\\+(?=\[)/g, ""))).toBe(true);
        },
      ),
    );
  });

  it("gives a question that closes the stretch the room the marker leaves, not a quarter of it", () => {
    const question = `[user]\n${"Which of the failing jobs share a runner? ".repeat(9)}`;
    const out = fitStretch([`[assistant]\n${"a".repeat(500)}`, question], 400);
    expect(out.length).toBeLessThanOrEqual(400);
    expect(out.length).toBeGreaterThan(340);
    // The entry left out came before the question, and the marker says so there.
    expect(out).toMatch(
      /^\[… 1 entry of the conversation left out here \(\d+ characters\)[^\n]*\n\n\[user\]\n/,
    );
    expect(out).toMatch(/\[… \d+ characters of this entry left out …\]/);
    expect(out).toContain(question.slice(0, 100));
    expect(out.endsWith(question.slice(-100))).toBe(true);
  });

  it("cuts a single block too big for the room in its middle, to the room, saying so", () => {
    const only = `[tool result]\n${"0123456789".repeat(60)}`;
    const out = fitStretch([only], 400);
    expect(out.length).toBeLessThanOrEqual(400);
    expect(out.length).toBeGreaterThan(340);
    expect(out).not.toMatch(/entries of the conversation/);
    expect(out).toMatch(/\[… \d+ characters of this entry left out …\]/);
    expect(out.startsWith(only.slice(0, 150))).toBe(true);
    expect(out.endsWith(only.slice(-150))).toBe(true);
  });

  it("gives a long question the room its short answer leaves when nothing else is dropped", () => {
    const question = `[user]\n${"q".repeat(1000)}`;
    const answer = "[assistant]\nDone.";
    const out = fitStretch([question, answer], 600);
    expect(out.length).toBeLessThanOrEqual(600);
    expect(out.length).toBeGreaterThan(500);
    expect(out).not.toMatch(/entries of the conversation/);
    expect(out.endsWith(`\n\n${answer}`)).toBe(true);
  });
});
