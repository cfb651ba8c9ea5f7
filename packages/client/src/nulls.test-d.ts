// Type tests: what a settings row read back from JSON holds, every unset column `null`, compiles as
// it is handed to the window lookups (the runtime reads each `null` as none; window.test.ts and
// pool.test.ts show it). Checked by `pnpm type-check` (tsc includes src); nothing here runs.
import {
  contextLimitFor,
  createClientPool,
  type LookupOptions,
  listModels,
  servedWindow,
  type WindowSettings,
} from "./index.js";

interface SettingsRow {
  baseUrl: string;
  model: string | null;
  contextLength: number | null;
}

const lookupRow: { [K in keyof LookupOptions]-?: Exclude<LookupOptions[K], undefined> | null } = {
  signal: null,
};

export async function handedOver(row: SettingsRow) {
  const settings: WindowSettings = { baseUrl: row.baseUrl, model: row.model };
  await contextLimitFor(row, row.contextLength);
  await contextLimitFor(settings, null, null);
  await contextLimitFor(settings, row.contextLength, lookupRow);
  await servedWindow(row, null);
  await servedWindow(row, lookupRow);
  await listModels(row, null);
  const pool = createClientPool();
  await pool.contextLimitFor(row, null, { signal: null });
  await pool.servedWindow(settings, null);
  await pool.listModels(settings, lookupRow);
}

// The operator's number is still a number (or null): a string read from the environment is not.
// @ts-expect-error operatorNumber is a number of tokens, not a string
export const wrong = () => contextLimitFor({ baseUrl: "http://127.0.0.1:8080/v1" }, "8192");
