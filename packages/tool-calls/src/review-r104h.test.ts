// r104h: a tool call cut by max_tokens before its name is whole, as llama-server b9749 sends it in a
// plain reply (testkit capture llamacpp-live/51): no tool_calls, `finish_reason: "length"`, and the
// raw `<tool_call>` markup so far as `content`. Read back, it must not become a call.
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { recoverToolCalls } from "./index.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("recoverToolCalls on llama.cpp's plain reply cut before the tool's name was whole", () => {
  it("recovers no call from the markup at any budget short of the name's closing quote, and leaves it in the text", async () => {
    const budgets = [1, 4, 8, 11, 12];
    server = await startServer({
      personality: "llamacpp",
      replies: budgets.map(() => ({ toolCalls: [{ name: "get_weather", arguments: '{"city":"Paris"}' }] })),
    });
    for (const maxTokens of budgets) {
      const res = await fetch(`${server.baseUrl}/chat/completions`, {
        method: "POST",
        body: JSON.stringify({
          model: "tiny",
          max_tokens: maxTokens,
          messages: [{ role: "user", content: "hi" }],
          tools: [{ type: "function", function: { name: "get_weather", parameters: { type: "object" } } }],
        }),
      });
      const choice = (
        (await res.json()) as { choices: { finish_reason: string; message: Record<string, unknown> }[] }
      ).choices[0];
      expect(choice?.finish_reason).toBe("length");
      expect(choice?.message.tool_calls).toBeUndefined();
      const content = String(choice?.message.content);
      expect(content.startsWith("<tool_call>")).toBe(true);
      const recovered = recoverToolCalls(content, ["get_weather"], { finishReason: "length" });
      expect(recovered.calls, content).toEqual([]);
      expect(recovered.text).toBe(content);
    }
  });

  it("recovers no call from the tiny model's own cut markup, as the live server sent it (4, 6 and 17 tokens)", () => {
    for (const content of [
      "<tool_call>\n {",
      '<tool_call>\n {"na',
      '<tool_call>\n {"name"\n                    :\n\n"get_weather',
    ]) {
      const recovered = recoverToolCalls(content, ["get_weather"], { finishReason: "length" });
      expect(recovered.calls, content).toEqual([]);
      expect(recovered.text).toBe(content);
    }
  });
});
