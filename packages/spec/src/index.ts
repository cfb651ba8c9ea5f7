// @loopwright/spec: an agent as a versioned, credential-free JSON document, layered into the flat
// config the loop takes. Imports nothing but zod, so a browser form can load it.

export type { AgentSpecErrorCode } from "./errors.js";
export { AgentSpecError } from "./errors.js";
export { exportSpec } from "./export-spec.js";
export type { SecretHint } from "./find-spec-secrets.js";
export { findSpecSecrets, withoutArgSecrets, withoutSecrets } from "./find-spec-secrets.js";
export type { SpecIssue, SpecIssueCode } from "./issues.js";
export type { ParseSpecOptions, ParseSpecResult } from "./parse-spec.js";
export { parseSpec } from "./parse-spec.js";
export { withoutProseSecrets } from "./prose-secrets.js";
export { DEFAULT_MAX_TOOL_ITERATIONS, resolveAgentSpec } from "./resolve-agent-spec.js";
export {
  AGENT_SPEC_SCHEMA_ID,
  agentSpecJsonSchema,
  agentSpecSchema,
  RESERVED_BODY_FIELDS,
  SPEC_FEATURES,
  SPEC_TOKEN,
} from "./schema.js";
export type { SecretHide } from "./secret-signs.js";
export { looksLikeKey, looksSecretName, SecretSign } from "./secret-signs.js";
export type {
  AgentSpec,
  BundledServer,
  BundleSpec,
  EndpointSpec,
  HookEvent,
  HookSpec,
  LimitsSpec,
  ModelSpec,
  PreselectSpec,
  PromptEntry,
  ReasoningEffort,
  ResolvedAgentConfig,
  ResolvedHook,
  ResolvedTask,
  ResolvedTaskEndpoint,
  TaskEndpointSpec,
  TaskSpec,
  ToolDiscovery,
  ToolsSpec,
} from "./types.js";
export { withoutCommandLineSecrets } from "./without-command-line-secrets.js";
