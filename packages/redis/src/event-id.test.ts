import { EventsError } from "@loopwright/events";
import { describe, expect, it } from "vitest";
import { busFixture } from "../test/bus-fixture.js";
import { HAS_REDIS, SKIP_MESSAGE } from "../test/redis-server.js";
import { readEventId } from "./event-id.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

describe("event ids", () => {
  it("reads a seq with its token, and a bare seq", () => {
    expect(readEventId("12:Xc3_9aQk2LpM")).toEqual({ seq: 12, token: "Xc3_9aQk2LpM" });
    expect(readEventId("0")).toEqual({ seq: 0, token: undefined });
  });

  for (const bad of [
    "",
    "x",
    "-1",
    "06",
    "1.5",
    "6:",
    "6:a b",
    "6:a:b",
    `6:${"a".repeat(65)}`,
    "9007199254740993",
  ]) {
    it(`refuses ${JSON.stringify(bad)} with an error that says what an id is`, () => {
      const error = (() => {
        try {
          readEventId(bad);
        } catch (caught) {
          return caught;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(EventsError);
      expect((error as EventsError).code).toBe("invalid-event");
      expect((error as Error).message).toContain(`${JSON.stringify(bad)} is not one`);
    });
  }
});

describe.skipIf(!HAS_REDIS)("a Redis watcher's event ids", () => {
  const redis = busFixture();
  const { bus } = redis;

  it("hands out each event's seq with its run's token, and resumes after one", async () => {
    const emitter = await bus("ids:");
    emitter.emit("job", { kind: "output", text: "a" });
    emitter.emit("job", { kind: "output", text: "b" });
    emitter.emit("job", { kind: "done" });
    await emitter.flushed();
    const token = (
      (await redis.raw.sendCommand(["XRANGE", "ids:run:job", "1-0", "1-0"])) as [string, string[]][]
    )[0]?.[1];
    const o = token?.[token.indexOf("o") + 1];
    const stream = emitter.watch("job");
    const ids: string[] = [];
    for await (const event of stream) ids.push(stream.idOf(event));
    expect(ids).toEqual([`1:${o}`, `2:${o}`, `3:${o}`]);
    const rest: number[] = [];
    for await (const event of emitter.watch("job", undefined, { after: ids[0] as string }))
      rest.push(event.seq);
    expect(rest).toEqual([2, 3]);
  });

  it("refuses a bad id at the call, and an event it did not hand out", async () => {
    const reader = await bus("ids-bad:");
    expect(() => reader.watch("job", undefined, { after: "6:" })).toThrow(/"6:" is not one/);
    const stream = reader.watch("job");
    expect(() => stream.idOf({ kind: "output", text: "x", seq: 1 } as never)).toThrow(EventsError);
    await stream.return?.();
  });
});
