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
import { bodies, noticed } from "../test/wire.js";
import { askJson } from "./ask.js";
import { preselect } from "./preselect.js";

let server: TestServer | undefined;
afterEach(() => server?.close());

const SCHEMA = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
const formats = (s: TestServer) => bodies(s).map((b) => (b.response_format as { type?: string } | undefined)?.type);

/** OpenAI's wording for a field it does not know, over the openai personality. */
async function refusingResponseFormat(...contents: string[]): Promise<TestServer> {
  server = await startServer({
    // chat_template_kwargs is let through so that only response_format is refused.
    personality: { name: "openai", unknownParams: ["response_format"], extraParams: ["chat_template_kwargs"] },
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
        { type: "error", status: 400, body: { error: { message: "response_format type json_schema is not supported" } } },
        { content: '{"city":"Porto"}' },
      ],
    });
    const { options } = noticed();
    const answer = await askJson({ baseUrl: server.baseUrl }, "m", "", "Where?", SCHEMA, options);
    expect(answer).toEqual({ city: "Porto" });
    expect(formats(server)).toEqual(["json_schema", "json_object"]);
  });
});
