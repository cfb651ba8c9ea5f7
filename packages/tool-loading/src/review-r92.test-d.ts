// Type test (compiled by `pnpm type-check` through tsconfig.exact.json, which sets
// `exactOptionalPropertyTypes`; never run): a loop of the host's own starts the loading with what
// it has, which may be nothing yet — `start({ loaded: carried, preselected })` as the README writes
// it, each possibly `undefined`. The code reads `undefined` as absent; the type refused it (TS2379).
import { createToolLoading, type LoadingStart, type ToolDiscovery } from "./index.js";

export function begin(
  mode: ToolDiscovery,
  carried?: readonly string[],
  preselected?: string[],
): LoadingStart {
  const loading = createToolLoading({ mode, tools: [] });
  return loading.start({ loaded: carried, preselected });
}
