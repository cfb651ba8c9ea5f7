import type { MessageLike } from "@loopwright/ledger";
import { afterEach, describe, expect, it } from "vitest";
import { configureHooks, createHooks, HOOK_PREFACE, HooksError, resetHooks, withContext } from "./index.js";

afterEach(() => {
  resetHooks();
});

const BLOCK = '<context hook="memory">\nShip on Friday.\n</context>';
const messages: MessageLike[] = [
  { role: "system", content: "Be brief." },
  { role: "user", content: "When do we ship?" },
];

describe("withContext", () => {
  it("leads the question with the preface and the blocks, leaving the array it was given alone", () => {
    const before = structuredClone(messages);
    const sent = withContext(messages, 1, BLOCK);
    expect(sent[1]).toEqual({ role: "user", content: `${HOOK_PREFACE}\n\n${BLOCK}\n\nWhen do we ship?` });
    expect(sent[0]).toBe(messages[0]);
    expect(sent).not.toBe(messages);
    expect(messages).toEqual(before);
  });

  it("says nothing above the blocks for an empty preface", () => {
    expect(withContext(messages, 1, BLOCK, "")[1]?.content).toBe(`${BLOCK}\n\nWhen do we ship?`);
  });

  it("uses the configured preface, a given one over it, and ignores a preface that is not a string", () => {
    configureHooks({ preface: "From acme's hooks:" });
    expect(withContext(messages, 1, BLOCK)[1]?.content).toBe(
      `From acme's hooks:\n\n${BLOCK}\n\nWhen do we ship?`,
    );
    expect(withContext(messages, 1, BLOCK, "Mine:")[1]?.content).toBe(
      `Mine:\n\n${BLOCK}\n\nWhen do we ship?`,
    );
    expect(withContext(messages, 1, BLOCK, 5 as never)[1]?.content).toBe(
      `From acme's hooks:\n\n${BLOCK}\n\nWhen do we ship?`,
    );
    expect(createHooks().withContext(messages, 1, BLOCK)[1]?.content).toBe(
      `${HOOK_PREFACE}\n\n${BLOCK}\n\nWhen do we ship?`,
    );
  });

  it("puts a text part in front of a question made of parts", () => {
    const parts: MessageLike[] = [
      {
        role: "user",
        content: [
          { type: "text", text: "What is in this picture?" },
          { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
        ],
      },
    ];
    const sent = withContext(parts, 0, BLOCK, "");
    expect(sent[0]?.content).toEqual([
      { type: "text", text: `${BLOCK}\n\n` },
      { type: "text", text: "What is in this picture?" },
      { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
    ]);
  });

  it("hands back an unchanged copy for no context, whatever the message is", () => {
    const assistant: MessageLike[] = [{ role: "assistant", content: "hi" }];
    for (const none of ["", undefined, null]) {
      const out = withContext(assistant, 0, none);
      expect(out).toEqual(assistant);
      expect(out).not.toBe(assistant);
    }
  });

  it("refuses what it cannot do, naming it", () => {
    const code = (fn: () => unknown): string | undefined => {
      try {
        fn();
      } catch (error) {
        return HooksError.isInstance(error) ? error.code : "not a HooksError";
      }
      return undefined;
    };
    expect(code(() => withContext("x" as never, 0, BLOCK))).toBe("invalid-messages");
    expect(code(() => withContext([null] as never, 0, BLOCK))).toBe("invalid-messages");
    expect(code(() => withContext(messages, 2, BLOCK))).toBe("invalid-index");
    expect(code(() => withContext(messages, 1.5, BLOCK))).toBe("invalid-index");
    expect(code(() => withContext(messages, 1, 42 as never))).toBe("invalid-text");
    expect(code(() => withContext(messages, 0, BLOCK))).toBe("invalid-index");
    expect(() => withContext(messages, 0, BLOCK)).toThrow(
      /messages\[0\] is a "system" message, not a "user" one/,
    );
  });

  it("refuses a question whose content is neither text, parts nor null, rather than overwrite it", () => {
    const odd = [{ role: "user", content: { text: "When do we ship?" } }] as never as MessageLike[];
    const thrown = (() => {
      try {
        withContext(odd, 0, BLOCK);
      } catch (error) {
        return error;
      }
    })();
    expect(HooksError.isInstance(thrown), String(thrown)).toBe(true);
    expect((thrown as HooksError).code).toBe("invalid-messages");
    expect((thrown as HooksError).message).toMatch(/messages\[0\]\.content/);
  });
});
