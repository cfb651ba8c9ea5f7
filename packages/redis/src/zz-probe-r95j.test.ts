import { it } from "vitest";
import { serverWithAdmin } from "../test/admin.js";
import { createRedisStores } from "./stores.js";

const BASE = "http://127.0.0.1:9/v1";
const redis = serverWithAdmin();
const handles = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;

it("probe many calls", async () => {
  const stores = await createRedisStores({ url: redis.server.url, prefix: "p:" });
  for (let i = 0; i < 200; i++) stores.capabilities.capabilitiesFor(`${BASE}${i}`, "k").strictSchemas = false;
  await stores.writtenBack();
  await redis.send(["CONFIG", "RESETSTAT"]);
  global.gc?.();
  const m0 = process.memoryUsage().heapUsed;
  const t0 = Date.now();
  for (let r = 0; r < 4; r++) {
    for (let i = 0; i < 3000; i++) await stores.writtenBack();
    global.gc?.();
    console.log("round", r, (process.memoryUsage().heapUsed - m0) / 1e6);
  }
  const seqMs = Date.now() - t0;
  global.gc?.();
  const m1 = process.memoryUsage().heapUsed;
  console.log("seq 2000", seqMs, "ms heap delta MB", (m1 - m0) / 1e6, "timeouts", handles());
  console.log(String(await redis.send(["INFO", "commandstats"])).split("\n").filter((l) => l.startsWith("cmdstat")).join("\n"));
  await redis.send(["CONFIG", "RESETSTAT"]);
  const t1 = Date.now();
  for (let r = 0; r < 3; r++) {
    await Promise.all(Array.from({ length: 5000 }, () => stores.writtenBack()));
    global.gc?.();
    console.log("conc round", r, (process.memoryUsage().heapUsed - m0) / 1e6);
  }
  console.log("concurrent 10000", Date.now() - t1, "ms timeouts", handles());
  global.gc?.();
  console.log("heap delta MB", (process.memoryUsage().heapUsed - m0) / 1e6);
  console.log(String(await redis.send(["INFO", "commandstats"])).split("\n").filter((l) => l.startsWith("cmdstat")).join("\n"));
  await stores.close();
}, 300_000);
