// What the two setup files every project loads (prototype-guard.ts after every test,
// worker-state-guard.ts after every file) check and put back, as functions of their own: the setup
// files register them with vitest, and guards.test.ts calls them directly (a leak made on purpose,
// then checked), which a setup file's hook could not be.
import { subscribe } from "node:diagnostics_channel";
import { Server } from "node:net";

/**
 * The fields added to `prototype` (Object.prototype; another object in guards.test.ts) since
 * `baseline` was taken, each taken off; `undefined` when there are none. A field that cannot be
 * taken off — defined not configurable, as `Object.defineProperty` defines a field unless told
 * otherwise — is said so, and joins `baseline`: the tests after it inherit it whatever is done, and
 * it fails only the test that left it. Before (r99), such a field was reported "taken off now",
 * stayed, and failed every test after it in the worker, each naming it.
 */
export function objectPrototypeLeft(
  baseline: Set<string | symbol>,
  prototype: object = Object.prototype,
): string | undefined {
  const left = Reflect.ownKeys(prototype).filter((key) => !baseline.has(key));
  if (left.length === 0) return undefined;
  const named = (key: string | symbol) => `Object.prototype[${JSON.stringify(String(key))}]`;
  const stuck: (string | symbol)[] = [];
  for (const key of left) {
    if (Reflect.deleteProperty(prototype, key)) continue;
    stuck.push(key);
    baseline.add(key);
  }
  const takenOff = left.filter((key) => !stuck.includes(key));
  return [
    takenOff.length > 0 ? `this test left ${takenOff.map(named).join(", ")} set (taken off now)` : "",
    stuck.length > 0
      ? `this test left ${stuck.map(named).join(", ")} set, not configurable: it could not be taken off, ` +
        "and every test after it in this worker inherits it"
      : "",
  ]
    .filter((part) => part !== "")
    .join("; ");
}

/** One watched object's own keys as a snapshot took them. `strict` when a key added is a fault. */
export type BuiltIns = Map<
  object,
  { name: string; keys: Map<string | symbol, PropertyDescriptor>; strict: boolean }
>;

/** Globals whose value changes by design between files (vitest's own, Node's internal). */
const SKIPPED_GLOBALS = new Set<string | symbol>(["global", "globalThis"]);

/**
 * The built-in prototypes no global names, reached from objects that have them: a method replaced
 * or added on one of them reaches every typed array, every `for…of` over an array, a map, a set or
 * a string, every generator.
 */
function intrinsics(): { object: unknown; name: string }[] {
  const of = (value: unknown) => Object.getPrototypeOf(value) as unknown;
  const arrayIterator = of([][Symbol.iterator]());
  const asyncGenerator = of(async function* () {});
  return [
    { object: of(Uint8Array), name: "%TypedArray%" },
    { object: of(Uint8Array.prototype), name: "%TypedArray%.prototype" },
    { object: of(arrayIterator), name: "%IteratorPrototype%" },
    { object: arrayIterator, name: "%ArrayIteratorPrototype%" },
    { object: of(new Map()[Symbol.iterator]()), name: "%MapIteratorPrototype%" },
    { object: of(new Set()[Symbol.iterator]()), name: "%SetIteratorPrototype%" },
    { object: of(""[Symbol.iterator]()), name: "%StringIteratorPrototype%" },
    { object: of(/a/[Symbol.matchAll]("a")), name: "%RegExpStringIteratorPrototype%" },
    { object: (of(function* () {}) as { prototype: unknown }).prototype, name: "%GeneratorPrototype%" },
    { object: (asyncGenerator as { prototype: unknown }).prototype, name: "%AsyncGeneratorPrototype%" },
    {
      object: of((asyncGenerator as { prototype: unknown }).prototype),
      name: "%AsyncIteratorPrototype%",
    },
  ];
}

/** Every built-in object worth watching, with a name to report it by. */
function watched(): { object: object; name: string; strict: boolean }[] {
  const out: { object: object; name: string; strict: boolean }[] = [
    { object: globalThis, name: "globalThis", strict: false },
  ];
  const seen = new Set<object>([globalThis]);
  const add = (object: unknown, name: string, strict: boolean) => {
    if ((typeof object !== "object" && typeof object !== "function") || object === null || seen.has(object))
      return;
    seen.add(object);
    out.push({ object, name, strict });
  };
  for (const key of Reflect.ownKeys(globalThis)) {
    if (typeof key !== "string" || key.startsWith("__") || SKIPPED_GLOBALS.has(key)) continue;
    const descriptor = Reflect.getOwnPropertyDescriptor(globalThis, key);
    // An accessor (a lazy global) is compared by its getter, never read here.
    if (descriptor === undefined || !("value" in descriptor)) continue;
    const value: unknown = descriptor.value;
    if (["JSON", "Math", "Reflect", "console", "Atomics"].includes(key)) add(value, key, false);
    else if (typeof value === "function" && /^[A-Z]/.test(key)) {
      add(value, key, false);
      const prototype = (value as { prototype?: unknown }).prototype;
      // Object.prototype's added keys are prototype-guard.ts's (after every test); its replaced ones here.
      add(prototype, `${key}.prototype`, key !== "Object");
    }
  }
  for (const { object, name } of intrinsics()) add(object, name, !name.endsWith("%TypedArray%"));
  return out;
}

/**
 * The built-ins as they are now: each watched object's own keys and what they hold. `objects`: those
 * to watch instead (guards.test.ts's, for a leak no built-in may be left with).
 */
export function builtIns(objects = watched()): BuiltIns {
  const taken: BuiltIns = new Map();
  for (const { object, name, strict } of objects) {
    const keys = new Map<string | symbol, PropertyDescriptor>();
    for (const key of Reflect.ownKeys(object)) {
      if (
        object === globalThis &&
        (typeof key !== "string" || key.startsWith("__") || SKIPPED_GLOBALS.has(key))
      )
        continue;
      const descriptor = Reflect.getOwnPropertyDescriptor(object, key);
      if (descriptor !== undefined) keys.set(key, descriptor);
    }
    taken.set(object, { name, keys, strict });
  }
  return taken;
}

/**
 * Whether `key` of `object` holds what it held. Node defines many globals lazily (AbortController,
 * Blob, …): a getter that, read once, puts the value it loaded in its own place; such a global holds
 * what it held while its value is the one the getter gives.
 */
function same(object: object, now: PropertyDescriptor, was: PropertyDescriptor): boolean {
  if (Object.is(now.value, was.value) && now.get === was.get && now.set === was.set) return true;
  if (was.get === undefined || !("value" in now)) return false;
  try {
    return Object.is(Reflect.apply(was.get, object, []), now.value);
  } catch {
    return false;
  }
}

/**
 * What differs in the built-ins from `taken` (`builtIns()`), each put back, as lines of a report.
 * `isMock` tells a spy (vitest's `vi.isMockFunction`). What cannot be put back (made not
 * configurable) is said so and becomes what `taken` holds: it fails only the file that left it.
 */
export function putBackBuiltIns(
  taken: BuiltIns,
  isMock: (value: unknown) => boolean = () => false,
): string[] {
  const left: string[] = [];
  const stuck = " (not configurable: it could not be put back, and the files after it in this worker see it)";
  for (const [object, { name, keys, strict }] of taken) {
    for (const [key, was] of keys) {
      const now = Reflect.getOwnPropertyDescriptor(object, key);
      if (now !== undefined && same(object, now, was)) continue;
      const mocked = now !== undefined && isMock(now.value) ? " (a spy never restored)" : "";
      const back = Reflect.defineProperty(object, key, was);
      left.push(
        `${name}.${String(key)} ${now === undefined ? "removed" : "replaced"}${mocked}${back ? "" : stuck}`,
      );
      if (!back && now !== undefined) keys.set(key, now);
      else if (!back) keys.delete(key);
    }
    if (!strict) continue;
    for (const key of Reflect.ownKeys(object)) {
      if (keys.has(key)) continue;
      const back = Reflect.deleteProperty(object, key);
      left.push(`${name}.${String(key)} added${back ? "" : stuck}`);
      const now = Reflect.getOwnPropertyDescriptor(object, key);
      if (!back && now !== undefined) keys.set(key, now);
    }
  }
  return left;
}

const SERVERS = Symbol.for("loopwright.test-support.listened-servers");
const tracked = globalThis as { [SERVERS]?: Set<WeakRef<Server>> };
if (tracked[SERVERS] === undefined) {
  const listened = new Set<WeakRef<Server>>();
  tracked[SERVERS] = listened;
  // Node publishes each server that listens here (net's `listen`, http's and https' too). Node's
  // list of active handles leaves out a server made `unref()`, which keeps no process alive but
  // stays open, port and all, as long as the worker lives. Held weakly: a server listening is held
  // by its handle, and one closed must be free to go (a test that watches what a closed server lets
  // go of, playground's review-r90, found it held here until the file's end).
  subscribe("tracing:net.server.listen:asyncStart", (message) => {
    const server = (message as { server?: unknown }).server;
    if (server instanceof Server) listened.add(new WeakRef(server));
  });
}

/** The listening servers open in the process: those Node's list of active handles holds, and those seen to listen. */
export function listeningServers(): Server[] {
  const listening = new Set<Server>();
  for (const handle of (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles())
    if (handle instanceof Server && handle.listening) listening.add(handle);
  const listened = tracked[SERVERS] ?? new Set<WeakRef<Server>>();
  for (const held of listened) {
    const server = held.deref();
    if (server?.listening) listening.add(server);
    else listened.delete(held);
  }
  return [...listening];
}

/** The events whose listeners a test adds to hear what the process reports. */
const LISTENED = ["unhandledRejection", "uncaughtException", "warning"] as const;

/** The process as an emitter of any event (its typings take each event's listener type apart). */
const emitter: NodeJS.EventEmitter = process;

/** What a file started with, of what is the process's rather than the built-ins'. */
export interface ProcessState {
  environment: Record<string, string | undefined>;
  directory: string;
  /** Held weakly: a server of the file's start closed during it must be free to go. */
  serving: WeakSet<Server>;
  listeners: Map<string, Set<unknown>>;
}

/** The process as it is now. */
export function processState(): ProcessState {
  return {
    environment: { ...process.env },
    directory: process.cwd(),
    serving: new WeakSet(listeningServers()),
    listeners: new Map(LISTENED.map((event) => [event, new Set(emitter.listeners(event))])),
  };
}

/** What differs in the process from `state` (`processState()`), each put back, as lines of a report. */
export async function putBackProcess(state: ProcessState): Promise<string[]> {
  const left: string[] = [];
  const { environment } = state;
  for (const [name, value] of Object.entries(process.env)) {
    if (environment[name] === value) continue;
    left.push(environment[name] === undefined ? `process.env.${name} set` : `process.env.${name} changed`);
    if (environment[name] === undefined) delete process.env[name];
    else process.env[name] = environment[name];
  }
  for (const [name, value] of Object.entries(environment)) {
    if (name in process.env) continue;
    left.push(`process.env.${name} removed`);
    process.env[name] = value;
  }

  for (const [event, had] of state.listeners) {
    for (const listener of emitter.listeners(event)) {
      if (had.has(listener)) continue;
      left.push(`a process "${event}" listener left on`);
      emitter.off(event, listener as (...args: unknown[]) => void);
    }
  }

  if (process.cwd() !== state.directory) {
    left.push(`working directory changed to ${process.cwd()}`);
    process.chdir(state.directory);
  }

  // A server closed as the file's last hook ran leaves Node's list once its handle has closed, in
  // the loop's turn after: work, not time.
  await new Promise((resolve) => setImmediate(resolve));
  const open = listeningServers().filter((server) => !state.serving.has(server));
  if (open.length > 0) {
    left.push(`${open.length} listening server${open.length === 1 ? "" : "s"} still open (closed now)`);
    for (const server of open) {
      server.close();
      (server as Server & { closeAllConnections?: () => void }).closeAllConnections?.();
    }
  }
  return left;
}
