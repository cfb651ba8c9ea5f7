/**
 * negotiate's reading of the real b9749 server's refusals (review r77): the requests whose answers
 * are recorded in testkit's errors/llamacpp/*-b9749.json are sent to the live server, which must
 * still answer them word for word, and negotiate is run against it where it re-sends. In a file
 * named live so that .ci/run's live step, which runs the live test files with LOOPWRIGHT_LIVE_LLAMA
 * set, runs it; it skips with a message elsewhere.
 */
import { type LiveServer, liveServerPath, recordedErrorBody, startLive } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientFor, LOOKUP_TOOLS, rejection } from "../test/wire.js";
import { createCapabilityStore } from "./capabilities.js";
import { negotiate } from "./negotiate.js";
import { readRefusal } from "./refusal.js";
import { buildBody, type ModelParams } from "./request-body.js";
import { isTransient } from "./retry.js";

if (!liveServerPath)
  console.warn(
    "negotiate live refusal tests skipped: set LOOPWRIGHT_LIVE_LLAMA to a folder holding llama-server and tiny.gguf to run them.",
  );

const user = [{ role: "user", content: "x" }];

/** Each recording, the request that drew it, and how negotiate's classifiers read it. */
const RECORDED: { file: string; request: Record<string, unknown>; grammar: boolean; transient: boolean }[] = [
  {
    file: "failed-to-parse-tools-500-b9749.json",
    request: { messages: user, tools: [{ type: "custom", custom: { name: "x" } }] },
    grammar: false,
    transient: false,
  },
  {
    file: "failed-to-parse-messages-500-b9749.json",
    request: { messages: [{ content: "x" }] },
    grammar: false,
    transient: false,
  },
  {
    file: "image-input-not-supported-no-mmproj-500-b9749.json",
    request: {
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "What is this?" },
            { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
          ],
        },
      ],
    },
    grammar: false,
    transient: false,
  },
  {
    file: "failed-to-parse-grammar-own-grammar-b9749.json",
    request: { messages: user, grammar: "root ::= (" },
    grammar: true,
    transient: false,
  },
];

const TOOLS = LOOKUP_TOOLS;

(liveServerPath ? describe : describe.skip)(
  "negotiate against the live llama-server",
  { timeout: 120_000 },
  () => {
    let live: LiveServer;
    beforeAll(async () => {
      live = await startLive({ contextSize: 4096 });
    }, 90_000);
    afterAll(() => live?.stop(), 20_000);

    for (const { file, request, grammar, transient } of RECORDED) {
      it(`answers as recorded in errors/llamacpp/${file}, read as ${grammar ? "a grammar failure" : "no refusal"}, ${transient ? "" : "not "}transient`, async () => {
        const recorded = recordedErrorBody(`llamacpp/${file}`);
        const error = await rejection(
          clientFor(live.baseUrl).chat.completions.create({
            model: "tiny",
            max_tokens: 3,
            ...request,
          } as never),
        );
        expect((error as { error?: unknown }).error).toEqual(recorded.error);
        expect(readRefusal(error)).toEqual(grammar ? { kind: "grammar" } : undefined);
        expect(isTransient(error)).toBe(transient);
      });
    }

    const send = (
      store: ReturnType<typeof createCapabilityStore>,
      config: ModelParams,
      sent: Record<string, unknown>[],
    ) =>
      negotiate(
        store.capabilitiesFor(live.baseUrl),
        (supports, _produced, model) => {
          const body = { ...buildBody(config, supports, model, user, TOOLS), stream: false } as Record<
            string,
            unknown
          >;
          sent.push(body);
          return clientFor(live.baseUrl).chat.completions.create(body as never);
        },
        { model: config.model },
      );

    it("a response_format schema the server cannot convert: refused twice, passed on, tools kept strict", async () => {
      const store = createCapabilityStore();
      const sent: Record<string, unknown>[] = [];
      const config: ModelParams = {
        model: "tiny",
        maxTokens: 3,
        extraBody: {
          response_format: {
            type: "json_schema",
            json_schema: { name: "x", schema: { type: "string", pattern: "abc" } },
          },
        },
      };
      const error = await rejection(send(store, config, sent));
      expect((error as { status?: number }).status).toBe(400);
      expect(readRefusal(error)).toEqual({ kind: "grammar" });
      expect(sent).toHaveLength(2);
      expect(store.capabilitiesFor(live.baseUrl).strictSchemas).toBe(true);
    });

    it("a tool schema the server cannot convert: answered by the relaxed tools, and latched", async () => {
      const store = createCapabilityStore();
      const sent: Record<string, unknown>[] = [];
      const tools = TOOLS.map((tool) => ({
        ...tool,
        function: {
          ...tool.function,
          parameters: {
            type: "object",
            properties: { id: { type: "string", pattern: "[a-z]+" } },
            required: ["id"],
          },
        },
      }));
      await negotiate(
        store.capabilitiesFor(live.baseUrl),
        (supports, _produced, model) => {
          const body = buildBody({ model: "tiny", maxTokens: 3 }, supports, model, user, tools);
          sent.push(body);
          return clientFor(live.baseUrl).chat.completions.create({ ...body, stream: false } as never);
        },
        { model: "tiny" },
      );
      expect(sent).toHaveLength(2);
      expect(JSON.stringify(sent[1]?.tools)).not.toContain('"pattern"');
      expect(store.capabilitiesFor(live.baseUrl).strictSchemas).toBe(false);
    });
  },
);
