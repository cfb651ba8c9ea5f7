// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are ${VAR} references, meant literally.
// A server given to the pool with a `${NAME}` reference nobody filled (an exported spec's
// `bundle.mcpServers` handed over as it is): its start failure says which reference was left and how
// it gets filled. Real processes: bash, and the fixture server once the reference is filled.
import { afterEach, describe, expect, it } from "vitest";
import { FIXTURE, NODE } from "../test/support.js";
import { createMcpPool, type McpPool, mcpServers } from "./index.js";

const pools: McpPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});
async function startError(servers: Parameters<typeof createMcpPool>[0]): Promise<string> {
  const pool = createMcpPool(servers, { connectTimeoutMs: 10_000 });
  pools.push(pool);
  const [status] = await pool.connect();
  expect(status?.state).toBe("failed");
  return status?.error?.message ?? "";
}

describe("a start failure with a ${NAME} reference left unfilled", () => {
  // As spec's exportSpec writes a shell command it takes out: the whole script is one reference.
  const exported = [{ name: "gh", command: "bash", args: ["-c", "${GH_COMMAND}"] }];

  it("names the reference and its place, and says how to fill it, when bash runs it as an empty script", async () => {
    const message = await startError(exported);
    expect(message).toMatch(/^MCP server "gh" \(bash\) could not be started: .*Connection closed/);
    expect(message).toContain("Its args[1] is the reference ${GH_COMMAND}: not filled in");
    expect(message).toContain("mcpServers(servers, { env: process.env })");
  });

  it("starts once the servers go through mcpServers with env, as the message says", async () => {
    const env = { GH_COMMAND: `exec '${NODE}' '${FIXTURE}'` };
    const pool = createMcpPool(mcpServers(exported, { env }), { connectTimeoutMs: 10_000 });
    pools.push(pool);
    const [status] = await pool.connect();
    expect(status?.error?.message).toBeUndefined();
    expect(status?.state).toBe("connected");
  });

  it("names references inside an argument, the command's own, and an env value's key but never its value", async () => {
    const message = await startError([
      {
        name: "srv",
        command: "${SRV_BIN:-/nonexistent/srv}",
        args: ["--port", "${PORT}", "--url=https://${HOST}:${PORT}/x"],
        env: { API_KEY: "${API_KEY}" },
      },
    ]);
    expect(message).toContain("could not be started");
    expect(message).toContain(
      "Its command holds ${SRV_BIN:-…}; args[1] is the reference ${PORT}; " +
        "args[2] holds ${HOST}, ${PORT}; env.API_KEY holds a ${…} reference: not filled in",
    );
    expect(message).not.toContain("${API_KEY}");
  });

  it("says nothing of references when the command line holds none", async () => {
    const message = await startError([{ name: "quits", command: "bash", args: ["-c", "exit 3"] }]);
    expect(message).toContain("could not be started");
    expect(message).not.toContain("not filled in");
  });

  it("says nothing of references an expansion put in with a value (it filled what it found)", async () => {
    const servers = mcpServers([{ name: "quits", command: "bash", args: ["-c", "${QUIT}"] }], {
      env: { QUIT: 'exit 3 # "${LATER}"' },
    });
    const message = await startError(servers);
    expect(message).toContain("could not be started");
    expect(message).not.toContain("not filled in");
  });
});
