// Writing JSON text as a model writes it, for the round-trip models of schema-compat and tools.

/**
 * JSON text of a value as a model writes it, digit for digit: `JSON.stringify`'s, except that -0
 * is written "-0" (`JSON.stringify` writes "0"), which `JSON.parse` reads back as -0. A round-trip
 * model that writes a generated -0 with `JSON.stringify` no longer sends the call it generated, and
 * the library, rightly reading "0" as 0, would look at fault (schema-compat's model, seed
 * -1325616714 at 5,000 runs: `extra: { a: -0 }` written '{"a":0}', restored as { a: 0 }).
 */
export function jsonText(value: unknown): string {
  if (Object.is(value, -0)) return "-0";
  if (Array.isArray(value)) return `[${value.map(jsonText).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    return `{${Object.entries(value)
      .map(([key, item]) => `${JSON.stringify(key)}:${jsonText(item)}`)
      .join(",")}}`;
  }
  return JSON.stringify(value);
}
