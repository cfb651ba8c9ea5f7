import type { SequencedEvent } from "@loopwright/events";
import { describe, expect, it } from "vitest";
import { busFixture } from "../test/bus-fixture.js";
import { HAS_REDIS, SKIP_MESSAGE } from "../test/redis-server.js";
import type { createRedisBus } from "./bus.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!HAS_REDIS)(
  "the Redis bus writes a run's events in seq order, whatever a write meets",
  () => {
    const redis = busFixture();
    const bus = (
      prefix: string,
      errors: string[],
      settings?: Parameters<typeof createRedisBus>[0]["settings"],
    ) => redis.bus(prefix, { settings, onError: (error) => errors.push(messageOf(error)) });

    it("after SCRIPT FLUSH, with another bus writing at the same moment, every event of interleaved runs is stored, in order, and nothing is reported", async () => {
      const runs = Array.from({ length: 12 }, (_, i) => `r${i}`);
      const told: string[] = [];
      for (let trial = 0; trial < 6; trial++) {
        const prefix = `ns${trial}:`;
        const a = await bus(prefix, told);
        const b = await bus(prefix, []);
        await redis.raw.sendCommand(["SCRIPT", "FLUSH"]);
        // B writes one-event runs while A's queue holds 12 runs' events interleaved, as concurrent
        // runs emit them: whichever loads the script first, the rest of A's calls find it loaded.
        for (let i = 0; i < 40; i++) b.emit(`b${i}`, { kind: "output", text: "b" });
        if (trial % 2) await new Promise((resolve) => setImmediate(resolve));
        for (let i = 0; i < 40; i++) for (const r of runs) a.emit(r, { kind: "output", text: `${r}-${i}` });
        await Promise.all([a.flushed(), b.flushed()]);
        for (const r of runs) {
          const history = await a.readHistory(r);
          expect({ trial, r, seqs: history.map((e) => e.seq) }).toEqual({
            trial,
            r,
            seqs: Array.from({ length: 40 }, (_, i) => i + 1),
          });
          expect(history.map((e) => (e as SequencedEvent & { text: string }).text)).toEqual(
            Array.from({ length: 40 }, (_, i) => `${r}-${i}`),
          );
        }
      }
      expect(told).toEqual([]);
    });

    it("with Redis at maxmemory and memory hovering at the limit, every event is stored once the limit lifts, or the drop is reported with its count", async () => {
      const told: string[] = [];
      const a = await bus("oom:", told);
      const runs = Array.from({ length: 10 }, (_, i) => `r${i}`);
      const info = (await redis.raw.sendCommand(["INFO", "memory"])) as string;
      const used = Number(info.match(/used_memory:(\d+)/)?.[1]);
      await redis.raw.sendCommand(["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
      await redis.raw.sendCommand(["CONFIG", "SET", "maxmemory", String(used + 200_000)]);
      // Keys that come and go, as other tenants' expiring streams do: some writes are refused, some pass.
      const filler = setInterval(() => {
        void redis.raw
          .sendCommand(["SET", `fill${Math.random()}`, "x".repeat(20_000), "PX", "30"])
          .catch(() => {});
      }, 2);
      const n = 300;
      try {
        for (let i = 0; i < n; i++) {
          for (const r of runs) a.emit(r, { kind: "output", text: `${r}-${i}-${"y".repeat(200)}` });
          if (i % 10 === 9) await pause(5);
        }
        await pause(1500);
      } finally {
        clearInterval(filler);
        await redis.raw.sendCommand(["CONFIG", "SET", "maxmemory", "0"]);
      }
      await a.flushed();
      let missing = 0;
      for (const r of runs) {
        const seqs = (await a.readHistory(r)).map((e) => e.seq);
        missing += n - seqs.length;
        // Whatever is stored is in order, each once.
        expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
        expect(new Set(seqs).size).toBe(seqs.length);
      }
      // Redis did refuse writes for now (the case under test), and said so through onError; a loss
      // must be told with its count, never silent.
      const refusedForNow = (m: string) => / for now: it answered OOM/.test(m);
      expect(told.some(refusedForNow)).toBe(true);
      const drops = told.filter((m) => !refusedForNow(m));
      if (missing === 0) expect(drops).toEqual([]);
      else expect(drops.join("\n")).toContain(String(missing));
      expect(missing).toBe(0);
    });

    it("events below this emitter's own later entry are told dropped with their count, once per write, and not blamed on another instance", async () => {
      const told: string[] = [];
      const a = await bus("own:", told);
      a.emit("mine", { kind: "output", text: "one" });
      await a.flushed();
      // Something (a restore, a hand edit) put an entry far ahead carrying this emitter's own mark.
      const [top] = (await redis.raw.sendCommand(["XRANGE", "own:run:mine", "-", "+"])) as [
        string,
        string[],
      ][];
      const fields = top?.[1] ?? [];
      const token = fields[fields.indexOf("o") + 1] as string;
      await redis.raw.sendCommand([
        "XADD",
        "own:run:mine",
        "10-0",
        "e",
        '{"seq":10,"kind":"output","text":"x"}',
        "o",
        token,
      ]);
      for (let i = 0; i < 4; i++) a.emit("mine", { kind: "output", text: `later ${i}` });
      await a.flushed();
      // One report for the four, with their count and seqs, naming no other instance.
      expect(told).toHaveLength(1);
      expect(told[0]).not.toMatch(/another/);
      expect(told[0]).toMatch(/^4 events of run "mine" \(seq 2–5\) were dropped/);
    });

    it("a second emitter into a run another holds is told once per run, not once per write", async () => {
      const toldA: string[] = [];
      const toldB: string[] = [];
      const a = await bus("two:", toldA);
      const b = await bus("two:", toldB);
      a.emit("held", { kind: "output", text: "a's" });
      await a.flushed();
      for (let i = 0; i < 4; i++) {
        b.emit("held", { kind: "output", text: `b's ${i}` });
        await b.flushed();
      }
      expect(toldA).toEqual([]);
      expect(toldB).toHaveLength(1);
      expect(toldB[0]).toMatch(/another instance/);
      expect((await a.readHistory("held")).map((e) => e.seq)).toEqual([1]);
    });
  },
);
