/// <reference types="node" />
// A host that imports @loopwright/agent and runs a session with no MCP server loads none of the
// MCP SDK (tools-mcp loads it on a server's first connect). Checked on the built bundles (run
// `pnpm build` first) in a child Node whose module hooks write down every module resolved; the
// session runs one real turn against a loopback server in that child.
import { spawnSync } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

const bundle = pathToFileURL(fileURLToPath(new URL("../dist/index.js", import.meta.url))).href;

const HOOKS = `
let port;
export function initialize(data) { port = data.port; }
export async function resolve(specifier, context, next) {
  const found = await next(specifier, context);
  port.postMessage(found.url);
  return found;
}`;

const CHILD = `
import { register } from "node:module";
import { createServer } from "node:http";
import { MessageChannel } from "node:worker_threads";
const { port1, port2 } = new MessageChannel();
const seen = [];
port1.on("message", (url) => seen.push(url));
port1.unref();
register("data:text/javascript," + encodeURIComponent(${JSON.stringify(HOOKS)}), {
  data: { port: port2 },
  transferList: [port2],
});
// One streamed answer, as any OpenAI-compatible server writes it.
const server = createServer((request, response) => {
  request.resume();
  request.on("end", () => {
    response.writeHead(200, { "content-type": "text/event-stream" });
    const chunk = (delta, finish = null) =>
      "data: " + JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 0, model: "m",
        choices: [{ index: 0, delta, finish_reason: finish }] }) + "\\n\\n";
    response.end(chunk({ role: "assistant", content: "Hi there." }) + chunk({}, "stop") + "data: [DONE]\\n\\n");
  });
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const { createSession } = await import(process.argv.at(-1));
const session = await createSession({ config: { baseUrl: "http://127.0.0.1:" + server.address().port + "/v1", model: "m" } });
const result = await session.prompt("Hello?");
await session.close?.();
server.close();
await new Promise((resolve) => setTimeout(resolve, 50));
console.log(JSON.stringify({
  answer: JSON.stringify(result).includes("Hi there."),
  sdk: seen.filter((url) => url.includes("@modelcontextprotocol")).length,
  total: seen.length,
}));
`;

describe("@loopwright/agent without MCP servers", () => {
  it("runs a session without loading the MCP SDK", { timeout: 90_000 }, () => {
    const child = spawnSync(process.execPath, ["--input-type=module", "--no-warnings", "-e", CHILD, bundle], {
      encoding: "utf8",
      timeout: 80_000,
    });
    expect(child.stderr).toBe("");
    const report = JSON.parse(child.stdout.trim().split("\n").at(-1) as string) as {
      answer: boolean;
      sdk: number;
      total: number;
    };
    expect(report.answer).toBe(true);
    expect(report.total).toBeGreaterThan(0);
    expect(report.sdk).toBe(0);
  });
});
