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

/** `Object.getOwnPropertyDescriptors(target)`, each descriptor with no prototype (as `ownDescriptor`). */
export function ownDescriptors(target: object): { [key: PropertyKey]: PropertyDescriptor } {
  const all = Object.getOwnPropertyDescriptors(target) as { [key: PropertyKey]: PropertyDescriptor };
  for (const key of Reflect.ownKeys(all)) protoless(all[key] as PropertyDescriptor);
  return all;
}
