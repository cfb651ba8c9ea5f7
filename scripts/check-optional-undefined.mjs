// Lists optional properties of the input-side interfaces (what a host writes and passes in: options,
// configs, policies, endpoints, specs, server entries) that do not admit `undefined`. Under
// `exactOptionalPropertyTypes` such a property refuses `apiKey: process.env.X` or a forwarded
// optional parameter, though the code reads `undefined` as absent; so they are written
// `name?: T | undefined`. Result and event types are not checked.
// Input-side are: interfaces named so (INPUT, INPUT_NAMES below); interfaces and type aliases a
// parameter of the public API (what a package's src/index.ts exports) is typed with, what a host
// builds to pass in (ledger's `RecordedLedgerRequest`); and object types written inline in such a
// parameter (`callTool(name, args, options?: { signal?: AbortSignal | undefined })`). Not those of
// error constructors, nor of the methods of interfaces the host writes (see `apiParameters`).
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
// Met as a parameter's type but not checked: events (a listener's or emitter's, by design, as above)
// and the shapes named above as handed back too.
const NOT_INPUT = /(Event|EventLike)$/;
const HANDED_BACK = new Set([
  "ledger/MessageLike",
  "ledger/ContentPartLike",
  "ledger/ToolCallLike",
  "negotiate/ToolDefinition",
  "events/SignalLike",
]);

/**
 * The names a package's entry (`src/index.ts`, its only export besides package.json) makes public:
 * a declaration exported from one module to another inside the package is no host's input.
 */
function publicNames(sources) {
  const names = new Set();
  const entry = sources.find((source) => /[\\/]src[\\/]index\.ts$/.test(source.fileName));
  for (const statement of entry?.statements ?? []) {
    if (
      ts.isExportDeclaration(statement) &&
      statement.exportClause &&
      ts.isNamedExports(statement.exportClause)
    ) {
      for (const element of statement.exportClause.elements)
        names.add((element.propertyName ?? element.name).text);
    } else if (hasExport(statement) && statement.name) names.add(statement.name.text);
    else if (hasExport(statement) && ts.isVariableStatement(statement)) {
      for (const declaration of statement.declarationList.declarations)
        if (ts.isIdentifier(declaration.name)) names.add(declaration.name.text);
    }
  }
  return names;
}
const hasExport = (node) => (ts.getCombinedModifierFlags(node) & ts.ModifierFlags.Export) !== 0;
const isPublic = (member) =>
  !(ts.getCombinedModifierFlags(member) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) &&
  !(member.name && ts.isPrivateIdentifier(member.name));

/**
 * The parameters a host passes in: those of exported functions (declared, or a `const` holding an
 * arrow or function expression), of the public methods and constructors of exported classes, and
 * of the methods of exported interfaces (what a package hands out for the host to call).
 */
function apiParameters(source, exported, handedBack, isInputName) {
  const found = [];
  const add = (label, parameters) => {
    for (const parameter of parameters) found.push({ label, parameter });
  };
  for (const statement of source.statements) {
    if (!hasExport(statement)) continue;
    if (ts.isFunctionDeclaration(statement) && statement.name) {
      if (exported.has(statement.name.text)) add(statement.name.text, statement.parameters);
    } else if (ts.isVariableStatement(statement)) {
      for (const declaration of statement.declarationList.declarations) {
        const init = declaration.initializer;
        if (!ts.isIdentifier(declaration.name) || !exported.has(declaration.name.text)) continue;
        if (init && (ts.isArrowFunction(init) || ts.isFunctionExpression(init)))
          add(declaration.name.text, init.parameters);
      }
    } else if (!statement.name || !exported.has(statement.name.text) || handedBack(statement.name.text)) {
      // Neither public nor input.
    } else if (ts.isClassDeclaration(statement)) {
      // An error is the package's to build and the host's to read: its constructor's options (a
      // stream's partial `Turn`, a listing's status) are results, not what a host writes.
      const base = statement.heritageClauses?.find((c) => c.token === ts.SyntaxKind.ExtendsKeyword)?.types[0];
      if (/Error$/.test(statement.name.text) || /Error$/.test(base?.expression.getText() ?? "")) continue;
      for (const member of statement.members) {
        if (!isPublic(member)) continue;
        if (ts.isConstructorDeclaration(member)) add(`${statement.name.text}.constructor`, member.parameters);
        else if (ts.isMethodDeclaration(member) && member.name)
          add(`${statement.name.text}.${member.name.getText()}`, member.parameters);
      }
    } else if (ts.isInterfaceDeclaration(statement)) {
      // An interface the host writes (a tool, hooks) has methods the package calls: what they are
      // handed (a tool's context) is the package's output, not the host's input.
      if (isInputName(statement.name.text)) continue;
      for (const member of statement.members) {
        if (ts.isMethodSignature(member) && member.name)
          add(`${statement.name.text}.${member.name.getText()}`, member.parameters);
      }
    }
  }
  return found;
}

/** The parts of a parameter's type: a union's members, an array's element, a `Readonly<…>`'s argument. */
function typeParts(type) {
  if (ts.isUnionTypeNode(type) || ts.isIntersectionTypeNode(type)) return type.types.flatMap(typeParts);
  if (ts.isParenthesizedTypeNode(type)) return typeParts(type.type);
  if (ts.isArrayTypeNode(type)) return typeParts(type.elementType);
  if (ts.isTypeOperatorNode(type)) return typeParts(type.type);
  if (
    ts.isTypeReferenceNode(type) &&
    ts.isIdentifier(type.typeName) &&
    /^(Readonly|ReadonlyArray|Array|Partial)$/.test(type.typeName.text) &&
    type.typeArguments
  )
    return type.typeArguments.flatMap(typeParts);
  return [type];
}

/** An optional property that does not admit `undefined`. */
const refusesUndefined = (node) => {
  const parts = ts.isUnionTypeNode(node.type) ? node.type.types : [node.type];
  return !parts.some(
    (t) => t.kind === ts.SyntaxKind.UndefinedKeyword || t.kind === ts.SyntaxKind.UnknownKeyword,
  );
};

const found = [];
for (const pkg of readdirSync(join(root, "packages"))) {
  const dir = join(root, "packages", pkg, "src");
  let files;
  try {
    files = readdirSync(dir, { recursive: true });
  } catch {
    continue;
  }
  const sources = [];
  for (const file of files) {
    if (!file.endsWith(".ts") || /\.test(-d)?\.ts$/.test(file) || file.includes("test-support")) continue;
    const path = join(dir, file);
    sources.push(ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.Latest, true));
  }
  // The package's types a parameter of its API is written with, and the object types written inline
  // there (checked at once: they have no name to be found by below).
  const parameterTypes = new Set();
  const exported = publicNames(sources);
  const handedBack = (name) => HANDED_BACK.has(`${pkg}/${name}`) || KEPT.has(`${pkg}/${name}`);
  const isInputName = (name) => INPUT.test(name) || INPUT_NAMES.has(`${pkg}/${name}`);
  for (const source of sources) {
    for (const { label, parameter } of apiParameters(source, exported, handedBack, isInputName)) {
      if (!parameter.type) continue;
      for (const part of typeParts(parameter.type)) {
        if (ts.isTypeReferenceNode(part) && ts.isIdentifier(part.typeName))
          parameterTypes.add(part.typeName.text);
        else if (ts.isTypeLiteralNode(part)) {
          const owner = `${label}(${parameter.name.getText()})`;
          for (const member of part.members) {
            if (!ts.isPropertySignature(member) || !member.questionToken || !member.type) continue;
            if (KEPT.has(`${pkg}/${owner}.${member.name.getText()}`) || !refusesUndefined(member)) continue;
            const { line } = source.getLineAndCharacterOfPosition(member.getStart());
            found.push(`${relative(root, source.fileName)}:${line + 1} ${owner}.${member.name.getText()}`);
          }
        }
      }
    }
  }
  const isInput = (name) =>
    isInputName(name) ||
    (parameterTypes.has(name) && !NOT_INPUT.test(name) && !HANDED_BACK.has(`${pkg}/${name}`));
  for (const source of sources) {
    const path = source.fileName;
    const visit = (node, owner) => {
      let name = owner;
      if (ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node)) name = node.name.text;
      if (
        ts.isPropertySignature(node) &&
        node.questionToken &&
        node.type &&
        name !== undefined &&
        isInput(name) &&
        !KEPT.has(`${pkg}/${name}`) &&
        !KEPT.has(`${pkg}/${name}.${node.name.getText()}`)
      ) {
        if (refusesUndefined(node)) {
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
