/**
 * preselect over HTTP against the testkit: keywords settling it with no request at all, the model
 * asked where the words do not, an empty toolSelectModel meaning no preselection, and a failed
 * call costing the run nothing but a notice. Plus the prompt and the reading of a reply.
 */
import { startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { realCatalog } from "../bench/load-catalog.js";
import { bodies, isolated, systemContent, userContent } from "../test/wire.js";
import { SideTaskError } from "./errors.js";
import {
  PRESELECT_ENUM_MAX,
  PRESELECT_SCHEMA,
  preselect,
  preselectInput,
  preselection,
  preselectSchema,
  preselectSystem,
} from "./preselect.js";

let server: TestServer | undefined;
afterEach(() => server?.close());

const catalog = realCatalog();
const settled = "Remove the prometheus helm release";
const unsettled = "How high above sea level is Denver?";

describe("preselect", () => {
  it("takes the keywords' shortlist without asking the model when the words settle it", async () => {
    server = await startServer({ replies: [{ content: '{"tools":["echo"]}' }] });
    const tools = await preselect({ baseUrl: server.baseUrl }, "small", catalog, settled, {
      ...isolated(),
      keywords: true,
    });
    expect(tools).toContain("uninstall_helm_chart");
    expect(server.chatRequests).toHaveLength(0);
  });

  it("asks the model where the words do not settle it, and keeps only catalogued names", async () => {
    server = await startServer({
      replies: [{ content: '{"tools":["maps_elevation","no_such_tool","maps_elevation"]}' }],
    });
    const tools = await preselect({ baseUrl: server.baseUrl }, "small", catalog, unsettled, {
      ...isolated(),
      keywords: true,
    });
    expect(tools).toEqual(["maps_elevation"]);
    const [body] = bodies(server);
    expect(body).toMatchObject({
      model: "small",
      max_tokens: 256,
      temperature: 0,
      response_format: { type: "json_schema", json_schema: { name: "preselection" } },
    });
    expect(systemContent(body ?? {})).toMatch(/- maps_elevation: Get elevation data/);
    expect(String(userContent(body ?? {}))).toContain(unsettled);
  });

  it("holds the answer to the catalogue's names and the cap in the schema it sends, which llama.cpp's grammar takes", async () => {
    server = await startServer({
      personality: { name: "llamacpp", nCtx: 32768 },
      replies: [{ content: '{"tools":["maps_elevation"]}' }],
    });
    const notices: string[] = [];
    const tools = await preselect(
      { baseUrl: server.baseUrl },
      "small",
      catalog,
      unsettled,
      { ...isolated(), onNotice: (m) => notices.push(m) },
      5,
    );
    expect(tools).toEqual(["maps_elevation"]);
    expect(notices).toEqual([]);
    const format = bodies(server)[0]?.response_format as {
      json_schema: { schema: { properties: { tools: { items: { enum?: string[] }; maxItems?: number } } } };
    };
    const list = format.json_schema.schema.properties.tools;
    const names = catalog.flatMap((s) => s.tools.map((t) => t.name));
    expect(list.maxItems).toBe(5);
    expect(list.items.enum).toEqual([...new Set(names)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    expect(list.items.enum).toContain("maps_elevation");
  });

  it("asks with free strings, as before, for a catalogue of more names than an enum holds", async () => {
    const big = [
      {
        name: "many",
        tools: Array.from({ length: PRESELECT_ENUM_MAX + 1 }, (_, i) => ({
          name: `tool_${i}`,
          description: `Tool ${i}`,
        })),
      },
    ];
    expect(preselectSchema(big)).toBe(PRESELECT_SCHEMA);
    expect(
      preselectSchema(big.map((s) => ({ ...s, tools: s.tools.slice(0, PRESELECT_ENUM_MAX) }))),
    ).toMatchObject({
      properties: { tools: { maxItems: 12, items: { type: "string" } } },
    });
    server = await startServer({ replies: [{ content: '{"tools":["tool_3"]}' }] });
    const tools = await preselect({ baseUrl: server.baseUrl }, "small", big, "Use tool 3.", isolated());
    expect(tools).toEqual(["tool_3"]);
    const format = bodies(server)[0]?.response_format as {
      json_schema: { schema: { properties: { tools: { items: Record<string, unknown> } } } };
    };
    expect(format.json_schema.schema.properties.tools.items).toEqual({ type: "string" });
  });

  it("keeps the names of a reply that also holds a number JavaScript cannot hold", async () => {
    server = await startServer({
      replies: [{ content: '{"tools":["maps_elevation"],"confidence":90071992547409931}' }],
    });
    const notices: string[] = [];
    const tools = await preselect({ baseUrl: server.baseUrl }, "small", catalog, unsettled, {
      ...isolated(),
      onNotice: (m: string) => notices.push(m),
    });
    // Only names are read: the number neither refuses the reply (as askJson would) nor is named.
    expect(tools).toEqual(["maps_elevation"]);
    expect(notices).toEqual([]);
  });

  it("asks the model every time without keywords", async () => {
    server = await startServer({ replies: [{ content: '["uninstall_helm_chart"]' }] });
    await expect(
      preselect({ baseUrl: server.baseUrl }, "small", catalog, settled, isolated()),
    ).resolves.toEqual(["uninstall_helm_chart"]);
    expect(server.chatRequests).toHaveLength(1);
  });

  it("makes no preselection at all for an empty toolSelectModel, words included", async () => {
    server = await startServer({ replies: [{ content: '{"tools":["echo"]}' }] });
    for (const model of ["", undefined]) {
      await expect(
        preselect({ baseUrl: server.baseUrl }, model, catalog, settled, { ...isolated(), keywords: true }),
      ).resolves.toEqual([]);
    }
    expect(server.chatRequests).toHaveLength(0);
  });

  it("costs the run nothing but a notice when the call fails or the reply holds no list", async () => {
    server = await startServer({
      replies: [
        {
          type: "error",
          status: 500,
          body: { error: { message: "upstream exploded", type: "server_error" } },
        },
        { content: "I would use the maps tools." },
      ],
    });
    const notices: string[] = [];
    const options = { ...isolated(), onNotice: (m: string) => notices.push(m) };
    const endpoint = { baseUrl: server.baseUrl };
    await expect(preselect(endpoint, "small", catalog, unsettled, options)).resolves.toEqual([]);
    await expect(preselect(endpoint, "small", catalog, unsettled, options)).resolves.toEqual([]);
    expect(notices[0]).toMatch(/could not be made.*upstream exploded/);
    expect(notices[1]).toMatch(/gave no list of tools/);
  });

  it("says so in a notice when the reply is JSON but holds no list of tools, and starts without one", async () => {
    const garbage = ['{"tools":"maps_elevation"}', "null", '{"type":"object","properties":{"tools":{}}}'];
    server = await startServer({ replies: [...garbage, '{"tools":[]}'].map((content) => ({ content })) });
    const notices: string[] = [];
    const options = { ...isolated(), onNotice: (m: string) => notices.push(m) };
    for (let i = 0; i <= garbage.length; i++) {
      await expect(
        preselect({ baseUrl: server.baseUrl }, "small", catalog, unsettled, options),
      ).resolves.toEqual([]);
    }
    // Three garbage replies, three notices; the empty list is an answer ("no tool needed"), so none.
    expect(notices).toHaveLength(3);
    for (const notice of notices) expect(notice).toMatch(/small gave no list of tools/);
  });

  it("holds the answer to the cap given as the last argument", async () => {
    server = await startServer({ replies: [{ content: '{"tools":["echo","get-sum","get-env"]}' }] });
    const tools = await preselect({ baseUrl: server.baseUrl }, "small", catalog, "anything", isolated(), 2);
    expect(tools).toEqual(["echo", "get-sum"]);
    expect(systemContent(bodies(server)[0] ?? {})).toMatch(/at most 2 tools/);
  });

  it("reads a tool whose description is not text as a tool without one, instead of crashing", async () => {
    server = await startServer({ replies: [{ content: '{"tools":["maps_elevation"]}' }] });
    const odd = [
      {
        name: "maps",
        tools: [
          { name: "maps_elevation", description: 42 },
          { name: "maps_geocode", description: {} },
        ],
      },
    ] as never;
    await expect(
      preselect({ baseUrl: server.baseUrl }, "small", odd, unsettled, isolated()),
    ).resolves.toEqual(["maps_elevation"]);
    expect(systemContent(bodies(server)[0] ?? {})).toMatch(/- maps_elevation\n- maps_geocode/);
  });

  it("throws a typed error for a catalogue that is not a list", async () => {
    const error = await preselect({ baseUrl: "http://127.0.0.1:9/v1" }, "m", {} as never, "x").catch(
      (e: unknown) => e,
    );
    expect(SideTaskError.isInstance(error) && error.code).toBe("invalid-input");
  });
});

describe("the prompt and the reading of the reply", () => {
  const small = realCatalog(["google-maps", "brave-search"]);

  it("lists each tool under its server's label with its one-line description, and the cap", () => {
    const system = preselectSystem(small, 5);
    expect(system).toMatch(/at most 5 tools/);
    expect(system).toMatch(/Brave Search:\n(?:- brave_\w+: .*\n)*- brave_web_search: Performs a web search/);
    expect(system).toMatch(
      /Google Maps:\n(?:- maps_\w+: .*\n)*- maps_geocode: Convert an address into geographic coordinates/,
    );
    expect(preselectInput("find a cafe", 5)).toMatch(/find a cafe[\s\S]*at most 5/);
  });

  it("is the same prompt for the same tools whatever order the servers connected in, so its cache holds", () => {
    const reversed = [...small]
      .reverse()
      .map((server) => ({ ...server, tools: [...server.tools].reverse() }));
    expect(preselectSystem(reversed)).toBe(preselectSystem(small));
    expect(preselectSystem(small)).toMatch(/Brave Search:[\s\S]*Google Maps:/);
  });

  it("reads { tools }, the bare array an older prompt produced, and either as reply text", () => {
    expect(preselection({ tools: ["maps_geocode"] }, small)).toEqual(["maps_geocode"]);
    expect(preselection(["maps_elevation", "maps_geocode"], small, 1)).toEqual(["maps_elevation"]);
    expect(preselection('Sure:\n```json\n{"tools": ["brave_web_search"]}\n```', small)).toEqual([
      "brave_web_search",
    ]);
    expect(preselection("no idea", small)).toEqual([]);
  });

  it("answers only catalogued names, each once, at most the cap, whatever the reply", () => {
    const known = new Set(small.flatMap((s) => s.tools.map((t) => t.name)));
    const names = fc.constantFrom(...known, "other", " maps_geocode ", "");
    fc.assert(
      fc.property(
        fc.oneof(fc.array(names), fc.record({ tools: fc.array(names) }), fc.anything(), fc.string()),
        fc.integer({ min: 1, max: 6 }),
        (reply, cap) => {
          const out = preselection(reply, small, cap);
          expect(out.length).toBeLessThanOrEqual(cap);
          expect(new Set(out).size).toBe(out.length);
          for (const name of out) expect(known.has(name)).toBe(true);
        },
      ),
    );
  });
});
