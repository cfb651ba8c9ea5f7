// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are ${VAR} references, meant literally.
/**
 * Review r68 of the MCP pool, against a real SDK server over stdio (`test/review-r68-server.mjs`):
 * a catalogue description cut at its 200 characters never splits an emoji, a hook's stop is heard
 * while its server is still starting, and a variable or header named `__proto__` reaches the server.
 */
import { getEventListeners } from "node:events";
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { growth } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { NODE } from "../test/support.js";
import {
  createMcpPool,
  type McpHookSpec,
  type McpPool,
  McpPoolError,
  mcpServers,
  readMcpJson,
} from "./index.js";

const SERVER = fileURLToPath(new URL("../test/review-r68-server.mjs", import.meta.url));
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

const pools: McpPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});
const pool = (...args: Parameters<typeof createMcpPool>) => {
  const made = createMcpPool(...args);
  pools.push(made);
  return made;
};

describe("r68-1: servers() cuts a long description at 200 characters", () => {
  it("never between the two halves of an emoji (a lone surrogate, which llama.cpp refuses)", async () => {
    const p = pool([{ name: "r", command: NODE, args: [SERVER] }]);
    const [server] = await p.servers();
    const description = server?.tools.find((t) => t.name === "r__hook")?.description;
    // 198 letters, then the emoji whose first half stood where the cut fell.
    expect(description).toBe(`${"a".repeat(198)}…`);
    expect(LONE_SURROGATE.test(description ?? "")).toBe(false);
  });

  it("keeps an emoji whole that ends before the cut", async () => {
    const p = pool([{ name: "r", command: NODE, args: [SERVER, `${"a".repeat(197)}🙂 more`] }]);
    const [server] = await p.servers();
    expect(server?.tools.find((t) => t.name === "r__hook")?.description).toBe(`${"a".repeat(197)}🙂…`);
  });
});

describe("r68-2: runHooks with a signal, while the hook's server is still starting", () => {
  const hooks = [{ id: "h", events: ["beforeTurn"], server: "r", tool: "hook" }];

  it("ends the wait when the signal fires, with an outcome that says so", async () => {
    const p = pool([{ name: "r", command: NODE, args: [SERVER], env: { START_MS: "4000" } }], { hooks });
    const [outcome] = await p.runHooks("beforeTurn", {}, {}, AbortSignal.timeout(200));
    // Before: the outcome came once the server had started, 4 s later. Told by the order of events
    // (the server still starting when the outcome came), not a number of ms a loaded machine
    // could stretch.
    expect(p.status()[0]?.state).toBe("connecting");
    expect(outcome).toMatchObject({ id: "h", ok: false });
    expect(outcome?.error).toBe('hook "h" was stopped before MCP server "r" had started.');
    expect(outcome?.timedOut).toBeUndefined();
  });

  it("answers at once for a signal already aborted, and the server still starts for the next run", async () => {
    const p = pool([{ name: "r", command: NODE, args: [SERVER], env: { START_MS: "1500" } }], { hooks });
    const [stopped] = await p.runHooks("beforeTurn", {}, {}, AbortSignal.abort());
    // At once: the server (1.5 s to start) still starting when the answer came.
    expect(p.status()[0]?.state).toBe("connecting");
    expect(stopped?.ok).toBe(false);
    const [ran] = await p.runHooks("beforeTurn", {}, {});
    expect(ran).toMatchObject({ ok: true, context: "hook ran for beforeTurn" });
  });
});

describe("r68-3: an env variable or header named __proto__ (as JSON.parse reads a .mcp.json)", () => {
  it("is kept by mcpServers and readMcpJson, not silently left out", async () => {
    const text = JSON.stringify({
      mcpServers: {
        s: { command: NODE, args: [SERVER], env: { ["__proto__"]: "set", LOG_LEVEL: "info" } },
        h: { url: "http://127.0.0.1:9/mcp", headers: { ["__proto__"]: "value" } },
      },
    });
    const file = join(tmpdir(), `r68-${process.pid}.mcp.json`);
    await writeFile(file, text);
    for (const configs of [mcpServers(JSON.parse(text)), await readMcpJson(file, { env: {} })]) {
      const [s, h] = configs;
      expect(s?.type === "stdio" && Object.entries(s.env ?? {})).toEqual([
        ["__proto__", "set"],
        ["LOG_LEVEL", "info"],
      ]);
      expect(h?.type === "http" && Object.entries(h.headers ?? {})).toEqual([["__proto__", "value"]]);
    }
  });

  it("reaches the server's environment", async () => {
    const text = `{"mcpServers":{"r":{"command":${JSON.stringify(NODE)},"args":[${JSON.stringify(SERVER)}],"env":{"__proto__":"set"}}}}`;
    const p = pool(JSON.parse(text));
    const names = JSON.parse(String(await p.call("r__env", {}))) as string[];
    expect(names).toContain("__proto__");
  });
});

describe("r68-4: an HTTP server whose URL carries its key in the path (Zapier's /mcp/sk-ak-…/sse)", () => {
  // Port 9 on loopback: nothing listens, so the start fails and its message shows the URL.
  const failure = async (url: string) => {
    const notices: string[] = [];
    const p = pool([{ name: "zap", url }], { onNotice: (text) => notices.push(text) });
    const [status] = await p.connect();
    expect(status?.state).toBe("failed");
    return { message: status?.error?.message ?? "", notices };
  };

  it("masks the key in the failure's message and the notice", async () => {
    const key = "sk-ak-Qx7Hq2LmZ9vR4tWb8Yc3";
    const { message, notices } = await failure(`http://127.0.0.1:9/mcp/${key}/sse`);
    expect(message).toBe(
      'MCP server "zap" (http://127.0.0.1:9/mcp/***/sse) could not be started: fetch failed.',
    );
    expect(notices.join("\n")).not.toContain("Qx7Hq2");
    const uuid = "3f2b9c1e-5d6a-4e7b-8c9d-0a1b2c3d4e5f";
    expect((await failure(`http://127.0.0.1:9/s/${uuid}/mcp`)).message).toContain(
      "(http://127.0.0.1:9/s/***/mcp)",
    );
  });

  it("shows a path of words, versions and dates as written", async () => {
    const { message } = await failure("http://127.0.0.1:9/v1/2025-06-18/gpt-4o/mcp");
    expect(message).toContain("(http://127.0.0.1:9/v1/2025-06-18/gpt-4o/mcp)");
  });
});

describe("r68-5: a hook's timeoutSeconds that is no time", () => {
  const hooksWith = (timeoutSeconds: unknown) => ({
    hooks: [{ id: "h", events: ["beforeTurn"], server: "r", tool: "hook", timeoutSeconds } as McpHookSpec],
  });
  const refusal = (timeoutSeconds: unknown) => {
    try {
      createMcpPool([{ name: "r", command: NODE, args: [SERVER] }], hooksWith(timeoutSeconds));
    } catch (error) {
      return McpPoolError.isInstance(error) ? `${error.code}: ${error.message}` : String(error);
    }
    return "accepted";
  };

  it("is refused at once, naming the hook and what it was given (NaN and -1 ran with the default, '5' as 5 s)", () => {
    const head =
      'invalid-config: hooks[0] ("h").timeoutSeconds must be a non-negative number of seconds; got';
    expect(refusal(Number.NaN)).toBe(`${head} NaN.`);
    expect(refusal(-1)).toBe(`${head} the number -1.`);
    expect(refusal("5")).toBe(`${head} the string "5".`);
    expect(refusal(Number.POSITIVE_INFINITY)).toBe(`${head} Infinity.`);
  });

  it("null counts as not given, as for every option, 0 takes the default (the spec allows it), and a number runs as its bound", async () => {
    expect(refusal(null)).toBe("accepted");
    expect(refusal(0)).toBe("accepted");
    const p = pool([{ name: "r", command: NODE, args: [SERVER] }], hooksWith(5));
    const [outcome] = await p.runHooks("beforeTurn", {}, {});
    expect(outcome).toMatchObject({ ok: true, context: "hook ran for beforeTurn" });
  });
});

describe("r68-6: a made-up tool name of any size", () => {
  it("is echoed to the model cut at 60 characters with its length, not whole (a 100,000-character name made a 100,048-character error)", async () => {
    const p = pool([{ name: "r", command: NODE, args: [SERVER] }]);
    const name = `${"n".repeat(59)}🙂${"n".repeat(99_940)}`;
    const unknown = await p.call(name, {}).catch((error: McpPoolError) => error);
    expect(unknown).toMatchObject({ code: "unknown-tool", tool: name });
    expect((unknown as McpPoolError).message).toBe(
      `No MCP tool is named "${"n".repeat(59)}… (100001 characters)". Tools: r__env, r__hook, r__lines.`,
    );
    const stopped = await p.call(name, {}, AbortSignal.abort()).catch((error: McpPoolError) => error);
    expect((stopped as McpPoolError).message).toBe(
      `${"n".repeat(59)}… (100001 characters) was stopped before its MCP server had started.`,
    );
    const short = await p.call("r__nope", {}).catch((error: McpPoolError) => error);
    expect((short as McpPoolError).message).toBe(
      'No MCP tool is named "r__nope". Tools: r__env, r__hook, r__lines.',
    );
  });
});

describe("r68-7: a ${NAME} reference whose name every object inherits (toString, constructor, __proto__)", () => {
  const expanded = (arg: string, env: Record<string, string | undefined>) => {
    const [server] = mcpServers([{ name: "s", command: "srv", args: [arg] }], { env });
    return server?.type === "stdio" ? { arg: server.args[0], masked: server.masked } : undefined;
  };

  it("is unset unless the environment has it, with process.env too (it was filled with a function's source)", () => {
    for (const env of [process.env, { HOME: "/home/u" }]) {
      expect(expanded("${constructor:-fallback}", env)).toEqual({ arg: "fallback", masked: undefined });
      expect(expanded("--x=${__proto__:-none}", env)).toEqual({ arg: "--x=none", masked: undefined });
      expect(() => expanded("${toString}", env)).toThrow(
        "[0].args[0]: ${toString} is not set in the environment, and has no default (${toString:-default}).",
      );
    }
  });

  it("is filled where the environment has it as its own", () => {
    const env = JSON.parse('{"toString":"ts-value","__proto__":"proto-value"}') as Record<string, string>;
    expect(expanded("${toString}/${__proto__}", env)).toEqual({
      arg: "ts-value/proto-value",
      masked: ["ts-value", "proto-value"],
    });
  });
});

describe("r68-8: an unset ${NAME} inside a default that is never closed", () => {
  const arg = (text: string, env: Record<string, string>) =>
    (mcpServers([{ name: "s", command: "srv", args: [text] }], { env })[0] as { args: string[] }).args[0];

  it("refuses nothing, as the unclosed default is kept as written (it threw that ${B} was not set)", () => {
    expect(arg("pre ${A:-open ${B} and", {})).toBe("pre ${A:-open ${B} and");
    expect(arg("${X} ${A:-${B:-${C}} still open", { X: "x" })).toBe("x ${A:-${B:-${C}} still open");
  });

  it("still refuses one in a default that closes and is used, and one outside any default", () => {
    const refusal = "[0].args[0]: ${B} is not set in the environment, and has no default (${B:-default}).";
    expect(() => arg("${A:-${B}}", {})).toThrow(refusal);
    expect(() => arg("${A:-x ${B:-${B}} y} ${A:-open", {})).toThrow(refusal);
    expect(() => arg("${B} ${A:-open", {})).toThrow(refusal);
    expect(arg("${A:-${B}}", { A: "a" })).toBe("a");
  });
});

describe("r68-9: a server's stderr with a character whose bytes came in two writes", () => {
  // Writes `text` to stderr with its first "ä" or "ü" parted between two writes, 100 ms apart, then exits.
  const parting = (text: string) => {
    const bytes = Buffer.from(text);
    const at = bytes.indexOf(0xc3) + 1;
    return `process.stderr.write(Buffer.from(${JSON.stringify([...bytes.subarray(0, at)])}));
setTimeout(() => { process.stderr.write(Buffer.from(${JSON.stringify([...bytes.subarray(at)])})); process.exit(2); }, 100);`;
  };
  const tail = async (script: string, env?: Record<string, string>) => {
    const p = pool([{ name: "de", command: NODE, args: ["-e", script], ...(env ? { env } : {}) }]);
    const [status] = await p.connect();
    return status?.error?.message ?? "";
  };

  it("is quoted whole (it was two U+FFFD)", async () => {
    const message = await tail(parting("Fehler: Zugriff verweigert für Benutzer müller\n"));
    expect(message).toContain("Its stderr ended with:\n  Fehler: Zugriff verweigert für Benutzer müller");
  });

  it("and a credential holding it is masked (it was shown, its ä as two U+FFFD)", async () => {
    const message = await tail(parting("auth failed for pässwort-geheim-42\n"), {
      DB_PASSWORD: "pässwort-geheim-42",
    });
    expect(message).toContain("Its stderr ended with:\n  auth failed for ***");
    expect(message).not.toContain("geheim");
  });
});

describe("r68-10: a server whose tool listing holds half a surrogate pair (a description cut inside an emoji)", () => {
  it("is listed with U+FFFD in its place, so no request the tool array goes out with holds a lone surrogate", async () => {
    const p = pool([{ name: "r", command: NODE, args: [SERVER, "--lone"] }]);
    const hook = (await p.tools()).find((t) => t.function.name === "r__hook");
    expect(hook?.function.description).toBe("Finds files \ufffd");
    expect(hook?.function.parameters).toMatchObject({
      properties: { event: { description: "\ufffd the event" } },
    });
    expect(LONE_SURROGATE.test(JSON.stringify(await p.tools()))).toBe(false);
    const [server] = await p.servers();
    expect(server?.tools.find((t) => t.name === "r__hook")?.description).toBe("Finds files \ufffd");
  });

  it("keeps a whole emoji as sent", async () => {
    const p = pool([{ name: "r", command: NODE, args: [SERVER, "Finds 🙂 files"] }]);
    const hook = (await p.tools()).find((t) => t.function.name === "r__hook");
    expect(hook?.function.description).toBe("Finds 🙂 files");
  });
});

describe("r68-11: many calls and hooks given one signal (a run's, shared by every call)", () => {
  it("leave no abort listener behind on it (the SDK kept one per call: 30 calls, 30 listeners and a MaxListenersExceededWarning)", async () => {
    const p = pool([{ name: "r", command: NODE, args: [SERVER] }], {
      hooks: [{ id: "h", events: ["beforeTurn"], server: "r", tool: "hook" }],
    });
    const run = new AbortController();
    for (let i = 0; i < 30; i++)
      expect(await p.call("r__hook", { event: `e${i}` }, run.signal)).toBe(`hook ran for e${i}`);
    expect(getEventListeners(run.signal, "abort")).toHaveLength(0);
    for (let i = 0; i < 5; i++) await p.runHooks("beforeTurn", {}, {}, run.signal);
    expect(getEventListeners(run.signal, "abort")).toHaveLength(0);
  });

  it("while a call runs, its stop still reaches it", async () => {
    const p = pool([{ name: "r", command: NODE, args: [SERVER] }]);
    await p.tools();
    const run = new AbortController();
    const pending = p.callTool("r__hook", { event: "x" }, { signal: run.signal });
    run.abort(new Error("the user stopped the run"));
    await expect(pending).rejects.toMatchObject({ code: "aborted" });
    expect(getEventListeners(run.signal, "abort")).toHaveLength(0);
  });
});

describe("r68-12: a result of many short lines from a server with a credential to mask", () => {
  it("is masked in time linear in its size (1,000,000 lines of one character took seconds, growing 4x per 2x)", async () => {
    const p = pool([
      { name: "r", command: NODE, args: [SERVER], env: { API_TOKEN: "sk-live-Abcdef1234567890XYZ" } },
    ]);
    await p.tools();
    const lines = async (count: number) => {
      const text = await p.call("r__lines", { count, width: 1 });
      expect(text).toHaveLength(count * 2);
    };
    // Measured before the fix: 45 s for 1,000,000 lines (the masker alone: 0.7 s for 125,000 lines,
    // 8 s for 500,000: four times per doubling). 400,000 lines timed against a sixteenth of them in
    // the same run (a bound in ms failed on a loaded machine; a factor of 8 against a bound of 30
    // left linear work little room when a ratio of two timings moved 3 to 4 times on a loaded CI
    // host): about 16 in linear time, 256 before; the bound is four times from each.
    expect(await growth(lines, 25_000, 16)).toBeLessThan(64);
  });
});
