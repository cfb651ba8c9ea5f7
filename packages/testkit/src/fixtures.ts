import { existsSync, readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { TestkitError } from "./errors.js";
import type { ErrorReply } from "./replies.js";

/**
 * The `recordings/` folder this package ships: one level above the folder this module lives in
 * (`src/` when run from source, `dist/` when built or installed from npm).
 */
function packagedRecordings(): string {
  return resolve(dirname(fileURLToPath(import.meta.url)), "..", "recordings");
}

/**
 * Absolute path of the recorded-traffic folder: the `recordings/` folder published with this
 * package (wire streams, error bodies, model listings, live llama.cpp captures; see its README.md).
 *
 * Reads `LOOPWRIGHT_FIXTURES` when set (a folder laid out the same way, to try other recordings);
 * otherwise uses the package's own `recordings/`, found relative to this module, so it works from
 * the repository, from `dist/` and from an npm install. Never looks outside those two places.
 * Throws a `TestkitError` (`fixtures-dir-not-found`) when the folder does not exist.
 */
export function fixturesDir(): string {
  // Only the environment's own variable: process.env reads a polluted Object.prototype too.
  const fromEnv = Object.hasOwn(process.env, "LOOPWRIGHT_FIXTURES")
    ? process.env.LOOPWRIGHT_FIXTURES
    : undefined;
  if (fromEnv) {
    const dir = resolve(fromEnv);
    if (!existsSync(dir)) {
      throw new TestkitError(
        "fixtures-dir-not-found",
        `LOOPWRIGHT_FIXTURES points at ${dir}, which does not exist; unset it to use the recordings published with @loopwright/testkit, or point it at a folder laid out like them.`,
      );
    }
    return dir;
  }
  const dir = packagedRecordings();
  if (!existsSync(dir)) {
    throw new TestkitError(
      "fixtures-dir-not-found",
      `The recordings folder of @loopwright/testkit is missing (looked for ${dir}); reinstall the package, or set LOOPWRIGHT_FIXTURES to a folder of recordings.`,
    );
  }
  return dir;
}

/** Resolves `rel` inside the fixtures folder, refusing paths that climb out of it. */
export function fixturePath(rel: string): string {
  const base = fixturesDir();
  const full = resolve(base, rel);
  if (isAbsolute(rel) || !(full === base || full.startsWith(base + sep))) {
    throw new TestkitError(
      "fixture-not-found",
      `Fixture path "${rel}" leaves the fixtures folder; give a path relative to the recordings folder.`,
    );
  }
  return full;
}

/**
 * Reads one recorded file from the fixtures folder as raw bytes.
 *
 * `rel` is relative to {@link fixturesDir} (e.g. `"wire/openai/gpt-4.1-nano-text-usage-chunk.sse"`).
 * Throws a `TestkitError` (`fixture-not-found`) naming the path when it cannot be read.
 */
export function readFixtureBytes(rel: string): Uint8Array {
  const full = fixturePath(rel);
  try {
    return new Uint8Array(readFileSync(full));
  } catch (cause) {
    throw new TestkitError(
      "fixture-not-found",
      `Cannot read fixture "${rel}" (${full}); check the name against recordings/README.md in @loopwright/testkit.`,
      { cause },
    );
  }
}

/**
 * Reads one recorded file from the fixtures folder as UTF-8 text.
 *
 * Same contract as {@link readFixtureBytes}; never edits or caches the file.
 */
export function readFixture(rel: string): string {
  return new TextDecoder().decode(readFixtureBytes(rel));
}

/** Reads and parses a JSON fixture; throws a `TestkitError` when it is missing or not JSON. */
export function readFixtureJson(rel: string): unknown {
  const text = readFixture(rel);
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new TestkitError("fixture-not-found", `Fixture "${rel}" is not valid JSON.`, { cause });
  }
}

/**
 * A recorded error body from the `errors/` folder of the recordings, parsed: what a real server
 * answered a refused request with, ready to go into an `ErrorReply` or to compare with what a
 * client kept.
 *
 * `file` is relative to `errors/` (e.g. `"openai/temperature-0-unsupported-value.json"`). Throws a
 * `TestkitError` (`fixture-not-found`) naming the file when it is missing, is not JSON, or is JSON
 * but not an object (every recorded `.json` body is one). A wording recorded as plain text (the
 * `.message.txt` files) is no JSON body: read it with {@link readFixture}.
 */
export function recordedErrorBody(file: string): Record<string, unknown> {
  const rel = `errors/${file}`;
  const body = readFixtureJson(rel);
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new TestkitError(
      "fixture-not-found",
      `Recorded error body "${rel}" is JSON but not an object; an error body is one ({"error": ...}).`,
    );
  }
  return body as Record<string, unknown>;
}

/**
 * The reply a test server sends to answer with a recorded refusal: HTTP `status` and the body of
 * `errors/<file>` as JSON, e.g. `recordedError(400, "openai/temperature-0-unsupported-value.json")`.
 *
 * The body is read once, when this is called, so a missing or broken recording fails the test where
 * it is named rather than inside the server; throws as {@link recordedErrorBody} does.
 */
export function recordedError(status: number, file: string): ErrorReply {
  return { type: "error", status, body: recordedErrorBody(file) };
}

/** A recorded HTTP response: status, headers (names lower-cased) and the body text exactly as captured. */
export interface RecordedResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A capture split into its head and its body bytes (the body untouched). */
export interface CaptureParts {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array;
}

/**
 * Splits `curl -i` capture bytes into status, headers and the exact body bytes.
 *
 * The capture is a status line, headers, a blank line, then the body. Returns undefined when the
 * bytes do not start with an `HTTP/x.y NNN` status line.
 */
export function splitCapture(bytes: Uint8Array): CaptureParts | undefined {
  const start = new TextDecoder().decode(bytes.subarray(0, 16));
  if (!/^HTTP\/[\d.]+ \d{3}/.test(start)) return undefined;
  let headEnd = bytes.length;
  let bodyStart = bytes.length;
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] !== 0x0a) continue;
    if (bytes[i + 1] === 0x0a) {
      headEnd = i;
      bodyStart = i + 2;
      break;
    }
    if (bytes[i + 1] === 0x0d && bytes[i + 2] === 0x0a) {
      headEnd = i;
      bodyStart = i + 3;
      break;
    }
  }
  const head = new TextDecoder().decode(bytes.subarray(0, headEnd)).replace(/\r$/, "");
  const [statusLine = "", ...headerLines] = head.split(/\r?\n/);
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(":");
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(" ")[1]), headers, body: bytes.subarray(bodyStart) };
}

/**
 * Reads a `curl -i` capture (status line, headers, blank line, body) from the fixtures folder.
 *
 * Used for the `llamacpp-live/*.response.txt` files. Throws a `TestkitError` (`fixture-not-found`)
 * when the file is missing or has no status line.
 */
export function readRecordedResponse(rel: string): RecordedResponse {
  const parts = splitCapture(readFixtureBytes(rel));
  if (!parts) {
    throw new TestkitError(
      "fixture-not-found",
      `Fixture "${rel}" is not an HTTP response capture (no status line).`,
    );
  }
  return { status: parts.status, headers: parts.headers, body: new TextDecoder().decode(parts.body) };
}
