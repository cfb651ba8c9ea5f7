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
//   one), or a method of a built-in's prototype (Array, RegExp, Promise, String…, and those no
//   global names: typed arrays' shared one, the iterators' of arrays, maps, sets and strings,
//   generators') replaced, added or removed. Object.prototype's added fields are
//   prototype-guard.ts's, checked after every test. A field made not configurable cannot be put
//   back: the report says so, and it fails only the file that left it;
// - fake timers still installed (`vi.useRealTimers()` in an afterEach);
// - a process listener for unhandledRejection, uncaughtException or warning still on (take it off
//   in the test's finally);
// - the working directory changed;
// - a listening server (net, http; on a port or a Unix socket, `unref()`ed or not) the file started
//   still open: closed now. A helper that starts a server a call and closes only the last one left
//   the others open for the worker's life (412 servers in one worker of a full run, before r99).
//
// The checks themselves are guards.ts's, where guards.test.ts calls them on leaks made on purpose.
//
// What a global holds is compared by identity with what it held when the worker began, so a
// library that adds a global of its own, or a field to a constructor (a polyfill), is left alone:
// only what was there from the start is watched.
import { afterAll, vi } from "vitest";
import { builtIns, processState, putBackBuiltIns, putBackProcess } from "./guards.js";

const KEY = Symbol.for("loopwright.test-support.built-ins");
const holder = globalThis as { [KEY]?: ReturnType<typeof builtIns> };
/** The built-ins as the worker loaded its first test file. */
holder[KEY] ??= builtIns();
const taken = holder[KEY];

/** What this file started with. */
const started = processState();

afterAll(async () => {
  const left: string[] = [];
  if (vi.isFakeTimers()) {
    left.push("fake timers installed (vi.useRealTimers())");
    vi.useRealTimers();
  }
  left.push(...putBackBuiltIns(taken, (value) => vi.isMockFunction(value)));
  left.push(...(await putBackProcess(started)));
  if (left.length > 0) {
    throw new Error(
      `this file left the worker changed (put back now, for the files after it): ${left.join("; ")}. ` +
        "Undo each change in the test that made it, in its own finally or an afterEach",
    );
  }
});
