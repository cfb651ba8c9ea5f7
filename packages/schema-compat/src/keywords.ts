/** The type names JSON Schema defines. */
export const TYPE_NAMES = ["string", "number", "integer", "boolean", "object", "array", "null"] as const;

/** One of the JSON Schema type names. */
export type TypeName = (typeof TYPE_NAMES)[number];

/** `format` values both OpenAI strict mode and llama.cpp's converter understand. */
export const STRICT_FORMATS: readonly string[] = ["date-time", "date", "time", "uuid"];

/** Object nesting OpenAI strict mode allows (objects inside objects, the root counting as one). */
export const STRICT_MAX_DEPTH = 10;

/** Every keyword a sanitized schema can contain. */
export const STRICT_KEYWORDS: readonly string[] = [
  "type",
  "description",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "enum",
  "anyOf",
  "pattern",
  "format",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "minItems",
  "maxItems",
];

/** Every keyword a relaxed schema can contain: structure and descriptions, no constraints. */
export const RELAXED_KEYWORDS: readonly string[] = [
  "type",
  "description",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "enum",
  "anyOf",
];
