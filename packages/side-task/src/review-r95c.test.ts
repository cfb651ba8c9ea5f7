/**
 * A server that does not know the `response_format` field at all (an OpenAI-compatible API whose
 * field list lacks it) refuses it by name: "Unrecognized request argument supplied:
 * response_format". Every form of the field is refused alike, so the README's "refused outright →
 * ask in words" means the next request carries no response_format. Before, the side task sent
 * `json_object` anyway — one more request refused the same way, a request the README does not say
 * it spends — and only then asked in words.
 */
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { bodies, noticed, thrown } from "../test/wire.js";
import { askJson } from "./ask.js";
import { preselect } from "./preselect.js";

let server: TestServer | undefined;
afterEach(() => server?.close());

const SCHEMA = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
const formats = (s: TestServer) =>
  bodies(s).map((b) => (b.response_format as { type?: string } | undefined)?.type);

/** OpenAI's wording for a field it does not know, over the openai personality. */
async function refusingResponseFormat(...contents: string[]): Promise<TestServer> {
  server = await startServer({
    // chat_template_kwargs is let through so that only response_format is refused.
    personality: {
      name: "openai",
      unknownParams: ["response_format"],
      extraParams: ["chat_template_kwargs"],
    },
    replies: contents.map((content) => ({ content })),
  });
  return server;
}

describe("response_format refused by name: straight to words", () => {
  it("askJson sends no json_object after the field itself was refused", async () => {
    const s = await refusingResponseFormat('{"city":"Lisbon"}');
    const { notices, options } = noticed();
    const answer = await askJson({ baseUrl: s.baseUrl }, "gpt-4o-mini", "", "Where?", SCHEMA, options);
    expect(answer).toEqual({ city: "Lisbon" });
    expect(formats(s)).toEqual(["json_schema", undefined]);
    expect(notices.some((n) => /JSON in words/.test(n))).toBe(true);
  });

  it("preselect spends one refused request, not two, and the next call none", async () => {
    const s = await refusingResponseFormat('{"tools":["git_commit"]}', '{"tools":["git_commit"]}');
    const { options } = noticed();
    const catalog = [{ name: "git", tools: [{ name: "git_commit" }, { name: "git_log" }] }];
    expect(await preselect({ baseUrl: s.baseUrl }, "gpt-4o-mini", catalog, "commit it", options)).toEqual([
      "git_commit",
    ]);
    expect(await preselect({ baseUrl: s.baseUrl }, "gpt-4o-mini", catalog, "commit it", options)).toEqual([
      "git_commit",
    ]);
    expect(formats(s)).toEqual(["json_schema", undefined, undefined]);
  });

  it("still tries json_object where only the JSON schema was refused (an older llama.cpp)", async () => {
    server = await startServer({
      replies: [
        {
          type: "error",
          status: 400,
          body: { error: { message: "response_format type json_schema is not supported" } },
        },
        { content: '{"city":"Porto"}' },
      ],
    });
    const { options } = noticed();
    const answer = await askJson({ baseUrl: server.baseUrl }, "m", "", "Where?", SCHEMA, options);
    expect(answer).toEqual({ city: "Porto" });
    expect(formats(server)).toEqual(["json_schema", "json_object"]);
  });
});

/**
 * A catalogue the host built wrong. A server whose `tools` is not an array was refused as "must be
 * a server { name, tools: [...] }, and was an object" — which it was: the message did not say the
 * tools were what was wrong. A tool with no name (`{ title: "Read" }`, a host's own field names)
 * was passed over without a word; a catalogue of only such tools made a preselection of `[]`, no
 * request and no notice, as if the model had picked nothing.
 */
describe("a catalogue the host built wrong says what is wrong", () => {
  it("names the server and its tools when they are not a list", async () => {
    const catalog = [{ name: "fs", tools: "read_file" }] as unknown as Parameters<typeof preselect>[2];
    const error = await thrown(preselect({ baseUrl: "http://127.0.0.1:9/v1" }, "m", catalog, "read it"));
    expect(error.code).toBe("invalid-input");
    expect(error.message).toBe(
      'preselect: catalogue entry 0 (server "fs") must hold its tools as a list, { name, tools: [{ name, description }] }, and its tools was a string.',
    );
  });

  it("tells onNotice of tools left out for having no name, and why a preselection is empty", async () => {
    server = await startServer({ replies: [{ content: '{"tools":["read_file"]}' }] });
    const { notices, options } = noticed();
    const catalog = [
      { name: "fs", tools: [{ name: "read_file" }, { title: "Write" }, { name: "" }] },
    ] as unknown as Parameters<typeof preselect>[2];
    expect(await preselect({ baseUrl: server.baseUrl }, "m", catalog, "read it", options)).toEqual([
      "read_file",
    ]);
    expect(notices).toEqual([
      "preselect: 2 tools of the catalogue have no name (server fs) and were left out of the preselection.",
    ]);
    const nameless = [{ name: "fs", tools: [{ title: "Read" }] }] as unknown as Parameters<
      typeof preselect
    >[2];
    notices.length = 0;
    expect(await preselect({ baseUrl: server.baseUrl }, "m", nameless, "read it", options)).toEqual([]);
    expect(notices).toEqual([
      "preselect: 1 tool of the catalogue has no name (server fs) and was left out of the preselection.",
    ]);
    expect(server.chatRequests).toHaveLength(1);
  });
});

describe("an endpoint spelled as the openai SDK spells it", () => {
  it("names the field the host wrote, where 'was an object' said nothing", async () => {
    const endpoint = { baseURL: "http://127.0.0.1:9/v1" } as unknown as Parameters<typeof askJson>[0];
    const error = await thrown(askJson(endpoint, "m", "", "q", SCHEMA));
    expect(error.code).toBe("invalid-input");
    expect(error.message).toBe(
      'askJson: the endpoint must be an object with a baseUrl (e.g. { baseUrl: "http://127.0.0.1:8080/v1" }), and had no baseUrl (it names the URL as baseURL; the field is spelled baseUrl).',
    );
  });
});
