// Schemas shared by review-r68.test.ts and the live grammar test (not part of the build).

/** Schemas whose text holds half a surrogate pair (a description cut inside an emoji, say). */
export const LONE_HALVES: [where: string, schema: Record<string, unknown>][] = [
  ["a description", { type: "string", description: "Pick one 🙂 or \uD83D" }],
  ["a title", { type: "string", title: "\uDE00 title" }],
  ["an enum value", { type: "string", enum: ["a\uD83D", "b"] }],
  ["a const", { const: "x\uDE00" }],
  ["a format", { type: "string", format: "odd\uD83D" }],
  ["a pattern moved to the description", { type: "string", pattern: "^[^\uD800-\uDFFF]+$" }],
];
