// Type tests: options read back from JSON or a database row, every unset column `null`, compile as
// they are handed over (the runtime reads each `null` as absent; the tests beside this file show
// it). Checked by `pnpm type-check` (tsc includes src); nothing here runs.
import type { Endpoint } from "@loopwright/client";
import {
  type AskJsonOptions,
  ask,
  askJson,
  type PreselectOptions,
  preselect,
  type SideTaskOptions,
  type SummariserOptions,
  summariser,
  type TaskCallOptions,
  type TaskSettings,
  taskCall,
} from "./index.js";

/** What a nullable column holds once read back: the value, or `null`. */
type Row<T> = { [K in keyof T]-?: Exclude<T[K], undefined> | null };

const row: Row<SideTaskOptions> = {
  maxTokens: null,
  temperature: null,
  reasoningEffort: null,
  extraBody: null,
  signal: null,
  timeoutMs: null,
  onNotice: null,
  onUsage: null,
  capabilities: null,
  clients: null,
};
const taskRow: Row<TaskSettings> = {
  model: null,
  endpoint: null,
  maxTokens: null,
  temperature: null,
  reasoningEffort: null,
  extraBody: null,
};
const hostRow: Row<TaskCallOptions> = { ...row, model: null };
const summaryRow: Row<SummariserOptions> = { ...row, system: null, inputChars: null, contextLength: null };
const jsonRow: Row<AskJsonOptions> = { ...row, name: null, strict: null };
const preselectRow: Row<PreselectOptions> = { ...row, keywords: null };

export async function handedOver(endpoint: Endpoint) {
  await ask(endpoint, "m", "", "hi", row);
  await ask(endpoint, "m", "", "hi", {
    maxTokens: null,
    temperature: null,
    reasoningEffort: null,
    timeoutMs: null,
  });
  await askJson(endpoint, "m", "", "hi", { type: "object" }, jsonRow);
  await preselect(endpoint, "m", [], "hi", preselectRow);
  summariser(endpoint, "m", summaryRow);
  const call = taskCall(taskRow, hostRow, endpoint);
  taskCall({ model: "x", maxTokens: null }, {}, endpoint);
  await ask(call.endpoint, call.model, "", "hi", call.options);
}

// A field's own type still holds: a null is absent, not any value.
// @ts-expect-error maxTokens is a number (or null), not a string
export const wrong: SideTaskOptions = { maxTokens: "512" };
