import { countTokens, renderPrompt, startServer, type TestServer } from "@loopwright/testkit";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCalibration } from "./calibration.js";
import { type LedgerEntry, rebaseLedger, recordRequest, tokensBetween } from "./ledger.js";
import type { MessageLike } from "./messages.js";
import { pruneToolResults } from "./prune.js";
import { contextTokens } from "./tokens.js";

/** The testkit's true cost of a stretch: its rendered tokens, less the two of the generation prompt. */
const trueCost = (messages: readonly MessageLike[]): number => countTokens(renderPrompt({ messages })) - 2;

const readFile = {
  type: "function" as const,
  function: {
    name: "read_file",
    description: "Reads a file",
    parameters: { type: "object", properties: { path: { type: "string" } } },
  },
};
const grep = {
  type: "function" as const,
  function: { name: "grep", description: "Searches files", parameters: { type: "object", properties: {} } },
};

let server: TestServer;
let client: OpenAI;

beforeAll(async () => {
  server = await startServer({
    prefixCache: true,
    // Two tool steps, then an answer, over and over: the shape of a tool-using run.
    replies: (_request, index) =>
      index % 3 === 2
        ? { content: `Here is what I found in step ${index}: the files agree.` }
        : { toolCalls: [{ name: "read_file", arguments: JSON.stringify({ path: `notes/${index}.md` }) }] },
  });
  client = new OpenAI({ baseURL: server.baseUrl, apiKey: "test-key", maxRetries: 0 });
});

afterAll(async () => {
  await server.close();
});

interface Sent {
  messages: MessageLike[];
  tools: unknown[];
  prompt: number;
  cached: number | undefined;
}

describe("a 20-request run against a server with a prefix cache", () => {
  let ledger: LedgerEntry[] = [];
  let transcript: MessageLike[] = [];
  const sent: Sent[] = [];
  const calibration = createCalibration();
  let prunedAt = -1;
  let toolsGrewAt = -1;
  /** The epoch each request's entry was recorded in, before any later rebase renumbered it. */
  const epochAtRecord: number[] = [];

  beforeAll(async () => {
    transcript = [
      { role: "system", content: "You are a careful assistant. Read files before you answer." },
      { role: "user", content: "What do my notes say about the release?" },
    ];
    let tools: unknown[] = [readFile];
    let previous: { messages: MessageLike[]; tools: unknown[] } | undefined;
    for (let i = 0; i < 20; i++) {
      if (i === 10) {
        // A prune in beforeStep: the prefix is rewritten, so the ledger is moved and an epoch starts.
        const before = transcript;
        transcript = pruneToolResults(transcript, { keepLast: 4, maxChars: 10 });
        ledger = rebaseLedger(ledger, before, transcript);
        prunedAt = i;
      }
      if (i === 15) {
        // A tool loaded on demand: the tool array grows at the head of the prompt.
        tools = [readFile, grep];
        toolsGrewAt = i;
      }
      const request = { messages: transcript.slice(), tools };
      const completion = await client.chat.completions.create({
        model: "sim",
        messages: request.messages as OpenAI.Chat.ChatCompletionMessageParam[],
        tools: tools as OpenAI.Chat.ChatCompletionTool[],
      });
      const prompt = completion.usage?.prompt_tokens ?? 0;
      const cached = completion.usage?.prompt_tokens_details?.cached_tokens ?? undefined;
      sent.push({ ...request, prompt, cached });
      calibration.calibrate(server.baseUrl, "sim", request, prompt);
      ledger = recordRequest(ledger, previous, { ...request, prompt, cached });
      epochAtRecord.push((ledger[ledger.length - 1] as LedgerEntry).epoch);
      previous = request;

      const reply = completion.choices[0]?.message;
      if (!reply) throw new Error("the testkit sent no choice");
      const calls = reply.tool_calls?.filter((call) => call.type === "function") ?? [];
      transcript.push(
        calls.length > 0
          ? {
              role: "assistant",
              content: reply.content ?? "",
              tool_calls: calls.map((call) => ({
                id: call.id,
                type: "function",
                function: { name: call.function.name, arguments: call.function.arguments },
              })),
            }
          : { role: "assistant", content: reply.content ?? "" },
      );
      for (const call of calls) {
        transcript.push({
          role: "tool",
          tool_call_id: call.id,
          content: `# ${JSON.parse(call.function.arguments).path}\nThe release ships on Friday. ${"Checklist item. ".repeat(20 + i)}`,
        });
      }
      if (calls.length === 0) transcript.push({ role: "user", content: `And after that (${i})?` });
    }
  });

  it("recorded an entry for every request, each prompt as the server counted it", () => {
    expect(server.requests.filter((r) => r.path.endsWith("/chat/completions"))).toHaveLength(20);
    expect(epochAtRecord).toHaveLength(20);
    for (const request of sent) expect(request.prompt).toBe(countTokens(renderPrompt(request)));
  });

  it("started an epoch at the first request, the prune and the grown tool array, and nowhere else", () => {
    const starts = epochAtRecord.flatMap((epoch, k) =>
      k === 0 || epoch !== epochAtRecord[k - 1] ? [k] : [],
    );
    expect(starts).toEqual([0, prunedAt, toolsGrewAt]);
    // The server's prefix cache agrees: a request that only appended found all of the previous
    // prompt but its generation prompt cached, and the two rewrites lost it.
    sent.forEach((request, k) => {
      if (k === 0) return;
      const before = (sent[k - 1] as Sent).prompt;
      if (starts.includes(k)) expect(request.cached).toBeLessThan(before - 2);
      else expect(request.cached).toBeGreaterThanOrEqual(before - 2);
    });
  });

  it("measures every stretch between two entries of one epoch exactly as the server counted it", () => {
    let pairs = 0;
    for (let a = 0; a < ledger.length; a++) {
      for (let b = a + 1; b < ledger.length; b++) {
        const x = ledger[a] as LedgerEntry;
        const y = ledger[b] as LedgerEntry;
        if (x.epoch !== y.epoch) continue;
        pairs++;
        const stretch = transcript.slice(x.through + 1, y.through + 1);
        expect(tokensBetween(ledger, x.through + 1, y.through + 1, transcript)).toBe(trueCost(stretch));
      }
    }
    // 5 requests after the prune, 5 after the tools grew, and what survived of the first 10.
    expect(pairs).toBeGreaterThanOrEqual(21);
  });

  it("keeps pairs the prune did not touch measured across it, still exact", () => {
    // Entries recorded before the prune, moved by rebaseLedger; some lost their last message.
    const cut = sent[prunedAt]?.messages.length ?? 0;
    const old = ledger.filter((entry) => entry.through < cut);
    expect(old.length).toBeGreaterThanOrEqual(3);
    expect(old.length).toBeLessThan(prunedAt);
    let pairs = 0;
    for (let k = 1; k < old.length; k++) {
      const a = old[k - 1] as LedgerEntry;
      const b = old[k] as LedgerEntry;
      if (a.epoch !== b.epoch) continue;
      pairs++;
      const stretch = transcript.slice(a.through + 1, b.through + 1);
      expect(stretch.some((m) => String(m.content).startsWith("[result cleared"))).toBe(false);
      expect(tokensBetween(ledger, a.through + 1, b.through + 1, transcript)).toBe(trueCost(stretch));
    }
    expect(pairs).toBeGreaterThanOrEqual(1);
  });

  it("estimates a stretch the prune rewrote rather than charging it the old count", () => {
    const cleared = transcript.findIndex(
      (m) => typeof m.content === "string" && m.content.startsWith("[result cleared"),
    );
    expect(cleared).toBeGreaterThan(0);
    const cost = tokensBetween(ledger, cleared, cleared + 1, transcript);
    const stub = String(transcript[cleared]?.content);
    expect(cost).toBe(Math.ceil(stub.length / 4));
  });

  it("learns a characters-per-token divisor from the reported prompts", () => {
    const readings = sent.slice(-4).map((request) => {
      const chars = contextTokens(request, { charsPerToken: 1 }).total;
      return chars / request.prompt;
    });
    expect(calibration.charsPerTokenFor(server.baseUrl, "sim")).toBeCloseTo(Math.max(...readings), 1);
  });

  it("cuts a reported prompt into parts that add up to it", () => {
    for (const request of sent) {
      const parts = contextTokens(request, { promptTokens: request.prompt });
      expect(parts.system + parts.tools + parts.history + parts.toolResults).toBe(request.prompt);
    }
  });
});
