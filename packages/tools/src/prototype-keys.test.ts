/**
 * Parameters named like `Object.prototype` members, and a stop while a refinement is awaited.
 *
 * A call that leaves out an optional parameter called `constructor`, `toString`, `valueOf`… must
 * find it absent (the model cannot send "absent" any other way); one that sends it must get it.
 */
import { runInNewContext } from "node:vm";
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
/** The names a parameter may have (`defineTool` refuses `__proto__`: zod never reads that key). */
const NAMEABLE = INHERITED.filter((name) => name !== "__proto__");

/** Dispatches one call of `tool` with `args` through a toolset of that tool alone. */
const call = (tool: Tool, args: unknown) =>
  createToolset([tool]).dispatch({
    id: "c",
    name: tool.declaration.function.name,
    args: args as Record<string, unknown>,
  });

/**
 * Runs the agent loop over HTTP against a testkit server whose model calls `tool` once with
 * `args` (JSON text); answers what the tool message sent back to the model holds.
 */
async function answerOverHttp(tool: Tool, args: string): Promise<unknown> {
  const toolset = createToolset([tool]);
  server = await startServer({
    replies: [
      { toolCalls: [{ name: tool.declaration.function.name, arguments: args }] },
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
  return second.messages.find((m) => m.role === "tool")?.content;
}

describe("parameters named like Object.prototype members", () => {
  it("covers the names that broke calls", () => {
    for (const name of ["constructor", "toString", "valueOf", "hasOwnProperty", "__proto__"]) {
      expect(INHERITED).toContain(name);
    }
  });

  it("is absent when left out and the value when sent, for every such name, at the top and nested", async () => {
    for (const key of NAMEABLE) {
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
        // Read, it is undefined, as its optional type says, and like any other left-out optional
        // key it is not listed (nor an own key): the model did not send it.
        expect(object[key], key).toBeUndefined();
        expect(key in object, key).toBe(false);
        expect(Object.hasOwn(object, key), key).toBe(false);
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
      // Sent, it arrives.
      const sent = await read(
        JSON.parse(
          `{"name":"a",${JSON.stringify(key)}:"v","opts":{"depth":1,${JSON.stringify(key)}:3},"list":[{${JSON.stringify(key)}:true}]}`,
        ),
      );
      expect(sent[key], key).toBe("v");
      expect((sent.opts as Record<string, unknown>)[key], key).toBe(3);
      expect(((sent.list as object[])[0] as Record<string, unknown>)[key], key).toBe(true);
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
    expect(await answerOverHttp(scaffold, '{"name":"Point"}')).toBe("class Point {  }");
    expect(ran).toEqual(["Point"]);
  });
});

describe("a left-out inherited name is not listed, and a copying preprocess still reads it absent", () => {
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
    // The object the transform made is as it made it (zod gave it no valueOf: none was sent);
    // execute gets a copy that does not inherit valueOf.
    expect(Object.getOwnPropertyNames(made[0] as object)).toEqual(["by"]);
    expect(Object.getPrototypeOf(made[0])).toBe(Object.prototype);
    expect(out).not.toBe(made[0]);
  });

  it("reads a left-out valueOf as absent in an object another realm made (a .transform() answering a node:vm object) (fix139)", async () => {
    let got: Record<string, unknown> = {};
    const other = defineTool({
      name: "other",
      description: "Reads an object made in another realm.",
      input: z.object({
        made: z.object({ valueOf: z.number().optional() }).transform(() => runInNewContext('({ by: "vm" })')),
      }),
      execute: (args) => {
        got = args as Record<string, unknown>;
        return "ok";
      },
    });
    await call(other, JSON.parse('{"made":{}}'));
    const made = got.made as Record<string, unknown>;
    expect([Object.keys(made), made.by, made.valueOf]).toEqual([["by"], "vm", undefined]);
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
    expect(await answerOverHttp(flags, '{"cmd":"build"}')).toBe("--cmd=build");
  });
});

describe("arguments handed on as ordinary objects, the host's objects never written into", () => {
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
    // About 0.7 s alone; what it proves is that it finishes and answers right, not how fast (a
    // busy machine took 6 s once, past the default 5 s).
  }, 60_000);
});

describe("a left-out inherited name is truly absent: a host's assignment, defaults, exactOptional, __proto__", () => {
  it("makes a value the host assigns to a left-out one an ordinary key that JSON, spreads and structuredClone carry", async () => {
    let got: Record<string, unknown> = {};
    const forward = defineTool({
      name: "forward",
      description: "Forwards its arguments to an API.",
      input: z.object({
        path: z.string(),
        constructor: z.string().optional(),
        toString: z.string().optional(),
        opts: z.object({ valueOf: z.string().optional(), depth: z.number() }).optional(),
      }),
      execute: (args) => {
        got = args as Record<string, unknown>;
        return "ok";
      },
    });
    /** The arguments as a host reads them (plain `Record` would type `constructor` as Object's). */
    type Args = { [key: string]: unknown; constructor: unknown; toString: unknown; valueOf: unknown };
    const check = (args: Args) => {
      // Not sent: not an own key (a "was it sent?" check by hasOwn is right), nor `in`.
      expect([Object.hasOwn(args, "constructor"), "constructor" in args, args.constructor]).toEqual([
        false,
        false,
        undefined,
      ]);
      // The host fills its defaults the usual way, then forwards the arguments.
      args.constructor ??= "default-ctor";
      args.toString = "default-ts";
      const opts = args.opts as Args;
      opts.valueOf ??= "v";
      expect(JSON.stringify(args)).toBe(
        '{"path":"x","opts":{"depth":1,"valueOf":"v"},"constructor":"default-ctor","toString":"default-ts"}',
      );
      expect(Object.keys({ ...args })).toEqual(["path", "opts", "constructor", "toString"]);
      expect(structuredClone(args)).toEqual({
        path: "x",
        opts: { depth: 1, valueOf: "v" },
        constructor: "default-ctor",
        toString: "default-ts",
      });
      expect(Object.getOwnPropertyDescriptor(args, "constructor")).toEqual({
        value: "default-ctor",
        enumerable: true,
        writable: true,
        configurable: true,
      });
    };
    await call(forward, JSON.parse('{"path":"x","opts":{"depth":1}}'));
    check(got as Args);
    check(forward.parse(JSON.parse('{"path":"x","opts":{"depth":1}}')) as Args);
    // A name the schema does not declare is inherited as usual.
    expect(typeof (got.opts as { hasOwnProperty: unknown }).hasOwnProperty).toBe("function");
  });

  it("reads a left-out object with .prefault({}), .default({}) or .catch({}) as one without the names", async () => {
    const opts = z.object({ constructor: z.string().optional(), toString: z.string().optional() });
    // (An empty literal, typed as what it is: TypeScript reads `{}` as holding Object's members.)
    const none = {} as z.output<typeof opts>;
    const inputs: [string, z.ZodType][] = [
      ["prefault", opts.prefault(none)],
      ["default", opts.default(none)],
      ["catch", opts.catch(none)],
    ];
    const outcomes: Record<string, unknown> = {};
    for (const [how, schema] of inputs) {
      let got: Record<string, unknown> = {};
      const tool = defineTool({
        name: "configure",
        description: "Configures a thing.",
        input: z.object({ name: z.string(), opts: schema }),
        execute: (args) => {
          got = args as Record<string, unknown>;
          return "ok";
        },
      });
      // Left out (or, for catch, sent as something the schema refuses).
      const args = JSON.parse(how === "catch" ? '{"name":"a","opts":5}' : '{"name":"a"}');
      const ran = await call(tool, args).catch((error: unknown) => String(error));
      const read = got.opts as Record<string, unknown> | undefined;
      let parsed: unknown;
      try {
        const opts = (tool.parse(args) as { opts: Record<string, unknown> }).opts;
        parsed = [typeof opts.constructor, typeof opts.toString];
      } catch (error) {
        parsed = String(error);
      }
      // Sent, the values arrive.
      await call(tool, JSON.parse('{"name":"a","opts":{"constructor":"c"}}'));
      const sent = (got.opts as Record<string, unknown>).constructor;
      outcomes[how] = [
        ran,
        JSON.stringify(read),
        typeof read?.constructor,
        typeof read?.toString,
        parsed,
        sent,
      ];
    }
    const expected = ["ok", "{}", "undefined", "undefined", ["undefined", "undefined"], "c"];
    expect(outcomes).toEqual({ prefault: expected, default: expected, catch: expected });
  });

  it("runs a call leaving out an .exactOptional() one, and refuses an undefined sent for it", async () => {
    let got: Record<string, unknown> = {};
    const tool = defineTool({
      name: "exact",
      description: "Passes only what was given to an API.",
      input: z.object({
        p: z.string(),
        constructor: z.string().exactOptional(),
        opts: z.object({ toString: z.number().exactOptional() }).optional(),
      }),
      execute: (args) => {
        got = args as Record<string, unknown>;
        return "ok";
      },
    });
    await expect(call(tool, JSON.parse('{"p":"x","opts":{}}'))).resolves.toBe("ok");
    expect([JSON.stringify(got), got.constructor, (got.opts as { toString: unknown }).toString]).toEqual([
      '{"p":"x","opts":{}}',
      undefined,
      undefined,
    ]);
    expect(JSON.stringify(tool.parse(JSON.parse('{"p":"y"}')))).toBe('{"p":"y"}');
    await call(tool, JSON.parse('{"p":"x","constructor":"c","opts":{"toString":2}}'));
    expect([got.constructor, (got.opts as { toString: unknown }).toString]).toEqual(["c", 2]);
    // exactOptional still tells left out from an explicit undefined (only a host can pass one).
    await expect(call(tool, { p: "x", constructor: undefined })).rejects.toMatchObject({
      code: "invalid-arguments",
    });
  });

  it("refuses at defineTool a parameter named __proto__, naming where: zod never reads it", () => {
    const inputs: [z.ZodType, string][] = [
      [z.object({ ["__proto__"]: z.string().optional(), p: z.string() }), "(at __proto__)"],
      [z.object({ ["__proto__"]: z.string(), p: z.string() }), "(at __proto__)"],
      [
        z.object({ opts: z.object({ ["__proto__"]: z.number().optional() }).optional() }),
        "(at opts.__proto__)",
      ],
      [z.object({ list: z.array(z.object({ ["__proto__"]: z.boolean() })) }), "(at list[].__proto__)"],
    ];
    for (const [input, where] of inputs) {
      let thrown: unknown;
      try {
        defineTool({
          name: "proto",
          description: "Proto.",
          input: input as z.ZodObject,
          execute: () => "ok",
        });
      } catch (error) {
        thrown = error;
      }
      expect(thrown, where).toMatchObject({ code: "invalid-tool", tool: "proto" });
      expect(String(thrown), where).toContain(where);
      expect(String(thrown), where).toContain("could not reach execute");
    }
    // A default or example that merely holds such a key names no parameter.
    expect(() =>
      defineTool({
        name: "data",
        description: "Data.",
        input: z.object({ blob: z.record(z.string(), z.string()).default(JSON.parse('{"__proto__":"x"}')) }),
        execute: () => "ok",
      }),
    ).not.toThrow();
  });

  it("refuses at defineTool a backtracking patternProperties pattern an inherited name depends on, naming the path and the pattern (r43)", () => {
    // Before, the walk ran "^([a-z]+)*$" on each key the model sent: a 31-character one blocked
    // the process for 54 s. `.meta()` is how a zod schema carries patternProperties.
    const risky = z.object({
      labels: z.object({}).meta({
        patternProperties: { "^([a-z]+)*$": { properties: { constructor: { type: "string" } } } },
      }),
    });
    let thrown: unknown;
    try {
      defineTool({ name: "label", description: "Labels.", input: risky, execute: () => "ok" });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({ code: "invalid-tool", tool: "label" });
    expect(String(thrown)).toContain('"^([a-z]+)*$" at #/properties/labels');
    // Taken before r44 #1 (8 s on a 29-character key): a pattern valid only without the u flag,
    // where `\u{1,}` repeats a `u`, and a bound with many digits.
    for (const pattern of ["^(\\u{1,})+$", "^(a+){0000000000000000000001,}$"]) {
      const labels = z
        .object({})
        .meta({ patternProperties: { [pattern]: { properties: { constructor: {} } } } });
      expect(
        () =>
          defineTool({
            name: "label",
            description: "Labels.",
            input: z.object({ labels }),
            execute: () => "ok",
          }),
        pattern,
      ).toThrow(`${JSON.stringify(pattern)} at #/properties/labels`);
    }
    // The same pattern where no inherited name depends on it, and a safe one where one does, are taken.
    for (const pattern of ["^([a-z]+)*$", "^[a-z]+$"]) {
      const declares =
        pattern === "^[a-z]+$" ? { properties: { constructor: { type: "string" } } } : { type: "object" };
      expect(() =>
        defineTool({
          name: "label",
          description: "Labels.",
          input: z.object({
            constructor: z.string().optional(),
            labels: z.object({}).meta({ patternProperties: { [pattern]: declares } }),
          }),
          execute: () => "ok",
        }),
      ).not.toThrow();
    }
  });

  it("runs, over HTTP, a tool whose exactOptional and prefaulted inherited names the model left out", async () => {
    const callApi = defineTool({
      name: "call_api",
      description: "Calls an API with the given fields.",
      input: z.object({
        endpoint: z.string(),
        constructor: z.string().exactOptional(),
        opts: z
          .object({ toString: z.string().optional(), retries: z.number().default(1) })
          .prefault({} as { toString?: string; retries?: number }),
      }),
      execute: (args) => {
        args.constructor ??= "Default";
        return JSON.stringify(args);
      },
    });
    expect(await answerOverHttp(callApi, '{"endpoint":"/v1/things"}')).toBe(
      '{"endpoint":"/v1/things","opts":{"retries":1},"constructor":"Default"}',
    );
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
    // The refinement answers only below, after dispatch settled: settling at all shows it did not
    // wait for the refinement (a 1 s bound on the wait added a clock and nothing else; waiting, the
    // test times out).
    const outcome = await createToolset([tool])
      .dispatch({ id: "c", name: "open_remote", args: { path: "/share/a" } }, stop.signal)
      .catch((error: unknown) => error);
    expect(String(outcome)).toMatch(/user pressed stop/);
    settle(true);
    await new Promise((done) => setTimeout(done, 10));
    expect(executed).toBe(0);
  });
});
