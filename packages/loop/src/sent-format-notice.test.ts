// A server's generic "does not support response_format" refusal is told by what the run sent
// (r95e gave negotiate's `send` a box for the body; the loop fills it): a plain json_object in the
// host's extraBody is told as json_object, a JSON schema as before. Over HTTP against the testkit.
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { createRuntime } from "./index.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const GENERIC = {
  type: "error" as const,
  status: 400,
  body: { error: { message: "This model does not support response_format.", type: "invalid_request_error" } },
};

async function run(format: Record<string, unknown>) {
  server = await startServer({ replies: [GENERIC, { content: "{}" }] });
  const notices: string[] = [];
  const runtime = createRuntime();
  try {
    const result = await runtime.runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "m", extraBody: { response_format: format } },
      messages: [{ role: "user", content: "Answer in JSON." }],
      onEvent: (e) => {
        if (e.kind === "notice") notices.push(e.text);
      },
    });
    const formats = server.chatRequests.map((r) => (r.body as { response_format?: unknown }).response_format);
    return { content: result.turn.content, notices, formats };
  } finally {
    runtime.close();
  }
}

describe("the loop tells a generically refused response_format by what it sent", () => {
  it("a plain json_object: the notice names json_object, and the request is sent again without it", async () => {
    const { content, notices, formats } = await run({ type: "json_object" });
    expect(formats).toEqual([{ type: "json_object" }, undefined]);
    expect(content).toBe("{}");
    const told = notices.filter((n) => n.includes("refused structured output"));
    // Before the loop handed back its body: "(a JSON schema in response_format)", none was sent.
    expect(told).toHaveLength(1);
    expect(told[0]).toContain("m refused structured output (json_object in response_format)");
  });

  it("a JSON schema: told as a JSON schema", async () => {
    const format = { type: "json_schema", json_schema: { name: "c", schema: { type: "object" } } };
    const { notices, formats } = await run(format);
    expect(formats).toEqual([format, undefined]);
    const told = notices.filter((n) => n.includes("refused structured output"));
    expect(told).toHaveLength(1);
    expect(told[0]).toContain("m refused structured output (a JSON schema in response_format)");
  });
});
