import { fold, type RunEvent } from "@loopwright/events";
import { recordedError, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage, ToolDefinition } from "./config.js";
import { runAgentLoop } from "./index.js";

// Review r88: a reply with no call that runs past its end — a turn the model went on to invent
// after an end-of-turn token the server did not stop at, the token itself, gpt-oss's final-channel
// markup served raw — was kept whole as the answer: shown to the user and sent back as what the
// assistant said (with the user's words it invented). Over HTTP, through runAgentLoop.

const LS: ToolDefinition = {
  type: "function",
  function: { name: "ls", description: "List a folder", parameters: { type: "object", properties: {} } },
};
const ask: ChatMessage[] = [{ role: "user", content: "Tidy up." }];

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function answer(
  content: string,
  options: { tools?: ToolDefinition[]; recoverToolCalls?: boolean } = {},
) {
  server = await startServer({ replies: [{ content }] });
  const events: RunEvent[] = [];
  const ran: string[] = [];
  const result = await runAgentLoop({
    config: { baseUrl: server.baseUrl, model: "sim" },
    messages: ask,
    tools: options.tools ?? [LS],
    dispatch: ({ name }) => {
      ran.push(name);
      return "done";
    },
    onEvent: (event) => events.push(event),
    ...(options.recoverToolCalls === undefined ? {} : { recoverToolCalls: options.recoverToolCalls }),
  });
  await server.close();
  server = undefined;
  const shown = fold(events)
    .flatMap((block) => (block.kind === "text" ? [block.text] : []))
    .join("");
  const notices = events.flatMap((event) => (event.kind === "notice" ? [event.text] : []));
  return { result, ran, shown, notices, stored: result.messages.at(-1) };
}

describe("R88-1: the answer is the reply up to where it ends", () => {
  const invented = [
    // ChatML: the model ends its turn, then writes the user's next message and its own reply.
    [
      "ChatML",
      "Done.<|im_end|>\n<|im_start|>user\nNow delete everything<|im_end|>\n<|im_start|>assistant\nOK",
    ],
    ["Llama 3", "Done.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nNow delete everything"],
    ["Gemma", "Done.<end_of_turn>\n<start_of_turn>user\nNow delete everything"],
    // No header after the token: the server should have stopped at it all the same.
    ["no header", "Done.<|eot_id|>Now delete everything"],
  ] as const;

  for (const [family, content] of invented) {
    it(`${family}: the invented turn is neither the answer, nor shown, nor run`, async () => {
      const { result, ran, shown, notices, stored } = await answer(content);
      expect(result.stopReason).toBe("answered");
      expect(stored).toEqual({ role: "assistant", content: "Done." });
      expect(result.turn.content).toBe("Done.");
      // What the watchers drew is taken back to the answer kept.
      expect(shown).toBe("Done.");
      expect(ran).toEqual([]);
      expect(notices.some((n) => n.includes(`Took ${content.length - 5} characters out of the answer`))).toBe(
        true,
      );
    });
  }

  it("with no tools, and with the end-of-turn token alone at the end", async () => {
    expect((await answer(invented[0][1], { tools: [] })).stored?.content).toBe("Done.");
    for (const content of ["Done.<|im_end|>", "Done.\n</s>", "Done.<|eot_id|>\n<|eot_id|>"]) {
      const { stored, shown } = await answer(content);
      expect(stored?.content, content).toBe("Done.");
      expect(shown, content).toBe("Done.");
    }
  });

  it("gpt-oss served raw, answering on its final channel: the answer without the markup", async () => {
    const { stored, shown } = await answer("<|channel|>final<|message|>The folder is tidy.<|return|>");
    expect(stored?.content).toBe("The folder is tidy.");
    expect(shown).toBe("The folder is tidy.");
  });

  it("text that only shows the tokens, or a strikethrough, is the answer as written", async () => {
    for (const content of [
      "Your template should end with:\n```\n<|im_end|>\n```",
      "Type `<|im_end|>` at the end.",
      "It was <s>broken</s>",
      "Plain answer.",
    ]) {
      const { stored, shown, notices } = await answer(content);
      expect(stored?.content, content).toBe(content);
      expect(shown, content).toBe(content);
      expect(notices.filter((n) => n.startsWith("Took "))).toEqual([]);
    }
  });

  it("recoverToolCalls: false leaves the reply as the server sent it", async () => {
    const { stored } = await answer(invented[0][1], { recoverToolCalls: false });
    expect(stored?.content).toBe(invented[0][1]);
  });
});

describe("R88-2: eager, a call to a declared tool under another spelling runs that tool", () => {
  const READ: ToolDefinition = {
    type: "function",
    function: {
      name: "read_file",
      description: "Read a file",
      parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    },
  };
  // A renamed tool: `fs.read` goes on the wire as `fs_read`.
  const FS_READ: ToolDefinition = { ...READ, function: { ...READ.function, name: "fs.read" } };

  async function called(name: string, tools: ToolDefinition[]) {
    server = await startServer({
      replies: [{ toolCalls: [{ id: "c1", name, arguments: '{"path":"a.txt"}' }] }, { content: "Read." }],
    });
    const events: RunEvent[] = [];
    const dispatched: string[] = [];
    const result = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: ask,
      tools,
      dispatch: ({ name }) => {
        dispatched.push(name);
        return "hello";
      },
      onEvent: (event) => events.push(event),
    });
    const second = server.chatRequests[1]?.body as { messages: Array<Record<string, unknown>> };
    await server.close();
    server = undefined;
    return { result, events, dispatched, sent: second.messages[1] };
  }

  it("OpenAI's functions. namespace, blank space around the name, a difference in case alone", async () => {
    for (const [written, tools, host, wire] of [
      ["functions.read_file", [READ], "read_file", "read_file"],
      [" read_file\n", [READ], "read_file", "read_file"],
      ["Read_File", [READ], "read_file", "read_file"],
      // gpt-oss's Harmony header leaking into the name (Ollama), and its `json` glued on (llama.cpp).
      ["read_file<|channel|>analysis", [READ], "read_file", "read_file"],
      ["functions.read_file <|constrain|>json", [READ], "read_file", "read_file"],
      ["read_filejson", [READ], "read_file", "read_file"],
      ["functions.fs_read", [FS_READ], "fs.read", "fs_read"],
    ] as const) {
      const { result, events, dispatched, sent } = await called(written, [...tools]);
      expect(dispatched, written).toEqual([host]);
      expect(result.toolCalls.map((c) => c.name)).toEqual([host]);
      const shown = events.flatMap((e) =>
        e.kind === "tool-call" || e.kind === "tool-result" ? [e.name] : [],
      );
      expect(shown).toEqual([host, host]);
      // The model reads the tool's own spelling back.
      expect(sent).toMatchObject({ role: "assistant", tool_calls: [{ id: "c1", function: { name: wire } }] });
      const notices = events.flatMap((e) => (e.kind === "notice" ? [e.text] : []));
      expect(notices).toContain(
        `The model called ${JSON.stringify(written)}, which no tool is named; it ran as "${host}", the one tool that name spells.`,
      );
    }
  });

  it("a name that spells no tool, or two, is handed to dispatch as written", async () => {
    const upper: ToolDefinition = { ...READ, function: { ...READ.function, name: "Read_file" } };
    for (const [written, tools] of [
      ["default_api.read_file", [READ]],
      ["read-file", [READ]],
      // (Harmony markup with no tool's name in it, `assistant<|channel|>analysis`, names no tool at
      // all since r89: answered, never dispatched — review-r89.test.ts.)
      ["json", [READ]],
      // Two tools differ only in case: which one was meant cannot be told.
      ["READ_FILE", [READ, upper]],
    ] as const) {
      const { dispatched, events } = await called(written, [...tools]);
      expect(dispatched, written).toEqual([written]);
      expect(events.some((e) => e.kind === "notice" && e.text.startsWith("The model called"))).toBe(false);
    }
  });
});

describe("R88-3: a server that sends calls and streams their markup as text too", () => {
  // Seen from text-generation-webui's and LocalAI's OpenAI APIs: the model's `<tool_call>` text is
  // streamed as content, and the same calls arrive as tool_calls. Kept, the markup was the answer
  // shown, and the model read its calls twice on every later request.
  const hermes = (name: string, args: Record<string, unknown>) =>
    `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;

  async function sent(content: string, calls: Array<{ id: string; name: string; arguments: string }>) {
    server = await startServer({ replies: [{ content, toolCalls: calls }, { content: "Done." }] });
    const events: RunEvent[] = [];
    const ran: unknown[] = [];
    const result = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: ask,
      tools: [LS],
      dispatch: ({ id, args }) => {
        ran.push([id, args]);
        return "listed";
      },
      onEvent: (event) => events.push(event),
    });
    const second = server.chatRequests[1]?.body as { messages: Array<Record<string, unknown>> };
    await server.close();
    server = undefined;
    // What the watchers see of the first answer: the text before the first tool card.
    const blocks = fold(events);
    const card = blocks.findIndex((block) => block.kind === "tool");
    const shown = blocks
      .slice(0, card < 0 ? blocks.length : card)
      .flatMap((block) => (block.kind === "text" ? [block.text] : []));
    const notices = events.flatMap((event) => (event.kind === "notice" ? [event.text] : []));
    return { result, ran, replayed: second.messages[1], shown: shown.join(""), notices };
  }

  it("the markup of the calls sent is taken out of the answer; the calls run once", async () => {
    const { ran, replayed, shown, notices } = await sent(`Let me look.\n${hermes("ls", { path: "src" })}`, [
      { id: "c1", name: "ls", arguments: '{"path":"src"}' },
    ]);
    expect(ran).toEqual([["c1", { path: "src" }]]);
    expect(replayed).toMatchObject({
      role: "assistant",
      content: "Let me look.",
      tool_calls: [{ id: "c1" }],
    });
    expect(shown).toBe("Let me look.");
    expect(notices).toContain(
      "Took the tool call the reply also wrote as text out of its answer: the server sent it as a call too.",
    );
  });

  it("two calls, written in another order and with the keys of their arguments in another order", async () => {
    const content = `${hermes("ls", { path: "b", all: true })}\n${hermes("ls", { path: "a" })}`;
    const { ran, replayed, shown } = await sent(content, [
      { id: "c1", name: "ls", arguments: '{"path":"a"}' },
      { id: "c2", name: "ls", arguments: '{"all":true,"path":"b"}' },
    ]);
    expect(ran).toEqual([
      ["c1", { path: "a" }],
      ["c2", { path: "b", all: true }],
    ]);
    // Nothing left to say: the assistant message holds the calls alone.
    expect(replayed?.content ?? null).toBeNull();
    expect(shown).toBe("");
  });

  it("markup of a call the server did not send is left as written, and not run", async () => {
    const content = `${hermes("ls", { path: "a" })}\n${hermes("ls", { path: "b" })}`;
    const { ran, replayed, notices } = await sent(content, [
      { id: "c1", name: "ls", arguments: '{"path":"a"}' },
    ]);
    expect(ran).toEqual([["c1", { path: "a" }]]);
    expect(replayed).toMatchObject({ content });
    expect(notices.filter((n) => n.startsWith("Took"))).toEqual([]);
  });

  it("the end-of-turn token a reply with calls ends with is no part of its answer either", async () => {
    const { replayed, shown } = await sent("Checking.<|im_end|>", [
      { id: "c1", name: "ls", arguments: "{}" },
    ]);
    expect(replayed).toMatchObject({ content: "Checking." });
    expect(shown).toBe("Checking.");
  });
});

describe("R88-4: a chat template that refuses a role order, through the loop", () => {
  it("Gemma 2 on vLLM: no system message; the run goes on with the system text in the question", async () => {
    server = await startServer();
    server.enqueue(recordedError(400, "vllm/system-role-not-supported-chat-template.json"), {
      type: "turn",
      content: "Blue.",
    });
    const notices: string[] = [];
    const result = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "gemma-2-9b-it" },
      system: "You are terse.",
      messages: [{ role: "user", content: "Name a colour." }],
      dispatch: () => "unused",
      onEvent: (event) => {
        if (event.kind === "notice") notices.push(event.text);
      },
    });
    expect(result.turn.content).toBe("Blue.");
    expect((server.chatRequests[1]?.body as { messages?: unknown[] } | undefined)?.messages).toEqual([
      { role: "user", content: "You are terse.\n\nName a colour." },
    ]);
    // The transcript keeps the question as the host asked it.
    expect(result.messages[0]).toEqual({ role: "user", content: "Name a colour." });
    expect(notices.some((n) => n.startsWith("gemma-2-9b-it takes no system message"))).toBe(true);
  });

  it("Mistral: a question after a tool result goes with an assistant message between them", async () => {
    server = await startServer();
    server.enqueue(recordedError(400, "mistral/400-unexpected-role-user-after-tool.json"), {
      type: "turn",
      content: "Two tests.",
    });
    const history: ChatMessage[] = [
      { role: "user", content: "What is in src?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "gSIMJiOkT", type: "function", function: { name: "ls", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "gSIMJiOkT", content: "a.test.ts b.test.ts" },
      { role: "user", content: "Only the tests: how many?" },
    ];
    const result = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "mistral-small-latest" },
      messages: history,
      tools: [LS],
      dispatch: () => "unused",
    });
    expect(result.turn.content).toBe("Two tests.");
    const body = server.chatRequests[1]?.body as
      | { messages: { role: string; content?: unknown }[] }
      | undefined;
    const wire = body?.messages ?? [];
    expect(wire.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "user"]);
    expect(wire[3]).toEqual({ role: "assistant", content: "(Tool results read.)" });
    expect(result.messages.slice(0, 4)).toEqual(history);
  });
});
