import { afterEach, describe, expect, it } from "vitest";
import { createCalibration } from "./calibration.js";
import { calibrate, charsPerTokenFor, resetCalibration } from "./index.js";

const bodyOf = (chars: number) => ({ messages: [{ role: "user", content: "x".repeat(chars) }] });

afterEach(() => resetCalibration());

describe("calibration", () => {
  it("answers 4 until a reading exists", () => {
    expect(charsPerTokenFor("http://a/v1", "m")).toBe(4);
  });

  it("keeps readings per endpoint and model", () => {
    const endpoint = {};
    expect(calibrate(endpoint, "m", bodyOf(300), 100)).toBe(3);
    expect(charsPerTokenFor(endpoint, "m")).toBe(3);
    expect(charsPerTokenFor(endpoint, "other")).toBe(4);
    expect(charsPerTokenFor({}, "m")).toBe(4);
    expect(charsPerTokenFor("http://a/v1", "m")).toBe(4);
  });

  it("answers the highest of the last four readings", () => {
    const store = createCalibration();
    for (const ratio of [5, 2, 2.5, 3, 2.2]) store.calibrate("e", "m", bodyOf(ratio * 1000), 1000);
    // 5 has fallen out; the highest of 2, 2.5, 3, 2.2 is 3.
    expect(store.charsPerTokenFor("e", "m")).toBe(3);
  });

  it("does not take a reading from a request with an image, or one outside 1 to 8", () => {
    const store = createCalibration();
    const withImage = {
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "x".repeat(300) },
            { type: "image_url", image_url: { url: "u" } },
          ],
        },
      ],
    };
    expect(store.calibrate("e", "m", withImage, 100)).toBeUndefined();
    expect(store.calibrate("e", "m", bodyOf(50), 100)).toBeUndefined();
    expect(store.calibrate("e", "m", bodyOf(900), 100)).toBeUndefined();
    expect(store.calibrate("e", "m", bodyOf(900), 0)).toBeUndefined();
    expect(store.charsPerTokenFor("e", "m")).toBe(4);
  });

  it("does not take a reading from a request carrying any other media part, however it is spelled", () => {
    // Part shapes servers take: OpenAI chat (image_url, input_audio, file), vLLM
    // entrypoints/chat_utils.py MM_PARSER_MAP (video_url, audio_url, image_embeds, input_image),
    // Hugging Face multimodal chat templates ({ type: "image", url }), and an untyped part.
    const parts: unknown[] = [
      { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
      { type: "input_image", image_url: "https://example.com/a.png" },
      { type: "image", url: "https://example.com/a.png" },
      { type: "image_embeds", image_embeds: "AAAA" },
      { type: "input_audio", input_audio: { data: "AAAA", format: "wav" } },
      { type: "audio_url", audio_url: { url: "https://example.com/a.wav" } },
      { type: "video_url", video_url: { url: "https://example.com/a.mp4" } },
      { type: "file", file: { file_id: "file-abc" } },
      { image_url: { url: "https://example.com/a.png" } },
    ];
    for (const part of parts) {
      const store = createCalibration();
      const body = {
        messages: [{ role: "user", content: [{ type: "text", text: "x".repeat(300) }, part] }],
      };
      expect(store.calibrate("e", "m", body as never, 100), JSON.stringify(part)).toBeUndefined();
      expect(store.charsPerTokenFor("e", "m")).toBe(4);
    }
  });

  it("takes a reading from text parts of any text kind, and at the edges of 1 and 8", () => {
    const store = createCalibration();
    const body = {
      messages: [
        { role: "system", content: [{ type: "text", text: "x".repeat(100) }] },
        { role: "user", content: [{ type: "input_text", text: "x".repeat(100) }] },
        { role: "assistant", content: [{ type: "refusal", refusal: "no" }] },
      ],
    };
    // 202 characters: the refusal part's "no" is text the endpoint is sent, and counted (R67L-2).
    expect(store.calibrate("e", "m", body as never, 100)).toBe(2.02);
    expect(store.calibrate("e", "edge", bodyOf(100), 100)).toBe(1);
    expect(store.calibrate("e", "edge", bodyOf(800), 100)).toBe(8);
  });

  it("keeps two stores apart, and forgets on reset", () => {
    const a = createCalibration();
    const b = createCalibration();
    a.calibrate("e", "m", bodyOf(200), 100);
    expect(b.charsPerTokenFor("e", "m")).toBe(4);
    a.reset();
    expect(a.charsPerTokenFor("e", "m")).toBe(4);
  });

  it("refuses an endpoint that is neither an object nor a string", () => {
    expect(() => charsPerTokenFor(42 as never)).toThrow(/endpoint/);
  });
});
