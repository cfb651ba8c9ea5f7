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
        // Read, it is undefined, as its optional type says (`__proto__` reads as the prototype); zod
        // may keep it as an own `undefined`, as for any optional key, which JSON does not show.
        if (key === "__proto__") expect(Object.keys(object), key).not.toContain(key);
        else expect(object[key], key).toBeUndefined();
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
