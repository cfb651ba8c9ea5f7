// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are the clients' ${…} references, meant literally.
// Review of the client formats (r94b). Before: a workspace folder whose path holds `${NAME}` had
// NAME filled from the environment by the env option's expansion after `${workspaceFolder}` put the
// path in (a folder named `${GH_TOKEN}` sent the token as the server's path); an entry held as a
// class lost the fields its getters give (`excludeTools`, `type`) once one of its strings used an
// editor variable; and the reader of comments and trailing commas went over its whole output at each
// `]` or `}`, so a file's reading time grew with its size squared.
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeUnder } from "../test/support.js";
import { McpPoolError, mcpServers, readMcpJson } from "./index.js";

let dir: string;
beforeAll(async () => {
  dir = await realpath(await mkdtemp(join(tmpdir(), "tools-mcp-r94r-")));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const write = (relative: string, text: string): Promise<string> => writeUnder(dir, relative, text);

describe("${workspaceFolder} is filled once", () => {
  it("refuses a folder whose path holds ${ when the env option expands, never filling the token into it", async () => {
    const path = await write(
      "${GH_TOKEN}/.vscode/mcp.json",
      JSON.stringify({
        servers: { files: { command: "node", args: ["server.js", "${workspaceFolder}/data"] } },
      }),
    );
    const read = readMcpJson(path, { env: { GH_TOKEN: "ghp_secret123" } });
    await expect(read).rejects.toSatisfy(
      (e: unknown) => McpPoolError.isInstance(e) && e.code === "invalid-config",
    );
    await expect(read).rejects.toThrow(
      /servers\.files\.args\[1\]: \$\{workspaceFolder\} stands for a path holding "\$\{"/,
    );
    await expect(read).rejects.not.toThrow(/ghp_secret123/);
  });

  it("without the env option the folder's path goes in as it is", async () => {
    const path = await write(
      "${GH_TOKEN}/.cursor/mcp.json",
      JSON.stringify({ mcpServers: { files: { command: "node", args: ["${workspaceFolder}/data"] } } }),
    );
    const [server] = await readMcpJson(path);
    expect(server).toMatchObject({ args: [join(dir, "${GH_TOKEN}", "data")] });
  });

  it("an env value holding ${workspaceFolder} is not filled again", () => {
    const [server] = mcpServers(
      { servers: { s: { command: "node", args: ["${DIR}"] } } },
      { env: { DIR: "${userHome}" }, workspaceFolder: dir },
    );
    expect(server).toMatchObject({ args: ["${userHome}"] });
  });
});

describe("an entry held as a class keeps its getters' fields when it uses an editor variable", () => {
  class Entry {
    readonly name = "files";
    readonly command = "node";
    readonly args = ["server.js", "${userHome}"];
    get excludeTools() {
      return ["delete_file"];
    }
  }
  class SseEntry {
    readonly name = "events";
    readonly url = "http://127.0.0.1:9/sse?home=${userHome}";
    get type() {
      return "sse";
    }
  }

  it("excludeTools from a getter still hides the tool", () => {
    const [server] = mcpServers([new Entry()]);
    expect(server).toMatchObject({ args: ["server.js", homedir()], excludeTools: ["delete_file"] });
  });

  it("type from a getter still makes an sse server", () => {
    const [server] = mcpServers([new SseEntry()]);
    expect(server).toMatchObject({ type: "sse", url: `http://127.0.0.1:9/sse?home=${homedir()}` });
  });
});

describe("comments and trailing commas", () => {
  it("reads a file of many closes in time growing with its size, not its square", async () => {
    // A comment makes it JSON with comments; each `[ ] ,` is a close the reader meets.
    const file = (n: number) =>
      `// many lists\n{ "mcpServers": { "s": { "command": "node", "args": [], "pad": [${" [ ] ,".repeat(n)} [ ], ], }, }, }`;
    const small = await write("small.json", file(2_000));
    const large = await write("large.json", file(16_000));
    expect(await readMcpJson(large)).toMatchObject([{ name: "s", command: "node" }]);
    const fastest = async (path: string) => {
      let best = Number.POSITIVE_INFINITY;
      for (let i = 0; i < 5; i++) {
        const start = performance.now();
        await readMcpJson(path);
        best = Math.min(best, performance.now() - start);
      }
      return best;
    };
    await fastest(small);
    const ratio = (await fastest(large)) / (await fastest(small));
    // Eight times the text: about 8 read linearly, about 64 read as before.
    expect(ratio).toBeLessThan(24);
  });

  it("keeps commas in strings and before a comment that is not at a close", async () => {
    const path = await write(
      "mixed.json",
      '{ "mcpServers": { "s": { "command": "node", "args": ["a,", /* c */ "b" , // d\n "c,]", ], }, }, }',
    );
    expect(await readMcpJson(path)).toMatchObject([{ args: ["a,", "b", "c,]"] }]);
  });
});
