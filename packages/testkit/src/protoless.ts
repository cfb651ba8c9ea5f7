/**
 * `fields` with no prototype, for a property descriptor or a Proxy handler. The engine reads what
 * it needs of those (`get`, `set`, `value`, `writable`, a trap by its name) through the prototype
 * too: left on `Object.prototype`, a polluted `get` or `value` would make every descriptor written
 * as a literal an invalid one (a TypeError where the property is set), and a polluted `has` or
 * `apply` a trap the engine tries to call.
 */
export function protoless<T extends object>(fields: T): T {
  return Object.setPrototypeOf(fields, null) as T;
}

/**
 * `Object.getOwnPropertyDescriptor(target, key)` with no prototype (`undefined` where there is no
 * such own property): read as it is (`"value" in it`, `it.get`), a polluted `Object.prototype.get`
 * or `value` would otherwise answer for a field the descriptor does not have.
 */
export function ownDescriptor(target: object, key: PropertyKey): PropertyDescriptor | undefined {
  const found = Object.getOwnPropertyDescriptor(target, key);
  return found === undefined ? undefined : protoless(found);
}
