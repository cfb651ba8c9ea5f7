/**
 * r95r: a broken stream's message is put in a run's terms (r95d), but the rewrite was a first-match
 * string replace over the whole text, which also holds the server's own words. An error a server
 * relayed mid-stream that carried the same phrases (a gateway passing on another stream's error, or
 * just "…; retry the request.") had its quoted words rewritten — the server misquoted — and, where
 * the quote held the pointer sentence, the stream's own sentence after it kept saying "is in
 * `partial`", which the host's `AgentLoopError` does not have. Only the stream's own closing
 * sentences are rewritten now. Over HTTP against the testkit.
 */
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { AgentLoopError, runAgentLoop, StreamError } from "./index.js";

let server: TestServer | undefined;
afterEach(() => server?.close());

/** The run's error and its cause's message, for a stream that breaks with `serverText` mid-reply. */
async function relayed(serverText: string): Promise<{ message: string; cause: string }> {
  const reply = {
    content: "Once upon a time",
    chunkChars: 5,
    errorMidStream: { afterChunk: 2, error: { message: serverText } },
  };
  server = await startServer({ personality: "llamacpp", replies: [reply, reply, reply] });
  const error = await runAgentLoop({
    config: { baseUrl: server.baseUrl, model: "m" },
    messages: [{ role: "user", content: "Tell me a story." }],
  }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(AgentLoopError.isInstance(error)).toBe(true);
  const cause = (error as AgentLoopError).cause;
  expect(StreamError.isInstance(cause)).toBe(true);
  return { message: (error as Error).message, cause: (cause as StreamError).message };
}

describe("a server's words quoted in a broken stream's error are kept as the server wrote them", () => {
  it("a relayed stream error: the quote is untouched and the loop's own pointer is rewritten", async () => {
    const serverText =
      "upstream: The connection failed before the stream ended (terminated). The reply so far is in `partial`; retry the request.";
    const { message, cause } = await relayed(serverText);
    expect(cause).toContain(serverText);
    expect(message).toContain(serverText);
    // The sentence the loop wrote points at the run's error, not at a `partial` it lacks.
    expect(message).toMatch(
      /\. The reply so far is on this error's `cause\.partial` and not in the run's transcript; what to do depends on the error/,
    );
    expect(message).not.toContain("`partial`; what to do");
  });

  it("a server's '; retry the request.' is not turned into the loop's advice", async () => {
    const { message } = await relayed("upstream reset; retry the request.");
    expect(message).toContain("upstream reset; retry the request.");
    expect(message).not.toContain("upstream reset; run again");
    expect(message).toContain("`cause.partial`");
  });
});

/**
 * The Agents SDK's `new Agent({ name, instructions, mcpServers })`, ported as it was written: the
 * hint for `name` and `mcpServers` said "it is read from config", but the loop never reads those
 * config fields (a resolved spec's, the host's), so MCP servers moved there gave the model no tools.
 */
describe("a spec's host field given as an option is not said to be read from config", () => {
  async function refusedFor(key: string, value: unknown): Promise<string> {
    server = await startServer({ personality: "llamacpp", replies: [{ content: "ok" }] });
    const error = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "m" },
      messages: [{ role: "user", content: "Hello." }],
      [key]: value,
    } as Parameters<typeof runAgentLoop>[0]).catch((e: unknown) => e);
    expect(server.requests).toHaveLength(0);
    return (error as Error).message;
  }

  it("name: a field config accepts and the loop never reads", async () => {
    const message = await refusedFor("name", "Assistant");
    expect(message).not.toContain("it is read from config");
    expect(message).toContain("config.name is a field of a resolved agent config");
    expect(message).toContain("never reads it");
  });

  it("mcpServers: points at @loopwright/tools-mcp, the tools and dispatch", async () => {
    const message = await refusedFor("mcpServers", []);
    expect(message).not.toContain("it is read from config");
    expect(message).toContain("@loopwright/tools-mcp");
    expect(message).toContain("tools: await pool.tools()");
  });

  it("a config field the loop reads keeps its hint", async () => {
    expect(await refusedFor("maxRetries", 1)).toContain("(it is read from config: config.maxRetries)");
  });
});

/**
 * The check for the AI SDK's parts in a tool message called the content array's `some`: an array
 * carrying an own `some` (a wrapper library's, or a stray field) failed the run with
 * "content.some is not a function" before anything was sent; it was sent as it is before r95d.
 */
describe("a tool message's content array with an own `some` is read by index", () => {
  it("is sent, as an array is serialized without it", async () => {
    server = await startServer({ personality: "llamacpp", replies: [{ content: "It is sunny." }] });
    const content: { type: "text"; text: string }[] = [{ type: "text", text: "sunny" }];
    Object.defineProperty(content, "some", { value: 1, enumerable: false });
    const call = { id: "c1", type: "function" as const, function: { name: "weather", arguments: "{}" } };
    const asked = { role: "assistant" as const, content: null, tool_calls: [call] };
    const result = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "m" },
      messages: [{ role: "user", content: "Weather?" }, asked, { role: "tool", tool_call_id: "c1", content }],
    });
    expect(result.turn.content).toBe("It is sunny.");
    expect(server.requests).toHaveLength(1);
  });
});
