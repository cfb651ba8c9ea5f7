// Loaded before every test file by each project's vitest config (`setupFiles`): gives the
// properties that name no run count (fast-check's default, 100) the scaled count, and every
// property LOOPWRIGHT_PROPERTY_SEED when it is set. ./properties.ts says what the switches mean; a
// property that names its own count takes the scale through `propertyRuns(n)` from there.
//
// With neither switch set it changes nothing: fast-check's global parameters stay as they were.
import fc from "fast-check";
import { PROPERTY_PATH, PROPERTY_SCALE, PROPERTY_SEED, scaledRuns } from "./properties.js";

/** fast-check's run count for a property that names none. */
const FAST_CHECK_DEFAULT_RUNS = 100;

if (PROPERTY_SCALE !== 1 || PROPERTY_SEED !== undefined) {
  fc.configureGlobal({
    ...fc.readConfigureGlobal(),
    ...(PROPERTY_SCALE !== 1 ? { numRuns: scaledRuns(FAST_CHECK_DEFAULT_RUNS) } : {}),
    ...(PROPERTY_SEED !== undefined ? { seed: PROPERTY_SEED } : {}),
    ...(PROPERTY_PATH !== undefined ? { path: PROPERTY_PATH } : {}),
  });
}
