/**
 * A model whose chat template refuses a role order: Gemma 2's takes no `system` message (vLLM's
 * "System role not supported"), Mistral's API and `mistral_common` take no `user` message straight
 * after a `tool` one. Each recorded refusal is latched for the model and answered over HTTP by
 * re-sending the messages in an order it takes; the caller's transcript is untouched, another model
 * on the endpoint is not affected, and a snapshot carries the latch.
 */
import { keepErrorBodies } from "@loopwright/client";
import { recordedErrorBody, startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import OpenAI from "openai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { streamText } from "../test/wire.js";
import { createCapabilityStore, type ModelCapabilities } from "./capabilities.js";
import { negotiate } from "./negotiate.js";
import { readRefusal } from "./refusal.js";
import { buildBody } from "./request-body.js";
import { isTransient } from "./retry.js";
import { TOOL_RESULTS_READ, withTemplateRoles } from "./template-roles.js";

let server: TestServer;
beforeEach(async () => {
  server = await startServer();
});
afterEach(() => server.close());

const ok = { type: "turn", content: "fine" } as const;
const SYSTEM_ROLE = recordedErrorBody("vllm/system-role-not-supported-chat-template.json");
const USER_AFTER_TOOL: [string, unknown][] = [
  ["Mistral API", recordedErrorBody("mistral/400-unexpected-role-user-after-tool.json")],
  ["vLLM (mistral_common)", recordedErrorBody("vllm/user-after-tool-mistral-common.json")],
];

const client = (): OpenAI =>
  new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0, fetch: keepErrorBodies() });

function turn(
  store: ReturnType<typeof createCapabilityStore>,
  messages: readonly unknown[],
  model: string,
  notices: string[] = [],
): Promise<string> {
  const openai = client();
  return negotiate(
    store.capabilitiesFor(server.baseUrl, "k"),
    (s, produced, caps) => streamText(openai, buildBody({ model }, s, caps, messages), produced),
    { model, onNotice: (text) => notices.push(text) },
  );
}

const sent = (i: number): unknown[] =>
  (server.chatRequests[i]?.body as { messages?: unknown[] } | undefined)?.messages ?? [];

const asked: Record<string, unknown>[] = [
  { role: "system", content: "You are terse." },
  { role: "user", content: "Name a colour." },
];

const afterTool = (): Record<string, unknown>[] => [
  { role: "system", content: "You list files." },
  { role: "user", content: "What is in src?" },
  {
    role: "assistant",
    content: null,
    tool_calls: [
      { id: "gSIMJiOkT", type: "function", function: { name: "ls", arguments: '{"path":"src"}' } },
    ],
  },
  { role: "tool", tool_call_id: "gSIMJiOkT", content: "a.ts b.ts" },
  // The user spoke before the model answered the result (a steer, a stop and a new question).
  { role: "user", content: "Only the tests, please." },
];

describe("a chat template that takes no system message (vLLM, Gemma 2)", () => {
  it("is latched for the model and answered with the system text at the head of the first user message", async () => {
    const store = createCapabilityStore();
    const messages = structuredClone(asked);
    const notices: string[] = [];
    server.enqueue({ type: "error", status: 400, body: SYSTEM_ROLE }, ok, ok, ok);
    await expect(turn(store, messages, "gemma-2-9b-it", notices)).resolves.toBe("fine");
    expect(sent(0)).toEqual(asked);
    expect(sent(1)).toEqual([{ role: "user", content: "You are terse.\n\nName a colour." }]);
    expect(messages).toEqual(asked);
    expect(notices).toEqual([
      "gemma-2-9b-it takes no system message (its chat template refused one); sending the system text at the head of the first user message from now on.",
    ]);
    // The next request goes folded without a refusal first; another model keeps its system message.
    await turn(store, messages, "gemma-2-9b-it");
    expect(sent(2)).toEqual(sent(1));
    await turn(store, messages, "llama-3.1-8b");
    expect(sent(3)).toEqual(asked);
  });

  it("rides in a snapshot: a restarted process folds from its first request", async () => {
    const store = createCapabilityStore();
    server.enqueue({ type: "error", status: 400, body: SYSTEM_ROLE }, ok, ok);
    await turn(store, asked, "gemma-2-9b-it");
    const restarted = createCapabilityStore();
    restarted.importCapabilities(store.exportCapabilities());
    await turn(restarted, asked, "gemma-2-9b-it");
    expect(server.chatRequests).toHaveLength(3);
    expect(sent(2)).toEqual([{ role: "user", content: "You are terse.\n\nName a colour." }]);
  });

  it("is never retried as a server fault, and a second refusal goes to the caller", async () => {
    expect(isTransient({ status: 500, body: { error: { message: "System role not supported" } } })).toBe(
      false,
    );
    expect(
      readRefusal({ status: 500, body: "jinja2.exceptions.TemplateError: System role not supported" }),
    ).toEqual({
      kind: "system-role",
    });
    const store = createCapabilityStore();
    server.enqueue(
      { type: "error", status: 400, body: SYSTEM_ROLE },
      { type: "error", status: 400, body: SYSTEM_ROLE },
      ok,
    );
    await expect(turn(store, asked, "gemma-2-9b-it")).rejects.toMatchObject({ status: 400 });
    expect(server.chatRequests).toHaveLength(2);
  });
});

describe("a user message straight after a tool result (Mistral)", () => {
  for (const [who, body] of USER_AFTER_TOOL) {
    it(`${who}: latched for the model and answered with an assistant message between them`, async () => {
      const store = createCapabilityStore();
      const messages = afterTool();
      const notices: string[] = [];
      server.enqueue({ type: "error", status: 400, body }, ok);
      await expect(turn(store, messages, "mistral-small-latest", notices)).resolves.toBe("fine");
      const wire = sent(1) as Record<string, unknown>[];
      expect(wire.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool", "assistant", "user"]);
      expect(wire[4]).toEqual({ role: "assistant", content: TOOL_RESULTS_READ });
      expect(messages).toEqual(afterTool());
      expect(notices).toEqual([
        expect.stringMatching(/^mistral-small-latest takes no user message straight after a tool result/),
      ]);
      expect(
        store.modelCapabilitiesFor(store.capabilitiesFor(server.baseUrl, "k"), "mistral-small-latest"),
      ).toMatchObject({ userAfterTool: false, systemRole: true });
    });
  }
});

describe("withTemplateRoles", () => {
  const latched = (flags: Partial<ModelCapabilities>) =>
    ({
      ...createCapabilityStore().modelCapabilitiesFor(
        createCapabilityStore().capabilitiesFor("http://x", ""),
        "m",
      ),
      ...flags,
    }) as ModelCapabilities;

  it("folds every system message into the user message after it; one with none after goes as a user message", () => {
    const model = latched({ systemRole: false });
    expect(
      withTemplateRoles(
        [
          {
            role: "system",
            content: [
              { type: "text", text: "Rules." },
              { type: "text", text: "More rules." },
            ],
          },
          { role: "system", content: "Notes so far: none." },
          { role: "user", content: [{ type: "image_url", image_url: { url: "data:," } }] },
          { role: "assistant", content: "Seen." },
          { role: "system", content: "Be brief." },
          { role: "user", content: "" },
          { role: "system", content: "Last word." },
        ],
        model,
      ),
    ).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "Rules.\n\nMore rules.\n\nNotes so far: none." },
          { type: "image_url", image_url: { url: "data:," } },
        ],
      },
      { role: "assistant", content: "Seen." },
      { role: "user", content: "Be brief." },
      { role: "user", content: "Last word." },
    ]);
  });

  it("property: with nothing latched the messages go as they are; with both, no system message and no user after a tool", () => {
    const role = fc.constantFrom("system", "user", "assistant", "tool");
    const message = fc.record({ role, content: fc.string({ maxLength: 8 }) });
    fc.assert(
      fc.property(fc.array(message, { maxLength: 12 }), (messages) => {
        expect(withTemplateRoles(messages, latched({}))).toEqual(messages);
        expect(withTemplateRoles(messages, undefined)).toEqual(messages);
        const out = withTemplateRoles(messages, latched({ systemRole: false, userAfterTool: false })) as {
          role: string;
          content: string;
        }[];
        expect(out.some((m) => m.role === "system")).toBe(false);
        const userAfterTool = out.filter((m, i) => m.role === "user" && out[i - 1]?.role === "tool");
        expect(userAfterTool).toEqual([]);
        // Every other message is there, in order; every system text is in some user message.
        const others = (list: { role: string; content: string }[]) =>
          list.filter((m) => m.role === "assistant" || m.role === "tool");
        expect(
          others(out).filter((m) => !(m.role === "assistant" && m.content === TOOL_RESULTS_READ)),
        ).toEqual(others(messages));
        for (const m of messages) {
          if (m.role === "system" && m.content !== "") {
            expect(out.some((o) => o.role === "user" && o.content.includes(m.content))).toBe(true);
          }
        }
      }),
    );
  });

  it("refuses what is not an array, and passes a message of another shape as it is", () => {
    expect(() => withTemplateRoles("x" as never, undefined)).toThrow(TypeError);
    const odd = [null, 3, { content: "no role" }];
    expect(withTemplateRoles(odd, latched({ systemRole: false, userAfterTool: false }))).toEqual(odd);
  });
});
