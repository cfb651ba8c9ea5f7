export { mayBacktrack, PATTERN_KEY_LIMIT } from "./backtracking.js";
export type { CheckStrictOptions, StrictSchemaIssue } from "./check-strict.js";
export { checkStrictSchema } from "./check-strict.js";
export type { SchemaCompatErrorCode } from "./errors.js";
export { SchemaCompatError } from "./errors.js";
export { isGrammarError } from "./grammar-error.js";
export type { BacktrackingPattern, SchemaPlace } from "./inherited-names.js";
export {
  argumentsPrototype,
  backtrackingPatterns,
  backtrackingRefusal,
  declaresInheritedName,
  INHERITED_NAMES,
  isArgumentsPrototype,
  isPlainPrototype,
  mapAlongSchema,
} from "./inherited-names.js";
export { RELAXED_KEYWORDS, STRICT_FORMATS, STRICT_KEYWORDS, STRICT_MAX_DEPTH } from "./keywords.js";
export type { RestoreOptions } from "./optional-nulls.js";
export { dropOptionalNulls, restoreArguments, takesOnlyStringAt, takesStringAt } from "./optional-nulls.js";
export type { ToolOrder } from "./order-tools.js";
export { orderTools } from "./order-tools.js";
export { REPETITION_LIMIT } from "./pattern.js";
export type { SanitizeOptions } from "./sanitize-schema.js";
export {
  INTEGER_BOUND_LIMIT,
  MAX_EXPANDED_CHARS,
  MAX_EXPANDED_NODES,
  MAX_NESTING,
  relaxSchema,
  sanitizeSchema,
} from "./sanitize-schema.js";
export type { SanitizeToolsOptions } from "./sanitize-tools.js";
export { relaxTools, sanitizeTools } from "./sanitize-tools.js";
export type {
  FunctionToolLike,
  JsonSchema,
  NamedToolLike,
  OtherToolLike,
  SanitizedTool,
  ToolLike,
} from "./types.js";
