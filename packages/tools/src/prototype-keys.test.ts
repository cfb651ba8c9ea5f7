/**
 * Parameters named like `Object.prototype` members, and a stop while a refinement is awaited.
 *
 * A call that leaves out an optional parameter called `constructor`, `toString`, `valueOf`… must
 * find it absent (the model cannot send "absent" any other way); one that sends it must get it.
 */
import { runAgentLoop } from "@loopwright/loop";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createToolset, defineTool, type Tool } from "./index.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Every name `Object.prototype` holds (`__proto__` and the legacy accessors included). */
const INHERITED = Object.getOwnPropertyNames(Object.prototype);

describe("parameters named like Object.prototype members", () => {
  it("covers the names that broke calls", () => {
    for (const name of ["constructor", "toString", "valueOf", "hasOwnProperty", "__proto__"]) {
      expect(INHERITED).toContain(name);
    }
  });

  it("is absent when left out and the value when sent, for every such name, at the top and nested", async () => {
    for (const key of INHERITED) {
      const seen: unknown[] = [];
      const tool = defineTool({
        name: "probe",
        description: "Probe.",
        input: z.object({
          name: z.string(),
          [key]: z.string().optional(),
          opts: z.object({ [key]: z.number().optional(), depth: z.number() }).optional(),
          list: z.array(z.object({ [key]: z.boolean().optional() })).optional(),
        }),
        execute: (args) => {
          seen.push(args);
          return "ok";
        },
      });
      const toolset = createToolset([tool]);
      const read = (args: Record<string, unknown>) =>
        toolset.dispatch({ id: "c", name: "probe", args }).then(
          () => seen.at(-1) as Record<string, unknown>,
          (error: unknown) => {
            throw new Error(`${key}: ${String(error)}`);
          },
        );
      const left = await read(JSON.parse('{"name":"a","opts":{"depth":1},"list":[{}]}'));
      const absent = (value: unknown) => {
        const object = value as Record<string, unknown>;
        // Read, it is undefined, as its optional type says (`__proto__` reads as the prototype), and
        // like any other left-out optional key it is not listed: the model did not send it.
        if (key !== "__proto__") expect(object[key], key).toBeUndefined();
        expect(Object.keys(object), key).not.toContain(key);
        const listed: string[] = [];
        for (const name in object) listed.push(name);
        expect(listed, key).not.toContain(key);
        expect(Object.keys({ ...object }), key).not.toContain(key);
      };
      absent(left);
      absent(left.opts);
      absent((left.list as object[])[0]);
      expect(JSON.parse(JSON.stringify(left)), key).toEqual({ name: "a", opts: { depth: 1 }, list: [{}] });
      // Sent, it arrives (JSON.parse makes even "__proto__" an own key).
      const sent = await read(
        JSON.parse(
          `{"name":"a",${JSON.stringify(key)}:"v","opts":{"depth":1,${JSON.stringify(key)}:3},"list":[{${JSON.stringify(key)}:true}]}`,
        ),
      );
      if (key !== "__proto__") {
        expect(sent[key], key).toBe("v");
        expect((sent.opts as Record<string, unknown>)[key], key).toBe(3);
        expect(((sent.list as object[])[0] as Record<string, unknown>)[key], key).toBe(true);
      }
      // parse, the synchronous check, reads the same way.
      absent(tool.parse(JSON.parse('{"name":"b"}')));
    }
  });

  it("runs a tool called over HTTP without its optional constructor and toString", async () => {
    const ran: unknown[] = [];
    const scaffold = defineTool({
      name: "scaffold_class",
      description: "Write a class skeleton.",
      input: z.object({
        name: z.string(),
        constructor: z.string().optional(),
        toString: z.string().optional(),
      }),
      // biome-ignore lint/suspicious/noShadowRestrictedNames: a parameter named constructor, destructured as a host writes it, is the case under test
      execute: ({ name, constructor }) => {
        ran.push(name);
        return `class ${name} { ${constructor ?? ""} }`;
      },
    });
    const toolset = createToolset([scaffold]);
    server = await startServer({
      replies: [
        { toolCalls: [{ name: "scaffold_class", arguments: '{"name":"Point"}' }] },
        { content: "done" },
      ],
    });
    await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "m" },
      messages: [{ role: "user", content: "go" }],
      tools: toolset.tools,
      dispatch: toolset.dispatch,
    });
    const second = server.chatRequests[1]?.body as { messages: { role: string; content?: unknown }[] };
    const answered = second.messages.find((m) => m.role === "tool");
    expect(answered?.content).toBe("class Point {  }");
    expect(ran).toEqual(["Point"]);
  });
});

describe("a left-out inherited name is not listed, and a copying preprocess still reads it absent", () => {
  const call = (tool: Tool, args: unknown) =>
    createToolset([tool]).dispatch({
      id: "c",
      name: tool.declaration.function.name,
      args: args as Record<string, unknown>,
    });
  /** What a host reading the arguments' keys sees: keys, JSON, for…in and a spread's keys. */
  const listing = (args: object) => {
    const forIn: string[] = [];
    for (const name in args) forIn.push(name);
    return {
      keys: Object.keys(args),
      json: JSON.stringify(args),
      forIn,
      spread: Object.keys({ ...args }),
      constructor: (args as { constructor: unknown }).constructor,
    };
  };

  it("hands execute only the keys the model sent (and defaults), at the top, nested and in array items", async () => {
    let got: Record<string, unknown> = {};
    const run = defineTool({
      name: "run",
      description: "Runs a CLI command with flags.",
      input: z.object({
        cmd: z.string(),
        constructor: z.string().optional(),
        toString: z.string().default("plain"),
        opts: z.object({ valueOf: z.number().optional(), depth: z.number() }).optional(),
        steps: z.array(z.object({ constructor: z.string().optional(), at: z.number() })).optional(),
      }),
      execute: (args) => {
        got = args as Record<string, unknown>;
        return "ok";
      },
    });
    await call(
      run,
      JSON.parse('{"cmd":"build","opts":{"depth":1},"steps":[{"at":0},{"at":1,"constructor":"x"}]}'),
    );
    expect(listing(got)).toEqual({
      keys: ["cmd", "toString", "opts", "steps"],
      json: '{"cmd":"build","toString":"plain","opts":{"depth":1},"steps":[{"at":0},{"constructor":"x","at":1}]}',
      forIn: ["cmd", "toString", "opts", "steps"],
      spread: ["cmd", "toString", "opts", "steps"],
      constructor: undefined,
    });
    const opts = got.opts as Record<string, unknown>;
    expect(Object.keys(opts)).toEqual(["depth"]);
    expect(opts.valueOf).toBeUndefined();
    const [left, sent] = got.steps as Record<string, unknown>[];
    expect([Object.keys(left as object), (left as object).constructor]).toEqual([["at"], undefined]);
    expect([Object.keys(sent as object), (sent as object).constructor]).toEqual([["constructor", "at"], "x"]);
    // parse, the synchronous check, hands back the same.
    const parsed = run.parse(JSON.parse('{"cmd":"test"}')) as Record<string, unknown>;
    expect(listing(parsed)).toEqual({
      keys: ["cmd", "toString"],
      json: '{"cmd":"test","toString":"plain"}',
      forIn: ["cmd", "toString"],
      spread: ["cmd", "toString"],
      constructor: undefined,
    });
  });

  it("keeps a .readonly() object frozen, and never writes into what a .transform() returns", async () => {
    let got: Record<string, unknown> = {};
    const made: Record<string, unknown>[] = [];
    const frozen = defineTool({
      name: "frozen",
      description: "Reads frozen arguments.",
      input: z
        .object({
          constructor: z.string().optional(),
          q: z.string(),
          made: z.object({ valueOf: z.number().optional() }).transform((value) => {
            const out = { ...value, by: "host" };
            made.push(out);
            return out;
          }),
        })
        .readonly(),
      execute: (args) => {
        got = args as Record<string, unknown>;
        return "ok";
      },
    });
    await call(frozen, JSON.parse('{"q":"a","made":{}}'));
    expect([Object.keys(got), got.constructor, Object.isFrozen(got)]).toEqual([
      ["q", "made"],
      undefined,
      true,
    ]);
    const out = got.made as Record<string, unknown>;
    expect([Object.keys(out), out.valueOf]).toEqual([["by"], undefined]);
    // The object the transform made still holds the key zod gave it; execute gets a copy without it.
    expect(Object.keys(made[0] as object)).toEqual(["valueOf", "by"]);
  });

  it("reads a left-out constructor as absent after a preprocess that copies its input, and never writes into the copy", async () => {
    const copies: [string, (value: object) => object][] = [
      ["spread", (value) => ({ ...value })],
      ["Object.assign", (value) => Object.assign({}, value)],
      ["structuredClone", (value) => structuredClone(value)],
    ];
    for (const [how, copy] of copies) {
      const returned: object[] = [];
      let got: Record<string, unknown> = {};
      const numbers = defineTool({
        name: "numbers",
        description: "Takes numbers written as text.",
        input: z.preprocess(
          (value) => {
            if (typeof value !== "object" || value === null) return value;
            const out = copy(value) as Record<string, unknown>;
            out.n = Number(out.n);
            returned.push(out);
            return out;
          },
          z.object({
            n: z.number(),
            constructor: z.string().optional(),
            opts: z
              .preprocess(
                (value) => (typeof value === "object" && value !== null ? copy(value) : value),
                z.object({ toString: z.string().optional(), depth: z.number() }),
              )
              .optional(),
          }),
        ),
        execute: (args) => {
          got = args as Record<string, unknown>;
          return "ok";
        },
      });
      await expect(call(numbers, JSON.parse('{"n":"3","opts":{"depth":2}}')), how).resolves.toBe("ok");
      expect(listing(got), how).toEqual({
        keys: ["n", "opts"],
        json: '{"n":3,"opts":{"depth":2}}',
        forIn: ["n", "opts"],
        spread: ["n", "opts"],
        constructor: undefined,
      });
      const opts = got.opts as Record<string, unknown>;
      expect([Object.keys(opts), opts.toString], how).toEqual([["depth"], undefined]);
      // What the host's function returned is as it made it: nothing was put into it.
      expect(
        returned.map((out) => Object.getOwnPropertyNames(out)),
        how,
      ).toEqual([["n", "opts"]]);
      // Sent, it arrives; and parse reads the same way.
      await call(numbers, JSON.parse('{"n":"4","constructor":"c"}'));
      expect([got.n, got.constructor, Object.keys(got)], how).toEqual([4, "c", ["n", "constructor"]]);
      const parsed = numbers.parse(JSON.parse('{"n":"5"}')) as Record<string, unknown>;
      expect([Object.keys(parsed), parsed.constructor], how).toEqual([["n"], undefined]);
    }
  });

  it("reads it absent behind a copying preprocess inside a recursive schema, and leaves the host's schema as it was", async () => {
    const copy = (value: unknown) => (typeof value === "object" && value !== null ? { ...value } : value);
    const Node: z.ZodType = z.preprocess(
      copy,
      z.object({
        name: z.string(),
        constructor: z.string().optional(),
        get kids() {
          return z.array(Node).optional();
        },
      }),
    );
    const input = z.object({ root: Node });
    let got: { root?: { name: string; kids?: Record<string, unknown>[] } } = {};
    const tree = defineTool({
      name: "tree",
      description: "Takes a tree.",
      input,
      execute: (args) => {
        got = args as typeof got;
        return "ok";
      },
    });
    await call(tree, JSON.parse('{"root":{"name":"a","kids":[{"name":"b","kids":[{"name":"c"}]}]}}'));
    const leaf = got.root?.kids?.[0]?.kids as Record<string, unknown>[];
    expect([Object.keys(leaf[0] as object), (leaf[0] as object).constructor]).toEqual([["name"], undefined]);
    expect(JSON.stringify(got)).toBe('{"root":{"name":"a","kids":[{"name":"b","kids":[{"name":"c"}]}]}}');
    // The schema the host gave is unchanged: read on its own it still sees the inherited member.
    expect(tree.input).toBe(input);
    expect(input.safeParse({ root: { name: "a" } }).success).toBe(false);
  });

  it("runs a copying-preprocess tool called over HTTP, and execute lists only what the model sent", async () => {
    const flags = defineTool({
      name: "flags",
      description: "Builds command-line flags from its arguments.",
      input: z.preprocess(
        (value) => (typeof value === "object" && value !== null ? { ...value } : value),
        z.object({ cmd: z.string(), constructor: z.string().optional(), verbose: z.boolean().optional() }),
      ),
      execute: (args) =>
        Object.entries(args)
          .map(([key, value]) => `--${key}=${String(value)}`)
          .join(" "),
    });
    const toolset = createToolset([flags]);
    server = await startServer({
      replies: [{ toolCalls: [{ name: "flags", arguments: '{"cmd":"build"}' }] }, { content: "done" }],
    });
    await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "m" },
      messages: [{ role: "user", content: "go" }],
      tools: toolset.tools,
      dispatch: toolset.dispatch,
    });
    const second = server.chatRequests[1]?.body as { messages: { role: string; content?: unknown }[] };
    expect(second.messages.find((m) => m.role === "tool")?.content).toBe("--cmd=build");
  });
});

describe("arguments handed on as ordinary objects, the host's objects never written into", () => {
  const call = (tool: Tool, args: unknown) =>
    createToolset([tool]).dispatch({
      id: "c",
      name: tool.declaration.function.name,
      args: args as Record<string, unknown>,
    });

  it("lets a preprocess, a z.unknown value and a loose object's extras call hasOwnProperty", async () => {
    const seen: Record<string, unknown> = {};
    const pre = defineTool({
      name: "pre",
      description: "Preprocessed.",
      input: z.preprocess(
        (value) =>
          Object.hasOwn(value as { hasOwnProperty(key: string): boolean }, "q") ? value : { q: "-" },
        z.object({ q: z.string(), constructor: z.string().optional() }),
      ),
      execute: (args) => {
        seen.pre = args;
        return "ok";
      },
    });
    await call(pre, JSON.parse('{"q":"hi"}'));
    expect(seen.pre).toMatchObject({ q: "hi" });
    expect((seen.pre as Record<string, unknown>).constructor).toBeUndefined();
    const any = defineTool({
      name: "any",
      description: "Anything.",
      input: z.looseObject({ data: z.unknown(), constructor: z.string().optional() }),
      execute: (args) => {
        const extra = (args as Record<string, unknown>).extra as object;
        seen.any = [
          Object.getPrototypeOf(args.data) === Object.prototype,
          Object.hasOwn(args.data as object, "x"),
          Object.hasOwn(args.data as { hasOwnProperty(key: string): boolean }, "x"),
          Object.hasOwn(extra as { hasOwnProperty(key: string): boolean }, "y"),
          String(args.data),
          args.constructor,
        ];
        return "ok";
      },
    });
    await call(any, JSON.parse('{"data":{"x":1},"extra":{"y":2}}'));
    expect(seen.any).toEqual([true, true, true, true, "[object Object]", undefined]);
  });

  it("never writes into an object a transform returns, nor into the call's own arguments", async () => {
    const registry: Record<string, { retries: number; nested: { a: number } }> = {
      fast: { retries: 1, nested: { a: 1 } },
    };
    let got: unknown;
    const run = defineTool({
      name: "run",
      description: "Run with a profile.",
      input: z.object({
        constructor: z.string().optional(),
        profile: z.string().transform((name) => registry[name]),
        opts: z.object({ depth: z.number() }).optional(),
      }),
      execute: (args) => {
        got = args;
        return "ok";
      },
    });
    const args = JSON.parse('{"profile":"fast","opts":{"depth":2}}');
    await call(run, args);
    const fast = registry.fast as { retries: number; nested: { a: number } };
    expect((got as { profile: unknown }).profile).toBe(fast);
    expect(Object.getOwnPropertyNames(fast)).toEqual(["retries", "nested"]);
    expect(Object.getOwnPropertyNames(fast.nested)).toEqual(["a"]);
    expect(fast.constructor).toBe(Object);
    // Nested objects the schema does not declare `constructor` in keep reading it as usual.
    expect((got as { opts: object }).opts.constructor).toBe(Object);
    expect(Object.getOwnPropertyNames(args)).toEqual(["profile", "opts"]);
    const getter = defineTool({
      name: "getter",
      description: "Transform output with a getter.",
      input: z.object({
        constructor: z.string().optional(),
        x: z.string().transform(() => ({
          get bad(): never {
            throw new Error("getter ran");
          },
        })),
      }),
      execute: () => "ok",
    });
    await expect(call(getter, { x: "q" })).resolves.toBeDefined();
  });

  it("takes an array of 200 000 items for a tool naming a constructor parameter", async () => {
    const plot = defineTool({
      name: "plot",
      description: "Plot points.",
      input: z.object({
        constructor: z.string().optional(),
        points: z.array(z.number()),
        marks: z.array(z.object({ constructor: z.string().optional(), at: z.number() })).optional(),
      }),
      execute: (args) => {
        const first = args.marks?.[0] as Record<string, unknown> | undefined;
        return `${args.points.length} ${args.marks?.length} ${String(first?.constructor)}`;
      },
    });
    const points = Array.from({ length: 200_000 }, (_, at) => at);
    const marks = Array.from({ length: 200_000 }, (_, at) => ({ at }));
    const result = await call(plot, JSON.parse(JSON.stringify({ points, marks })));
    expect(JSON.stringify(result)).toContain("200000 200000 undefined");
  });
});

describe("a stop while an asynchronous refinement is awaited", () => {
  it("ends dispatch at once with the signal's reason; execute never runs", async () => {
    let executed = 0;
    let settle: (ok: boolean) => void = () => {};
    const tool = defineTool({
      name: "open_remote",
      description: "Open a file on the share.",
      input: z.object({
        path: z.string().refine(() => new Promise<boolean>((ok) => (settle = ok)), "no such file"),
      }),
      execute: () => {
        executed++;
        return "opened";
      },
    });
    const stop = new AbortController();
    setTimeout(() => stop.abort(new Error("user pressed stop")), 50);
    const started = Date.now();
    const outcome = await createToolset([tool])
      .dispatch({ id: "c", name: "open_remote", args: { path: "/share/a" } }, stop.signal)
      .catch((error: unknown) => error);
    expect(String(outcome)).toMatch(/user pressed stop/);
    expect(Date.now() - started).toBeLessThan(1000);
    settle(true);
    await new Promise((done) => setTimeout(done, 10));
    expect(executed).toBe(0);
  });
});
