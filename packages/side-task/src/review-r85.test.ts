/**
 * r85 review of side-task's schema handling through a polluted `Object.prototype`: a schema, a
 * model's reply and a preselection's list count only the fields they hold. Before,
 * `Object.prototype.description` made `askJson` throw "note is not a function" (relaxing the
 * schema read a note for "description" from Object.prototype) and `preselect` answer [],
 * `Object.prototype.tools` / `.name` were read as a model's preselection where its reply held none,
 * and `Object.prototype.tool_calls` wrote a made-up call under every message the summariser folded.
 */
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { bodies, isolated } from "../test/wire.js";
import { askJson } from "./ask.js";
import { preselect, preselection } from "./preselect.js";
import { summariser } from "./summariser.js";

let server: TestServer | undefined;
afterEach(() => server?.close());

const proto = Object.prototype as Record<string, unknown>;
const cat = [
  { name: "fs", tools: [{ name: "read_file", description: "Read a file" }] },
  { name: "web", tools: [{ name: "fetch_url", description: "Fetch a page" }] },
];

/** Runs `body` with `Object.prototype[field]` set to `value`, taken away again whatever happens. */
async function polluted<T>(field: string, value: unknown, body: () => Promise<T> | T): Promise<T> {
  proto[field] = value;
  try {
    return await body();
  } finally {
    delete proto[field];
  }
}

describe("r85: a polluted Object.prototype is not read as a schema's or a reply's fields", () => {
  it("askJson: a description only Object.prototype holds neither throws nor reaches the schema sent", async () => {
    server = await startServer({ replies: [{ content: '{"city":"Oslo"}' }] });
    const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
    const answer = await polluted("description", "POLLUTED", () =>
      askJson({ baseUrl: server?.baseUrl ?? "" }, "m", "sys", "where?", schema, isolated()),
    );
    expect(answer).toEqual({ city: "Oslo" });
    expect(JSON.stringify(bodies(server)[0]?.response_format)).not.toContain("POLLUTED");
  });

  it("askJson: a $ref only Object.prototype holds does not empty the schema sent", async () => {
    server = await startServer({ replies: [{ content: '{"city":"Oslo"}' }] });
    const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
    await polluted("$ref", "#/nowhere", () =>
      askJson({ baseUrl: server?.baseUrl ?? "" }, "m", "sys", "where?", schema, isolated()),
    );
    const format = bodies(server)[0]?.response_format as { json_schema: { schema: unknown } };
    expect(format.json_schema.schema).toEqual({
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
      additionalProperties: false,
    });
  });

  it("preselect: a description only Object.prototype holds does not lose the model's list", async () => {
    server = await startServer({ replies: [{ content: '{"tools":["read_file"]}' }] });
    const notices: string[] = [];
    const tools = await polluted("description", "POLLUTED", () =>
      preselect({ baseUrl: server?.baseUrl ?? "" }, "small", cat, "open it", {
        ...isolated(),
        onNotice: (m) => notices.push(m),
      }),
    );
    expect(tools).toEqual(["read_file"]);
    expect(notices).toEqual([]);
  });

  it("preselection: tools or a name only Object.prototype holds are not the model's answer", async () => {
    expect(await polluted("tools", ["read_file"], () => preselection({}, cat))).toEqual([]);
    expect(await polluted("name", "read_file", () => preselection({ tools: [{}] }, cat))).toEqual([]);
  });

  it("summariser: tool calls or a content part's text only Object.prototype holds are not in the transcript", async () => {
    server = await startServer({ replies: [{ content: "notes" }] });
    const messages = [
      { role: "user", content: [{ type: "text", text: "hello" }] },
      { role: "assistant", content: "hi there" },
    ];
    proto.tool_calls = [{ function: { name: "evil_tool", arguments: "{}" } }];
    try {
      const summarise = summariser({ baseUrl: server.baseUrl }, "m", isolated());
      await summarise(messages, undefined);
    } finally {
      delete proto.tool_calls;
    }
    const sent = JSON.stringify(bodies(server)[0]?.messages);
    expect(sent).toContain("hello");
    expect(sent).not.toContain("called");
  });
});
