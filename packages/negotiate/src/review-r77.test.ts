import { startServer, type TestServer } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientFor, rejection } from "../test/wire.js";
import { readRefusal } from "./refusal.js";
import { isOverflow, isTransient } from "./retry.js";

// Review r77 (R77N-…): what a host would notice, over real HTTP to the testkit.

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

/** What the real openai client rejects with when the testkit answers `status` with `body`. */
function refused(status: number, body: unknown): Promise<unknown> {
  server.enqueue({ type: "error", status, body });
  return rejection(
    clientFor(server.baseUrl).chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "x" }],
    }),
  );
}

describe("R77N-1: an error wrapped as another's cause is read in linear time", () => {
  // The cause's words come back line by line, and each line was searched for among all before it:
  // a 1 MB body of short lines, wrapped once (as a stream reader or a host wraps the client's error),
  // took about a minute to classify, and every classifier reads it again.
  const wrapped = async (lines: number) => {
    const details = Array.from({ length: 16 }, (_, k) => ({
      message: Array.from({ length: lines }, (_, i) => `${k}.${i}`).join("\n"),
    }));
    const error = await refused(500, {
      error: { message: "upstream failed", type: "server_error", details },
    });
    return new Error("the turn failed", { cause: error });
  };

  it("classifies a 16 × 4,000-line body, wrapped, in well under the 12 s it took", {
    timeout: 120_000,
  }, async () => {
    const error = await wrapped(4_000);
    const started = performance.now();
    expect(isTransient(error)).toBe(true);
    expect(readRefusal(error)).toBeUndefined();
    expect(isOverflow(error)).toBe(false);
    // About 0.1 s here, 12 s before; the bound leaves room for a loaded machine.
    expect(performance.now() - started).toBeLessThan(3_000);
  });

  it("still reads the cause's words: a refusal wrapped is answered as it is bare", async () => {
    const error = await refused(400, {
      error: { message: "Unsupported parameter: 'max_tokens' is not supported with this model." },
    });
    expect(readRefusal(new Error("wrapped", { cause: error }))).toEqual({ kind: "token-limit-spelling" });
  });
});

describe("R77N-2: llama.cpp's 500s for a request it cannot read are not retried", () => {
  // Recorded from the real b9749 server (testkit errors/llamacpp/*-500-b9749.json): each was read as
  // a server fault, so a turn loop re-sent the same request with backoff, to the same answer.
  const bodies = {
    "a custom tool": {
      error: {
        code: 500,
        message:
          'Failed to parse tools: Unsupported tool type: {"type":"custom","custom":{"name":"x"}}; tools = [\n  {\n    "type": "custom",\n    "custom": {\n      "name": "x"\n    }\n  }\n]',
        type: "server_error",
      },
    },
    "a tool without a name": {
      error: {
        code: 500,
        message:
          'Failed to parse tools: [json.exception.out_of_range.403] key \'name\' not found; tools = [\n  {\n    "type": "function",\n    "function": {\n      "parameters": {\n        "type": "object"\n      }\n    }\n  }\n]',
        type: "server_error",
      },
    },
    "a message without a role": {
      error: {
        code: 500,
        message: 'Failed to parse messages: Missing \'role\' in message: {"content":"x"}',
        type: "server_error",
      },
    },
    "an image without a projector": {
      error: {
        code: 500,
        message:
          "image input is not supported - hint: if this is unexpected, you may need to provide the mmproj",
        type: "server_error",
      },
    },
    "audio without a projector": {
      error: {
        code: 500,
        message:
          "audio input is not supported - hint: if this is unexpected, you may need to provide the mmproj",
        type: "server_error",
      },
    },
  };
  for (const [what, body] of Object.entries(bodies)) {
    it(`reads ${what} as not transient, and as no refusal to answer`, async () => {
      const error = await refused(500, body);
      expect(isTransient(error)).toBe(false);
      expect(readRefusal(error)).toBeUndefined();
    });
  }

  it("still retries llama.cpp's other 500s", async () => {
    const error = await refused(500, {
      error: { code: 500, message: "Failed to tokenize prompt", type: "server_error" },
    });
    expect(isTransient(error)).toBe(true);
  });
});
