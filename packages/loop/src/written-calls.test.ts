import { type DisplayBlock, fold, type RunEvent } from "@loopwright/events";
import { startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import type { ChatMessage, ToolDefinition } from "./config.js";
import { runAgentLoop } from "./index.js";
import { recoverWrittenCalls } from "./written-calls.js";

// A call the model wrote into its reply as text reaches the tool with exactly the arguments
// written — a `<think>` or `</think>` inside a string argument included, which the stream's fences
// would move into the reasoning — and markup quoted in a fenced code block is never run. Over
// HTTP, through runAgentLoop.

const tool = (name: string, properties: Record<string, unknown>): ToolDefinition => ({
  type: "function",
  function: {
    name,
    description: `The ${name} tool.`,
    parameters: { type: "object", properties, required: Object.keys(properties) },
  },
});
const WRITE_FILE = tool("write_file", { path: { type: "string" }, content: { type: "string" } });
const DELETE_FILE = tool("delete_file", { path: { type: "string" } });
const ask: ChatMessage[] = [{ role: "user", content: "Do it." }];

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const hermes = (name: string, args: Record<string, unknown>) =>
  `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;

/** Runs the loop against `replies`; what the tools were handed, the result and the second request's messages. */
async function run(replies: string[]) {
  server = await startServer({ replies: replies.map((content) => ({ content })) });
  const ran: Array<{ name: string; args: unknown }> = [];
  const result = await runAgentLoop({
    config: { baseUrl: server.baseUrl, model: "sim" },
    messages: ask,
    tools: [WRITE_FILE, DELETE_FILE],
    dispatch: ({ name, args }) => {
      ran.push({ name, args });
      return "done";
    },
  });
  const body = server.chatRequests[1]?.body as { messages?: Array<Record<string, unknown>> } | undefined;
  return { ran, result, sent: body?.messages ?? [] };
}

describe("a call written as text with <think> or </think> in a string argument", () => {
  it("reaches the tool exactly as written, never with the middle moved into the reasoning", async () => {
    const args = {
      path: "template.jinja",
      content: "{%- if enable_thinking %}<think>\n{%- else %}<think>\n\n</think>\n\n{%- endif %}",
    };
    const { ran, result, sent } = await run([hermes("write_file", args), "Written."]);
    expect(ran).toEqual([{ name: "write_file", args }]);
    expect(result.stopReason).toBe("answered");
    expect(result.turn?.content).toBe("Written.");
    const assistant = sent.find((m) => m.role === "assistant") as {
      content?: unknown;
      reasoning_content?: unknown;
      tool_calls?: Array<{ function: { arguments: string } }>;
    };
    expect(JSON.parse(assistant.tool_calls?.[0]?.function.arguments ?? "")).toEqual(args);
    // Nothing of the call was kept as the scratchpad sent back.
    expect(assistant.reasoning_content).toBeUndefined();
  });

  it("with a lone </think>: the call runs and the answer is never a JSON fragment", async () => {
    const args = { path: "notes.md", content: "Qwen3 ends its reasoning with </think> and then answers." };
    const { ran, result } = await run([hermes("write_file", args), "Written."]);
    expect(ran).toEqual([{ name: "write_file", args }]);
    expect(result.turn?.content).toBe("Written.");
    expect(
      result.messages.some((m) => typeof m.content === "string" && m.content.includes("</tool_call>")),
    ).toBe(false);
  });

  it("after a scratchpad of its own: the reasoning is the scratchpad, the call's text is the call's", async () => {
    const args = { path: "a.md", content: "a </think> b <think> c" };
    const { ran, sent } = await run([
      `<think>I will write a.md.</think>\n${hermes("write_file", args)}`,
      "Done.",
    ]);
    expect(ran).toEqual([{ name: "write_file", args }]);
    const assistant = sent.find((m) => m.role === "assistant") as Record<string, unknown>;
    expect(assistant.reasoning_content).toBe("I will write a.md.");
    expect(assistant.content ?? "").toBe("");
  });

  it("holds for any text of markers and backticks in the arguments", async () => {
    const piece = fc.constantFrom("<think>", "</think>", "```", "`", "\n", "x", " y ", "{", "}");
    const value = fc.array(piece, { maxLength: 6 }).map((parts) => parts.join(""));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom("", "<think>plan</think>\n"), value, async (lead, content) => {
        const args = { path: "f.txt", content };
        const { ran, result } = await run([`${lead}${hermes("write_file", args)}`, "Done."]);
        await server?.close();
        server = undefined;
        expect(ran).toEqual([{ name: "write_file", args }]);
        expect(result.turn?.content).toBe("Done.");
      }),
      propertyRuns(25),
    );
  });
});

describe("a call written as text over a reply carried on past the token ceiling", () => {
  it("is read from the text of both pieces as written", async () => {
    const args = { path: "t.jinja", content: "a <think>b</think> c and d" };
    const whole = hermes("write_file", args);
    const at = whole.indexOf(" and d");
    server = await startServer({
      replies: [
        { content: whole.slice(0, at), finishReason: "length" },
        { content: whole.slice(at) },
        { content: "Written." },
      ],
    });
    const ran: unknown[] = [];
    const result = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim", maxTokens: 40, maxContinuations: 1 },
      messages: ask,
      tools: [WRITE_FILE],
      dispatch: ({ args }) => {
        ran.push(args);
        return "done";
      },
    });
    expect(server.chatRequests).toHaveLength(3);
    expect(ran).toEqual([args]);
    expect(result.turn?.content).toBe("Written.");
  });
});

/** Text of the first turn as `fold` draws it: its `kind` blocks (text by default) before its first tool card. */
function firstAnswer(blocks: DisplayBlock[], kind: "text" | "reasoning" = "text"): string {
  const card = blocks.findIndex((b) => b.kind === "tool");
  return blocks
    .slice(0, card < 0 ? blocks.length : card)
    .flatMap((b) => (b.kind === kind ? [b.text] : []))
    .join("");
}

/** The reasoning an assistant message stores, in whichever field it is kept. */
function storedReasoning(message: ChatMessage | undefined): string {
  const fields = (message ?? {}) as { reasoning_content?: unknown; reasoning?: unknown };
  const value = fields.reasoning_content ?? fields.reasoning;
  return typeof value === "string" ? value : "";
}

/** Runs the loop on `personality`; the events, the calls run and the first answer stored (the one with calls). */
async function shown(
  personality: "openai" | "llamacpp",
  replies: Array<{ content: string; finishReason?: string }>,
  maxContinuations = 0,
) {
  server = await startServer({ replies, personality });
  const events: RunEvent[] = [];
  const ran: unknown[] = [];
  const result = await runAgentLoop({
    config: { baseUrl: server.baseUrl, model: "sim", maxTokens: 1000, maxContinuations },
    messages: ask,
    tools: [WRITE_FILE],
    dispatch: ({ args }) => {
      ran.push(args);
      return "done";
    },
    onEvent: (event) => events.push(event),
  });
  const stored = result.messages.find((m) => m.role === "assistant" && (m.tool_calls ?? []).length > 0);
  return { events, ran, stored, result };
}

describe("a call written as text, cut at the token ceiling inside its closing tag", () => {
  const args = { path: "a" };
  const call = `<tool_call>\n${JSON.stringify({ name: "write_file", arguments: args })}\n</tool_call>`;
  for (const personality of ["llamacpp", "openai"] as const) {
    it(`runs, and the answer stored holds no piece of the tag (${personality})`, async () => {
      for (const cut of ["</tool_call", "</tool_", "</", "<"]) {
        const written = `Let me write it.\n${call.slice(0, call.lastIndexOf("</tool_call>"))}${cut}`;
        const { ran, stored } = await shown(personality, [
          { content: written, finishReason: "length" },
          { content: "Written." },
        ]);
        expect(ran).toEqual([args]);
        expect(stored?.content).toBe("Let me write it.");
        await server?.close();
        server = undefined;
      }
    });

    it(`split across a continuation, stores no piece of the tag either (${personality})`, async () => {
      const { ran, stored } = await shown(
        personality,
        [
          { content: "Let me write that file for you now.", finishReason: "length" },
          // The piece carried on is cut too, inside the closing tag, and not carried on again.
          { content: `\n${call.slice(0, -3)}`, finishReason: "length" },
          { content: "Written." },
        ],
        1,
      );
      expect(ran).toEqual([args]);
      expect(stored?.content).toBe("Let me write that file for you now.");
    });
  }
});

describe("the display of a reply whose calls were taken out of its text", () => {
  const call = hermes("write_file", { path: "a" });
  const cases: Record<string, string> = {
    "a Hermes call after the answer": `Let me write it.\n${call}`,
    "text after the call": `Let me write it.\n${call}\nThen done.`,
    "a call and nothing else": call,
    "a scratchpad first": `<think>plan</think>Let me write it.\n${call}`,
  };
  for (const [name, content] of Object.entries(cases)) {
    it(`draws what the transcript stores: ${name}`, async () => {
      const { events, ran, stored } = await shown("openai", [{ content }, { content: "Written." }]);
      expect(ran).toEqual([{ path: "a" }]);
      expect(stored).toBeDefined();
      expect(firstAnswer(fold(events))).toBe(stored?.content ?? "");
      expect(firstAnswer(fold(events))).not.toContain("<tool_call>");
    });
  }

  // The fences drew the call's markup as reasoning where a <think> or </think> stood inside its
  // arguments (with a lone </think>, the answer before the call too): it is taken back.
  const drawnAsReasoning: Record<string, string> = {
    "a <think> inside an argument": hermes("write_file", {
      path: "t.jinja",
      content: "{% if x %}<think>\n{% endif %}</think>ok",
    }),
    "a lone </think> inside an argument": `Doing it.\n${hermes("write_file", {
      path: "n.md",
      content: "Qwen ends with </think> then answers.",
    })}`,
    // Only what follows the scratchpad kept is taken back.
    "a scratchpad first, then a <think> inside an argument": `<think>plan</think>Doing it.\n${hermes(
      "write_file",
      { path: "n.md", content: "a <think> b </think> c" },
    )}`,
  };
  for (const [name, content] of Object.entries(drawnAsReasoning)) {
    it(`draws the reasoning the transcript stores, not the call's markup: ${name}`, async () => {
      const { events, ran, stored } = await shown("openai", [{ content }, { content: "Written." }]);
      expect(ran).toHaveLength(1);
      expect(stored).toBeDefined();
      const blocks = fold(events);
      expect(firstAnswer(blocks)).toBe(stored?.content ?? "");
      expect(firstAnswer(blocks, "reasoning")).toBe(storedReasoning(stored));
      expect(firstAnswer(blocks, "reasoning")).not.toMatch(/tool_call|endif|write_file| b /);
    });
  }

  it("takes back only what follows the answer kept", async () => {
    const { events } = await shown("openai", [
      { content: `Let me write it.\n${call}` },
      { content: "Written." },
    ]);
    const retracts = events.filter((e) => e.kind === "retract");
    expect(retracts).toEqual([{ kind: "retract", chars: `\n${call}`.length }]);
  });
});

describe("markup quoted in a fenced code block", () => {
  it("is an example: the tool never runs and the answer keeps the block", async () => {
    for (const info of ["xml", "", "text"]) {
      const content = `To delete a file, a Hermes-style model writes:\n\`\`\`${info}\n${hermes("delete_file", { path: "src/index.ts" })}\n\`\`\`\nThat is only an example; I did not call it.`;
      const { ran, result } = await run([content, "Deleted."]);
      await server?.close();
      server = undefined;
      expect(ran, info).toEqual([]);
      expect(result.stopReason).toBe("answered");
      expect(result.turn?.content).toBe(content);
    }
  });

  it("a fenced JSON call explained in prose is not run either", async () => {
    const content =
      'A call looks like:\n```json\n{"name": "delete_file", "arguments": {"path": "/tmp/x"}}\n```\nThat is the format.';
    const { ran, result } = await run([content, "Deleted."]);
    expect(ran).toEqual([]);
    expect(result.turn?.content).toBe(content);
  });
});

describe("recoverWrittenCalls", () => {
  const turn = (content: string, rawContent?: string) => ({
    content,
    toolCalls: [],
    usage: { prompt: 0, completion: 0, total: 0, cached: 0 },
    finishReason: "stop",
    reasoning: "",
    ...(rawContent === undefined ? {} : { rawContent }),
  });

  it("runs nothing when the turn's content is not what the fences make of its raw text", () => {
    const raw = hermes("write_file", { path: "a", content: "x <think>y</think> z" });
    expect(recoverWrittenCalls(turn("something else", raw), [WRITE_FILE])).toEqual({ unread: 1 });
  });

  it("reads the content itself where the fences took nothing out", () => {
    const found = recoverWrittenCalls(
      turn(`Writing.\n${hermes("write_file", { path: "a", content: "b" })}`),
      [WRITE_FILE],
    );
    expect(found && "turn" in found ? [found.calls[0]?.args, found.turn.content] : found).toEqual([
      { path: "a", content: "b" },
      "Writing.",
    ]);
  });
});
