/**
 * startLive against the real llama-server the LOOPWRIGHT_LIVE_LLAMA folder holds: it answers once
 * started, serves the tiny model as `tiny`, renders with the chat template it was given, and is gone
 * after stop. Skipped with a message where the folder is absent; the option checks run everywhere.
 */
import { afterAll, describe, expect, it } from "vitest";
import { TestkitError } from "./errors.js";
import { type LiveServer, liveServerPath, startLive } from "./live-llama.js";

if (!liveServerPath)
  console.warn(
    "testkit live tests skipped: set LOOPWRIGHT_LIVE_LLAMA to a folder holding llama-server and tiny.gguf to run them.",
  );

describe("startLive's options", () => {
  it("refuses an option of the wrong type before starting anything, naming it", async () => {
    for (const [options, named] of [
      [{ contextSize: 0 }, /contextSize/],
      [{ slots: 1.5 }, /slots/],
      [{ chatTemplate: 42 }, /chatTemplate/],
      [{ special: "yes" }, /special must be true or false/],
      [null, /options must be an object/],
    ] as const) {
      const error = await startLive(options as never).catch((e: unknown) => e);
      expect(TestkitError.isInstance(error)).toBe(true);
      expect((error as Error).message).toMatch(named);
    }
  });
});

(liveServerPath ? describe : describe.skip)("startLive", { timeout: 120_000 }, () => {
  let server: LiveServer | undefined;
  afterAll(() => server?.stop(), 20_000);

  it("serves the tiny model with the template given, and is gone after stop", async () => {
    const marker = "TEMPLATE-FROM-THE-TEST";
    server = await startLive({
      contextSize: 1024,
      chatTemplate: `{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n${marker} ' + message['content'] + '<|im_end|>\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}`,
    });
    const models = (await (await fetch(`${server.baseUrl}/models`)).json()) as { data: { id: string }[] };
    expect(models.data.map((m) => m.id)).toContain("tiny");
    const props = (await (await fetch(`${server.origin}/props`)).json()) as { chat_template?: string };
    expect(props.chat_template).toContain(marker);
    await server.stop();
    await expect(fetch(`${server.origin}/health`)).rejects.toThrow();
    await server.stop(); // idempotent
  });
});
