/**
 * The llamacpp personality's answer to a request's `n`, against the live b9749 captures 34-39:
 * `n` from 1 to the slot count is answered with that many choices (each reported when it ends, its
 * own usage counted), anything else is refused with the captured 400. Before r85d it answered
 * `n: 2` with one choice and never refused an `n`.
 */
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { readFixture, readRecordedResponse } from "../fixtures.js";
import type { TurnReply } from "../replies.js";
import { startServer, type TestServer } from "../server.js";
import type { LlamacppPersonalityOptions } from "./llamacpp.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

type Json = Record<string, unknown>;

const captured = (name: string) => readRecordedResponse(`llamacpp-live/${name}.response.txt`);
const capturedRequest = (name: string): Json => JSON.parse(readFixture(`llamacpp-live/${name}.request.json`));

async function start(replies: TurnReply[], options: LlamacppPersonalityOptions = {}): Promise<TestServer> {
  server = await startServer({ personality: { name: "llamacpp", ...options }, replies });
  return server;
}

async function post(body: unknown) {
  const res = await fetch(`${server?.baseUrl}/chat/completions`, {
    method: "POST",
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** The JSON chunks of an SSE body. */
const chunks = (text: string): Json[] =>
  text
    .split("\n\n")
    .filter((f) => f.startsWith("data: {"))
    .map((f) => JSON.parse(f.slice(6)));

/** Each chunk as what it is: `<choice>:<finish reason or delta keys>`, `usage`, with `+timings`. */
const outline = (list: Json[]): string[] =>
  list.map((c) => {
    const [choice] = (c.choices as Json[]) ?? [];
    const what = choice
      ? `${choice.index}:${(choice.finish_reason as string | null) ?? Object.keys(choice.delta as Json).join(",")}`
      : "usage";
    return c.timings === undefined ? what : `${what}+timings`;
  });

const user = [{ role: "user", content: "Say hello." }];

describe("llamacpp: n from 1 to the slots is answered with that many choices", () => {
  it("n: 2, plain: two choices in the capture's shape, the usage one choice's (34)", async () => {
    await start([{ content: " I", usage: { prompt_tokens: 32, completion_tokens: 4 } }]);
    const ours = JSON.parse((await post(capturedRequest("34-n2-nonstream"))).text);
    const recorded = JSON.parse(captured("34-n2-nonstream").body);
    expect(ours.choices.map((c: Json) => c.index)).toEqual([0, 1]);
    expect(Object.keys(ours.choices[1])).toEqual(Object.keys(recorded.choices[1]));
    expect(Object.keys(ours)).toEqual(Object.keys(recorded));
    // Scripted 4 tokens over both choices: each reports its own 2, as b9749 reports one choice's.
    expect(ours.usage).toMatchObject({ completion_tokens: 2, total_tokens: 34 });
    expect(ours.timings.predicted_n).toBe(2);
  });

  it("n: 2, streamed with include_usage: each choice's finish chunk, then its own usage chunk (35)", async () => {
    await start([{ content: " I", usage: { completion_tokens: 6 } }]);
    const ours = chunks((await post(capturedRequest("35-n2-stream"))).text);
    const recorded = chunks(captured("35-n2-stream").body);
    const ends = (list: Json[]) => outline(list).filter((o) => !/^\d:(role,content|content)$/.test(o));
    expect(ends(ours)).toEqual(["0:stop", "usage+timings", "1:stop", "usage+timings"]);
    // The capture interleaves differently (the slots run side by side); each choice ends the same way.
    expect(new Set(ends(recorded))).toEqual(new Set(ends(ours)));
    const usages = ours.filter((c) => c.usage !== undefined).map((c) => (c.usage as Json).completion_tokens);
    // Scripted 6 tokens over both choices: each choice's usage chunk counts its 3.
    expect(usages).toEqual([3, 3]);
  });

  it("n: 2, streamed without include_usage: timings on each choice's finish chunk (38)", async () => {
    await start([{ content: " I" }]);
    const ours = outline(chunks((await post(capturedRequest("38-n2-stream-nousage"))).text));
    const recorded = outline(chunks(captured("38-n2-stream-nousage").body));
    expect(ours.filter((o) => o.includes("timings"))).toEqual(["0:stop+timings", "1:stop+timings"]);
    expect(recorded.filter((o) => o.includes("timings"))).toEqual(["0:stop+timings", "1:stop+timings"]);
  });

  it("n: 2 with a tool call: each choice's call whole, with its own id, read back by the openai client (39)", async () => {
    await start(
      [
        { toolCalls: [{ name: "clock", arguments: '{"zone":"UTC"}' }], chunkChars: 2 },
        { toolCalls: [{ name: "clock", arguments: "{}" }] },
      ],
      {},
    );
    const request = capturedRequest("39-n2-tools-nonstream");
    const client = new OpenAI({ baseURL: server?.baseUrl, apiKey: "k", maxRetries: 0 });
    const streamed = await client.chat.completions
      .stream({
        ...(request as object),
        stream: true,
      } as unknown as OpenAI.ChatCompletionCreateParamsStreaming)
      .finalChatCompletion();
    const calls = streamed.choices.map((c) =>
      c.message.tool_calls?.map((t) => t.type === "function" && [t.function.name, t.function.arguments]),
    );
    expect(calls).toEqual([[["clock", '{"zone":"UTC"}']], [["clock", '{"zone":"UTC"}']]]);
    const plain = JSON.parse((await post(request)).text);
    const recorded = JSON.parse(captured("39-n2-tools-nonstream").body);
    expect(plain.choices.map((c: Json) => Object.keys(c.message as Json))).toEqual(
      recorded.choices.map((c: Json) => Object.keys(c.message as Json)),
    );
    const ids = plain.choices.map(
      (c: { message: { tool_calls: { id: string }[] } }) => c.message.tool_calls[0]?.id,
    );
    expect(new Set(ids).size).toBe(2);
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9]{32}$/);
  });

  it("n as b9749 reads it: null and absent 1, a fraction cut, true 1, a wider integer wrapped to int32", async () => {
    const cases: [unknown, number][] = [
      [null, 1],
      [undefined, 1],
      [1.5, 1],
      [2.7, 2],
      [true, 1],
      [4294967298, 2],
      [4, 4],
    ];
    await start(cases.map(() => ({ content: "x" })));
    for (const [n, count] of cases) {
      const answer = JSON.parse((await post({ model: "tiny", messages: user, n })).text);
      expect([n, answer.choices.length]).toEqual([n, count]);
    }
  });
});

describe("llamacpp: any other n is refused with the captured 400", () => {
  it("n: 5 against 4 slots: the capture's status, headers and body, streamed or not (36, 37)", async () => {
    await start([]);
    for (const name of ["36-n-over-slots", "37-n-over-slots-stream"]) {
      const ours = await post(capturedRequest(name));
      const recorded = captured(name);
      expect(ours.status).toBe(recorded.status);
      expect(ours.text).toBe(recorded.body);
      expect(ours.headers.get("content-type")).toBe(recorded.headers["content-type"]);
      expect(ours.headers.get("server")).toBe(recorded.headers.server);
    }
    expect(server?.pending).toBe(0);
  });

  it("0, false, -1, a string, an array, an object: b9749's messages", async () => {
    await start([]);
    const cases: [unknown, string][] = [
      [0, "Value must be between 1 <= value <= 4, but got 0"],
      [false, "Value must be between 1 <= value <= 4, but got 0"],
      [-1, "Value must be between 1 <= value <= 4, but got -1"],
      ["2", "[json.exception.type_error.302] type must be number, but is string"],
      [[], "[json.exception.type_error.302] type must be number, but is array"],
      [{}, "[json.exception.type_error.302] type must be number, but is object"],
    ];
    for (const [n, message] of cases) {
      const answer = await post({ model: "tiny", messages: user, n });
      expect([n, answer.status, JSON.parse(answer.text).error.message]).toEqual([
        n,
        400,
        `Field 'n': ${message}`,
      ]);
    }
  });

  it("a bad token budget is named first, as b9749 reads it first", async () => {
    await start([]);
    const answer = JSON.parse((await post({ model: "tiny", messages: user, n: 9, max_tokens: "y" })).text);
    expect(answer.error.message).toMatch(/^Field 'max_tokens'/);
  });

  it("slots: 1 refuses n: 2 as a server started with --parallel 1 does, and /props reports it", async () => {
    await start([], { slots: 1 });
    const answer = JSON.parse((await post({ model: "tiny", messages: user, n: 2 })).text);
    expect(answer.error.message).toBe("Field 'n': Value must be between 1 <= value <= 1, but got 2");
    const props = (await (await fetch(`${server?.origin}/props`)).json()) as Json;
    expect(props.total_slots).toBe(1);
  });
});
