// Review r94r of the claim asked again after a Redis restart (bus.ts `reclaim`): pinned here, small.

import { EventsError } from "@loopwright/events";
import { describe, expect, it } from "vitest";
import { serverWithAdmin } from "../test/admin.js";
import { HAS_REDIS, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisBus } from "./bus.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!HAS_REDIS)("a claim across reconnects to the same server, after a restart", () => {
  const redis = serverWithAdmin();

  it("is not asked again when the server is the one that granted it", async () => {
    const prefix = "r94r-same:";
    const a = await createRedisBus({ url: redis.server.url, prefix, onError: () => {} });
    const b = await createRedisBus({ url: redis.server.url, prefix, onError: () => {} });
    const reconnected = async () => {
      for (let look = 0; look < 300; look++) {
        const ok = await a.readHistory("other").then(
          () => true,
          () => false,
        );
        if (ok) return;
        await pause(10);
      }
    };
    try {
      // A claims a run and ends it: no claim of A's is running when Redis restarts below.
      await a.claimRun("first");
      a.emit("first", { kind: "done" });
      await a.flushed();
      await redis.restart();
      await reconnected();
      // A claims a run on the server Redis came back as.
      await a.claimRun("job");
      // The claim goes on this server, as another instance's `endRun` of the id (claimed, nothing
      // written yet) deletes it, and A's connection drops before it hears the announcement.
      await redis.send(["DEL", `${prefix}claim:job`]);
      await redis.cut("normal");
      await reconnected();
      // Looked at a bounded number of times: before the fix A claimed the id again on this same
      // server (the server it had learnt was the one before the restart), and B was refused.
      for (let look = 0; look < 30 && (await redis.send(["EXISTS", `${prefix}claim:job`])) !== 1; look++)
        await pause(10);
      const refusal = await b.claimRun("job").then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refusal).toBeUndefined();
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
