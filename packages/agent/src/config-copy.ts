import type { LoopConfig } from "@loopwright/loop";
import { MAX_CHAIN, setting } from "./own.js";
import { ownDescriptor, ownDescriptors, protoless } from "./protoless.js";

/** What `configCopy` changes on its copy. */
export interface ConfigChanges {
  /** Fields the copy does not hold (neither as its own nor through a prototype). */
  without?: readonly string[];
  /** Fields the copy holds as its own data, in place of the config's. */
  with?: Readonly<Record<string, unknown>>;
  /**
   * Fields the copy answers, each time one is read, with what its function makes of the config's
   * field as it stands then (read as `setting` reads it: the object's own, or a prototype of its
   * own's), the copy itself given too (what was written on it is read there). Written on the copy,
   * such a field is the copy's own from then on, as any other.
   */
  read?: Readonly<Record<string, (value: unknown, copy: LoopConfig) => unknown>>;
}

/**
 * A copy of `config` for a loop run, with `changes` made; the host's object is left as it is. Every
 * field the loop would read of it — its own data fields, an own getter, and what a prototype of its
 * own holds (a class's getter or method, `Object.create(defaults)`'s defaults) — is asked of the
 * host's object each time the copy is read, a method of a prototype's bound to it, so a class's
 * getter still reads its `#private` fields, a getter answers what it answers now, and a setting the
 * host changes on its object (`config.model = …` between a session's prompts) is the one read, as an
 * Agent given the object itself reads it. A field written on the copy (`session.agent.config.model =
 * …`) is the copy's own from then on, as written, and the host's object is left as it is. A field the
 * host adds to its object later is read from it too, as an own field of the copy's (its keys, its
 * value each time; the copy is a Proxy for that), until the copy has one of that name written or
 * deleted. What a prototype holds stays off the copy's own keys (on a prototype of the copy's), as it is
 * off the config's. A spread (`{ ...config }`) would keep the own enumerable fields alone, each read
 * once.
 */
export function configCopy(config: LoopConfig, changes: ConfigChanges): LoopConfig {
  const replaced = changes.with ?? {};
  const derived = changes.read ?? {};
  const hidden = new Set([...(changes.without ?? []), ...Object.keys(replaced), ...Object.keys(derived)]);
  const source = config as unknown as Record<string, unknown>;
  /**
   * A field asked of the host's object each time it is read: a function a getter or a prototype
   * gives bound to it (`bind`), an own data field's as it stands (as a spread would hand it over).
   * Written on the copy, the copy's own from then on, as an assignment makes a field.
   */
  const asked = (name: string, enumerable: boolean, bind = true): PropertyDescriptor =>
    protoless({
      get: () => {
        const value = source[name];
        return bind && typeof value === "function" ? value.bind(config) : value;
      },
      set(this: object, value: unknown) {
        const own = protoless({ value, enumerable: true, writable: true, configurable: true });
        Object.defineProperty(this, name, own);
      },
      enumerable,
      configurable: true,
    });
  const fields = ownDescriptors(config);
  for (const key of Reflect.ownKeys(fields)) {
    if (typeof key !== "string") continue;
    const described = fields[key] as PropertyDescriptor;
    if (hidden.has(key)) delete fields[key];
    else if (described.get || described.set) fields[key] = asked(key, described.enumerable === true);
    else fields[key] = asked(key, described.enumerable === true, false);
  }
  for (const [key, value] of Object.entries(replaced)) {
    fields[key] = protoless({ value, enumerable: true, writable: true, configurable: true });
  }
  for (const [key, made] of Object.entries(derived)) {
    fields[key] = protoless({
      get(this: LoopConfig) {
        return made(setting(config, key), this);
      },
      set: asked(key, true).set as (value: unknown) => void,
      enumerable: true,
      configurable: true,
    });
  }
  // A prototype's field the copy holds already (its own, or a nearer prototype's) is that one.
  const inherited = Object.create(null) as object;
  const skip = (name: string) =>
    name === "constructor" || hidden.has(name) || Object.hasOwn(fields, name) || name in inherited;
  let at = Object.getPrototypeOf(config) as object | null;
  for (let depth = 0; at !== null && at !== Object.prototype && depth < MAX_CHAIN; depth++) {
    for (const name of Object.getOwnPropertyNames(at)) {
      if (!skip(name)) Object.defineProperty(inherited, name, asked(name, false));
    }
    at = Object.getPrototypeOf(at) as object | null;
  }
  const copy = Object.create(inherited, fields) as object;
  // The names never read as added by the host later: the copy's own as made, and any deleted from it.
  const settled = new Set<PropertyKey>(Reflect.ownKeys(fields));
  /** A field the host added to its object since the copy was made, which the copy has not taken. */
  const added = (name: PropertyKey): name is string =>
    typeof name === "string" &&
    !hidden.has(name) &&
    !settled.has(name) &&
    !Object.hasOwn(copy, name) &&
    Object.hasOwn(config, name);
  /** An added field as the copy shows it: a data field, its value as the host's object has it now. */
  const shown = (name: string): PropertyDescriptor => {
    const enumerable = ownDescriptor(config, name)?.enumerable === true;
    return protoless({ value: source[name], writable: true, enumerable, configurable: true });
  };
  return new Proxy(
    copy,
    protoless({
      ownKeys: (target: object) => [
        ...Reflect.ownKeys(target),
        ...Reflect.ownKeys(config).filter((name) => added(name)),
      ],
      getOwnPropertyDescriptor: (target: object, name: PropertyKey) =>
        added(name) ? shown(name) : ownDescriptor(target, name),
      // Written (an assignment, `Object.defineProperty`), an added field becomes the copy's own, as
      // it was shown: what the write leaves out is as the host's object has it.
      defineProperty: (target: object, name: PropertyKey, described: PropertyDescriptor) => {
        if (added(name)) Object.defineProperty(target, name, shown(name));
        return Reflect.defineProperty(target, name, described);
      },
      has: (target: object, name: PropertyKey) => added(name) || Reflect.has(target, name),
      get: (target: object, name: PropertyKey, receiver: unknown) =>
        added(name) ? source[name] : Reflect.get(target, name, receiver),
      deleteProperty: (target: object, name: PropertyKey) => {
        settled.add(name);
        return Reflect.deleteProperty(target, name);
      },
    }),
  ) as LoopConfig;
}
