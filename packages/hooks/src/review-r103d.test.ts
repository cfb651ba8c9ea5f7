// Review r103d: `gather` given two events (`["sessionStart", "beforeTurn"]`, a session's first
// turn) handed both runner calls one input object. A hook is told about the moment and answers with
// outcomes; a runner that changed what it was handed in place (dropped the messages it had read,
// rewrote the prompt) changed what the other event's hooks were told, and the host's own object.
// Each event now gets a copy of its own, made in one pass before any runner is called.
import { countWork } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { gather, type HookEvent, type HookInput, type HookMessage, type HookRunner } from "./index.js";

/** What the tests hand over and read back: a turn's input whose messages can be changed. */
interface Told {
  prompt: string;
  turn: number;
  messages: HookMessage[];
  self?: unknown;
}

const message = (index: number, content: string): HookMessage => ({
  uuid: `m-${index}`,
  index,
  role: "user",
  content,
});

/** A turn's input with `count` messages, then one reached twice and a last (`last`) content. */
function turnInput(count: number, last = "Friday, then."): Told {
  const shared = message(count, "the same message twice");
  const messages = Array.from({ length: count }, (_, i) => message(i, `message ${i}`));
  messages.push(shared, shared, message(count + 1, last));
  return { prompt: "What did we decide?", turn: 3, messages };
}

describe("gather given two events", () => {
  it("hands each event's runner call a copy of its own: one changing it changes neither the other's nor the host's", async () => {
    const input = turnInput(2);
    const before = structuredClone(input);
    const seen: Record<string, unknown> = {};
    const run: HookRunner<null> = async (event: HookEvent, told) => {
      if (event === "sessionStart") {
        // Called first: changes what it was told in place before the other event's runner is called.
        (told as Told).prompt = "rewritten by sessionStart";
        (told as Told).messages.length = 0;
        return [];
      }
      seen[event] = structuredClone(told);
      return [
        {
          id: "recall",
          ok: true,
          context: `told ${(told as Told).messages.length} messages`,
        },
      ];
    };
    const gathered = await gather(run, ["sessionStart", "beforeTurn"], input, null);
    expect(gathered.context).toContain("told 5 messages");
    expect((seen.beforeTurn as Told).prompt).toBe("What did we decide?");
    expect(input).toEqual(before);
  });

  it("writes each copy well-formed, and leaves the host's lone surrogate where it was", async () => {
    const input = turnInput(1, "half \ud83d of an emoji");
    const told: HookInput[] = [];
    await gather((_event, given) => (told.push(given), []), ["sessionStart", "beforeTurn"], input, null);
    for (const given of told) {
      expect((given as Told).messages[3]?.content).toBe("half \ufffd of an emoji");
    }
    expect(input.messages[3]?.content).toBe("half \ud83d of an emoji");
  });

  it("copies a message reached twice once, and keeps a cycle a cycle", async () => {
    const input = turnInput(1);
    input.self = input;
    const told: unknown[] = [];
    const run: HookRunner<null> = (_event, given) => {
      told.push(given);
      return [];
    };
    await gather(run, ["sessionStart", "beforeTurn"], input, null);
    const [first, second] = told as Told[];
    expect(first).not.toBe(second);
    expect(first).not.toBe(input);
    expect(first?.messages[1]).toBe(first?.messages[2]);
    expect(first?.self).toBe(first);
    expect(first?.messages[1]).not.toBe(second?.messages[1]);
  });

  it("copies with work that grows with the input, not its square", async () => {
    const run: HookRunner<null> = () => [];
    const work = async (count: number) => {
      const input = turnInput(count);
      return (await countWork(() => gather(run, ["sessionStart", "beforeTurn"], input, null))).total;
    };
    const small = await work(2000);
    const large = await work(8000);
    expect(large / small).toBeLessThan(6);
  });
});
