/**
 * r81 review of side-task's reading of an image refusal, over HTTP against the testkit: "Image URLs
 * are not supported" (Moonshot's Kimi, Bedrock's Anthropic gateway: images only as base64 data:
 * URLs, a remote http(s) URL refused) reads like a text-only model's refusal of images, and was
 * latched as one: every image left out, the data: ones the model takes too, for the life of the
 * capability store.
 */
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { bodies, isolated, userContent } from "../test/wire.js";
import { ask } from "./ask.js";
import { IMAGE_LEFT_OUT, IMAGE_URL_LEFT_OUT, type SideTaskInput } from "./input.js";

let server: TestServer | undefined;
afterEach(() => server?.close());

const DATA = { type: "image_url" as const, image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } };
const REMOTE = { type: "image_url" as const, image_url: { url: "https://example.com/page-2.png" } };
const pages: SideTaskInput = [{ type: "text", text: "Transcribe these pages." }, DATA, REMOTE];

const URL_REFUSAL = {
  type: "error" as const,
  status: 400,
  body: { error: { message: "Image URLs are not supported", type: "invalid_request_error" } },
};

describe("r81: an endpoint that takes images only as data: URLs", () => {
  it("'Image URLs are not supported': the remote image is left out, the data: one still sent, now and later", async () => {
    server = await startServer({
      replies: [URL_REFUSAL, { content: "page 1 read" }, { content: "page read again" }],
    });
    const notices: string[] = [];
    const options = { ...isolated(), onNotice: (m: string) => notices.push(m) };
    const endpoint = { baseUrl: server.baseUrl };
    await expect(ask(endpoint, "kimi", "You are an OCR engine.", pages, options)).resolves.toBe(
      "page 1 read",
    );
    const sent = bodies(server);
    expect(userContent(sent[0] ?? {})).toEqual(pages);
    // Before: "Transcribe these pages.\n\n[An image was attached here, but this model cannot take
    // images.]" twice: the data: image the model takes was left out with the URL it refused.
    expect(userContent(sent[1] ?? {})).toEqual([
      { type: "text", text: "Transcribe these pages." },
      DATA,
      { type: "text", text: IMAGE_URL_LEFT_OUT },
    ]);
    expect(notices.join("\n")).toMatch(/kimi refused an image given by URL/);
    // Later tasks: a data: image is sent (before: latched away as text), a remote one left out at once.
    await ask(endpoint, "kimi", "", [{ type: "text", text: "Again." }, DATA, REMOTE], options);
    expect(server.chatRequests).toHaveLength(3);
    expect(userContent(bodies(server)[2] ?? {})).toEqual([
      { type: "text", text: "Again." },
      DATA,
      { type: "text", text: IMAGE_URL_LEFT_OUT },
    ]);
  });

  it("the same words when only data: images were sent: a refusal of images, the text alone (as before)", async () => {
    server = await startServer({ replies: [URL_REFUSAL, { content: "text read" }] });
    const endpoint = { baseUrl: server.baseUrl };
    await ask(endpoint, "text-only", "", [{ type: "text", text: "Read." }, DATA], isolated());
    expect(userContent(bodies(server)[1] ?? {})).toBe(`Read.\n\n${IMAGE_LEFT_OUT}`);
  });

  it("a model that refuses the data: image next is then sent the text alone", async () => {
    const NO_IMAGES = {
      type: "error" as const,
      status: 400,
      body: { error: { message: "This model does not support image input" } },
    };
    server = await startServer({ replies: [URL_REFUSAL, NO_IMAGES, { content: "text read" }] });
    const endpoint = { baseUrl: server.baseUrl };
    await expect(ask(endpoint, "m", "", pages, isolated())).resolves.toBe("text read");
    expect(userContent(bodies(server)[2] ?? {})).toBe(
      `Transcribe these pages.\n\n${IMAGE_LEFT_OUT}\n\n${IMAGE_LEFT_OUT}`,
    );
  });
});
