import type { LoopConfig } from "@loopwright/loop";
import { MAX_CHAIN, setting } from "./own.js";
import { ownDescriptors, protoless } from "./protoless.js";

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
 * …`) is the copy's own from then on, as written, and the host's object is left as it is. The copy's
 * fields are the ones the config had when it was made: a field the host adds later is not among
 * them. What a prototype holds stays off the copy's own keys (on a prototype of the copy's), as it is
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
  return Object.create(inherited, fields) as LoopConfig;
}
