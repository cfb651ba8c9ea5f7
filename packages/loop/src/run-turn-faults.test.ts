import { getClient } from "@loopwright/client";
import { buildBody, createCapabilityStore } from "@loopwright/negotiate";
import { EndpointSilent } from "@loopwright/stream";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { type RunTurnOptions, runTurn } from "./run-turn.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const messages = [{ role: "user", content: "Say hello." }];

function turnAgainst(s: TestServer, options: RunTurnOptions) {
  const store = createCapabilityStore();
  return runTurn(
    getClient({ baseUrl: s.baseUrl }),
    store.capabilitiesFor(s.baseUrl),
    (supports, model) => buildBody({ model: "any" }, supports, model, messages),
    options,
  );
}

describe("runTurn against a faulty endpoint", () => {
  it("re-sends a request met by silence before the first byte once, then reports EndpointSilent [first-chunk]", async () => {
    server = await startServer({
      replies: [
        { content: "never", firstByteDelayMs: 30_000 },
        { content: "never", firstByteDelayMs: 30_000 },
        { content: "a third request was sent" },
      ],
    });
    const notices: string[] = [];
    const error = await turnAgainst(server, {
      firstChunkMs: 300,
      idleMs: 300,
      maxRetries: 2,
      backoff: { baseMs: 10 },
      onNotice: (m) => notices.push(m),
    }).catch((e: unknown) => e);
    expect(EndpointSilent.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: "first-chunk", limitMs: 300 });
    expect(server.chatRequests).toHaveLength(2);
    // No clock: the replies come after 30 s, so a turn that waited for them instead of giving up at
    // firstChunkMs would end at vitest's test timeout.
    expect(notices.join("\n")).toMatch(/once more|retrying/);
  });

  it("waits as long as a 429's retry-after asks, and says so in a notice", async () => {
    server = await startServer({
      replies: [
        {
          type: "error",
          status: 429,
          body: { error: { message: "Rate limited" } },
          headers: { "retry-after": "1" },
        },
        { content: "Hello." },
      ],
    });
    const notices: string[] = [];
    const started = performance.now();
    const turn = await turnAgainst(server, { onNotice: (m) => notices.push(m) });
    expect(turn.content).toBe("Hello.");
    expect(performance.now() - started).toBeGreaterThanOrEqual(950);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(/asked to wait 1 s/);
    expect(notices[0]).toMatch(/waiting 1\.0 s/);
  });

  it("caps a 503's retry-after at the longest wait allowed, telling both numbers", async () => {
    server = await startServer({
      replies: [
        {
          type: "error",
          status: 503,
          body: { error: { message: "Busy" } },
          headers: { "retry-after": "3600" },
        },
        { content: "Hello." },
      ],
    });
    const notices: string[] = [];
    const started = performance.now();
    const turn = await turnAgainst(server, { backoff: { maxHintMs: 400 }, onNotice: (m) => notices.push(m) });
    expect(turn.content).toBe("Hello.");
    // It waited the cap (a wait is promised, so a lower bound; Node's timers may fire a few ms early
    // against the clock), not the hour asked: that would end at vitest's test timeout.
    expect(performance.now() - started).toBeGreaterThanOrEqual(380);
    expect(notices[0]).toMatch(/asked to wait 3600 s/);
    expect(notices[0]).toMatch(/waiting 0\.4 s/);
  });

  it("waits for a retry-after longer than one timer takes when the cap allows it, rather than retrying at once", async () => {
    // 3 000 000 s is past the 2^31-1 ms a Node timer takes (it would fire after 1 ms instead).
    const limited = {
      type: "error" as const,
      status: 429,
      body: { error: { message: "Rate limited" } },
      headers: { "retry-after": "3000000" },
    };
    server = await startServer({ replies: Array.from({ length: 20 }, () => limited) });
    const controller = new AbortController();
    const notices: string[] = [];
    let told: () => void = () => {};
    const noticed = new Promise<void>((resolve) => {
      told = resolve;
    });
    const run = turnAgainst(server, {
      signal: controller.signal,
      backoff: { maxHintMs: Number.POSITIVE_INFINITY },
      onNotice: (m) => {
        notices.push(m);
        told();
      },
    }).catch((e: unknown) => e);
    await noticed;
    // A moment in which a wait cut short would have sent the request again, many times over.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const reason = new Error("the host stopped waiting");
    controller.abort(reason);
    expect(await run).toBe(reason);
    expect(server.chatRequests).toHaveLength(1);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(/waiting 3000000\.0 s/);
  });

  it("rides out a burst of 429s that each say when to come back, beyond maxRetries, within the wait cap", async () => {
    const limited = {
      type: "error" as const,
      status: 429,
      body: { error: { message: "Rate limited" } },
      headers: { "retry-after-ms": "100" },
    };
    server = await startServer({
      replies: [limited, limited, limited, limited, limited, { content: "Hello." }],
    });
    const turn = await turnAgainst(server, { maxRetries: 2 });
    expect(turn.content).toBe("Hello.");
    expect(server.chatRequests).toHaveLength(6);
  });

  it("gives up on a burst of 429s once their waits add up past the cap, with the server's error", async () => {
    const limited = {
      type: "error" as const,
      status: 429,
      body: { error: { message: "Rate limited" } },
      headers: { "retry-after-ms": "200" },
    };
    server = await startServer({ replies: Array.from({ length: 20 }, () => limited) });
    const notices: string[] = [];
    const error = await turnAgainst(server, {
      backoff: { maxHintMs: 500 },
      onNotice: (m) => notices.push(m),
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 429 });
    expect(server.chatRequests.length).toBeLessThanOrEqual(5);
  });
});
