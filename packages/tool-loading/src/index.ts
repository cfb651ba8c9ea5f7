/** schema-compat's types this package's signatures name (a function tool in the shape it reads; a tool order), re-exported so a host can name them with this package alone. */
export type { FunctionToolLike, ToolOrder } from "@loopwright/schema-compat";
export type { CatalogEntry, CatalogServer, CatalogTextOptions, CatalogTool, LoadingMode } from "./catalog.js";
export { catalogFromTools, catalogText, checkCatalog, descriptionLine } from "./catalog.js";
export type { ToolLoadingErrorCode } from "./errors.js";
export { ToolLoadingError } from "./errors.js";
export type { MessageLike } from "./load-result.js";
export {
  definitionLine,
  heldDefinitions,
  holdsDefinitions,
  loadResult,
  proxyLoadResult,
} from "./load-result.js";
export { CALL_TOOL, CALL_TOOL_NAME, LOAD_TOOLS, LOAD_TOOLS_NAME, PROXY_TOOLS } from "./meta-tools.js";
export type { NameResolution } from "./names.js";
export {
  carryOver,
  DEFAULT_CARRY_CAP,
  DEFAULT_LOAD_CAP,
  expandNames,
  loadNames,
  MAX_NAME_LENGTH,
  type ToolResolver,
  toolNameResolver,
} from "./names.js";
export type {
  OtherReaderOptions,
  ProxiedCall,
  ProxiedCallOptions,
  ProxiedParseOptions,
  ReaderAnswersArguments,
} from "./proxied-call.js";
export { proxiedCall } from "./proxied-call.js";
export type {
  CallInput,
  CallRoute,
  LoadingStart,
  PreselectionExchange,
  PreselectRouting,
  StepInput,
  StepRequest,
  ToolDiscovery,
  ToolLoading,
  ToolLoadingOptions,
} from "./tool-loading.js";
export { createToolLoading } from "./tool-loading.js";
