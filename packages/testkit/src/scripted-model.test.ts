import fc from "fast-check";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { extractExpression, extractPath, scriptedModel } from "./scripted-model.js";
import { type ReplyFunction, startServer, type TestServer } from "./server.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const tools: OpenAI.ChatCompletionTool[] = [
  {
    type: "function",
    function: {
      name: "clock",
      description: "Current date and time",
      parameters: { type: "object", properties: {} },
    },
  },
  {
    type: "function",
    function: {
      name: "calculator",
      description: "Evaluate an arithmetic expression",
      parameters: {
        type: "object",
        properties: { expression: { type: "string" } },
        required: ["expression"],
      },
    },
  },
  {
    type: "function",
    function: {
      name: "read_file",
      description: "Read a file under the working directory",
      parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    },
  },
];

type Msg = OpenAI.ChatCompletionMessageParam;

async function turn(client: OpenAI, messages: Msg[]) {
  const stream = client.chat.completions.stream({ model: "sim", messages, tools });
  let deltas = 0;
  stream.on("content", () => deltas++);
  const final = await stream.finalChatCompletion();
  return { message: final.choices[0]!.message, finish: final.choices[0]!.finish_reason, deltas };
}

async function start() {
  // A test may start several (callsFor in a loop): the one before is closed here, as afterEach
  // closes only the last (the others stayed open for the worker's later files).
  await server?.close();
  server = await startServer({ scriptedModel: { chunkDelayMs: 0 } });
  return new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
}

function callsOf(message: OpenAI.ChatCompletionMessage) {
  return (message.tool_calls ?? []).map((c) =>
    c.type === "function" ? { name: c.function.name, args: JSON.parse(c.function.arguments) } : {},
  );
}

/** A function tool from a name, a description and its JSON Schema properties (all required unless listed). */
function fnTool(
  name: string,
  description: string,
  properties: Record<string, Record<string, unknown>>,
  required = Object.keys(properties),
): OpenAI.ChatCompletionTool {
  return {
    type: "function",
    function: { name, description, parameters: { type: "object", properties, required } },
  };
}

const add = fnTool("add", "Add two numbers", { a: { type: "number" }, b: { type: "number" } });

/** The tool calls the scripted model makes over HTTP for one question and these tools. */
async function callsFor(question: string, declared: OpenAI.ChatCompletionTool[]) {
  const client = await start();
  const completion = await client.chat.completions.create({
    model: "sim",
    messages: [{ role: "user", content: question }],
    tools: declared,
  });
  return { calls: callsOf(completion.choices[0]!.message), text: completion.choices[0]!.message.content };
}

describe("scripted model reads tools by their JSON schema", () => {
  it.each(["What is 17 + 25?", "please add 17 and 25", "What's the sum of 17 and 25?"])(
    "calls add(a, b) with both numbers in order for %j",
    async (question) => {
      expect((await callsFor(question, [add])).calls).toEqual([{ name: "add", args: { a: 17, b: 25 } }]);
    },
  );

  it("fills any two numbers of a question into add(a, b) in the order written", () => {
    fc.assert(
      fc.property(
        fc.double({ min: -1e6, max: 1e6, noNaN: true }).map((n) => Math.round(n * 100) / 100),
        fc.nat(1e6),
        fc.constantFrom("What is %a + %b?", "please add %a and %b", "%a plus %b"),
        (a, b, template) => {
          const question = template.replace("%a", String(a)).replace("%b", String(b));
          const reply = scriptedModel({ messages: [{ role: "user", content: question }], tools: [add] });
          expect(reply.toolCalls).toEqual([{ name: "add", arguments: JSON.stringify({ a, b }) }]);
        },
      ),
      propertyRuns(200),
    );
  });

  it("fills number parameters in the order the question gives them, whatever they are called", async () => {
    const multiply = fnTool("multiply", "Multiply two numbers", {
      left: { type: "integer" },
      right: { type: "integer" },
    });
    expect((await callsFor("What is 6 times 7?", [multiply])).calls).toEqual([
      { name: "multiply", args: { left: 6, right: 7 } },
    ]);
    expect((await callsFor("What is 100 - 58?", [add])).calls).toEqual([]);
  });

  it("fills a string from the quoted words, an enum from the value named, a number from the digits", async () => {
    const repeat = fnTool("repeat", "Repeat a text", {
      text: { type: "string" },
      times: { type: "integer" },
    });
    const convert = fnTool("convert", "Convert a temperature", {
      value: { type: "number" },
      unit: { type: "string", enum: ["celsius", "fahrenheit"] },
    });
    expect((await callsFor('please repeat "hello" 3 times', [repeat])).calls).toEqual([
      { name: "repeat", args: { text: "hello", times: 3 } },
    ]);
    expect((await callsFor("convert 100 to Fahrenheit", [convert])).calls).toEqual([
      { name: "convert", args: { value: 100, unit: "fahrenheit" } },
    ]);
  });

  it("leaves an optional parameter out unless the question gives it, and asks for a missing required number", async () => {
    const round = fnTool(
      "round",
      "Round a number",
      { value: { type: "number" }, digits: { type: "integer" } },
      ["value"],
    );
    expect((await callsFor("round 2.71", [round])).calls).toEqual([{ name: "round", args: { value: 2.71 } }]);
    expect((await callsFor("round 2.71 to 2 digits", [round])).calls).toEqual([
      { name: "round", args: { value: 2.71, digits: 2 } },
    ]);
    const asked = await callsFor("please add them", [add]);
    expect(asked.calls).toEqual([]);
    expect(asked.text).toMatch(/add needs a, b/);
  });
});

describe("scripted model calls tools declared the way loopwright sends them", () => {
  it("calls a tool whose optional parameters were made required and nullable, sending null for what the question leaves out", async () => {
    const clock = fnTool("clock", "The current time", { zone: { type: ["string", "null"] } });
    const round = fnTool("round", "Round a number", {
      value: { type: "number" },
      digits: { type: ["integer", "null"] },
    });
    expect((await callsFor("What time is it?", [clock])).calls).toEqual([
      { name: "clock", args: { zone: null } },
    ]);
    expect((await callsFor("What time is it in Europe/Paris?", [clock])).calls).toEqual([
      { name: "clock", args: { zone: "Europe/Paris" } },
    ]);
    expect((await callsFor("round 2.71", [round])).calls).toEqual([
      { name: "round", args: { value: 2.71, digits: null } },
    ]);
    expect((await callsFor("round 2.71 to 2 digits", [round])).calls).toEqual([
      { name: "round", args: { value: 2.71, digits: 2 } },
    ]);
  });

  it("knows an MCP pool's server__tool by the tool's own name", async () => {
    const echo = fnTool("everything__echo", "Echoes back the input", { message: { type: "string" } });
    expect((await callsFor("Echo 'hi' with the echo tool.", [echo])).calls).toEqual([
      { name: "everything__echo", args: { message: "hi" } },
    ]);
  });

  it("reads a file the question names with the readers only, never with a tool that writes, moves or creates", async () => {
    const filesystem = [
      fnTool("filesystem__read_text_file", "Read the complete contents of a file as text.", {
        path: { type: "string" },
        head: { type: ["number", "null"] },
      }),
      fnTool("filesystem__write_file", "Create a new file or overwrite an existing file.", {
        path: { type: "string" },
        content: { type: "string" },
      }),
      fnTool("filesystem__edit_file", "Make line-based edits to a text file.", {
        path: { type: "string" },
        dryRun: { type: "boolean" },
      }),
      fnTool("filesystem__create_directory", "Create a new directory.", { path: { type: "string" } }),
      fnTool("filesystem__move_file", "Move or rename files and directories.", {
        source: { type: "string" },
        destination: { type: "string" },
      }),
      fnTool("delete_file", "Delete a file.", { path: { type: "string" } }),
    ];
    expect((await callsFor("What is in README.md?", filesystem)).calls).toEqual([
      { name: "filesystem__read_text_file", args: { path: "README.md", head: null } },
    ]);
    // Whatever a question says about files, short of naming a writing tool, no writing tool runs.
    const words = [
      "What",
      "is",
      "in",
      "README.md",
      "src/a.ts",
      "read",
      "open",
      "show",
      "the",
      "file",
      "contents",
    ];
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...words), { maxLength: 8 }), (picked) => {
        const reply = scriptedModel({
          messages: [{ role: "user", content: picked.join(" ") }],
          tools: filesystem,
        });
        expect((reply.toolCalls ?? []).map((call) => call.name)).not.toContainEqual(
          expect.stringMatching(/write|edit|create|move|delete/),
        );
      }),
      propertyRuns(200),
    );
  });
});

describe("scripted model", () => {
  it("runs a whole tool loop: asks for the clock, then answers with its result", async () => {
    const client = await start();
    const messages: Msg[] = [{ role: "user", content: "What time is it right now?" }];
    const first = await turn(client, messages);
    expect(first.finish).toBe("tool_calls");
    expect(callsOf(first.message)).toEqual([{ name: "clock", args: {} }]);
    const call = first.message.tool_calls![0]!;
    messages.push(first.message as Msg, {
      role: "tool",
      tool_call_id: call.id,
      content: "2026-11-29 14:05 UTC",
    });
    const second = await turn(client, messages);
    expect(second.finish).toBe("stop");
    expect(second.message.content).toContain("2026-11-29 14:05 UTC");
    expect(second.message.content).toMatch(/simulator/);
    expect(second.deltas).toBeGreaterThan(10);
  });

  it("extracts the arithmetic expression for the calculator and states the result", async () => {
    const client = await start();
    const messages: Msg[] = [{ role: "user", content: "Please calculate 12 * (3 + 4) for me" }];
    const first = await turn(client, messages);
    expect(callsOf(first.message)).toEqual([{ name: "calculator", args: { expression: "12 * (3 + 4)" } }]);
    messages.push(first.message as Msg, {
      role: "tool",
      tool_call_id: first.message.tool_calls![0]!.id,
      content: "84",
    });
    expect((await turn(client, messages)).message.content).toMatch(/^12 \* \(3 \+ 4\) = 84/);
  });

  it("reads the file whose path the user mentions and shows its text", async () => {
    const client = await start();
    const messages: Msg[] = [{ role: "user", content: "Can you show me `docs/notes.md`?" }];
    const first = await turn(client, messages);
    expect(callsOf(first.message)).toEqual([{ name: "read_file", args: { path: "docs/notes.md" } }]);
    messages.push(first.message as Msg, {
      role: "tool",
      tool_call_id: first.message.tool_calls![0]!.id,
      content: "# Notes\nhello",
    });
    expect((await turn(client, messages)).message.content).toContain("# Notes\nhello");
  });

  it("reads the file a message names beside a version number, never the version", async () => {
    const client = await start();
    for (const [content, path] of [
      ["After upgrading to v1.2.3, read CHANGELOG.md", "CHANGELOG.md"],
      ["Install 1.2.3-beta.1 and then open docs/setup.md", "docs/setup.md"],
      ["We are on V2.0 now; show me notes.txt", "notes.txt"],
    ] as const) {
      const { message } = await turn(client, [{ role: "user", content }]);
      expect(callsOf(message), content).toEqual([{ name: "read_file", args: { path } }]);
    }
    // A version alone names no file: no read_file call on it.
    const { message } = await turn(client, [{ role: "user", content: "Is v1.2.3 out yet?" }]);
    expect(message.tool_calls ?? []).toEqual([]);
  });

  it("calls two tools in parallel when the user names both", async () => {
    const client = await start();
    const first = await turn(client, [{ role: "user", content: "What's the time, and what is 2+3?" }]);
    expect(callsOf(first.message)).toEqual([
      { name: "clock", args: {} },
      { name: "calculator", args: { expression: "2+3" } },
    ]);
    expect(new Set(first.message.tool_calls!.map((c) => c.id)).size).toBe(2);
  });

  it("answers plainly, saying it is a simulator, when no tool is named", async () => {
    const client = await start();
    const { message, finish } = await turn(client, [{ role: "user", content: "Hello there" }]);
    expect(finish).toBe("stop");
    expect(message.tool_calls ?? []).toEqual([]);
    expect(message.content).toMatch(/^Hello! .*simulator/);
    expect(message.content).toContain("clock, calculator, read_file");
  });

  it("asks for the path instead of calling read_file without one", () => {
    const reply = scriptedModel({ messages: [{ role: "user", content: "read the file please" }], tools });
    expect(reply.toolCalls).toBeUndefined();
    expect(reply.content).toMatch(/Which file should I read with read_file\?/);
  });

  it("finds a tool by its name even without keywords", () => {
    const weather = [
      {
        type: "function",
        function: {
          name: "get_weather",
          parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
        },
      },
    ];
    const reply = scriptedModel({
      messages: [{ role: "user", content: "use get weather for Paris" }],
      tools: weather,
    });
    expect(reply.toolCalls).toEqual([{ name: "get_weather", arguments: JSON.stringify({ city: "Paris" }) }]);
  });

  it("is deterministic and works with no tools and no messages", () => {
    const a = scriptedModel({ messages: [{ role: "user", content: "why?" }] });
    expect(scriptedModel({ messages: [{ role: "user", content: "why?" }] })).toEqual(a);
    expect(a.content).toMatch(/No tools were declared/);
    expect(scriptedModel({}).content).toMatch(/simulator/);
    // A reply function hands its request's body over as it is: an empty body is undefined.
    for (const body of [undefined, null, 5, "text", [1]])
      expect(scriptedModel(body).content).toMatch(/simulator/);
  });

  it("answers from the queue first and falls back to the scripted model", async () => {
    server = await startServer({ scriptedModel: true, replies: [{ content: "queued" }] });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    const ask = { model: "sim", messages: [{ role: "user" as const, content: "hi" }] };
    expect((await client.chat.completions.create(ask)).choices[0]?.message.content).toBe("queued");
    expect((await client.chat.completions.create(ask)).choices[0]?.message.content).toMatch(/simulator/);
  });

  it("is what a reply function falls back to, handed its request's body as it is", async () => {
    // A ReplyFunction's request body is `unknown`: scriptedModel takes it without a cast.
    const reply: ReplyFunction = (request, index) =>
      index === 0 ? { content: "first" } : scriptedModel(request.body);
    server = await startServer({ replies: reply });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    const ask = { model: "sim", messages: [{ role: "user" as const, content: "hi" }] };
    expect((await client.chat.completions.create(ask)).choices[0]?.message.content).toBe("first");
    expect((await client.chat.completions.create(ask)).choices[0]?.message.content).toMatch(/simulator/);
  });
});

describe("extraction", () => {
  it("extracts an expression embedded in words exactly", () => {
    const num = fc.integer({ min: 0, max: 9999 }).map(String);
    const op = fc.constantFrom("+", "-", "*", "/");
    fc.assert(
      fc.property(num, fc.array(fc.tuple(op, num), { minLength: 1, maxLength: 4 }), (first, rest) => {
        const expression = first + rest.map(([o, n]) => ` ${o} ${n}`).join("");
        expect(extractExpression(`please work out ${expression} now`)).toBe(expression);
      }),
    );
  });

  it("finds paths with a slash or an extension and ignores plain words and URLs", () => {
    expect(extractPath("open src/index.ts, thanks")).toBe("src/index.ts");
    expect(extractPath('read "package.json"')).toBe("package.json");
    expect(extractPath("see https://example.com/a.txt")).toBeUndefined();
    expect(extractPath("version 1.2.3 of the thing.")).toBeUndefined();
    expect(extractPath("say hi, e.g. hello, i.e. greet")).toBeUndefined();
    expect(extractPath("What is in package.json?")).toBe("package.json");
  });

  it("skips version numbers, v-prefixed and pre-release ones too, and prefers a token with an extension", () => {
    for (const version of ["v1.2.3", "V2.0", "1.2.3-beta.1", "v20.1.0", "2.0.0+build.5", "1.2"])
      expect(extractPath(`upgrade to ${version} today`), version).toBeUndefined();
    expect(extractPath("upgrade to v1.2.3 then read ./src/a.ts")).toBe("./src/a.ts");
    expect(extractPath("After upgrading to v1.2.3, read CHANGELOG.md")).toBe("CHANGELOG.md");
    expect(extractPath("install 1.2.3-beta.1 and open CHANGELOG.md")).toBe("CHANGELOG.md");
    // A token with a file extension wins over an earlier path without one.
    expect(extractPath("look in src/ for index.ts")).toBe("index.ts");
    expect(extractPath("compare src/a.ts with src/b.ts")).toBe("src/a.ts");
    // With no extension anywhere, the first path still counts.
    expect(extractPath("list src/lib then lib/util")).toBe("src/lib");
  });
});
