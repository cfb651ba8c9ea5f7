/**
 * r75 review of side-task: the summariser refuses a message it cannot read with its typed error
 * naming the message (it rejected with a bare TypeError, or with a getter's own error), and a
 * preselection refuses a catalogue whose names no load reaches (over HTTP against the testkit).
 */
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { bodies, isolated, userContent } from "../test/wire.js";
import { SideTaskError } from "./errors.js";
import { preselect } from "./preselect.js";
import { type SummaryMessageLike, summariser } from "./summariser.js";

let server: TestServer | undefined;
afterEach(() => server?.close());

const outcome = (error: unknown) =>
  SideTaskError.isInstance(error) ? `${error.code}: ${error.message}` : `bare ${String(error)}`;

const throwing = (key: string, thrown: unknown) =>
  Object.defineProperty({ role: "user", content: "ok" }, key, {
    enumerable: true,
    get() {
      throw thrown;
    },
  }) as SummaryMessageLike;

describe("r75-3: the summariser given a message it cannot read", () => {
  it.each([
    [
      "a role that is an object without a prototype",
      { role: Object.create(null), content: "x" },
      /needs its role as a string .*, and was an object/,
    ],
    [
      "a role that is a number",
      { role: 42, content: "x" },
      /needs its role as a string .*, and was number 42/,
    ],
    [
      "a content getter that throws",
      throwing("content", new Error("content getter")),
      /could not be read \(content getter\)/,
    ],
    [
      "a role getter that throws",
      throwing("role", new RangeError("role getter")),
      /could not be read \(role getter\)/,
    ],
    [
      "a tool_calls getter that throws what has no prototype",
      throwing("tool_calls", Object.create(null)),
      /could not be read \(an object that could not be written as text \(TypeError: Cannot convert object to primitive value\)\)/,
    ],
  ])("%s is invalid-input naming its index, and nothing is sent", async (_, bad, why) => {
    server = await startServer({ replies: [{ content: "Notes." }] });
    const summarise = summariser({ baseUrl: server.baseUrl }, "small", isolated());
    const messages = [{ role: "user", content: "hello" }, bad as SummaryMessageLike];
    const error = await summarise(messages, undefined).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(outcome(error)).toMatch(/^invalid-input: summariser: message 1 of the messages to fold /);
    expect(outcome(error)).toMatch(why);
    expect(bodies(server)).toHaveLength(0);
  });

  it("a readable transcript is still summarised, a non-object entry still passed over", async () => {
    server = await startServer({ replies: [{ content: "Notes: said hello." }] });
    const summarise = summariser({ baseUrl: server.baseUrl }, "small", isolated());
    const messages = [
      { role: "user", content: "hello, please read notes.txt for me" },
      null,
      "stray",
    ] as unknown as SummaryMessageLike[];
    expect(await summarise(messages, undefined)).toBe("Notes: said hello.");
    expect(userContent(bodies(server)[0] as Record<string, unknown>)).toBe(
      "The conversation to take notes of:\n\n[user]\nhello, please read notes.txt for me",
    );
  });
});

describe("r75-1 through side-task: a catalogue whose names no load reaches", () => {
  it.each([
    ["a server named ''", [{ name: "", tools: [{ name: "read_file" }] }], /catalogue entry 0 is empty/],
    [
      "a tool named with a space at its end",
      [{ name: "fs", tools: [{ name: "read_file " }] }],
      /tool 0 of server "fs"/,
    ],
    ["a server named '*'", [{ name: "*", tools: [{ name: "read_file" }] }], /catalogue entry 0/],
  ])("%s is invalid-input before anything is sent", async (_, catalog, why) => {
    server = await startServer({ replies: [{ content: '{"tools":["read_file"]}' }] });
    const error = await preselect(
      { baseUrl: server.baseUrl },
      "small",
      catalog,
      "read notes",
      isolated(),
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(outcome(error)).toMatch(/^invalid-input: preselect: /);
    expect(outcome(error)).toMatch(why);
    expect(bodies(server)).toHaveLength(0);
  });
});
