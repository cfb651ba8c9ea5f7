/**
 * summariser as the summarise hook of @loopwright/ledger's compaction, over HTTP against the
 * testkit: the folded stretch is shown to the model as text with the earlier notes to continue,
 * the fold carries the model's notes, and a failed or cut-off summary leaves the transcript as it
 * was, with a notice.
 */
import {
  applyCompaction,
  type MessageLike,
  planCompaction,
  runCompaction,
  SUMMARY_LEAD,
} from "@loopwright/ledger";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { bodies, isolated, systemContent, userContent } from "../test/wire.js";
import { SideTaskError } from "./errors.js";
import { SUMMARY_MESSAGE_CHARS, summariser } from "./summariser.js";

let server: TestServer | undefined;
afterEach(() => server?.close());

/** A long run: questions, tool calls and results, long enough that planCompaction wants to fold. */
function longRun(previous?: string): MessageLike[] {
  const messages: MessageLike[] = [{ role: "system", content: "You are a build assistant." }];
  if (previous) messages.push({ role: "system", content: `${SUMMARY_LEAD}${previous}` });
  for (let i = 0; i < 6; i++) {
    messages.push({ role: "user", content: `Question ${i}: check the build log of job ${i}.` });
    messages.push({
      role: "assistant",
      content: "",
      tool_calls: [
        { id: `c${i}`, type: "function", function: { name: "read_log", arguments: `{"job":${i}}` } },
      ],
    });
    messages.push({ role: "tool", tool_call_id: `c${i}`, content: `job ${i}: ${"ok ".repeat(300)}` });
    messages.push({ role: "assistant", content: `Job ${i} passed.` });
  }
  return messages;
}

describe("summariser", () => {
  it("writes the fold's notes from the folded stretch, shown as text", async () => {
    server = await startServer({
      replies: [{ content: "<think>hmm</think>Jobs 0-3 passed; user checks logs job by job." }],
    });
    const messages = longRun();
    const plan = planCompaction(messages, { limit: 4000, used: 3900 });
    expect(plan).toBeDefined();
    const summarise = summariser({ baseUrl: server.baseUrl }, "small", isolated());
    const fold = await runCompaction(messages, plan as NonNullable<typeof plan>, summarise);
    expect(fold?.summary).toBe("Jobs 0-3 passed; user checks logs job by job.");
    const [body] = bodies(server);
    expect(body).toMatchObject({ model: "small", max_tokens: 1024, stream: false });
    expect(systemContent(body ?? {})).toMatch(/working notes/);
    const shown = String(userContent(body ?? {}));
    expect(shown).toMatch(/\[user\]\nQuestion 0: check the build log of job 0\./);
    expect(shown).toMatch(/\[assistant called read_log\]\n\{"job":0\}/);
    expect(shown).toMatch(/\[tool result\]\njob 0: ok ok/);
    // The applied fold is a transcript an endpoint takes: the summary, then a user message.
    const applied = applyCompaction(messages, fold as NonNullable<typeof fold>);
    expect(
      applied.find((m) => m.role === "system" && String(m.content).startsWith(SUMMARY_LEAD)),
    ).toBeDefined();
  });

  it("continues the earlier notes rather than summarising them again", async () => {
    server = await startServer({ replies: [{ content: "Notes continued." }] });
    const messages = longRun("Earlier: the user set up CI.");
    const plan = planCompaction(messages, { limit: 4000, used: 3900 });
    const summarise = summariser({ baseUrl: server.baseUrl }, "small", isolated());
    await runCompaction(messages, plan as NonNullable<typeof plan>, summarise);
    expect(String(userContent(bodies(server)[0] ?? {}))).toMatch(
      /^Notes so far:\nEarlier: the user set up CI\.\n\nContinue these notes/,
    );
  });

  it("cuts a long message in the middle and says how much went", async () => {
    server = await startServer({ replies: [{ content: "ok" }] });
    const summarise = summariser({ baseUrl: server.baseUrl }, "small", isolated());
    await summarise([{ role: "tool", content: "x".repeat(SUMMARY_MESSAGE_CHARS * 3) }], undefined);
    const shown = String(userContent(bodies(server)[0] ?? {}));
    expect(shown).toMatch(/\[… 8000 characters left out …\]/);
    expect(shown.length).toBeLessThan(SUMMARY_MESSAGE_CHARS + 200);
  });

  it("takes a summary shorter than the stretch it replaces, however much of the stretch the prompt cut", async () => {
    // ~4500 characters of notes for a stretch whose tool result alone is 70 000 characters: the
    // prompt shows that result cut to SUMMARY_MESSAGE_CHARS, but the transcript holds all of it.
    const notes = "The user asked for the build; make failed on an undefined reference to foo. "
      .repeat(60)
      .trim();
    server = await startServer({ replies: [{ content: notes }] });
    const notices: string[] = [];
    const summarise = summariser({ baseUrl: server.baseUrl }, "small", {
      ...isolated(),
      onNotice: (m: string) => notices.push(m),
      maxTokens: 2048,
    });
    const stretch: MessageLike[] = [
      { role: "user", content: "Build it and tell me what failed." },
      {
        role: "assistant",
        content: "",
        tool_calls: [{ id: "c1", type: "function", function: { name: "run", arguments: '{"cmd":"make"}' } }],
      },
      { role: "tool", tool_call_id: "c1", content: "error: undefined reference to foo\n".repeat(2000) },
    ];
    expect(notes.length).toBeGreaterThan(SUMMARY_MESSAGE_CHARS + 200);
    expect(await summarise(stretch, undefined)).toBe(notes);
    expect(notices).toEqual([]);
    const shown = String(userContent(bodies(server)[0] ?? {}));
    expect(shown.length).toBeLessThan(notes.length);
  });

  it("leaves the transcript as it was, with a notice, when the summary fails or is cut off", async () => {
    server = await startServer({
      replies: [
        {
          type: "error",
          status: 400,
          body: { error: { message: "model not loaded", type: "invalid_request_error" } },
        },
        // Cut off at the ceiling: the whole max_tokens it was sent (1024) spent, as a server counts it.
        { content: "Jobs 0 to", finishReason: "length", usage: { completion_tokens: 1024 } },
      ],
    });
    const notices: string[] = [];
    const summarise = summariser({ baseUrl: server.baseUrl }, "small", {
      ...isolated(),
      onNotice: (m: string) => notices.push(m),
    });
    const messages = longRun();
    const plan = planCompaction(messages, { limit: 4000, used: 3900 }) as NonNullable<
      ReturnType<typeof planCompaction>
    >;
    await expect(runCompaction(messages, plan, summarise)).resolves.toBeUndefined();
    await expect(runCompaction(messages, plan, summarise)).resolves.toBeUndefined();
    expect(notices[0]).toMatch(/could not be written.*model not loaded/);
    expect(notices[1]).toMatch(/cut off at its reply ceiling/);
  });

  it("throws a typed error for a missing model, and for messages that are not a list", async () => {
    expect(() => summariser({ baseUrl: "http://127.0.0.1:9/v1" }, "")).toThrow(SideTaskError);
    const summarise = summariser({ baseUrl: "http://127.0.0.1:9/v1" }, "m");
    const error = await summarise("nope" as never, undefined).catch((e: unknown) => e);
    expect(SideTaskError.isInstance(error) && error.code).toBe("invalid-input");
    expect(() => summariser({ baseUrl: "http://127.0.0.1:9/v1" }, "m", null as never)).toThrow(
      /summariser: options must be an object/,
    );
  });

  it("refuses a system prompt that is not text when it is made, and reads a null one as absent", async () => {
    const endpoint = { baseUrl: "http://127.0.0.1:9/v1" };
    for (const options of [{ system: 5 }, { system: 5, contextLength: 4096 }, { system: ["a"] }]) {
      let thrown: unknown;
      try {
        summariser(endpoint, "small", options as never);
      } catch (error) {
        thrown = error;
      }
      expect(SideTaskError.isInstance(thrown) && thrown.code).toBe("invalid-input");
      expect(String(thrown)).toMatch(/summariser: system must be a string/);
    }
    server = await startServer({ replies: [{ content: "Notes." }] });
    const summarise = summariser({ baseUrl: server.baseUrl }, "small", {
      ...isolated(),
      ...({ system: null, contextLength: 4096, inputChars: null } as object),
    });
    await expect(summarise(longRun(), undefined)).resolves.toBe("Notes.");
    expect(systemContent(bodies(server)[0] ?? {})).toMatch(/working notes/);
  });

  it("reads a null onNotice and signal as absent, as its doc says, rather than refusing them", async () => {
    server = await startServer({ replies: [{ content: "Notes." }] });
    const summarise = summariser({ baseUrl: server.baseUrl }, "small", {
      ...isolated(),
      onNotice: null,
      signal: null,
      maxTokens: null,
      timeoutMs: null,
    });
    await expect(summarise(longRun(), undefined)).resolves.toBe("Notes.");
    expect(bodies(server)[0]).toMatchObject({ max_tokens: 1024 });
  });

  it("reads past an entry that is not a message, and earlier notes that are not text", async () => {
    server = await startServer({ replies: [{ content: "The build passed." }] });
    const summarise = summariser({ baseUrl: server.baseUrl }, "small", isolated());
    const messages = [null, 3, ...longRun()] as unknown as MessageLike[];
    await expect(summarise(messages, 42 as never)).resolves.toBe("The build passed.");
    expect(String(userContent(bodies(server)[0] ?? {}))).toMatch(/^The conversation to take notes of:/);
  });
});
