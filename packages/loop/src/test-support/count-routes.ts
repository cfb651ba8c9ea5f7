/**
 * `@loopwright/tool-loading` with every `route` of every `createToolLoading` counted by the name it
 * was handed (`load_tools`, `call_tool`, a tool's): for `vi.mock("@loopwright/tool-loading", …)` in
 * a test that checks how often the loop routes a call. Behaves as the real module otherwise, and
 * imports nothing, so a `vi.mock` factory can load it.
 */
export function countingRoutes<M extends { createToolLoading: (...args: never[]) => unknown }>(
  real: M,
  counts: Map<string, number>,
): M {
  const create = real.createToolLoading as (...args: unknown[]) => {
    route: (call: { name: string }, state: unknown) => unknown;
  };
  return {
    ...real,
    createToolLoading: (...args: unknown[]) => {
      const loading = create(...args);
      return {
        ...loading,
        route: (call: { name: string }, state: unknown) => {
          counts.set(call.name, (counts.get(call.name) ?? 0) + 1);
          return loading.route(call, state);
        },
      };
    },
  };
}
