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

/** What `ownDataValue` gives for an accessor (not run) or a property `target` does not have. */
export const NOT_DATA: unique symbol = Symbol("not a data property");

/**
 * The value of `target`'s own data property `key`, or `NOT_DATA` for an accessor (not run) or no
 * such property: as `ownDescriptor(target, key)?.value` where it is data, without making a copy
 * (a walk over a hostile body reads a hundred thousand of them).
 */
export function ownDataValue(target: object, key: PropertyKey): unknown {
  const found = Object.getOwnPropertyDescriptor(target, key);
  return found !== undefined && Object.hasOwn(found, "value") ? found.value : NOT_DATA;
}
