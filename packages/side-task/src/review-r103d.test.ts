// Review r103d: what last round left in this package. preselect's notices quoted the names a
// model made up with `JSON.stringify` alone, which leaves U+2028/U+2029, DEL, the C1 controls and
// the bidirectional controls raw: a host's log broke its line there, and a U+202E turned the rest
// of the notice around in a terminal. A refusal's words were quoted the same way (tested in
// hostile-input.test.ts). And a host's custom `clients` that threw what cannot be read (a revoked
// Proxy, an error whose getters throw, an object whose toString throws or that has none) had a
// `TypeError` of our own reading reach the caller, not a SideTaskError naming what happened.
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { controlsMismatch } from "../../../test-support/controls-parity.js";
import { isolated } from "../test/wire.js";
import { ask } from "./ask.js";
import { SideTaskError } from "./errors.js";
import { preselect } from "./preselect.js";
import { escapeControls } from "./text.js";

let server: TestServer | undefined;
afterEach(() => server?.close());

/** What a notice or message must never hold raw: the set `@loopwright/tools` escapes. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028-\u202e\u2066-\u2069]/;

const catalog = [{ name: "notes", tools: [{ name: "read_file", description: "Read a note" }] }];

describe("preselect's notice of names the catalogue does not have", () => {
  it("writes each name as a JSON string with its line separators and bidirectional controls escaped", async () => {
    const names = [
      "read\u2028file",
      "txt.exe\u202e",
      "a\u2066b\u2069",
      "mark\u200e\u200f",
      "del\u007f\u0085",
      'q"\\',
    ];
    server = await startServer({
      replies: [{ content: JSON.stringify({ tools: ["read_file", ...names] }) }],
    });
    const notices: string[] = [];
    const tools = await preselect({ baseUrl: server.baseUrl }, "small", catalog, "Read my notes", {
      ...isolated(),
      keywords: false,
      onNotice: (m) => notices.push(m),
    });
    expect(tools).toEqual(["read_file"]);
    expect(notices).toHaveLength(1);
    const [notice] = notices as [string];
    expect(notice).not.toMatch(UNSAFE);
    expect(notice).toContain(
      String.raw`"read\u2028file", "txt.exe\u202e", "a\u2066b\u2069", "mark\u200e\u200f", "del\u007f\u0085", "q\"\\"`,
    );
  });
});

describe("this package's escapeControls", () => {
  it("escapes exactly the characters @loopwright/tools escapes in what it echoes", () => {
    // side-task does not depend on tools: its set is read from tools' source, where it is kept.
    expect(controlsMismatch(escapeControls)).toBeUndefined();
  });
});

/** Values a host's own code may throw or hand back that cannot be read as they are. */
function hostile(): [string, unknown][] {
  const revoked = Proxy.revocable({}, {});
  revoked.revoke();
  const getterError = new Error("x");
  Object.defineProperty(getterError, "message", {
    get() {
      throw new Error("message getter broke");
    },
  });
  return [
    ["a revoked Proxy", revoked.proxy],
    ["an error whose message getter throws", getterError],
    [
      "an object whose toString throws",
      {
        toString() {
          throw new Error("toString broke");
        },
      },
    ],
    ["an object with no prototype", Object.create(null)],
  ];
}

describe("a host's clients that throw what cannot be read", () => {
  it.each(hostile())(
    "still fail with a SideTaskError naming the client when getClient throws %s",
    async (_, value) => {
      server = await startServer({ replies: () => ({ content: "x" }) });
      const clients = {
        getClient: () => {
          throw value;
        },
      };
      const error = await ask({ baseUrl: server.baseUrl }, "m", "", "x", { ...isolated(), clients }).catch(
        (e: unknown) => e,
      );
      expect(SideTaskError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({
        code: "request-failed",
        message: expect.stringMatching(/^ask: clients\.getClient threw: /),
      });
      expect((error as SideTaskError).cause).toBe(value);
    },
  );

  it.each(hostile())(
    "still fail with a SideTaskError naming the client when create rejects with %s",
    async (_, value) => {
      server = await startServer({ replies: () => ({ content: "x" }) });
      const clients = {
        getClient: () => ({ chat: { completions: { create: async () => Promise.reject(value) } } }),
      };
      const error = await ask({ baseUrl: server.baseUrl }, "m", "", "x", { ...isolated(), clients }).catch(
        (e: unknown) => e,
      );
      expect(SideTaskError.isInstance(error)).toBe(true);
      expect((error as SideTaskError).code).toBe("request-failed");
      expect((error as SideTaskError).cause).toBe(value);
    },
  );

  it.each([
    [
      "capabilitiesFor",
      (revoked: unknown) => ({ capabilities: { capabilitiesFor: () => revoked } }),
      /capabilities\.capabilitiesFor answered a revoked Proxy, not an endpoint's capabilities/,
    ],
    [
      "getClient",
      (revoked: unknown) => ({ clients: { getClient: () => revoked } }),
      /clients\.getClient answered a revoked Proxy whose chat\.completions\.create could not be read/,
    ],
  ])("fail with a SideTaskError, nothing sent, when %s answers a revoked Proxy", async (_, given, why) => {
    server = await startServer({ replies: () => ({ content: "x" }) });
    const [[, revoked]] = hostile() as [[string, unknown]];
    const error = await ask({ baseUrl: server.baseUrl }, "m", "", "x", {
      ...isolated(),
      ...given(revoked),
    } as never).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "invalid-input", message: expect.stringMatching(why) });
    expect(server.chatRequests).toHaveLength(0);
  });
});
