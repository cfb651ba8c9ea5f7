/**
 * r78 review of side-task's own readings of refusals, over HTTP against the testkit serving the
 * servers' bodies: an image part a text-only model refuses is left out and the text sent alone
 * (README: "an image part refused … the text alone"), whatever server words the refusal. Four real
 * wordings were read as a failure of the side task (`request-failed`, the answer lost) before.
 */
import { modelCapabilitiesFor } from "@loopwright/negotiate";
import { readFixtureJson, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { bodies, isolated, userContent } from "../test/wire.js";
import { ask, askJson } from "./ask.js";
import { SideTaskError } from "./errors.js";
import { IMAGE_LEFT_OUT, type SideTaskInput } from "./input.js";

let server: TestServer | undefined;
afterEach(() => server?.close());

const page: SideTaskInput = [
  { type: "text", text: "Transcribe this page." },
  { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
];

/** How text-only servers refuse an image part, as each answers it. */
const REFUSALS: { server: string; status: number; body: unknown }[] = [
  {
    // mlx_lm.server (mlx-lm, and servers built on it): process_message_content's ValueError,
    // answered with a 404 and the error as a bare string.
    server: "mlx-lm",
    status: 404,
    body: { error: "Only 'text' content type is supported." },
  },
  {
    // DeepSeek's API (serde refusing the part's type while reading the body).
    server: "DeepSeek",
    status: 400,
    body: {
      error: {
        message:
          "Failed to deserialize the JSON body into the target type: messages[1]: unknown variant `image_url`, expected `text` at line 1 column 312",
        type: "invalid_request_error",
        param: null,
        code: "invalid_request_error",
      },
    },
  },
  {
    // Ollama (ErrNoVisionModel) for a model with no vision tower.
    server: "Ollama",
    status: 500,
    body: {
      error: {
        message: "this model is missing data required for image input",
        type: "api_error",
        param: null,
        code: null,
      },
    },
  },
  {
    // OpenRouter, where no provider of the model takes images.
    server: "OpenRouter",
    status: 404,
    body: { error: { message: "No endpoints found that support image input", code: 404 } },
  },
  {
    // llama.cpp b9749 without a projector (recorded).
    server: "llama.cpp b9749",
    status: 500,
    body: readFixtureJson("errors/llamacpp/image-input-not-supported-no-mmproj-500-b9749.json"),
  },
];

describe("r78: an image part refused by a text-only model, in each server's words", () => {
  for (const { server: name, status, body } of REFUSALS) {
    it(`${name} (${status}): ask sends the text alone once, and not the image again`, async () => {
      server = await startServer({
        replies: [{ type: "error", status, body }, { content: "text read" }, { content: "again" }],
      });
      const notices: string[] = [];
      const options = { ...isolated(), onNotice: (m: string) => notices.push(m) };
      const endpoint = { baseUrl: server.baseUrl };
      await expect(ask(endpoint, "text-only", "You are an OCR engine.", page, options)).resolves.toBe(
        "text read",
      );
      const sent = bodies(server);
      expect(userContent(sent[0] ?? {})).toEqual(page);
      expect(userContent(sent[1] ?? {})).toBe(`Transcribe this page.\n\n${IMAGE_LEFT_OUT}`);
      expect(notices.join("\n")).toMatch(/text-only refused the image/);
      await ask(endpoint, "text-only", "", page, options);
      expect(server.chatRequests).toHaveLength(3);
      expect(typeof userContent(bodies(server)[2] ?? {})).toBe("string");
    });
  }

  it("askJson too: the structured task is answered from the text alone", async () => {
    const { status, body } = REFUSALS[0] as (typeof REFUSALS)[number];
    server = await startServer({ replies: [{ type: "error", status, body }, { content: '{"title":"x"}' }] });
    const answer = await askJson(
      { baseUrl: server.baseUrl },
      "text-only",
      "",
      page,
      { type: "object", properties: { title: { type: "string" } }, required: ["title"] },
      isolated(),
    );
    expect(answer).toEqual({ title: "x" });
    expect(server.chatRequests).toHaveLength(2);
  });

  it("the same words with no image sent are the server's to tell: request-failed, sent once", async () => {
    const { status, body } = REFUSALS[1] as (typeof REFUSALS)[number];
    server = await startServer({ replies: [{ type: "error", status, body }, { content: "never" }] });
    const error = await ask({ baseUrl: server.baseUrl }, "m", "", "x", isolated()).catch((e: unknown) => e);
    expect(SideTaskError.isInstance(error) && error.code).toBe("request-failed");
    expect((error as Error).message).toContain("unknown variant `image_url`");
    expect(server.chatRequests).toHaveLength(1);
  });
});

describe("r78: a refusal negotiate answers by a latch that changes nothing in a side task's body", () => {
  // An older llama.cpp's 500 for a grammar it could not read: here the caller's own, in extraBody.
  const grammar500 = {
    type: "error" as const,
    status: 500,
    body: { error: { code: 500, message: "failed to parse grammar", type: "server_error" } },
  };

  it("is not sent again as it was (the same 500 again): request-failed in the server's words, once", async () => {
    server = await startServer({ replies: [grammar500, grammar500, { content: "never" }] });
    const options = { ...isolated(), extraBody: { grammar: "root ::= (" } };
    const error = await ask({ baseUrl: server.baseUrl }, "m", "", "x", options).catch((e: unknown) => e);
    expect(SideTaskError.isInstance(error) && error.code).toBe("request-failed");
    expect((error as Error).message).toContain("failed to parse grammar");
    expect(server.chatRequests).toHaveLength(1);
    expect(options.capabilities.capabilitiesFor(server.baseUrl).strictSchemas).toBe(true);
  });

  it("is still sent again where the latch changes the body (a schema relaxed)", async () => {
    server = await startServer({ replies: [grammar500, { content: '{"id":"ab"}' }] });
    const options = isolated();
    const schema = { type: "object", properties: { id: { type: "string", pattern: "^[a-z]+$" } } };
    await expect(askJson({ baseUrl: server.baseUrl }, "m", "", "x", schema, options)).resolves.toEqual({
      id: "ab",
    });
    const [first, second] = bodies(server);
    expect(JSON.stringify(first?.response_format)).toContain("pattern");
    expect(JSON.stringify(second?.response_format)).not.toContain('"pattern"');
  });
});

describe("r78: a refusal whose words run long", () => {
  it("is quoted in request-failed up to 2,000 characters, the whole error on cause", async () => {
    // llama.cpp b9749 echoes the message it could not read; here one holding a 10^6-character image.
    const echoed = `Failed to parse messages: Missing 'role' in message: {"content":"${"A".repeat(1_000_000)}"}`;
    server = await startServer({
      replies: [
        { type: "error", status: 500, body: { error: { code: 500, message: echoed, type: "server_error" } } },
      ],
    });
    const error = await ask({ baseUrl: server.baseUrl }, "m", "", "x", isolated()).catch((e: unknown) => e);
    expect(SideTaskError.isInstance(error) && error.code).toBe("request-failed");
    const message = (error as Error).message;
    expect(message).toContain("Failed to parse messages: Missing 'role' in message");
    expect(message.length).toBeLessThan(2200);
    expect(message).toMatch(/more characters; the whole error is the cause\]$/);
    expect(String((error as Error & { cause: Error }).cause.message)).toContain("A".repeat(1_000_000));
    expect(server.chatRequests).toHaveLength(1);
  });
});

describe("r78: an image refusal latched on the record the request was built from", () => {
  it("a model's record forgotten mid-task (a gateway naming 1024 more models): the image is sent once more, then the text alone", async () => {
    const { status, body } = REFUSALS[4] as (typeof REFUSALS)[number];
    const refusal = { type: "error" as const, status, body };
    server = await startServer({
      replies: [refusal, refusal, { content: "text read" }, { content: "image read" }],
    });
    const options = isolated();
    const baseUrl = server.baseUrl;
    let forgotten = false;
    const answer = await ask({ baseUrl }, "text-only", "", page, {
      ...options,
      // Requests beside this one name 1024 other models on the endpoint: its record is the oldest.
      onNotice: () => {
        if (forgotten) return;
        forgotten = true;
        const supports = options.capabilities.capabilitiesFor(baseUrl);
        for (let i = 0; i < 1024; i++) modelCapabilitiesFor(supports, `other-${i}`);
      },
    }).catch((e: unknown) => e);
    expect(answer).toBe("text read");
    expect(bodies(server).map((b) => typeof userContent(b))).toEqual(["object", "object", "string"]);
  });
});
