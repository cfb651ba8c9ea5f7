// Type tests: options read back from JSON or a database row, every unset column `null`, compile as
// they are handed over (the runtime reads each `null` as none given; run-hooks.test.ts shows it).
// Checked by `pnpm type-check` (tsc includes src); nothing here runs.
import {
  type ConsultOptions,
  consult,
  createHooks,
  type GatherOptions,
  gather,
  type HookRunner,
  type NotifyOptions,
  notify,
} from "./index.js";

/** What a nullable column holds once read back: the value, or `null`. */
type Row<T> = { [K in keyof T]-?: Exclude<T[K], undefined> | null };

const gatherRow: Row<GatherOptions> = {
  maxTokens: null,
  preface: null,
  signal: null,
  timeoutMs: null,
  charsPerToken: null,
};
const notifyRow: Row<NotifyOptions> = { timeoutMs: null };
const consultRow: Row<ConsultOptions> = { forced: null, signal: null, timeoutMs: null };

export async function handedOver(run: HookRunner) {
  const input = { prompt: "p", turn: 0 };
  await gather(run, "beforeTurn", input, {}, gatherRow);
  await gather(run, ["sessionStart", "beforeTurn"], input, {}, null);
  await notify(run, "afterTurn", input, {}, notifyRow);
  await notify(run, "sessionEnd", input, {}, null);
  await consult(run, { messages: [], from: 0, through: 1 }, {}, consultRow);
  await consult(run, { messages: [], from: 0, through: 1 }, {}, null);
  const hooks = createHooks();
  await hooks.gather(run, "beforeTurn", input, {}, gatherRow);
  await hooks.notify(run, "afterTurn", input, {}, null);
  await hooks.consult(run, { messages: [], from: 0, through: 1 }, {}, consultRow);
}

// A field's own type still holds: a null is none given, not any value.
// @ts-expect-error timeoutMs is a number (or null), not a string
export const wrong: NotifyOptions = { timeoutMs: "5000" };
