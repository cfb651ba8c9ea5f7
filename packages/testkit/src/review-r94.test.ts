/**
 * Review r94: a recorded refusal as a reply, in one place. Tests across the packages each wrote
 * `{ type: "error", status, body: JSON.parse(readFixture(`errors/${file}`)) }` again (and capture
 * 23 with its type swapped, for "an older llama.cpp"), each failing on a missing or misnamed
 * recording with a bare SyntaxError or ENOENT. `recordedError`, `recordedErrorBody` and
 * `llamacppFormatTypeRefusal` build them once and name the recording when it cannot be read. Served
 * over HTTP by the testkit's own server, read back with `fetch`.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  llamacppFormatTypeRefusal,
  readFixture,
  readRecordedResponse,
  recordedError,
  recordedErrorBody,
  startServer,
  TestkitError,
  type TestServer,
} from "./index.js";

let server: TestServer | undefined;
let scratch: string | undefined;
afterEach(async () => {
  vi.unstubAllEnvs();
  await server?.close();
  server = undefined;
  if (scratch) rmSync(scratch, { recursive: true, force: true });
  scratch = undefined;
});

/** What the server sends for one chat request: the status and the body parsed. */
async function served(): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${(server as TestServer).baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "x" }] }),
  });
  return { status: response.status, body: JSON.parse(await response.text()) };
}

/** What `run` throws; fails the test when it returns. */
function thrown(run: () => unknown): TestkitError {
  try {
    run();
  } catch (error) {
    if (TestkitError.isInstance(error)) return error;
    throw new Error(`expected a TestkitError, got ${String(error)}`);
  }
  throw new Error("expected a TestkitError, nothing was thrown");
}

/** A recordings folder holding only `rel`, written as `text`, used through LOOPWRIGHT_FIXTURES. */
function recordingsWith(rel: string, text: string): void {
  scratch = mkdtempSync(join(tmpdir(), "testkit-r94-"));
  mkdirSync(dirname(join(scratch, rel)), { recursive: true });
  writeFileSync(join(scratch, rel), text);
  vi.stubEnv("LOOPWRIGHT_FIXTURES", scratch);
}

describe("R94: recordedError and recordedErrorBody", () => {
  const file = "openai/temperature-0-unsupported-value.json";

  it("a server answers with the recorded status and body, as the recording has it", async () => {
    server = await startServer({ replies: [recordedError(400, file)] });
    const { status, body } = await served();
    expect(status).toBe(400);
    expect(body).toEqual(JSON.parse(readFixture(`errors/${file}`)));
    expect((body as { error: { message: string } }).error.message).toContain("temperature");
  });

  it("the body alone is the same object a reply carries", () => {
    expect(recordedErrorBody(file)).toEqual(recordedError(429, file).body);
    expect(recordedError(429, file)).toMatchObject({ type: "error", status: 429 });
  });

  it("a recording that is not there: a TestkitError naming it, before any server is asked", () => {
    const error = thrown(() => recordedError(400, "openai/no-such-refusal.json"));
    expect(error.code).toBe("fixture-not-found");
    expect(error.message).toContain("errors/openai/no-such-refusal.json");
  });

  it("a wording recorded as text: a TestkitError naming it as not JSON", () => {
    const error = thrown(() =>
      recordedError(400, "fireworks/extra-inputs-not-permitted-stream-options.message.txt"),
    );
    expect(error.code).toBe("fixture-not-found");
    expect(error.message).toContain("errors/fireworks/extra-inputs-not-permitted-stream-options.message.txt");
    expect(error.message).toContain("not valid JSON");
    expect(error.cause).toBeInstanceOf(SyntaxError);
  });

  it("JSON that is not an object is no error body: a TestkitError naming it", () => {
    recordingsWith("errors/openai/temperature-0-unsupported-value.json", '"Bad Request"');
    const error = thrown(() => recordedErrorBody(file));
    expect(error.code).toBe("fixture-not-found");
    expect(error.message).toContain(`errors/${file}`);
    expect(error.message).toContain("not an object");
  });
});

describe("R94: llamacppFormatTypeRefusal, capture 23 with the type put in", () => {
  const capture = "llamacpp-live/23-bad-response-format-type.response.txt";

  it("an older llama.cpp refusing json_schema: the recorded 400, only the type it names changed", async () => {
    server = await startServer({ replies: [llamacppFormatTypeRefusal("json_schema")] });
    const { status, body } = await served();
    const recorded = readRecordedResponse(capture);
    expect(status).toBe(recorded.status);
    expect(status).toBe(400);
    expect(body).toEqual(JSON.parse(recorded.body.replace("but got: xml", "but got: json_schema")));
    expect((body as { error: { message: string } }).error.message).toBe(
      'response_format type must be one of "text" or "json_object", but got: json_schema',
    );
  });

  it("a capture that no longer reads 'but got: xml' fails loudly instead of refusing with xml", () => {
    const recorded = readFixture(capture);
    recordingsWith(capture, recorded.replace("but got: xml", "but got: yaml"));
    const error = thrown(() => llamacppFormatTypeRefusal("json_schema"));
    expect(error.code).toBe("fixture-not-found");
    expect(error.message).toContain(capture);
  });
});
