// Review r96r: r95l put the terminal's endpoint hint under a failed run's error on the web page, but
// with the terminal's words: on a page whose loaded spec named the endpoint or the model, the hint
// sent the user to OPENAI_BASE_URL, LOOPWRIGHT_MODEL or OPENAI_API_KEY — settings that run never
// used (an endpoint a spec names is sent no key at all), on the simulator ones never set. The hint now
// names the spec's field where the spec named it. Over loopback HTTP to the web server and the testkit.
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { startWebServer, type WebServer } from "./web/server.js";

const webs: WebServer[] = [];
const endpoints: TestServer[] = [];
afterEach(async () => {
  for (const web of webs.splice(0)) await web.close();
  for (const endpoint of endpoints.splice(0)) await endpoint.close();
});

/** An endpoint that answers every chat request with `status` and `message`. */
async function failing(status: number, message: string): Promise<TestServer> {
  const endpoint = await startServer({
    replies: () => ({ type: "error", status, body: { error: { message, code: status } } }),
  });
  endpoints.push(endpoint);
  return endpoint;
}

const spec = (model: Record<string, unknown>) => JSON.stringify({ spec: "loopwright.agent/1", model });

/** The notice right after the error of one prompt's run on a web server started with `options`. */
async function hintAfterError(options: Parameters<typeof startWebServer>[0]): Promise<string | undefined> {
  const web = await startWebServer(options);
  webs.push(web);
  const res = await fetch(new URL("api/runs", web.url), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ prompt: "hello" }),
  });
  const { id } = (await res.json()) as { id: string };
  const stream = await (await fetch(new URL(`api/runs/${id}/events`, web.url))).text();
  const events = stream
    .split("\n")
    .filter((line) => line.startsWith("data:"))
    .map((line) => JSON.parse(line.slice(5)) as { kind: string; text?: string });
  const at = events.findIndex((event) => event.kind === "error");
  expect(at).toBeGreaterThanOrEqual(0);
  const next = events[at + 1];
  return next?.kind === "notice" ? next.text : undefined;
}

describe("the page's hint under an endpoint's error, when a loaded spec chose the endpoint or model", () => {
  it("names the spec's baseUrl, not OPENAI_BASE_URL, when nothing answers at the spec's endpoint", async () => {
    // An endpoint's URL once it has closed: nothing answers there.
    const gone = await startServer({});
    const url = gone.baseUrl;
    await gone.close();
    // On the simulator: OPENAI_BASE_URL is not even set.
    const hint = await hintAfterError({ spec: spec({ name: "m", endpoint: { baseUrl: url } }) });
    expect(hint).toBe(
      `Nothing answered at ${url}: is the server running there, and does the spec's model.endpoint.baseUrl name it?`,
    );
  }, 30_000);

  it("says a spec's endpoint is sent no key, not to check OPENAI_API_KEY, when it refuses the request", async () => {
    const endpoint = await failing(401, "Incorrect API key provided");
    const hint = await hintAfterError({ spec: spec({ name: "m", endpoint: { baseUrl: endpoint.baseUrl } }) });
    expect(hint).toBe(
      `${endpoint.baseUrl} refused the request: the playground sends an endpoint a spec names no key (OPENAI_API_KEY goes to OPENAI_BASE_URL only).`,
    );
  }, 30_000);

  it("names the spec's model.name for a 404 naming the model the spec chose; the environment's where no spec did", async () => {
    const endpoint = await failing(404, "The model `from-spec` does not exist.");
    const fromSpec = await hintAfterError({
      endpoint: { baseUrl: endpoint.baseUrl, model: "from-env" },
      spec: spec({ name: "from-spec" }),
    });
    expect(fromSpec).toContain(`serves no model "from-spec": check the spec's model.name;`);
    const fromEnv = await hintAfterError({
      endpoint: { baseUrl: endpoint.baseUrl, apiKey: "k", model: "from-env" },
    });
    expect(fromEnv).toContain(`serves no model "from-env": check LOOPWRIGHT_MODEL (or --model);`);
    const refused = await failing(403, "Forbidden");
    expect(await hintAfterError({ endpoint: { baseUrl: refused.baseUrl, apiKey: "k", model: "m" } })).toBe(
      `${refused.baseUrl} refused the key: check OPENAI_API_KEY.`,
    );
  }, 30_000);
});
