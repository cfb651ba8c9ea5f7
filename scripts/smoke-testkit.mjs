// Run by smoke-packed.mjs inside a fresh project where only the packed @loopwright/testkit is
// installed: every personality answers, the scripted model calls a tool, every published recording
// replays byte for byte, and failures inside the server come back as HTTP errors naming them —
// with no unhandled rejection and no request left hanging (each has a 10 s cap).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fixturesDir, readFixtureBytes, splitCapture, startServer } from "@loopwright/testkit";

const problems = [];
process.on("unhandledRejection", (reason) => {
  console.error("unhandled rejection inside the testkit:", reason);
  process.exit(1);
});

async function call(server, path, body) {
  const init =
    body === undefined
      ? {}
      : { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } };
  const res = await fetch(`${server.origin}${path}`, { ...init, signal: AbortSignal.timeout(10_000) });
  return { status: res.status, bytes: new Uint8Array(await res.arrayBuffer()) };
}
const text = (r) => new TextDecoder().decode(r.bytes);
const chat = { model: "m", messages: [{ role: "user", content: "hi" }] };
const expect = (ok, what) => {
  if (!ok) problems.push(what);
};

// Every personality answers chat, its refusals and its routes from the recordings it ships.
const dir = fixturesDir();
expect(dir.includes("node_modules"), `fixturesDir() should be inside the installed package, got ${dir}`);
for (const name of ["openai", "llamacpp", "vllm", "lmstudio"]) {
  const server = await startServer({ personality: name, replies: () => ({ content: "ok" }) });
  try {
    const answers = {
      chat: await call(server, "/v1/chat/completions", chat),
      refused: await call(server, "/v1/chat/completions", {
        ...chat,
        stream_options: { include_usage: true },
      }),
      overflow: await call(server, "/v1/chat/completions", {
        ...chat,
        messages: [{ role: "user", content: "word ".repeat(300_000) }],
      }),
      models: await call(server, "/v1/models"),
      props: await call(server, "/props"),
      lmstudio: await call(server, "/api/v0/models"),
      unknown: await call(server, "/nowhere"),
    };
    for (const [what, r] of Object.entries(answers)) {
      expect(
        r.status !== 500 || !/testkit/.test(text(r)),
        `${name} ${what}: ${r.status} ${text(r).slice(0, 300)}`,
      );
    }
    expect(
      answers.chat.status === 200,
      `${name} chat: ${answers.chat.status} ${text(answers.chat).slice(0, 200)}`,
    );
    if (name === "llamacpp" || name === "vllm")
      expect(
        answers.overflow.status >= 400,
        `${name} did not refuse an overflowing prompt (${answers.overflow.status})`,
      );
    console.log(
      `${name}: ${Object.entries(answers)
        .map(([k, r]) => `${k} ${r.status}`)
        .join(", ")}`,
    );
  } finally {
    await server.close();
  }
}

// The scripted model reads add(a, b) off its schema.
{
  const server = await startServer({ scriptedModel: { chunkDelayMs: 0 } });
  try {
    const add = {
      type: "function",
      function: {
        name: "add",
        description: "Add two numbers",
        parameters: {
          type: "object",
          properties: { a: { type: "number" }, b: { type: "number" } },
          required: ["a", "b"],
        },
      },
    };
    const r = await call(server, "/v1/chat/completions", {
      model: "sim",
      messages: [{ role: "user", content: "What is 17 + 25?" }],
      tools: [add],
    });
    const args = JSON.parse(text(r)).choices?.[0]?.message?.tool_calls?.[0]?.function?.arguments;
    expect(args === '{"a":17,"b":25}', `scripted model: add called with ${args}`);
    console.log(`scripted model: add ${args}`);
  } finally {
    await server.close();
  }
}

// Every published recording replays byte for byte (a curl capture: its body).
function files(at) {
  return readdirSync(at).flatMap((n) =>
    statSync(join(at, n)).isDirectory() ? files(join(at, n)) : [join(at, n)],
  );
}
const recordings = files(dir).map((f) => relative(dir, f));
{
  const server = await startServer({
    replies: (request) => ({ type: "replay", fixture: request.body.fixture }),
  });
  try {
    for (const rel of recordings) {
      const r = await call(server, "/v1/chat/completions", { ...chat, fixture: rel });
      const bytes = readFixtureBytes(rel);
      const body = splitCapture(bytes)?.body ?? bytes;
      expect(Buffer.from(r.bytes).equals(Buffer.from(body)), `replay of ${rel} differs (${r.status})`);
    }
    console.log(`replayed ${recordings.length} recordings byte for byte`);
  } finally {
    await server.close();
  }
}
expect(recordings.length >= 190, `only ${recordings.length} recordings published`);
expect(
  readFileSync(join(dir, "README.md"), "utf8").includes("Where these files came from"),
  "recordings README missing",
);

// Failures inside the server: HTTP errors that name them.
{
  const server = await startServer({
    replies: (request) => {
      if (request.body.fail === "throw") throw new Error("reply bug");
      return { type: "replay", fixture: "wire/none.sse" };
    },
    personality: { name: "broken", props: () => JSON.parse("{") },
  });
  try {
    const thrown = await call(server, "/v1/chat/completions", { ...chat, fail: "throw" });
    const missing = await call(server, "/v1/chat/completions", chat);
    const hook = await call(server, "/props");
    expect(thrown.status === 500 && text(thrown).includes("reply bug"), `throwing reply: ${text(thrown)}`);
    expect(
      missing.status === 500 && text(missing).includes("wire/none.sse"),
      `missing recording: ${text(missing)}`,
    );
    expect(
      hook.status === 500 && text(hook).includes("broken personality's props failed"),
      `personality bug: ${text(hook)}`,
    );
    console.log(
      "failures inside the server: 500s naming a throwing reply, a missing recording, a personality bug",
    );
  } finally {
    await server.close();
  }
}

if (problems.length > 0) {
  console.error(`testkit smoke test failed:\n- ${problems.join("\n- ")}`);
  process.exit(1);
}
console.log(
  "testkit from its packed tarball: every personality, the scripted model and every recording work",
);
