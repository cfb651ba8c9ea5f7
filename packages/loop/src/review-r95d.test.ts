/**
 * r95d: porting the everyday programs of the Vercel AI SDK and the OpenAI Agents SDK to
 * `runAgentLoop`. A run whose stream broke off (a cut connection, an error event mid-stream) failed
 * with the stream package's words, "The reply so far is in `partial`; retry the request": the host
 * of a run holds an `AgentLoopError`, on which `partial` is undefined (it is on `cause`), and a
 * watcher holds only the text. Now the message points at `cause.partial`, says the reply is not in
 * the run's transcript, and says what to send again. A silent endpoint's said "raise firstChunkMs"
 * (or `idleMs`): options of the stream package that `LoopConfig` does not have; it now names
 * `config.firstTokenSeconds` (or `config.requestTimeoutSeconds`). An option written as those SDKs
 * spell it (`maxSteps`, `instructions`, `onStepFinish`, a top-level `model`, tools as an object by
 * name) was refused with every option the loop reads and no word of which one does its job; the
 * refusal now says. Over HTTP against the testkit.
 */
import { type Reply, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { AgentLoopError, createRuntime, EndpointSilent, failedRun, StreamError } from "./index.js";

let server: TestServer | undefined;
afterEach(() => server?.close());

async function brokenRun(
  reply: Reply,
  seconds: { firstTokenSeconds?: number; requestTimeoutSeconds?: number } = {},
) {
  server = await startServer({ personality: "llamacpp", replies: [reply, reply] });
  const runtime = createRuntime();
  const runId = "r95d-broken";
  const error = await runtime
    .runAgentLoop({
      runId,
      config: { baseUrl: server.baseUrl, model: "m", ...seconds },
      messages: [{ role: "user", content: "Tell me a story." }],
    })
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  expect(AgentLoopError.isInstance(error)).toBe(true);
  const events = runtime.bus.history(runId);
  runtime.close();
  return { error: error as AgentLoopError, events };
}

describe("a broken stream's error tells a run's host where the reply so far is", () => {
  it("a cut connection: the message names cause.partial, which holds the text shown", async () => {
    const { error, events } = await brokenRun({
      content: "Once upon a time there",
      chunkChars: 5,
      dropAfterChunk: 4,
    });
    expect(StreamError.isInstance(error.cause)).toBe(true);
    const cause = error.cause as StreamError;
    const shown = events.map((event) => (event.kind === "output" ? event.text : "")).join("");
    expect(shown).toMatch(/^Once upon/);
    expect(cause.partial?.content).toBe(shown);
    // What the host caught has no `partial`: the message must not send it looking there.
    expect(Object.hasOwn(error, "partial")).toBe(false);
    expect(error.message).toContain("`cause.partial`");
    expect(error.message).not.toContain("is in `partial`");
    // The run's transcript ends at the question: the text shown is in no message.
    expect(failedRun(error)?.messages).toEqual([{ role: "user", content: "Tell me a story." }]);
    expect(error.message).toContain("not in the run's transcript");
    // What to send again is the run, not "the request".
    expect(error.message).not.toContain("retry the request");
    expect(error.message).toContain("failedRun(error).messages");
    // A watcher reads the same words on the run's error event.
    const said = events.find((event) => event.kind === "error");
    expect(said?.kind === "error" ? said.message : undefined).toBe(error.message);
  });

  it("an error event mid-stream: the same pointer, the server's words kept", async () => {
    const { error } = await brokenRun({
      content: "Once upon a time",
      chunkChars: 5,
      errorMidStream: { afterChunk: 3, error: { message: "slot unavailable" } },
    });
    expect((error.cause as StreamError).partial?.content).toMatch(/^Once/);
    expect(error.message).toContain("slot unavailable");
    expect(error.message).toContain("`cause.partial`");
    expect(error.message).not.toContain("is in `partial`");
  });
});

describe("a silent endpoint's error names the run's own setting", () => {
  it("silent before the first chunk: config.firstTokenSeconds, not the stream's firstChunkMs", async () => {
    const { error } = await brokenRun(
      { content: "never sent", silentAfterChunk: 0 },
      { firstTokenSeconds: 0.3 },
    );
    expect(EndpointSilent.isInstance(error.cause)).toBe(true);
    expect((error.cause as EndpointSilent).code).toBe("first-chunk");
    expect(error.message).toContain("`config.firstTokenSeconds`");
    expect(error.message).not.toContain("firstChunkMs");
  });

  it("silent mid-reply: config.requestTimeoutSeconds, not the stream's idleMs", async () => {
    const { error } = await brokenRun(
      { content: "Once upon a time there", chunkChars: 5, silentAfterChunk: 3 },
      { requestTimeoutSeconds: 0.3, firstTokenSeconds: 30 },
    );
    expect((error.cause as EndpointSilent).code).toBe("idle");
    expect(error.message).toContain("`config.requestTimeoutSeconds`");
    expect(error.message).not.toContain("idleMs");
  });
});

/**
 * The message of the run `options` (over the defaults) is refused with, checking that it is an
 * `AgentLoopError` and that nothing reached the server.
 */
async function refusal(options: Record<string, unknown>): Promise<string> {
  server = await startServer({ personality: "llamacpp", replies: [{ content: "ok" }] });
  const error = await createRuntime()
    .runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "m" },
      messages: [{ role: "user", content: "What is the weather in Paris?" }],
      ...options,
    } as Parameters<ReturnType<typeof createRuntime>["runAgentLoop"]>[0])
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  expect(AgentLoopError.isInstance(error)).toBe(true);
  expect(server.requests).toHaveLength(0);
  return (error as Error).message;
}

describe("an option spelled as the AI SDK or the Agents SDK spells it is refused with what does its job here", () => {
  it.each([
    [
      "maxSteps",
      5,
      /"maxSteps" \(a step limit is config\.maxToolIterations, which counts tool steps, n - 1 for at most n requests/,
    ],
    [
      "maxTurns",
      5,
      /"maxTurns" \(a step limit is config\.maxToolIterations.*beforeStep returning \{ stop: true \}/,
    ],
    ["stopWhen", () => true, /"stopWhen" \(a step limit is config\.maxToolIterations/],
    ["instructions", "Be brief.", /"instructions" \(the instructions are system\)/],
    ["abortSignal", new AbortController().signal, /"abortSignal" \(the abort signal is signal\)/],
    ["onStepFinish", () => undefined, /"onStepFinish" \(each step is told to onMessage/],
    ["prepareStep", () => undefined, /"prepareStep" \(beforeStep returns each step's plan/],
    ["model", "gpt-4o", /"model" \(it is read from config: config\.model\)/],
    [
      "prompt",
      "What is the weather in Paris?",
      /"prompt" \(the question goes in messages: \[\{ role: "user", content \}\]/,
    ],
    ["maxToolIterations", 3, /"maxToolIterations" \(it is read from config: config\.maxToolIterations\)/],
  ])("%s", async (key, value, said) => {
    const message = await refusal({ [key]: value });
    expect(message).toMatch(said);
    // The list of every option it reads still follows.
    expect(message).toContain("; the options it reads are config, system, messages");
  });

  it("an option no SDK spells gets no hint", async () => {
    expect(await refusal({ bogus: 1 })).toMatch(
      /^runAgentLoop does not know the option "bogus"; the options it reads are/,
    );
  });

  it("tools as an object by name: says to list them and run them in dispatch", async () => {
    const message = await refusal({
      tools: { weather: { description: "Weather", parameters: { type: "object" } } },
      dispatch: () => "sunny",
    });
    expect(message).toContain("not an object of tools by name");
    expect(message).toContain('{ type: "function", function: { name, description?, parameters? } }');
    expect(message).toContain("run them in dispatch");
  });
});

describe("a transcript stored by the AI SDK is refused naming the message, before anything is sent", () => {
  // Sent as it was, llama.cpp answered "400 unsupported content[].type", naming no message.
  const refusedTranscript = (messages: unknown[]) => refusal({ messages });

  it("an assistant message holding a tool-call part", async () => {
    const message = await refusedTranscript([
      { role: "user", content: [{ type: "text", text: "Weather in Paris?" }] },
      {
        role: "assistant",
        content: [{ type: "tool-call", toolCallId: "c1", toolName: "weather", input: {} }],
      },
      { role: "user", content: "And now?" },
    ]);
    expect(message).toContain("messages[1]");
    expect(message).toContain('"tool-call" part');
    expect(message).toContain('tool_calls, { id, type: "function", function: { name, arguments } }');
  });

  it("a tool message holding a tool-result part (and so no tool_call_id)", async () => {
    const message = await refusedTranscript([
      { role: "user", content: "Weather in Paris?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c1", type: "function", function: { name: "weather", arguments: "{}" } }],
      },
      {
        role: "tool",
        content: [
          { type: "tool-result", toolCallId: "c1", toolName: "weather", output: { type: "json", value: 21 } },
        ],
      },
    ]);
    expect(message).toContain("messages[2]");
    expect(message).toContain('"tool-result" part');
    expect(message).toContain('{ role: "tool", tool_call_id, content }');
  });
});
