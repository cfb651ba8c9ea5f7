import { describe, expect, it } from "vitest";
import { withPollutedPrototype } from "./index.js";

const read = (name: string) => (({}) as Record<string, unknown>)[name];

describe("withPollutedPrototype", () => {
  it("sets the fields for the body alone, enumerable, and hands back what it returned", () => {
    const seen = withPollutedPrototype({ answer: "x", stop: true }, () => {
      const keys: string[] = [];
      for (const key in {}) keys.push(key);
      return { answer: read("answer"), stop: read("stop"), keys };
    });
    expect(seen).toEqual({ answer: "x", stop: true, keys: ["answer", "stop"] });
    expect([read("answer"), read("stop")]).toEqual([undefined, undefined]);
  });

  it("takes them out when the body throws, and once its promise settles either way", async () => {
    expect(() =>
      withPollutedPrototype({ answer: 1 }, () => {
        throw new Error("boom");
      }),
    ).toThrow("boom");
    expect(read("answer")).toBeUndefined();
    const pending = withPollutedPrototype({ answer: 2 }, async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return read("answer");
    });
    expect(read("answer")).toBe(2); // still set while the body runs
    expect(await pending).toBe(2);
    expect(read("answer")).toBeUndefined();
    await expect(withPollutedPrototype({ answer: 3 }, () => Promise.reject(new Error("no")))).rejects.toThrow(
      "no",
    );
    expect(read("answer")).toBeUndefined();
  });
});

describe("startServer reads its options as they are used", () => {
  it("serves /props set on its options after it started, and never one only Object.prototype holds", async () => {
    const { startServer } = await import("./index.js");
    const options: { props?: unknown } = {};
    const server = await startServer(options);
    try {
      const props = () => fetch(`${server.origin}/props`).then((r) => r.status);
      expect(await withPollutedPrototype({ props: { n: 1 } }, props)).toBe(404);
      options.props = { default_generation_settings: { n_ctx: 8192 } };
      expect(await props()).toBe(200);
    } finally {
      await server.close();
    }
  });
});

describe("startServer under a polluted descriptor field", () => {
  // Its options are read through getters it defines (liveFields): written as a literal, that
  // descriptor took an inherited `writable` or `value` as its own, and startServer threw
  // "Invalid property descriptor" before it listened.
  it("starts and answers with Object.prototype.writable set", async () => {
    const { startServer } = await import("./index.js");
    const started = await withPollutedPrototype({ writable: "P0LLUTED" }, () =>
      startServer({ replies: [{ content: "Hello." }] }).then(
        (server) => server,
        (error: unknown) => String(error),
      ),
    );
    expect(typeof started).not.toBe("string");
    if (typeof started === "string") return;
    try {
      const answer = await fetch(`${started.baseUrl}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "Hi" }] }),
      }).then((response) => response.json() as Promise<{ choices: { message: { content: string } }[] }>);
      expect(answer.choices[0]?.message.content).toBe("Hello.");
    } finally {
      await started.close();
    }
  });
});
