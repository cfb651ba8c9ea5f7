import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { EMPTY_RESULT, toolOutput } from "./index.js";

describe("toolOutput", () => {
  it("turns every kind of MCP content into text a model reads, and parts with the images kept", () => {
    const out = toolOutput({
      content: [
        { type: "text", text: "Here you go." },
        { type: "image", data: "aGVsbG8=", mimeType: "image/png" },
        { type: "audio", data: "aGVsbG8=", mimeType: "audio/wav" },
        {
          type: "resource_link",
          uri: "file:///a.txt",
          name: "a.txt",
          mimeType: "text/plain",
          description: "a file",
        },
        { type: "resource", resource: { uri: "demo://1", mimeType: "text/plain", text: "inside" } },
        { type: "resource", resource: { uri: "demo://2", mimeType: "application/zip", blob: "aGVsbG8=" } },
      ],
    });
    expect(out.ok).toBe(true);
    expect(out.text).toBe(
      [
        "Here you go.",
        "[image: image/png, 5 bytes]",
        "[audio: audio/wav, 5 bytes; not shown]",
        "[resource link] a.txt: file:///a.txt (text/plain) — a file",
        "[resource demo://1 (text/plain)]\ninside",
        "[resource demo://2: application/zip, 5 bytes; not shown]",
      ].join("\n"),
    );
    expect(out.parts[1]).toEqual({ type: "image_url", image_url: { url: "data:image/png;base64,aGVsbG8=" } });
    expect(out.images).toEqual([{ mimeType: "image/png", data: "aGVsbG8=" }]);
  });

  it("gives structured content as JSON when the tool wrote no text, and not twice when it did", () => {
    expect(toolOutput({ content: [], structuredContent: { temperature: 21 } }).text).toBe(
      '{"temperature":21}',
    );
    expect(
      toolOutput({ content: [{ type: "text", text: "21 degrees" }], structuredContent: { t: 21 } }).text,
    ).toBe("21 degrees");
    expect(toolOutput({ content: [{ type: "text", text: "no" }], isError: true })).toMatchObject({
      ok: false,
      text: "no",
    });
    expect(toolOutput({ content: [] }).text).toBe(EMPTY_RESULT);
  });

  it("never throws and always says something, whatever a server sends", () => {
    // fc.anything() alone almost never draws a list of content items of the kinds MCP names, so a
    // toolOutput that said nothing for an empty text item passed this 5 runs of 5: items of every
    // type, their fields empty, missing or of another type, are drawn as often as anything else.
    const field = fc.oneof(fc.constant(""), fc.string({ maxLength: 8 }), fc.anything());
    const item = fc.record(
      {
        type: fc.constantFrom("text", "image", "audio", "resource", "resource_link", "other"),
        text: field,
        data: field,
        mimeType: field,
        uri: field,
        resource: fc.oneof(
          fc.record({ uri: field, text: field, blob: field }, { requiredKeys: [] }),
          fc.anything(),
        ),
      },
      { requiredKeys: ["type"] },
    );
    // A text item, often empty: the case where what the server wrote says nothing at all.
    const text = fc.record({
      type: fc.constant("text"),
      text: fc.oneof(fc.constant(""), fc.string({ maxLength: 4 })),
    });
    const content = fc.oneof(fc.array(fc.oneof(text, item, fc.anything()), { maxLength: 3 }), fc.anything());
    const structuredContent = fc.oneof(
      fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue()),
      fc.anything(),
    );
    fc.assert(
      fc.property(content, structuredContent, (content, structuredContent) => {
        const out = toolOutput({ content, structuredContent } as never);
        expect(typeof out.text).toBe("string");
        expect(out.text.length).toBeGreaterThan(0);
        expect(out.parts.length).toBeGreaterThan(0);
      }),
    );
  });

  // How long it takes is measured on the fuzz ladder (fuzz/ladder.ts, pnpm fuzz), not timed here:
  // a run of '=' before the last character once cost its square (about 65 s at 200,000).
  it("sizes base64 by its padding alone, however many '=' come before its last character", () => {
    const data = `${"=".repeat(50_000)}A`;
    const out = toolOutput({ content: [{ type: "image", data, mimeType: "image/png" }] });
    expect(out.text).toBe("[image: image/png, 36.6 kB]");
    expect(toolOutput({ content: [{ type: "audio", data: "aGk=", mimeType: "audio/wav" }] }).text).toBe(
      "[audio: audio/wav, 2 bytes; not shown]",
    );
    expect(
      toolOutput({ content: [{ type: "resource", resource: { uri: "x://b", blob: "aGVsbG8h====" } }] }).text,
    ).toBe("[resource x://b: binary, 6 bytes; not shown]");
  });
});
