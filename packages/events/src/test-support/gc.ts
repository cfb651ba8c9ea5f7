// Shared by the events tests; not published (package.json `files` leaves src/test-support out).
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/**
 * How many of `refs` still hold their object after collecting garbage until all are cleared or a
 * few rounds have passed. Each round waits a turn first: a WeakRef made or read in a turn keeps its
 * object to that turn's end. Later rounds wait a little longer, for whatever is still settling.
 */
export async function survivors(refs: readonly WeakRef<object>[]): Promise<number> {
  for (let round = 0; round < 12 && refs.some((ref) => ref.deref() !== undefined); round++) {
    await new Promise((resolve) => setTimeout(resolve, round < 4 ? 0 : 5));
    gc();
  }
  return refs.filter((ref) => ref.deref() !== undefined).length;
}

/** Whether `ref`'s object is collected once nothing else holds it. */
export async function collected(ref: WeakRef<object>): Promise<boolean> {
  return (await survivors([ref])) === 0;
}
