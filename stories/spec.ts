// Story (b), spec alone: a host validates an agent document a user pasted, shows what was wrong in
// words the user can act on, layers it over its own settings, and exports a copy safe to share.
// Guided by packages/spec/README.md; installs @loopwright/spec and zod.
import assert from "node:assert/strict";
import {
  type AgentSpec,
  AgentSpecError,
  exportSpec,
  findSpecSecrets,
  parseSpec,
  type ResolvedAgentConfig,
  resolveAgentSpec,
  SPEC_TOKEN,
  type SpecIssue,
} from "@loopwright/spec";

const pasted = `{
  "spec": "loopwright.agent/1",
  "name": "Reviewer",
  "model": {
    "name": "qwen3-32b",
    "reasoningEffort": "ultra",
    "endpoint": { "baseUrl": "https://reviewer:hunter22@llm.example.com/v1?api_key=sk-abcdef123456" }
  },
  "prompt": [{ "id": "role", "text": "You review pull requests." }],
  "limits": { "maxToolIterations": 6 }
}`;

// Handed the text instead of the parsed object: refused, with the fix named.
const unparsed = parseSpec(pasted);
assert.equal(unparsed.spec, undefined);
assert.match(String(unparsed.errors[0]), /JSON\.parse/);

// Parsed: the bad field is dropped with a message naming what is allowed, never the user's value.
const { spec, errors, warnings } = parseSpec(JSON.parse(pasted));
if (!spec) throw new Error(errors.join("\n"));
const shown: string[] = warnings.map((issue: SpecIssue) => `${issue.path} (${issue.code}): ${issue.message}`);
console.log(shown.join("\n"));
assert.equal(warnings.length, 1);
assert.equal(warnings[0]?.path, "model.reasoningEffort");
assert.match(String(warnings[0]), /"low", "medium", "high"/);
assert.doesNotMatch(String(warnings[0]), /ultra/);

// Layered over the host's settings, weakest first, into the flat config the loop takes.
const settings: AgentSpec = {
  spec: SPEC_TOKEN,
  model: { name: "gpt-4o-mini", temperature: 0.2, reasoningEffort: "low" },
  limits: { maxToolIterations: 12 },
};
const config: ResolvedAgentConfig = resolveAgentSpec([settings, spec]);
assert.equal(config.model, "qwen3-32b");
assert.equal(config.temperature, 0.2);
assert.equal(config.reasoningEffort, "low");
assert.equal(config.maxToolIterations, 6);
assert.equal(config.apiKey, "");
assert.deepEqual(
  config.prompt.map((part) => part.text),
  ["You review pull requests."],
);

// A hand-built layer that would not pass parseSpec is refused with a typed error, not sent.
const handBuilt: AgentSpec = { spec: SPEC_TOKEN, model: { temperature: 5 } };
let refused: unknown;
try {
  resolveAgentSpec([settings, handBuilt]);
} catch (error) {
  refused = error;
}
if (!AgentSpecError.isInstance(refused))
  throw new Error(`expected an AgentSpecError, got ${String(refused)}`);
assert.equal(refused.code, "not-a-spec");
assert.match(refused.message, /layer 1 .*model\.temperature: expected a number from 0 to 2/);
console.log(`${refused.name} (${refused.code}): ${refused.message}`);

// Before sharing it: the credential in the base URL is flagged, and the exported copy has none.
assert.ok(findSpecSecrets(spec).some((hint) => hint.path === "model.endpoint.baseUrl"));
const shared = exportSpec(spec);
assert.deepEqual(findSpecSecrets(shared), []);
const sharedUrl = shared.model?.endpoint?.baseUrl ?? "";
assert.equal(sharedUrl, "https://llm.example.com/v1");
assert.ok(parseSpec(JSON.parse(JSON.stringify(shared))).spec, "the exported copy parses back");
console.log("story spec: ok");
