import { parseToolArguments } from "@loopwright/tool-calls";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ToolLoadingError } from "./errors.js";
import type { ToolLoadingOptions } from "./index.js";
import { type ProxiedCallOptions, proxiedCall } from "./proxied-call.js";
import { CATALOG, TOOLS, thrown } from "./test-support/tools.js";
import { createToolLoading } from "./tool-loading.js";

describe("proxiedCall", () => {
  it("reads the inner call from arguments given as an object", () => {
    expect(proxiedCall({ name: "read_file", arguments: { path: "a.txt" } }, CATALOG)).toEqual({
      name: "read_file",
      args: { path: "a.txt" },
      raw: '{"path":"a.txt"}',
    });
  });

  it("reads arguments given as JSON in a string, keeping the model's text as raw", () => {
    const text = '{ "path": "a.txt" }';
    expect(proxiedCall({ name: "read_file", arguments: text }, CATALOG)).toEqual({
      name: "read_file",
      args: { path: "a.txt" },
      raw: text,
    });
  });

  it("takes no arguments as an empty object, and a server-prefixed name as the tool", () => {
    expect(proxiedCall({ name: "filesystem.list_directory" }, CATALOG).name).toBe("list_directory");
    expect(proxiedCall({ name: "list_directory", arguments: "" }, CATALOG).args).toEqual({});
    expect(proxiedCall('{"name":"list_directory","arguments":null}', CATALOG).args).toEqual({});
  });

  it("reads arguments written as the text null as no arguments, as a real null is, with JSON.parse as the reader", () => {
    // Models serialising an empty call write "null" inside the string; the loop's lenient reader
    // already read it as {}, while proxiedCall's own default (JSON.parse) refused it to the model.
    expect(proxiedCall({ name: "list_directory", arguments: "null" }, CATALOG)).toEqual({
      name: "list_directory",
      args: {},
      raw: "null",
    });
    expect(proxiedCall('{"name":"list_directory","arguments":" null "}', CATALOG).args).toEqual({});
    // Other non-objects are still refused, naming what the text reads as.
    expect(thrown(() => proxiedCall({ name: "list_directory", arguments: "[]" }, CATALOG))).toMatchObject({
      code: "invalid-arguments",
    });
    expect(thrown(() => proxiedCall({ name: "list_directory", arguments: "0" }, CATALOG))).toMatchObject({
      code: "invalid-arguments",
    });
  });

  it("hands the reader the places the named tool takes only a string, so a number written there stays text", () => {
    // A reader as the loop's is: a number token (`+5`, `02134`) where only a string is taken stays its text.
    const asked: unknown[][] = [];
    const parse = (
      text: string,
      options?: { takesOnlyString?: (path: readonly (string | number)[]) => boolean },
    ) => {
      asked.push(["path", "repo", "count"].map((key) => options?.takesOnlyString?.([key])));
      return JSON.parse(
        text.replace(/"(\w+)": ([+.\d]+)/g, (whole, key: string, token: string) =>
          options?.takesOnlyString?.([key]) ? `"${key}": "${token}"` : whole,
        ),
      );
    };
    // Before: the reader was handed the text alone, and `+5` was refused as not JSON.
    expect(
      proxiedCall({ name: "read_file", arguments: '{"path": +5}' }, CATALOG, { parse, tools: TOOLS }),
    ).toEqual({
      name: "read_file",
      args: { path: "+5" },
      raw: '{"path": +5}',
    });
    expect(asked).toEqual([[true, false, false]]);
    // No definitions given: the reader is asked about nothing, as before.
    expect(() => proxiedCall({ name: "read_file", arguments: '{"path": +5}' }, CATALOG, { parse })).toThrow(
      /not a JSON object/,
    );
    // Definitions that are not named function tools are named, not read past.
    const bad = thrown(() =>
      proxiedCall({ name: "read_file" }, CATALOG, { tools: [{ type: "function" }] as never }),
    );
    expect(ToolLoadingError.isInstance(bad) && bad.code).toBe("invalid-tools");
    expect(bad.message).toContain("proxiedCall: tool 0");
    // The loading a run holds knows its tools' definitions itself.
    const loading = createToolLoading({ mode: "proxy", tools: TOOLS, catalog: CATALOG, parse });
    const route = loading.route(
      { id: "c1", name: "call_tool", args: { name: "get_file", arguments: '{"repo": 0012, "path": .5}' } },
      { loaded: [], messages: [] },
    );
    expect(route).toMatchObject({ kind: "dispatch", name: "get_file", args: { repo: "0012", path: ".5" } });
  });

  it("uses the given reader for text arguments, so almost-JSON can be repaired", () => {
    const parse = (text: string) => JSON.parse(text.replace(/'/g, '"'));
    expect(proxiedCall({ name: "read_file", arguments: "{'path': 'a'}" }, CATALOG, { parse }).args).toEqual({
      path: "a",
    });
    // The whole call given as text is read the same way.
    expect(
      proxiedCall("{'name': 'read_file', 'arguments': {'path': 'b'}}", CATALOG, { parse }),
    ).toMatchObject({
      name: "read_file",
      args: { path: "b" },
    });
  });

  it("cuts a made-up name short when it tells the model the name is not in the catalogue", () => {
    const long = `send_${"e".repeat(50_000)}`;
    const error = thrown(() => proxiedCall({ name: long, arguments: {} }, CATALOG)) as ToolLoadingError;
    expect(error.code).toBe("unknown-tool");
    expect(error.message).toContain(`"send_${"e".repeat(30)}`);
    expect(error.message).toContain("(50005 characters)");
    expect(error.message.length).toBeLessThan(400);
  });

  it("refuses a name outside the catalogue, in words the model can act on", () => {
    const error = thrown(() =>
      proxiedCall({ name: "send_email", arguments: {} }, CATALOG),
    ) as ToolLoadingError;
    expect(error.code).toBe("unknown-tool");
    expect(error.message).toContain('"send_email" is not in the catalogue');
    // A server's name stands for several tools, so it is not one tool to run.
    expect((thrown(() => proxiedCall({ name: "github" }, CATALOG)) as ToolLoadingError).code).toBe(
      "unknown-tool",
    );
  });

  it("refuses a server's name or a pattern as the tool to run, even where it reaches only one tool", () => {
    const catalog = [...CATALOG, { name: "mail", tools: [{ name: "send_email" }] }];
    for (const name of ["mail", "MAIL", "send_*", "mail.*", "*email", "mail/"]) {
      const error = thrown(() => proxiedCall({ name, arguments: {} }, catalog)) as ToolLoadingError;
      expect(error.code, name).toBe("unknown-tool");
    }
    expect(proxiedCall({ name: "mail.send_email" }, catalog).name).toBe("send_email");
    expect(proxiedCall({ name: "Send_Email" }, catalog).name).toBe("send_email");
  });

  it("takes the arguments written beside the name when the model left out arguments", () => {
    expect(proxiedCall({ name: "read_file", path: "a.txt" }, CATALOG)).toEqual({
      name: "read_file",
      args: { path: "a.txt" },
      raw: '{"path":"a.txt"}',
    });
    expect(proxiedCall('{"tool":"write_file","path":"b","content":"x"}', CATALOG).args).toEqual({
      path: "b",
      content: "x",
    });
  });

  it("refuses a call with no name, and arguments that are not an object", () => {
    expect((thrown(() => proxiedCall({ arguments: {} }, CATALOG)) as ToolLoadingError).code).toBe(
      "missing-name",
    );
    for (const args of ["[1,2]", "not json", 42, ["a"]]) {
      const error = thrown(() => proxiedCall({ name: "read_file", arguments: args }, CATALOG));
      expect(ToolLoadingError.isInstance(error)).toBe(true);
      expect((error as ToolLoadingError).code).toBe("invalid-arguments");
      expect(error.message).toContain('"read_file"');
    }
    expect(
      (thrown(() => proxiedCall({ name: "read_file", arguments: "{" }, CATALOG)) as Error).cause,
    ).toBeInstanceOf(SyntaxError);
  });

  it("answers whatever the model wrote with the call or the package's typed error, never another throw", () => {
    const catalogued = CATALOG.flatMap((server) => server.tools.map((tool) => tool.name));
    const name = fc.oneof(fc.constantFrom(...catalogued, "github", "list_*", "github.get_file"), fc.string());
    const outer = fc.oneof(
      fc.anything(),
      fc.record({ name, arguments: fc.anything() }, { requiredKeys: [] }),
      fc.record({ name, arguments: fc.anything() }).map((value) => JSON.stringify(value) ?? ""),
    );
    fc.assert(
      fc.property(outer, (args) => {
        try {
          const call = proxiedCall(args, CATALOG);
          expect(catalogued).toContain(call.name);
          expect(typeof call.args === "object" && !Array.isArray(call.args)).toBe(true);
        } catch (error) {
          expect(ToolLoadingError.isInstance(error), String(error)).toBe(true);
        }
      }),
    );
  });

  it("runs every catalogued tool by its name, bare, qualified by its server, or as functions.name", () => {
    for (const server of CATALOG) {
      for (const { name } of server.tools) {
        for (const form of [name, `${server.name}.${name}`, `${server.name}__${name}`, `functions.${name}`]) {
          expect(proxiedCall({ name: form, arguments: {} }, CATALOG).name).toBe(name);
        }
      }
    }
  });

  it("reads the same arguments from an object and from its JSON text", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (args) => {
        const asObject = proxiedCall({ name: "write_file", arguments: args }, CATALOG);
        const asText = proxiedCall({ name: "write_file", arguments: JSON.stringify(args) }, CATALOG);
        expect(asText.args).toEqual(JSON.parse(JSON.stringify(args)));
        expect(JSON.parse(asObject.raw)).toEqual(asText.args);
      }),
    );
  });
});

describe("proxiedCall refuses a reader that answers something other than the arguments", () => {
  it("refuses parseToolArguments passed as it is, even where the types could not see it, naming the fix", () => {
    // Typed as the options are, R falls back to unknown and the compile-time guard cannot see the reader.
    // Before: the tool was run with { value, json, repaired, inexact } as its arguments.
    const options: ToolLoadingOptions = {
      mode: "proxy",
      tools: TOOLS,
      catalog: CATALOG,
      parse: parseToolArguments,
    };
    const loading = createToolLoading(options);
    // A run refuses the call (every call answered) and carries the typed error for the host to see.
    const route = loading.route(
      { id: "c1", name: "call_tool", args: { name: "read_file", arguments: '{"path": "a.txt"}' } },
      { loaded: [], messages: [] },
    );
    expect(route.kind).toBe("refuse");
    const refused = (route as { error: Error }).error;
    expect(ToolLoadingError.isInstance(refused) && refused.code).toBe("invalid-reader");
    expect(refused.message).toContain("(text, o) => parseToolArguments(text, o).value");
    const proxied: ProxiedCallOptions = { parse: parseToolArguments };
    const outer = thrown(() =>
      proxiedCall('{"name": "read_file", "arguments": {"path": "a.txt"}}', CATALOG, proxied),
    );
    expect(ToolLoadingError.isInstance(outer) && outer.code).toBe("invalid-reader");
    // The fix the message names reads the call.
    const fixed = proxiedCall({ name: "read_file", arguments: '{"path": "a.txt"}' }, CATALOG, {
      parse: (text, o) => parseToolArguments(text, o).value,
    });
    expect(fixed.args).toEqual({ path: "a.txt" });
  });

  it("refuses a reader that answers a Promise, rather than running the tool with one", () => {
    // Before: a Promise is not a plain record, so the model was told its arguments were not an object.
    const parse = async (text: string): Promise<unknown> => JSON.parse(text);
    const options: ProxiedCallOptions = { parse };
    const refused = thrown(() =>
      proxiedCall({ name: "read_file", arguments: '{"path": "a.txt"}' }, CATALOG, options),
    );
    expect(ToolLoadingError.isInstance(refused) && refused.code).toBe("invalid-reader");
    expect(refused.message).toContain("answered a Promise");
    const rejecting: ProxiedCallOptions = { parse: async () => Promise.reject(new Error("no")) };
    const outer = thrown(() => proxiedCall('{"name": "read_file"}', CATALOG, rejecting));
    expect(ToolLoadingError.isInstance(outer) && outer.code).toBe("invalid-reader");
  });
});
