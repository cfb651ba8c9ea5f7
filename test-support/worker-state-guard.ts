// Loaded before every test file by each project's vitest config (`setupFiles`, after
// prototype-guard.ts). The projects run with `isolate: false`: one worker runs many files, one after
// another, in one process, so whatever a file leaves changed in the process is what the next file
// starts with. A test that forgets to undo a change passes itself and breaks, or slows, a file far
// from it, in whichever worker the scheduler gave both (CI, stop 59, was such a case).
//
// When a file's last test has run (an `afterAll` here, which runs after the file's own), this checks
// the process is as the file found it, and for each thing left changed fails the file, naming what
// was left and how to undo it, and puts it back so the files after it run clean:
//
// - process.env: a variable set, changed or removed (set it back in the test's finally, or use
//   `vi.stubEnv` with `vi.unstubAllEnvs()` in an afterEach);
// - the built-ins: a global (fetch, setTimeout, URL, crypto…) replaced or removed, a static of a
//   built-in constructor, JSON, Math, Reflect or console replaced (a `vi.spyOn` never restored is
//   one), or a method of a built-in's prototype (Array, RegExp, Promise, String…) replaced, added or
//   removed. Object.prototype's added fields are prototype-guard.ts's, checked after every test;
// - fake timers still installed (`vi.useRealTimers()` in an afterEach);
// - a process listener for unhandledRejection, uncaughtException or warning still on (take it off
//   in the test's finally);
// - the working directory changed;
// - a listening server (net, http) the file started still open: closed now. A helper that starts a
//   server a call and closes only the last one left the others open for the worker's life (412
//   servers in one worker of a full run, before r99).
//
// What a global holds is compared by identity with what it held when the worker began, so a
// library that adds a global of its own, or a field to a constructor (a polyfill), is left alone:
// only what was there from the start is watched.
import { Server } from "node:net";
import { afterAll, vi } from "vitest";

type Snapshot = Map<
  object,
  { name: string; keys: Map<string | symbol, PropertyDescriptor>; strict: boolean }
>;

/** Globals whose value changes by design between files (vitest's own, Node's internal). */
const SKIPPED_GLOBALS = new Set<string | symbol>(["global", "globalThis"]);

/** The events whose listeners a test adds to hear what the process reports. */
const LISTENED = ["unhandledRejection", "uncaughtException", "warning"] as const;

/** Every built-in object worth watching, with a name to report it by. `strict` when a key added is a fault. */
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
  return out;
}

function snapshot(): Snapshot {
  const taken: Snapshot = new Map();
  for (const { object, name, strict } of watched()) {
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

const KEY = Symbol.for("loopwright.test-support.built-ins");
const holder = globalThis as { [KEY]?: Snapshot };
/** The built-ins as the worker loaded its first test file. */
holder[KEY] ??= snapshot();
const builtIns = holder[KEY];

/** The listening servers open in the process (Node's own list of what keeps it alive). */
const servers = (): Server[] =>
  (process as unknown as { _getActiveHandles(): unknown[] })
    ._getActiveHandles()
    .filter((handle): handle is Server => handle instanceof Server && handle.listening);

/** What this file started with. */
const environment = { ...process.env };
const directory = process.cwd();
const serving = new Set(servers());
/** The process as an emitter of any event (its typings take each event's listener type apart). */
const emitter: NodeJS.EventEmitter = process;
const listeners = new Map(LISTENED.map((event) => [event, new Set(emitter.listeners(event))]));

afterAll(async () => {
  const left: string[] = [];

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

  if (vi.isFakeTimers()) {
    left.push("fake timers installed (vi.useRealTimers())");
    vi.useRealTimers();
  }

  for (const [object, { name, keys, strict }] of builtIns) {
    for (const [key, was] of keys) {
      const now = Reflect.getOwnPropertyDescriptor(object, key);
      if (now !== undefined && same(object, now, was)) continue;
      const mocked = now !== undefined && vi.isMockFunction(now.value) ? " (a spy never restored)" : "";
      left.push(`${name}.${String(key)} ${now === undefined ? "removed" : "replaced"}${mocked}`);
      Reflect.defineProperty(object, key, was);
    }
    if (!strict) continue;
    for (const key of Reflect.ownKeys(object)) {
      if (keys.has(key)) continue;
      left.push(`${name}.${String(key)} added`);
      Reflect.deleteProperty(object, key);
    }
  }

  for (const [event, had] of listeners) {
    for (const listener of emitter.listeners(event)) {
      if (had.has(listener)) continue;
      left.push(`a process "${event}" listener left on`);
      emitter.off(event, listener as (...args: unknown[]) => void);
    }
  }

  if (process.cwd() !== directory) {
    left.push(`working directory changed to ${process.cwd()}`);
    process.chdir(directory);
  }

  // A server closed as the file's last hook ran leaves Node's list once its handle has closed, in
  // the loop's turn after: work, not time.
  await new Promise((resolve) => setImmediate(resolve));
  const open = servers().filter((server) => !serving.has(server));
  if (open.length > 0) {
    left.push(`${open.length} listening server${open.length === 1 ? "" : "s"} still open (closed now)`);
    for (const server of open) {
      server.close();
      (server as Server & { closeAllConnections?: () => void }).closeAllConnections?.();
    }
  }

  if (left.length > 0) {
    throw new Error(
      `this file left the worker changed (put back now, for the files after it): ${left.join("; ")}. ` +
        "Undo each change in the test that made it, in its own finally or an afterEach",
    );
  }
});
