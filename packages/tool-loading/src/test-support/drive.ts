// A scripted model over the package's builders: the request each step of a run sends, in each
// mode, and the transcript the answers grow — what the loop will do once it is wired, reduced to
// what tool loading decides. Shared by the over-HTTP tests and the prompt-cache benchmark.
import type { FunctionToolLike } from "@loopwright/schema-compat";
import type { CatalogServer } from "../catalog.js";
import type { MessageLike } from "../load-result.js";
import { CALL_TOOL_NAME, LOAD_TOOLS_NAME } from "../meta-tools.js";
import { createToolLoading, type PreselectRouting, type ToolDiscovery } from "../tool-loading.js";

/** One use of a tool in the task: what the model calls it with and what it answers. */
export interface Use {
  tool: string;
  args: Record<string, unknown>;
  result: string;
}

/** One step of the task: the tools it uses, and (loading modes) what the model loads beside them. */
export interface TaskStep {
  uses: Use[];
  /** Names loaded in this step, for tools a later step uses. Ignored in eager mode. */
  load?: string[];
}

/** A scripted run: the question, the names loaded before any work, the steps, the final answer. */
export interface Task {
  system: string;
  question: string;
  /** Loaded in a step of its own before the first (loading modes only). */
  firstLoad: string[];
  steps: TaskStep[];
  answer: string;
}

/** A request body as far as the prompt goes. */
export interface Body {
  messages: MessageLike[];
  tools: FunctionToolLike[];
}

/** What driving a task produced. */
export interface Drive {
  bodies: Body[];
  messages: MessageLike[];
  loaded: string[];
  /** The counts the loop will report as metrics. */
  toolsLoaded: number;
  redundantLoads: number;
  unknownToolNames: string[];
}

/** How a run is set up beyond its task. */
export interface DriveOptions {
  mode: ToolDiscovery;
  tools: FunctionToolLike[];
  catalog: CatalogServer[];
  loaded?: string[];
  preselected?: string[];
  routing?: PreselectRouting;
}

/**
 * Drives `task` the way a model following it would in `options.mode`, answering every call as
 * `createToolLoading`'s `route` says, and returns each request body in order. Throws when a route
 * disagrees with the script (a call dispatched as some other tool), so a wrong answer cannot pass
 * for a measurement.
 */
export function drive(task: Task, options: DriveOptions): Drive {
  const { mode } = options;
  const loading = createToolLoading({ mode, tools: options.tools, catalog: options.catalog });
  const start = loading.start({ loaded: options.loaded, preselected: options.preselected });
  let loaded = start.loaded;
  const messages: MessageLike[] = [{ role: "user", content: task.question }];
  const exchange = loading.preselection(start.preselected, messages);
  messages.push(...exchange.messages);
  const out: Drive = {
    bodies: [],
    messages,
    loaded,
    toolsLoaded: exchange.names.length,
    redundantLoads: 0,
    unknownToolNames: [],
  };
  // A model handed a shortlist does not load it again: only the rest of the first load is asked for.
  const firstLoad = task.firstLoad.filter((name) => !start.preselected.includes(name));
  const steps: TaskStep[] =
    mode === "eager" || firstLoad.length === 0 ? task.steps : [{ uses: [], load: firstLoad }, ...task.steps];

  const send = (step: number) => {
    const request = loading.request({
      step,
      loaded,
      preselected: start.preselected,
      routing: options.routing,
      system: task.system,
    });
    const head: MessageLike[] =
      request.system === undefined ? [] : [{ role: "system", content: request.system }];
    out.bodies.push({ messages: [...head, ...messages], tools: request.tools });
  };

  steps.forEach((step, i) => {
    send(i);
    const calls: { id: string; name: string; args: Record<string, unknown>; use?: Use }[] = [];
    if (mode !== "eager" && step.load?.length) {
      calls.push({ id: `call_${i}_load`, name: LOAD_TOOLS_NAME, args: { names: step.load } });
    }
    step.uses.forEach((use, k) => {
      const id = `call_${i}_${k}`;
      if (mode === "proxy")
        calls.push({ id, name: CALL_TOOL_NAME, args: { name: use.tool, arguments: use.args }, use });
      else calls.push({ id, name: use.tool, args: use.args, use });
    });
    messages.push({
      role: "assistant",
      content: "",
      tool_calls: calls.map((call) => ({
        id: call.id,
        type: "function",
        function: { name: call.name, arguments: JSON.stringify(call.args) },
      })),
    });
    const results: MessageLike[] = [];
    for (const call of calls) {
      const route = loading.route(call, { loaded, messages });
      loaded = route.loaded;
      if (route.kind === "load") {
        out.toolsLoaded += route.fresh.length;
        out.redundantLoads += route.repeated.length;
        out.unknownToolNames.push(...route.resolution.unknown);
        results.push({ role: "tool", tool_call_id: call.id, content: route.content });
      } else if (route.kind === "dispatch") {
        if (!call.use || route.name !== call.use.tool || route.id !== call.id) {
          throw new Error(
            `step ${i}: ${call.name} was routed to ${route.name}, and the script says ${call.use?.tool}`,
          );
        }
        if (route.loadedNow) out.toolsLoaded += 1;
        results.push({ role: "tool", tool_call_id: call.id, content: call.use.result });
      } else {
        out.unknownToolNames.push(...route.unknown);
        results.push({ role: "tool", tool_call_id: call.id, content: route.content });
      }
    }
    messages.push(...results);
  });
  send(steps.length);
  messages.push({ role: "assistant", content: task.answer });
  out.loaded = mode === "proxy" ? [] : loaded;
  return out;
}
