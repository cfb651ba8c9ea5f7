// r100d: `autoCompact` with no model anywhere — none given it, no `tasks.compaction.model`, none in
// the config — was taken by `new Agent`, and every prompt then ended `error` with the loop's refusal:
// "config.compact needs tasks.compaction naming the model that writes the summary; the main model is
// never used for it. Give tasks.compaction.model, or leave compact off." The host had set neither
// `config.compact` nor `tasks.compaction` (the agent sets them), and under `autoCompact` the main
// model is the one used when it names none. `new Agent` now refuses such options itself, naming what
// the host set and what to set.
import { SPEC_TOKEN } from "@loopwright/spec";
import { describe, expect, it } from "vitest";
import { Agent, AgentError, createSession } from "./test-exports.js";
import { useFineServers } from "./test-support/fine-server.js";

const { fineServer } = useFineServers();

const thrown = (make: () => unknown): Error => {
  try {
    make();
  } catch (error) {
    return error as Error;
  }
  throw new Error("nothing was thrown");
};

/** A config without a model: from JavaScript, or read from a file (`LoopConfig`'s type asks for one). */
const base = { baseUrl: "http://127.0.0.1:1/v1", contextLength: 2000 };

describe("autoCompact with no model to write its summaries", () => {
  it("is refused by new Agent, naming autoCompact and config.model, never config.compact or tasks.compaction", () => {
    const error = thrown(() => new Agent({ config: base as never, autoCompact: true }));
    expect(AgentError.isInstance(error) && error.code).toBe("invalid-input");
    expect(error.message).toMatch(/^autoCompact needs a model to write its summaries/);
    expect(error.message).toMatch(/autoCompact: true/);
    expect(error.message).toMatch(/config\.model was undefined/);
    expect(error.message).toMatch(
      /Set config\.model; autoCompact: \{ model: .* \} names a summariser of its own/,
    );
    expect(error.message).not.toMatch(/config\.compact|tasks\.compaction/);
  });

  it("says an empty model was empty, and an autoCompact object without a model was given", () => {
    const error = thrown(() => new Agent({ config: { ...base, model: "" }, autoCompact: {} }));
    expect(error.message).toMatch(/autoCompact: \{\} without a model/);
    expect(error.message).toMatch(/config\.model was a string \(""\)/);
  });

  it("names the spec's model when the agent was made from a spec", () => {
    const spec = { spec: SPEC_TOKEN, model: { endpoint: { baseUrl: base.baseUrl }, contextLength: 2000 } };
    const error = thrown(() => new Agent({ spec, autoCompact: true } as never));
    expect(AgentError.isInstance(error) && error.code).toBe("invalid-input");
    expect(error.message).toMatch(/the spec names no model/);
    expect(error.message).toMatch(/Name the model in the spec;/);
    expect(error.message).not.toMatch(/config\.compact|tasks\.compaction|a string/);
  });

  it("is refused by createSession the same way, before anything is written", async () => {
    await expect(createSession({ config: base as never, autoCompact: true })).rejects.toThrow(
      /autoCompact needs a model to write its summaries/,
    );
  });

  it("takes a summariser named by autoCompact or by tasks.compaction, a prompt then naming the missing config.model", async () => {
    const server = await fineServer();
    const config = { baseUrl: server.baseUrl, contextLength: 100_000 };
    for (const agent of [
      new Agent({ config: config as never, autoCompact: { model: "summariser" } }),
      new Agent({
        config: { ...config, tasks: { compaction: { model: "summariser" } } } as never,
        autoCompact: true,
      }),
    ]) {
      const result = await agent.prompt("one");
      expect(result.status).toBe("error");
      // The turn's own refusal, as without autoCompact: nothing of compaction the host did not set.
      expect(result.error).toMatch(/config\.model must be the model's non-empty name/);
      expect(result.error).not.toMatch(/config\.compact|tasks\.compaction/);
    }
  });
});
