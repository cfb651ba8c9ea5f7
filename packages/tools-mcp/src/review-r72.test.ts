/**
 * Review r72 of the MCP pool: the scan for a server's marked helpers on a host with more processes
 * than its open-file limit, a host that exits without closing its pool while a server's
 * daemon-style helper runs, a credential written as a parameter name, and nulls for optional
 * parameters the listing renamed. Real processes and real stdio MCP servers only.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { exited, killHosts, startHost } from "../test/hosts.js";
import { running, stillRunning } from "../test/processes.js";
import { NODE } from "../test/support.js";
import { createMcpPool, type McpPool } from "./index.js";
import { TREE_MARK } from "./process-table.js";

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

const pools: McpPool[] = [];
/** Processes a test started or saw started: killed after it, whatever it found. */
const started: ChildProcess[] = [];
const helpers: number[] = [];
afterEach(async () => {
  killHosts();
  await Promise.all(pools.splice(0).map((p) => p.close()));
  for (const child of started.splice(0)) child.kill("SIGKILL");
  for (const pid of helpers.splice(0)) if (running(pid)) process.kill(pid, "SIGKILL");
});

/** A `sleep 120` of its own, with `env` added to its environment. */
function sleeper(env: Record<string, string> = {}): ChildProcess {
  const child = spawn("sleep", ["120"], { stdio: "ignore", env: { ...process.env, ...env } });
  started.push(child);
  return child;
}

describe.skipIf(process.platform !== "linux")(
  "r72-1: the scan for a server's marked processes on a host with more processes than open files allow",
  () => {
    it("finds the marked process with at most 64 environ files open at once", async () => {
      const token = randomUUID();
      // More processes than the limit below leaves files for: all of /proc at once ran out (EMFILE),
      // the files opened last (the highest pids, as the marked one started last has) first.
      for (let i = 0; i < 200; i++) sleeper();
      const marked = sleeper({ [TREE_MARK]: token });
      const script = here("../test/marked-host.mts");
      const run = spawnSync(
        "sh",
        ["-c", 'ulimit -n 100 && exec "$0" --import tsx "$1" "$2"', NODE, script, token],
        { encoding: "utf8", timeout: 20_000 },
      );
      expect(run.stderr).toBe("");
      // Before: [] (each environ file that could not be opened was skipped as unreadable).
      expect(JSON.parse(run.stdout)).toEqual([marked.pid]);
    });
  },
);

describe.skipIf(process.platform !== "linux")(
  "r72-2: a host that exits without closing its pool while a server's daemon-style helper runs (init has it)",
  () => {
    it("ends the helper in its exit hook (test/reaper-host.mjs on dist/, no reaper)", async () => {
      const file = join(await mkdtemp(join(tmpdir(), "r72-")), "daemon");
      const host = startHost("exit", {
        path: here("../test/reaper-host.mjs"),
        args: ["--no-reaper", "--daemon-file", file],
      });
      const { server } = (await host.pids) as unknown as { server: number };
      expect(await exited(host.host)).toEqual({ code: 0, signal: null });
      const helper = Number((await readFile(file, "utf8")).trim());
      helpers.push(helper);
      // Before: the server was SIGKILLed by the exit hook, and the helper (sleep 600) ran on.
      expect(await stillRunning([server, helper], 2_000)).toEqual([]);
    });
  },
);

describe("r72-3/4: a credential written as a parameter name (test/review-r72-server.mjs, its API_TOKEN)", () => {
  const TOKEN = "tok_9f8e7d6c5b4a3921";
  const SERVER = here("../test/review-r72-server.mjs");
  const open = () => {
    const made = createMcpPool([{ name: "r", command: NODE, args: [SERVER], env: { API_TOKEN: TOKEN } }]);
    pools.push(made);
    return made;
  };
  const parametersOf = async (p: McpPool) => {
    const tool = (await p.tools()).find((t) => t.function.name === "r__args");
    return tool?.function.parameters as { properties: Record<string, unknown>; required: string[] };
  };

  it("is shown masked, each masked name its own (x_<token> and the server's own x_*** stay two parameters)", async () => {
    const parameters = await parametersOf(open());
    expect(JSON.stringify(parameters)).not.toContain(TOKEN);
    // Before: x_<token> masked became x_***, and the server's own x_*** took its place (one parameter of two).
    expect(Object.keys(parameters.properties)).toEqual(["q", "***", "x_***_2", "x_***", "opts"]);
    expect(parameters.properties["x_***_2"]).toEqual({ type: ["string", "null"] });
    expect(parameters.properties["x_***"]).toEqual({ type: ["integer", "null"] });
  });

  it("reaches the server under the server's own names (the answer writes the token <token>)", async () => {
    const p = open();
    await p.tools();
    const got = await p.call("r__args", {
      q: "a",
      "***": "v",
      "x_***_2": "s",
      "x_***": 3,
      opts: { "***": "o" },
    });
    // Before: {"q":"a","***":"v","x_***":3,"opts":{"***":"o"}}: names the server does not take.
    expect(JSON.parse(textOf(got))).toEqual({
      q: "a",
      "<token>": "v",
      "x_<token>": "s",
      "x_***": 3,
      opts: { "<token>": "o" },
    });
  });

  it("has a null for each optional masked parameter dropped, at the top and inside opts", async () => {
    const p = open();
    await p.tools();
    const got = await p.call("r__args", {
      q: "a",
      "***": null,
      "x_***_2": null,
      "x_***": null,
      opts: { "***": null },
    });
    expect(JSON.parse(textOf(got))).toEqual({ q: "a", opts: {} });
    const some = await p.call("r__args", { q: "a", "***": null, "x_***_2": "s", "x_***": null, opts: null });
    expect(JSON.parse(textOf(some))).toEqual({ q: "a", "x_<token>": "s" });
  });
});

describe("r73a-1: a literal *** key where the schema declares no masked property (test/review-r72-server.mjs free)", () => {
  const TOKEN = "tok_9f8e7d6c5b4a3921";
  const SERVER = here("../test/review-r72-server.mjs");

  it("reaches the server as written in a free-form object and as a map's key; renamed where the schema declares it", async () => {
    const p = createMcpPool([{ name: "r", command: NODE, args: [SERVER], env: { API_TOKEN: TOKEN } }]);
    pools.push(p);
    const tool = (await p.tools()).find((t) => t.function.name === "r__free");
    expect(JSON.stringify(tool)).not.toContain(TOKEN);
    const got = await p.call("r__free", {
      "***": "top",
      bag: { "***": "literal", inner: { "***": "deeper" } },
      map: { "***": { "***": "declared", other: "x" } },
      list: [{ "***": "item" }],
    });
    // Before: {"<token>":"top","bag":{"<token>":"literal","inner":{"<token>":"deeper"}},
    // "map":{"<token>":{"<token>":"declared",…}},…}: each literal *** key named the credential.
    expect(JSON.parse(textOf(got))).toEqual({
      "<token>": "top",
      bag: { "***": "literal", inner: { "***": "deeper" } },
      map: { "***": { "<token>": "declared", other: "x" } },
      list: [{ "<token>": "item" }],
    });
  });
});

/** A call's answer as text: these calls answer text, never content parts. */
function textOf(answer: unknown): string {
  if (typeof answer !== "string") throw new Error(`expected text, got ${JSON.stringify(answer)}`);
  return answer;
}
