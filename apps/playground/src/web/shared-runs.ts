// With `--redis`, what every playground process on one Redis knows about runs it did not start: each
// run's prompt and whether it ended, and which run is the newest, so a page served by instance B can
// follow a run instance A is running (its events come from the Redis bus).
import { createClient } from "@redis/client";

/** What a page needs to follow a run. */
export interface RunInfo {
  id: string;
  prompt: string;
  ended: boolean;
}

/** The runs shared through one Redis. */
export interface SharedRuns {
  /** Records (or updates) a run, and makes a run that has not ended the newest; resolves once Redis has it. */
  put(run: RunInfo): Promise<void>;
  /** A run by id, from any instance; undefined when Redis has none by that id (or it expired). */
  get(id: string): Promise<RunInfo | undefined>;
  /** The newest run any instance started. */
  latest(): Promise<RunInfo | undefined>;
  close(): Promise<void>;
}

const PREFIX = "loopwright:playground:";
/** How long a run's record outlives its last update: a day, like the bus's retention of an ended run. */
const TTL_SECONDS = 24 * 60 * 60;

/** A run record as Redis holds it; undefined for one this module did not write (another process's, or garbled). */
function parse(text: string | null | undefined): RunInfo | undefined {
  if (!text) return undefined;
  let value: Partial<RunInfo> | null;
  try {
    value = JSON.parse(text) as Partial<RunInfo> | null;
  } catch {
    return undefined;
  }
  return typeof value?.id === "string" && typeof value.prompt === "string"
    ? { id: value.id, prompt: value.prompt, ended: value.ended === true }
    : undefined;
}

/** Connects to Redis at `url`; rejects with the client's error when it cannot. */
export async function connectSharedRuns(url: string): Promise<SharedRuns> {
  const client = createClient({ url });
  client.on("error", () => {
    // Reported by the command that fails; the client reconnects by itself.
  });
  await client.connect();
  return {
    async put(run) {
      const write = client.multi().set(`${PREFIX}run:${run.id}`, JSON.stringify(run), { EX: TTL_SECONDS });
      if (!run.ended) write.set(`${PREFIX}latest`, run.id, { EX: TTL_SECONDS });
      await write.exec();
    },
    async get(id) {
      return parse(await client.get(`${PREFIX}run:${id}`));
    },
    async latest() {
      const id = await client.get(`${PREFIX}latest`);
      return id ? parse(await client.get(`${PREFIX}run:${id}`)) : undefined;
    },
    async close() {
      client.destroy();
    },
  };
}
