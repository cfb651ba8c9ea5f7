/**
 * r84 review of side-task's reading of a host's objects through a polluted `Object.prototype`: a
 * field counts where the object (or a prototype of its own, a class's getter) holds it, never where
 * only `Object.prototype` does. Before, `Object.prototype.maxTokens = 7` cut every side task's reply
 * to 7 tokens, `Object.prototype.endpoint` sent every task named without an endpoint to another
 * server, `Object.prototype.label` wrote a line of every preselection's catalogue, and
 * `Object.prototype.refusal` made every reply read as a refusal.
 */
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { bodies, isolated, systemContent } from "../test/wire.js";
import { ask, askReply } from "./ask.js";
import { preselectByKeywords } from "./keywords.js";
import { preselectSystem } from "./preselect.js";
import { summariser } from "./summariser.js";
import { taskCall } from "./task-call.js";

let server: TestServer | undefined;
afterEach(() => server?.close());

const proto = Object.prototype as Record<string, unknown>;
const cat = [{ name: "fs", tools: [{ name: "read_file", description: "Read a file" }] }];

describe("r84: a polluted Object.prototype is not read as a host's settings", () => {
  it("ask's options: a maxTokens or extraBody only Object.prototype holds is not sent", async () => {
    server = await startServer({ replies: [{ content: "fine" }] });
    proto.maxTokens = 7;
    proto.extraBody = { polluted: true };
    try {
      await expect(ask({ baseUrl: server.baseUrl }, "m", "sys", "hi", isolated())).resolves.toBe("fine");
    } finally {
      delete proto.maxTokens;
      delete proto.extraBody;
    }
    const [body] = bodies(server);
    expect(body?.max_tokens).toBe(512);
    expect(Object.hasOwn(body ?? {}, "polluted")).toBe(false);
  });

  it("a reply: a refusal only Object.prototype holds is not the model's", async () => {
    server = await startServer({ replies: [{ content: "the answer" }] });
    const notices: string[] = [];
    proto.refusal = "I cannot";
    try {
      const reply = await askReply({ baseUrl: server.baseUrl }, "m", "sys", "hi", {
        ...isolated(),
        onNotice: (m) => notices.push(m),
      });
      expect(Object.hasOwn(reply, "refusal")).toBe(false);
      expect(reply.text).toBe("the answer");
    } finally {
      delete proto.refusal;
    }
    expect(notices).toEqual([]);
  });

  it("summariser's options: a system prompt only Object.prototype holds is not sent", async () => {
    server = await startServer({ replies: [{ content: "notes" }] });
    proto.system = "POLLUTED";
    try {
      const summarise = summariser({ baseUrl: server.baseUrl }, "m", isolated());
      await expect(summarise([{ role: "user", content: "hello" }], undefined)).resolves.toBe("notes");
    } finally {
      delete proto.system;
    }
    expect(systemContent(bodies(server)[0] ?? {})).not.toContain("POLLUTED");
  });

  it("taskCall's settings: an endpoint, key, header or option only Object.prototype holds is not taken", () => {
    const agent = { baseUrl: "http://agent.example/v1", apiKey: "sk-agent" };
    const plain = taskCall({ model: "small" }, {}, agent);
    const same = taskCall({ endpoint: { baseUrl: "http://agent.example/v1" } }, { model: "h" }, agent);
    for (const [field, value] of [
      ["endpoint", { baseUrl: "http://evil.example/v1" }],
      ["apiKey", "sk-evil"],
      ["headers", { "x-evil": "1" }],
      ["requestTimeoutSeconds", 0.001],
      ["extraBody", { polluted: true }],
      ["maxTokens", 1],
      ["model", "evil-model"],
    ] as const) {
      proto[field] = value;
      try {
        expect(taskCall({ model: "small" }, {}, agent), field).toEqual(plain);
        expect(
          taskCall({ endpoint: { baseUrl: "http://agent.example/v1" } }, { model: "h" }, agent),
          field,
        ).toEqual(same);
      } finally {
        delete proto[field];
      }
    }
  });

  it("a catalogue's servers and tools: a label only Object.prototype holds is not shown", () => {
    const plain = preselectSystem(cat);
    proto.label = "EVIL LABEL";
    try {
      expect(preselectSystem(cat)).toBe(plain);
    } finally {
      delete proto.label;
    }
  });

  it("preselectByKeywords' options: a minScore only Object.prototype holds does not make it confident", () => {
    const plain = preselectByKeywords(cat, "read the file");
    proto.minScore = 0.0001;
    try {
      expect(preselectByKeywords(cat, "read the file")).toEqual(plain);
    } finally {
      delete proto.minScore;
    }
  });
});
