// r95c counted the catalogue's nameless tools and listed their servers, each once, by searching the
// list of servers kept so far for every server holding one: a catalogue of many servers with a
// nameless tool each was read in quadratic time (80,000 servers: 25 s, against half a second for
// the same catalogue with every tool named), on every preselect and catalogue read. And its notice
// named the first 12 such servers and stopped, as if those were all of them.
import { countWork, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { noticed } from "../test/wire.js";
import { catalogEntries } from "./catalog.js";
import { preselect } from "./preselect.js";

let server: TestServer | undefined;
afterEach(() => server?.close());

/** `n` servers, each with one tool named and one not (a host's own `title` field in place of `name`). */
const catalog = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    name: `server${i}`,
    tools: [{ title: "Read" } as unknown as { name: string }, { name: `tool${i}` }],
  }));

describe("a catalogue with a nameless tool on every server", () => {
  it("is read in work that grows with it, not with its square", async () => {
    // Counted, not timed (a timing ratio of 8 times the servers read about 8 under a bound of 25, a
    // loaded host's 3-4 times drift away; the search per server read about 50): the array elements
    // walked and Set steps while 4,000 and 32,000 servers are read. Eight times the servers counts
    // 8 times the work (measured 76,000 and 608,000); with the list of servers searched (includes)
    // for each server again, the count stops at a hundred steps a server (past 400,000 at 4,000).
    const read = async (n: number) => {
      const given = catalog(n);
      return (await countWork(() => catalogEntries(given, "preselect"), 100 * n)).total;
    };
    const [few, many] = [await read(4_000), await read(32_000)];
    expect(many / few).toBeLessThan(16);
  });
});

describe("the notice of nameless tools on many servers", () => {
  it("says how many servers it did not name", async () => {
    server = await startServer({ replies: [] });
    const { notices, options } = noticed();
    const servers = Array.from({ length: 14 }, (_, i) => ({
      name: `s${i}`,
      tools: [{ title: "Read" } as unknown as { name: string }],
    }));
    expect(await preselect({ baseUrl: server.baseUrl }, "m", servers, "read it", options)).toEqual([]);
    expect(notices).toEqual([
      "preselect: 14 tools of the catalogue have no name (server s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, and 2 more servers) and were left out of the preselection.",
    ]);
    expect(server.chatRequests).toHaveLength(0);
  });
});
