// Lists optional properties of the input-side interfaces (what a host writes and passes in: options,
// configs, policies, endpoints, specs, server entries) that do not admit `undefined`. Under
// `exactOptionalPropertyTypes` such a property refuses `apiKey: process.env.X` or a forwarded
// optional parameter, though the code reads `undefined` as absent; so they are written
// `name?: T | undefined`. Result and event types are not checked.
//   node scripts/check-optional-undefined.mjs      exit 1 when one is found
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";

const root = new URL("..", import.meta.url).pathname;

// An interface or type alias is input-side when its name ends so (a host writes it)…
const INPUT = /(Options|Config|Policy|Spec|Settings|Endpoint|Parts|Hooks|Server|Entry)$/;
// …or when it is one of these (`package/Interface`): replies, hook results, the `…Like` shapes read.
// Not ledger/MessageLike (and the ContentPartLike/ToolCallLike in it) or negotiate/ToolDefinition:
// they are handed back too (a compaction's messages, `buildBody`'s tools) and must still assign to
// the openai SDK's types, whose optional fields take no `undefined`.
// Not events/SignalLike: a host passes its AbortSignal, whose DOM `addEventListener` options declare
// `once?: boolean`; with `| undefined` there, an AbortSignal would no longer fit under the flag.
const INPUT_NAMES = new Set([
  "agent/AfterToolCallResult",
  "agent/AgentOptions",
  "agent/AgentTool",
  "agent/BeforeToolCallResult",
  "agent/SessionOptions",
  "client/ClientPoolOptions",
  "client/KeyedEndpoint",
  "client/LookupOptions",
  "client/SecretBearer",
  "client/WindowDiscoveryOptions",
  "client/WindowSettings",
  "events/RunMetricsOptions",
  "hooks/AssembleOptions",
  "hooks/ConsultOptions",
  "hooks/GatherOptions",
  "hooks/HookOutcome",
  "hooks/NotifyOptions",
  "hooks/UntrustedOptions",
  "ledger/CalibrationOptions",
  "ledger/CompactionHooks",
  "ledger/ContextTokensOptions",
  "ledger/EstimateOptions",
  "ledger/HookOutcomeLike",
  "ledger/LedgerRequest",
  "ledger/PlanCompactionOptions",
  "ledger/PruneOptions",
  "ledger/RequestBodyLike",
  "ledger/RunCompactionOptions",
  "loop/AgentLoopOptions",
  "loop/AgentParts",
  "loop/ContinueTurnOptions",
  "loop/HookResult",
  "loop/LoopHooks",
  "loop/RetryPolicy",
  "loop/RunOptions",
  "loop/RunTurnOptions",
  "loop/RuntimeOptions",
  "loop/RuntimeStores",
  "loop/StepPlan",
  "loop/ToolPolicy",
  "negotiate/BackoffOptions",
  "negotiate/BuildBodyOptions",
  "negotiate/CapabilityStoreOptions",
  "negotiate/ContextOverflowOptions",
  "negotiate/ModelParams",
  "negotiate/NegotiateOptions",
  "redis/RedisBusOptions",
  "redis/RedisCalibrationOptions",
  "redis/RedisCapabilityStoreOptions",
  "redis/RedisOptions",
  "redis/RedisStoresOptions",
  "redis/RedisWatchOptions",
  "schema-compat/CheckStrictOptions",
  "schema-compat/FunctionToolLike",
  "schema-compat/NamedToolLike",
  "schema-compat/SanitizeOptions",
  "schema-compat/SanitizeToolsOptions",
  "side-task/AskJsonOptions",
  "side-task/CatalogServerLike",
  "side-task/CatalogToolLike",
  "side-task/KeywordOptions",
  "side-task/PreselectOptions",
  "side-task/SideTaskImagePart",
  "side-task/SideTaskOptions",
  "side-task/SummariserOptions",
  "side-task/SummaryMessageLike",
  "side-task/TaskCallOptions",
  "side-task/TaskEndpoint",
  "side-task/TaskSettings",
  "spec/AgentSpec",
  "spec/BundleSpec",
  "spec/BundledServer",
  "spec/EndpointSpec",
  "spec/HookSpec",
  "spec/LimitsSpec",
  "spec/ModelSpec",
  "spec/ParseSpecOptions",
  "spec/PreselectSpec",
  "spec/TaskSpec",
  "spec/ToolsSpec",
  "stream/ChoiceLike",
  "stream/ChunkLike",
  "stream/CompletionLike",
  "stream/ContentPartLike",
  "stream/DeltaLike",
  "stream/FenceOptions",
  "stream/ReasoningDetailLike",
  "stream/StreamTurnOptions",
  "stream/TimingsLike",
  "stream/ToolCallDeltaLike",
  "stream/TurnReaderOptions",
  "stream/UsageLike",
  "testkit/ErrorReply",
  "testkit/LiveOptions",
  "testkit/LlamacppPersonalityOptions",
  "testkit/LmstudioPersonalityOptions",
  "testkit/MistralPersonalityOptions",
  "testkit/ModelListing",
  "testkit/OpenAiPersonalityOptions",
  "testkit/RawReply",
  "testkit/ReplayReply",
  "testkit/ScriptedModelOptions",
  "testkit/ScriptedToolCall",
  "testkit/ScriptedUsage",
  "testkit/ServerOptions",
  "testkit/TurnReply",
  "testkit/VllmPersonalityOptions",
  "tool-calls/ParseJsonOptions",
  "tool-calls/ParseToolArgumentsOptions",
  "tool-calls/RecoverToolCallsOptions",
  "tool-calls/ToolNameLike",
  "tool-loading/CallInput",
  "tool-loading/CatalogTextOptions",
  "tool-loading/CatalogTool",
  "tool-loading/MessageLike",
  "tool-loading/ProxiedCallOptions",
  "tool-loading/ProxiedParseOptions",
  "tool-loading/ReadOptions",
  "tool-loading/StepInput",
  "tool-loading/ToolLoadingOptions",
  "tools/ToolCall",
  "tools/ToolContext",
  "tools-mcp/ConnectionOptions",
  "tools-mcp/McpElicitationAnswer",
  "tools-mcp/McpHookSpec",
  "tools-mcp/McpHttpServer",
  "tools-mcp/McpPoolOptions",
  "tools-mcp/McpServerEntry",
  "tools-mcp/McpServersOptions",
  "tools-mcp/McpStdioServer",
]);
// Kept without `undefined` on purpose: `package/Interface` or `package/Interface.property`.
const KEPT = new Set([
  // runOwned tells a present `runId: undefined` from an absent one and refuses it.
  "loop/RunOptions.runId",
  // A hook answer's own `args`/`result` key holding undefined is a rewrite or redaction that
  // produced nothing, refused at run time; under the flag the type refuses it too.
  "agent/BeforeToolCallResult.args",
  "agent/AfterToolCallResult.result",
  // Computed and handed out, or internal state: not written by a host.
  "spec/ResolvedAgentConfig",
  "spec/InternalParseOptions",
  "loop/RunHooks",
  "tools-mcp/CatalogServer",
]);

const found = [];
for (const pkg of readdirSync(join(root, "packages"))) {
  const dir = join(root, "packages", pkg, "src");
  let files;
  try {
    files = readdirSync(dir, { recursive: true });
  } catch {
    continue;
  }
  for (const file of files) {
    if (!file.endsWith(".ts") || /\.test(-d)?\.ts$/.test(file) || file.includes("test-support")) continue;
    const path = join(dir, file);
    const source = ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.Latest, true);
    const visit = (node, owner) => {
      let name = owner;
      if (ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node)) name = node.name.text;
      if (
        ts.isPropertySignature(node) &&
        node.questionToken &&
        node.type &&
        name !== undefined &&
        (INPUT.test(name) || INPUT_NAMES.has(`${pkg}/${name}`)) &&
        !KEPT.has(`${pkg}/${name}`) &&
        !KEPT.has(`${pkg}/${name}.${node.name.getText()}`)
      ) {
        const type = node.type;
        const parts = ts.isUnionTypeNode(type) ? type.types : [type];
        const admits = parts.some(
          (t) => t.kind === ts.SyntaxKind.UndefinedKeyword || t.kind === ts.SyntaxKind.UnknownKeyword,
        );
        if (!admits) {
          const { line } = source.getLineAndCharacterOfPosition(node.getStart());
          found.push(`${relative(root, path)}:${line + 1} ${name}.${node.name.getText()}`);
        }
      }
      ts.forEachChild(node, (child) => visit(child, name));
    };
    visit(source, undefined);
  }
}
for (const line of found) console.log(line);
if (found.length > 0) {
  console.error(`${found.length} optional input properties without \`| undefined\``);
  process.exit(1);
}
console.log("check-optional-undefined: every optional input property admits undefined");
