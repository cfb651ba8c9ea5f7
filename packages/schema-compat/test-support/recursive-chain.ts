// A recursive union and a list written under it, shared by review-r94r.test.ts and
// review-r94n.test.ts (not part of the build).

/** A node is one of two overlapping kinds, each with a `next` node. */
export const Chain = {
  $defs: {
    Node: {
      anyOf: [
        { type: "object", properties: { a: { type: "string" }, next: { $ref: "#/$defs/Node" } } },
        { type: "object", properties: { b: { type: "string" }, next: { $ref: "#/$defs/Node" } } },
      ],
    },
  },
  $ref: "#/$defs/Node",
};

/**
 * `length` nodes over an end node, each with an `a` the strict schema made nullable: left out by
 * writing null (`withNull`, as the model writes it) or not written (what the tool should get).
 */
export function chain(length: number, withNull: boolean): Record<string, unknown> {
  let node: Record<string, unknown> = withNull ? { a: "end", b: null } : { a: "end" };
  for (let i = 0; i < length; i++) node = withNull ? { next: node, a: null, b: "x" } : { next: node, b: "x" };
  return node;
}
