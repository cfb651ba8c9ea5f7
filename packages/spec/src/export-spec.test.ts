// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are shell commands and spec placeholders, where ${…} is meant literally.
import { growth } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { AgentSpecError } from "./errors.js";
import { exportSpec } from "./export-spec.js";
import { findSpecSecrets } from "./find-spec-secrets.js";
import { parseSpec } from "./parse-spec.js";
import { SPEC_TOKEN } from "./schema.js";
import type { AgentSpec, BundledServer } from "./types.js";

const spec: AgentSpec = {
  spec: SPEC_TOKEN,
  model: { name: "m", extraBody: { top_k: 20 } },
  bundle: {
    mcpServers: [
      {
        name: "gh",
        command: "npx",
        args: ["gh-mcp", "--token", "abc"],
        env: { GITHUB_TOKEN: "ghp_x", DEBUG: "1" },
        cwd: "/srv",
      },
      { name: "mem", url: "https://mem.example/mcp?token=abc", headers: { Authorization: "Bearer abc" } },
    ],
  },
};

describe("exportSpec", () => {
  it("strips every bundled server's env and headers, redacts flagged places, and keeps the rest", () => {
    expect(exportSpec(spec)).toEqual({
      spec: SPEC_TOKEN,
      model: { name: "m", extraBody: { top_k: 20 } },
      bundle: {
        mcpServers: [
          { name: "gh", command: "npx", args: ["gh-mcp", "--token", "${TOKEN}"], cwd: "/srv" },
          { name: "mem", url: "https://mem.example/mcp" },
        ],
      },
    });
  });

  it("takes userinfo and key-like query parameters out of URLs, keeping the rest as written", () => {
    const withUrls: AgentSpec = {
      spec: SPEC_TOKEN,
      model: { endpoint: { baseUrl: "https://me:pw@api.example/v1?api_key=abc&region=${REGION}#x" } },
      tasks: { title: { endpoint: { baseUrl: "http://ghp_abcdefghijklmnopqrstuvwx@h.example/v1" } } },
    };
    const exported = exportSpec(withUrls);
    expect(exported.model?.endpoint?.baseUrl).toBe("https://api.example/v1?region=${REGION}#x");
    expect(exported.tasks?.title?.endpoint?.baseUrl).toBe("http://h.example/v1");
    expect(findSpecSecrets(exported)).toEqual([]);
  });

  it("replaces flagged arguments and telling extraBody fields with references a host fills in", () => {
    const flagged: AgentSpec = {
      spec: SPEC_TOKEN,
      model: { extraBody: { api_key: "abc", nested: { list: ["sk-abcdefghijklmnopqrstuvwx"] } } },
      bundle: {
        mcpServers: [
          {
            name: "s",
            command: "docker",
            args: [
              "run",
              "-e",
              "GITHUB_TOKEN=ghp_x",
              "--api-key=abc",
              "Authorization: Bearer abcdefgh1",
              "img",
            ],
          },
        ],
      },
    };
    const exported = exportSpec(flagged);
    expect(exported.model?.extraBody).toEqual({ api_key: "${API_KEY}", nested: { list: ["${SECRET}"] } });
    expect(exported.bundle?.mcpServers?.[0]?.args).toEqual([
      "run",
      "-e",
      "GITHUB_TOKEN=${GITHUB_TOKEN}",
      "--api-key=${API_KEY}",
      "Authorization: ${AUTHORIZATION}",
      "img",
    ]);
    expect(findSpecSecrets(exported)).toEqual([]);
  });

  it("yields a document that parses back whole", () => {
    const text = JSON.stringify(exportSpec(spec));
    const again = parseSpec(JSON.parse(text), { bundle: true });
    expect(again.errors).toEqual([]);
    expect(again.warnings).toEqual([]);
    expect(again.spec).toEqual(exportSpec(spec));
  });

  it("never changes its argument", () => {
    const before = JSON.stringify(spec);
    exportSpec(spec);
    expect(JSON.stringify(spec)).toBe(before);
  });

  it("leaves a spec with nothing bundled as it was", () => {
    const plain: AgentSpec = { spec: SPEC_TOKEN, prompt: [{ id: "a", text: "b" }] };
    expect(exportSpec(plain)).toEqual(plain);
  });

  it("throws an AgentSpecError naming the problem for something that is not a parsed spec", () => {
    const bad = { spec: SPEC_TOKEN, model: { temperature: 9 } } as AgentSpec;
    expect(() => exportSpec(bad)).toThrow(AgentSpecError);
    expect(() => exportSpec(bad)).toThrow(
      /exportSpec: the spec is not a parsed agent spec: model\.temperature/,
    );
  });
});

describe("exportSpec: one reference per distinct credential across the spec (r42a #9)", () => {
  const server = (name: string, ...args: string[]) => ({ name, command: "srv-mcp", args });
  const bundled = (...mcpServers: BundledServer[]): AgentSpec => ({
    spec: SPEC_TOKEN,
    bundle: { mcpServers },
  });
  const exportedArgs = (doc: AgentSpec) => exportSpec(doc).bundle?.mcpServers?.map((entry) => entry.args);
  /** The value at a hint's path (`bundle.mcpServers[1].args[2]`, `model.extraBody.api_key`). */
  const at = (doc: unknown, path: string): unknown => {
    let value = doc;
    for (const [, key, index] of path.matchAll(/\.?([A-Za-z_$][\w$]*)|\[(\d+)\]/g))
      value = (value as Record<string, unknown>)[key ?? Number(index)];
    return value;
  };

  it("gives two servers' different passwords two names, and the same token in two servers one", () => {
    const doc = bundled(
      server("github", "--password", "aaa111", "--token", "tok-shared-9x"),
      server("gitlab", "--password", "bbb222", "--token", "tok-shared-9x"),
      // The first password again, written as an assignment: still its first reference.
      server("mirror", "-e", "MIRROR_PASSWORD=aaa111"),
    );
    // Before: `${PASSWORD}` for both passwords, so filling it gave gitlab github's password.
    expect(exportedArgs(doc)).toEqual([
      ["--password", "${PASSWORD}", "--token", "${TOKEN}"],
      ["--password", "${PASSWORD_2}", "--token", "${TOKEN}"],
      ["-e", "MIRROR_PASSWORD=${PASSWORD}"],
    ]);
  });

  it("gives different key shapes different names, the same key one, identifiers and prose included", () => {
    const keyA = "ghp_abcdefghijklmnopqrstuvwxyz0123";
    const keyB = "ghp_zyxwvutsrqponmlkjihgfedcba9876";
    const doc: AgentSpec = {
      spec: SPEC_TOKEN,
      prompt: [{ id: "p", text: `Use ${keyB} for the mirror.` }],
      bundle: {
        mcpServers: [server("a", keyA), server("b", keyB), server(`c ${keyA}`, "--verbose")],
      },
    };
    const out = exportSpec(doc);
    expect(out.bundle?.mcpServers?.map((entry) => [entry.name, entry.args?.[0]])).toEqual([
      ["a", "${SECRET}"],
      ["b", "${SECRET_2}"],
      ["c ${SECRET}", "--verbose"],
    ]);
    expect(out.prompt?.[0]?.text).toBe("Use ${SECRET_2} for the mirror.");
  });

  it("never takes a name the author wrote, a whole script's, or one the environment always sets", () => {
    const doc = bundled(
      // The author's own `${PASSWORD}` and `${API_KEY}` mean something else: the found ones go past them.
      server("vault", "--password", "${PASSWORD}", "--note", "${API_KEY}"),
      server("db", "--password", "hunter2x9", "--api-key=abc123def456"),
      // A flag whose own name is one already given, and a whole script's name written by the author.
      server("replica", "--password", "hunter3x9", "--password-3", "hunter4x9", "--x", "${GH_COMMAND}"),
      { name: "gh", command: "bash", args: ["-lc", "exec gh-mcp --token gh0tok3n99"] },
      server("shell", "--pwd", "pw-one-111", "--pwd", "pw-two-222"),
    );
    expect(exportedArgs(doc)).toEqual([
      ["--password", "${PASSWORD}", "--note", "${API_KEY}"],
      ["--password", "${PASSWORD_2}", "--api-key=${API_KEY_2}"],
      ["--password", "${PASSWORD_3}", "--password-3", "${PASSWORD_3_2}", "--x", "${GH_COMMAND}"],
      ["-lc", "${GH_COMMAND_2}"],
      // Never `${PWD}`, which the environment always sets to the working directory.
      ["--pwd", "${PWD_SECRET}", "--pwd", "${PWD_SECRET_2}"],
    ]);
  });

  it("reports, for each place, the references the export writes there", () => {
    const doc: AgentSpec = {
      spec: SPEC_TOKEN,
      model: { extraBody: { api_key: "abc123def456" } },
      bundle: {
        mcpServers: [
          { ...server("a", "--api-key", "zzz999yyy888", "postgres://u:pw1234@db/app"), env: { TOKEN: "t" } },
          server("b", "--run", "exec srv --token t0k3n11 --api-key abc123def456"),
        ],
      },
    };
    const hints = findSpecSecrets(doc);
    expect(hints.map((hint) => [hint.path, hint.references])).toEqual([
      ["model.extraBody.api_key", ["${API_KEY}"]],
      ["bundle.mcpServers[0].args[1]", ["${API_KEY_2}"]],
      // A URL's credentials are dropped, and `env` is removed: no reference.
      ["bundle.mcpServers[0].args[2]", undefined],
      ["bundle.mcpServers[0].env.TOKEN", undefined],
      ["bundle.mcpServers[1].args[1]", ["${TOKEN}", "${API_KEY}"]],
    ]);
    const out = exportSpec(doc);
    // Each reference reported is written at its place in the export.
    for (const { path, references = [] } of hints)
      for (const reference of references) expect(at(out, path)).toContain(reference);
  });

  it("is a fixed point, and names 16 000 servers' passwords in linear time", async () => {
    const servers = (count: number) =>
      bundled(...Array.from({ length: count }, (_, i) => server(`s${i}`, "--password", `pw-${i}-x9`)));
    // Against a sixteenth of them, timed in the same run: linear is about 16 times that; quadratic,
    // looking for a free suffix from `_2` each time, 256 (and minutes). The bound is four times
    // from each: a ratio of two timings moved 3 to 4 times on a loaded CI host.
    const docs = new Map([1_000, 16_000].map((count) => [count, servers(count)]));
    expect(await growth((count) => exportSpec(docs.get(count) as AgentSpec), 1_000, 16)).toBeLessThan(64);
    const out = exportSpec(docs.get(16_000) as AgentSpec);
    expect(out.bundle?.mcpServers?.at(-1)?.args).toEqual(["--password", "${PASSWORD_16000}"]);
    expect(exportSpec(out)).toEqual(out);
    expect(findSpecSecrets(out)).toEqual([]);
    // The growth above judges the time; this bound is for a hang. Some 5 s of CPU in all (a warm-up
    // and three timings of each size), it ran past 30 s twice on a two-core machine loaded with the
    // rest of the suite and two CPU burners (55 s and 58 s).
  }, 120_000);
});
