/**
 * r80b: every request a side task makes reports what it cost (`onUsage`), over HTTP against the
 * testkit. Before, a summary reporting 900 + 40 tokens reached nobody: a host paying per token
 * could not see what a run's compactions or preselections spent.
 */
import { llamacppFormatTypeRefusal, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { isolated } from "../test/wire.js";
import { ask, askJson, askReply } from "./ask.js";
import { SideTaskError } from "./errors.js";
import { preselect } from "./preselect.js";
import { summariser } from "./summariser.js";
import { taskCall } from "./task-call.js";
import type { SideTaskUsage } from "./usage.js";

let server: TestServer | undefined;
afterEach(() => server?.close());

const HOSTED = { name: "openai", extraParams: ["chat_template_kwargs"] } as const;

function collect(): { reports: SideTaskUsage[]; onUsage: (report: SideTaskUsage) => void } {
  const reports: SideTaskUsage[] = [];
  return { reports, onUsage: (report) => reports.push(report) };
}

describe("onUsage: what each side-task request cost", () => {
  it("ask reports the server's counts with the task and the model, cache counts read", async () => {
    server = await startServer({
      personality: HOSTED,
      replies: [
        {
          content: "Trip to Lisbon",
          usage: { prompt_tokens: 900, completion_tokens: 40, cached_tokens: 600 },
        },
      ],
    });
    const { reports, onUsage } = collect();
    await expect(
      ask({ baseUrl: server.baseUrl }, "tiny", "Name it.", "Plan a trip", { ...isolated(), onUsage }),
    ).resolves.toBe("Trip to Lisbon");
    expect(reports).toEqual([
      {
        task: "ask",
        model: "tiny",
        usage: { prompt: 900, completion: 40, total: 940, cached: 600, uncached: 300 },
      },
    ]);
  });

  it("a server that reports no usage is reported as zeros, once per answer", async () => {
    server = await startServer({ personality: HOSTED, replies: [{ content: "done", usage: false }] });
    const { reports, onUsage } = collect();
    const reply = await askReply({ baseUrl: server.baseUrl }, "tiny", "", "Hi", { ...isolated(), onUsage });
    expect(reply.text).toBe("done");
    expect(reports).toEqual([
      { task: "askReply", model: "tiny", usage: { prompt: 0, completion: 0, total: 0, cached: 0 } },
    ]);
  });

  it("a request sent again past a refusal reports the answer only; a refused one reports nothing", async () => {
    server = await startServer({
      personality: HOSTED,
      replies: [
        llamacppFormatTypeRefusal("json_schema"),
        { content: '{"title":"x"}', usage: { prompt_tokens: 120, completion_tokens: 7, cached_tokens: 0 } },
      ],
    });
    const { reports, onUsage } = collect();
    const answer = await askJson(
      { baseUrl: server.baseUrl },
      "tiny",
      "",
      "Title?",
      { type: "object", properties: { title: { type: "string" } }, required: ["title"] },
      { ...isolated(), onUsage },
    );
    expect(answer).toEqual({ title: "x" });
    expect(server.chatRequests).toHaveLength(2);
    expect(reports).toEqual([
      {
        task: "askJson",
        model: "tiny",
        usage: { prompt: 120, completion: 7, total: 127, cached: 0, uncached: 120 },
      },
    ]);
  });

  it("the summariser reports each request, the one asked again after the window ran out too", async () => {
    server = await startServer({
      personality: HOSTED,
      replies: [
        {
          content: "notes notes",
          finishReason: "length",
          usage: { prompt_tokens: 2980, completion_tokens: 20 },
        },
        { content: "Short notes.", usage: { prompt_tokens: 900, completion_tokens: 40 } },
      ],
    });
    const { reports, onUsage } = collect();
    const summarise = summariser({ baseUrl: server.baseUrl }, "small", {
      ...isolated(),
      contextLength: 3000,
      onUsage,
    });
    const messages = [
      {
        role: "user",
        content: `Check the build logs. ${"The build of job 7 failed at step 3. ".repeat(40)}`,
      },
      { role: "assistant", content: "All jobs passed after the retry." },
    ];
    await expect(summarise(messages, undefined)).resolves.toBe("Short notes.");
    expect(server.chatRequests).toHaveLength(2);
    expect(reports.map((r) => [r.task, r.model, r.usage.prompt, r.usage.completion, r.usage.total])).toEqual([
      ["summariser", "small", 2980, 20, 3000],
      ["summariser", "small", 900, 40, 940],
    ]);
  });

  it("preselect reports as preselect, through taskCall's options; keywords that settle it send nothing", async () => {
    server = await startServer({
      personality: HOSTED,
      replies: [
        { content: '{"tools":["kubectl_logs"]}', usage: { prompt_tokens: 300, completion_tokens: 9 } },
      ],
    });
    const { reports, onUsage } = collect();
    const call = taskCall({ model: "picker" }, { ...isolated(), onUsage }, { baseUrl: server.baseUrl });
    const catalog = [
      { name: "fs", tools: [{ name: "read_file", description: "Read a file as text." }] },
      { name: "k8s", tools: [{ name: "kubectl_logs", description: "Get logs from a pod." }] },
    ];
    await expect(
      preselect(call.endpoint, call.model, catalog, "What went wrong?", call.options),
    ).resolves.toEqual(["kubectl_logs"]);
    expect(reports.map((r) => [r.task, r.model, r.usage.prompt, r.usage.completion])).toEqual([
      ["preselect", "picker", 300, 9],
    ]);
  });

  it("an onUsage that throws changes nothing; one that is not a function is invalid-input, nothing sent", async () => {
    server = await startServer({ personality: HOSTED, replies: [{ content: "fine" }, { content: "fine" }] });
    const endpoint = { baseUrl: server.baseUrl };
    const throwing = () => {
      throw new Error("sink down");
    };
    await expect(ask(endpoint, "tiny", "", "Hi", { ...isolated(), onUsage: throwing })).resolves.toBe("fine");
    // An async sink that rejects: no unhandled rejection (vitest fails the run on one).
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const rejecting = async () => {
        throw new Error("async sink down");
      };
      await expect(ask(endpoint, "tiny", "", "Hi", { ...isolated(), onUsage: rejecting })).resolves.toBe(
        "fine",
      );
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
    expect(unhandled).toEqual([]);
    const wrong = { ...isolated(), onUsage: "log" as unknown as () => void };
    const refused = await ask(endpoint, "tiny", "", "Hi", wrong).catch((error: unknown) => error);
    expect(SideTaskError.isInstance(refused) && refused.code).toBe("invalid-input");
    expect(String((refused as Error).message)).toMatch(/onUsage must be a function/);
    expect(server.chatRequests).toHaveLength(2);
  });
});
