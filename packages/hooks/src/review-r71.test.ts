// Review round r71: defects found by a second hostile read of the package, each test failing on the
// code before its fix.
import { describe, expect, it } from "vitest";
import {
  assembleContext,
  consult,
  gather,
  HooksError,
  notify,
  turnIndex,
  turnMessages,
  untrusted,
  withContext,
} from "./index.js";
import { countedPlaces } from "./test-support/counted-places.js";

describe("R71H-1: an outcome's __proto__ field is kept as a field, never made the copy's prototype", () => {
  // A runner relaying JSON: JSON.parse makes "__proto__" an own field, which an assignment would
  // turn into the copy's prototype — its veto and context then read as the hook's own.
  const outcome = () => JSON.parse('{"id":"m","ok":true,"__proto__":{"veto":true,"context":"INJECTED"}}');

  it("vetoes nothing and adds no context through it", async () => {
    const consulted = await consult(() => [outcome()], {} as never, {});
    expect(consulted.proceed).toBe(true);
    expect(consulted.vetoedBy).toBeUndefined();
    const gathered = await gather(() => [outcome()], "beforeTurn", { prompt: "q", turn: 0 }, {});
    expect(gathered.context).toBe("");
    expect(assembleContext([outcome()])).toBe("");
  });

  it("keeps the field in outcomes, where a host can read it", async () => {
    const { outcomes } = await consult(() => [outcome()], {} as never, {});
    expect(Object.keys(outcomes[0] as object)).toContain("__proto__");
    expect(Object.getPrototypeOf(outcomes[0])).toBe(Object.prototype);
  });
});

describe("R71H-2: turnMessages refuses an offset past 2^53, where two messages would share a uuid", () => {
  const two = [
    { role: "user" as const, content: "a" },
    { role: "user" as const, content: "b" },
  ];
  it("2^53 and 1e308 are refused with a HooksError naming the offset", () => {
    for (const offset of [2 ** 53, 1e308, Number.MAX_SAFE_INTEGER]) {
      expect(() => turnMessages(two, "s", offset)).toThrow(HooksError);
      expect(() => turnMessages(two, "s", offset)).toThrow(/offset/);
    }
  });
  it("the largest offset that fits still gives each message its own index and uuid", () => {
    const [first, second] = turnMessages(two, "s", Number.MAX_SAFE_INTEGER - 2);
    expect(first?.uuid).not.toBe(second?.uuid);
    expect((second?.index as number) - (first?.index as number)).toBe(1);
  });
});

describe("R71H-3: assembleContext never throws and reads a sparse list by what it holds", () => {
  it("an entry that throws when read is left out with a note, the others kept", () => {
    const list: unknown[] = [{ id: "a", context: "kept" }];
    Object.defineProperty(list, 1, {
      get() {
        throw new Error("boom");
      },
      enumerable: true,
    });
    list.push({ id: "c", context: "also kept" });
    const notes: string[] = [];
    const text = assembleContext(list as never, undefined, { onNote: (note) => notes.push(note) });
    expect(text).toContain("kept");
    expect(text).toContain("also kept");
    expect(notes).toEqual([expect.stringMatching(/Hook 2's outcome could not be read/)]);
  });

  it("a list that throws when its length is read costs a note", () => {
    const list = new Proxy([] as unknown[], {
      get(target, key) {
        if (key === "length") throw new Error("no length");
        return Reflect.get(target, key);
      },
    });
    const notes: string[] = [];
    expect(assembleContext(list as never, undefined, { onNote: (note) => notes.push(note) })).toBe("");
    expect(notes).toHaveLength(1);
  });

  it("a list of length 2^32 - 1 holding one outcome is read at once, not over minutes of holes", () => {
    // What it costs, counted: a list of four million places holding one is read at its one entry,
    // not at each hole (a count, where a bound in ms breaks on a loaded machine).
    const { list: counted, reads } = countedPlaces<unknown[]>([{ id: "a", context: "x" }]);
    counted.length = 4_000_000;
    expect(assembleContext(counted as never)).toBe('<context hook="a">\nx\n</context>');
    expect(reads()).toBeLessThan(20);
    const list: unknown[] = [{ id: "a", context: "x" }];
    list.length = 2 ** 32 - 1;
    expect(assembleContext(list as never)).toBe('<context hook="a">\nx\n</context>');
  });
});

describe("R71H-4: options that throw when read are HooksError invalid-option, not a bare error from inside", () => {
  const run = () => [{ id: "a", context: "x" }];
  const throwing = () => ({
    get signal(): AbortSignal {
      throw new TypeError("getter");
    },
    get timeoutMs(): number {
      throw new TypeError("getter");
    },
    get source(): string {
      throw new TypeError("getter");
    },
  });
  const revoked = () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    return proxy;
  };
  const invalidOption = { name: "HooksError", code: "invalid-option" };

  it("gather, notify and consult reject with invalid-option before the runner is called", async () => {
    let calls = 0;
    const counted = () => {
      calls++;
      return run();
    };
    for (const options of [throwing(), revoked()]) {
      await expect(
        gather(counted, "beforeTurn", { prompt: "q", turn: 0 }, {}, options as never),
      ).rejects.toMatchObject(invalidOption);
      await expect(notify(counted, "sessionEnd", {} as never, {}, options as never)).rejects.toMatchObject(
        invalidOption,
      );
      await expect(consult(counted, {} as never, {}, options as never)).rejects.toMatchObject(invalidOption);
    }
    expect(calls).toBe(0);
  });

  it("a revoked signal is invalid-option, and a revoked list of events invalid-event", async () => {
    await expect(
      gather(run, "beforeTurn", { prompt: "q", turn: 0 }, {}, { signal: revoked() as never }),
    ).rejects.toMatchObject(invalidOption);
    await expect(consult(run, {} as never, {}, { signal: revoked() as never })).rejects.toMatchObject(
      invalidOption,
    );
    await expect(gather(run, revoked() as never, { prompt: "q", turn: 0 }, {})).rejects.toMatchObject({
      name: "HooksError",
      code: "invalid-event",
    });
  });

  it("untrusted with options whose source throws, or revoked options", () => {
    for (const options of [throwing(), revoked()]) {
      expect(() => untrusted("page", options as never)).toThrow(HooksError);
    }
  });
});

describe("R71H-5: a revoked Proxy passed as messages is invalid-messages, not a bare TypeError", () => {
  it("withContext, turnMessages and turnIndex name it", () => {
    const { proxy, revoke } = Proxy.revocable([] as never[], {});
    revoke();
    for (const call of [
      () => withContext(proxy, 0, "x"),
      () => turnMessages(proxy, "s"),
      () => turnIndex(proxy),
    ]) {
      expect(call).toThrow(HooksError);
      expect(call).toThrow(/revoked Proxy/);
    }
  });
});
