// Loaded before every test file by each project's vitest config (`setupFiles`, after
// property-setup.ts). Many tests set fields on Object.prototype to prove the code reads only what
// an object holds, and take them off again. One that leaves a field behind breaks tests far from it:
// the projects run with `isolate: false`, so the next files in the same worker inherit the field,
// and an inherited `return` that is no function stops the test runner itself before a file starts
// (CI, stop 59). After every test this checks Object.prototype holds only what it held when the
// worker began; a field left over fails that test, named, and is taken off so the files after it
// run clean (one defined not configurable cannot be: the report says so, and it fails only that
// test). The check itself is guards.ts's, where guards.test.ts calls it on leaks made on purpose.
import { afterEach } from "vitest";
import { objectPrototypeLeft } from "./guards.js";

const KEY = Symbol.for("loopwright.test-support.object-prototype-keys");
const holder = globalThis as { [KEY]?: Set<string | symbol> };
/** What Object.prototype held as the worker loaded its first test file (and a field that could not be taken off since). */
holder[KEY] ??= new Set(Reflect.ownKeys(Object.prototype));
const baseline = holder[KEY];

afterEach(() => {
  const left = objectPrototypeLeft(baseline);
  if (left === undefined) return;
  throw new Error(`${left}: take a polluted field off before the test returns, in the test's own finally`);
});
