import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { TestkitError } from "./errors.js";
import {
  fixturePath,
  fixturesDir,
  readFixture,
  readFixtureBytes,
  readFixtureJson,
  readRecordedResponse,
} from "./fixtures.js";

afterEach(() => {
  vi.unstubAllEnvs();
});

describe("fixtures", () => {
  it("reads the recordings published inside the package, not a folder beside the repository", () => {
    expect(fixturesDir()).toBe(resolve(dirname(fileURLToPath(import.meta.url)), "..", "recordings"));
    expect(readFixture("README.md")).toContain("Recorded traffic");
  });

  it("honours LOOPWRIGHT_FIXTURES", () => {
    const dir = join(fixturesDir(), "errors");
    vi.stubEnv("LOOPWRIGHT_FIXTURES", dir);
    expect(fixturesDir()).toBe(dir);
    expect(readFixtureJson("llamacpp/503-loading-model.json")).toMatchObject({ error: { code: 503 } });
  });

  it("names a LOOPWRIGHT_FIXTURES folder that does not exist", () => {
    vi.stubEnv("LOOPWRIGHT_FIXTURES", "/no/such/folder");
    expect(() => fixturesDir()).toThrow(/LOOPWRIGHT_FIXTURES points at \/no\/such\/folder/);
  });

  it("reads bytes and text identically", () => {
    const rel = "wire/mistral/mistral-text.sse";
    expect(new TextDecoder().decode(readFixtureBytes(rel))).toBe(readFixture(rel));
  });

  it("throws a TestkitError naming a missing fixture", () => {
    try {
      readFixture("wire/missing.sse");
      expect.unreachable();
    } catch (error) {
      expect(TestkitError.isInstance(error)).toBe(true);
      expect((error as TestkitError).code).toBe("fixture-not-found");
      expect((error as Error).message).toContain("wire/missing.sse");
      expect((error as Error).cause).toBeDefined();
    }
  });

  it("refuses paths that leave the fixtures folder", () => {
    expect(() => fixturePath("../ARCHITECTURE.md")).toThrow(/leaves the fixtures folder/);
    expect(() => fixturePath("/etc/passwd")).toThrow(/leaves the fixtures folder/);
  });

  it("parses a curl -i capture into status, headers and the exact body", () => {
    const r = readRecordedResponse("llamacpp-live/00-loading-503.response.txt");
    expect(r.status).toBe(503);
    expect(r.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(r.body).toBe('{"error":{"message":"Loading model","type":"unavailable_error","code":503}}');
    expect(() => readRecordedResponse("errors/llamacpp/503-loading-model.json")).toThrow(
      /not an HTTP response capture/,
    );
  });
});

describe("readRecordedResponse parsing", () => {
  it("reads back any status, headers and body written as a curl -i capture", async () => {
    const { mkdtempSync, writeFileSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const dir = mkdtempSync(join(tmpdir(), "testkit-capture-"));
    vi.stubEnv("LOOPWRIGHT_FIXTURES", dir);
    const headerName = fc.stringMatching(/^[A-Za-z][A-Za-z-]{0,15}$/);
    const headerValue = fc.stringMatching(/^[ -~]{0,30}$/).map((v) => v.trim());
    fc.assert(
      fc.property(
        fc.integer({ min: 100, max: 599 }),
        fc.uniqueArray(fc.tuple(headerName, headerValue), {
          selector: ([k]) => k.toLowerCase(),
          maxLength: 5,
        }),
        fc.string(),
        (status, headers, body) => {
          const head = [`HTTP/1.1 ${status} Whatever`, ...headers.map(([k, v]) => `${k}: ${v}`)].join("\r\n");
          writeFileSync(join(dir, "capture.txt"), `${head}\r\n\r\n${body}`);
          const parsed = readRecordedResponse("capture.txt");
          expect(parsed.status).toBe(status);
          expect(parsed.body).toBe(body);
          expect(parsed.headers).toEqual(Object.fromEntries(headers.map(([k, v]) => [k.toLowerCase(), v])));
        },
      ),
      propertyRuns(60),
    );
  });
});
