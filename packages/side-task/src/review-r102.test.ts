/**
 * r102: a side task whose request got no HTTP answer at all — nothing listening at the URL, or the
 * connection cut before the answer came — was reported as "m refused the side task: Connection
 * error.", sending a host to look for a refused field or a model's policy where the server was simply
 * away. It is still `request-failed` with the client's words; it now says no answer came.
 */
import { startServer } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { thrown } from "../test/wire.js";
import { ask } from "./ask.js";

describe("a side task that got no HTTP answer", () => {
  it("says no answer came when nothing listens at the URL, not that the model refused", async () => {
    const server = await startServer({ replies: [] });
    const baseUrl = server.baseUrl;
    await server.close();
    const error = await thrown(ask({ baseUrl }, "m", "", "Name this chat.", { timeoutMs: 10_000 }));
    expect(error.code).toBe("request-failed");
    expect(error.message).toMatch(/^ask: m gave no answer \(the request failed before a status came back/);
    expect(error.message).not.toMatch(/refused/);
  });

  it("says no answer came when the connection is cut after the headers", async () => {
    const server = await startServer({ replies: [{ content: "Title", dropAfterChunk: 0 }] });
    try {
      const error = await thrown(
        ask({ baseUrl: server.baseUrl }, "m", "", "Name this chat.", { timeoutMs: 10_000 }),
      );
      expect(error.code).toBe("request-failed");
      expect(error.message).toMatch(/gave no answer/);
      expect(error.message).not.toMatch(/refused/);
    } finally {
      await server.close();
    }
  });

  it("still says the model refused when the server answered with a status", async () => {
    const server = await startServer({
      replies: [{ type: "error", status: 400, body: { error: { message: "Model m does not exist." } } }],
    });
    try {
      const error = await thrown(ask({ baseUrl: server.baseUrl }, "m", "", "Name this chat."));
      expect(error.code).toBe("request-failed");
      expect(error.message).toMatch(/^ask: m refused the side task: .*Model m does not exist\./);
    } finally {
      await server.close();
    }
  });
});
