// Type test (compiled by `pnpm type-check`, never run): the agent as a strict user writes it — a
// session read in a `useSyncExternalStore` shape, every session event narrowed by `type`, a spec
// parsed and resolved into a session's config, two typed tools, errors narrowed by `code` — with
// no `as`, no `!`, no `any` and no deep import.
import {
  type AgentSpec,
  parseSpec,
  resolveAgentSpec,
  type SpecIssue,
  type SpecIssueCode,
} from "@loopwright/spec";
import {
  Agent,
  AgentError,
  type AgentErrorCode,
  type AgentEvent,
  type AgentTool,
  createSession,
  defineTool,
  type PromptResult,
  type Session,
  SessionBusyError,
  type SessionEvent,
  type SessionView,
  type TimelineEvent,
  type Todo,
  type TodoStatus,
} from "./index.js";

/** React's `useSyncExternalStore(subscribe, getSnapshot)`, as its types declare it. */
declare function useSyncExternalStore<T>(
  subscribe: (onStoreChange: () => void) => () => void,
  getSnapshot: () => T,
): T;

export function useSession(session: Session): SessionView {
  // Passed unbound, as a hook's caller writes it: the methods must not need `this` bound by hand.
  return useSyncExternalStore(
    (onStoreChange) => session.subscribe(onStoreChange),
    () => session.getSnapshot(),
  );
}

export function timelineText(entry: TimelineEvent): string {
  switch (entry.type) {
    case "user":
    case "assistant":
    case "error":
    case "notice":
      return entry.text;
    case "tool":
      return `${entry.id} ${entry.name} ${entry.argsSummary} ${entry.result ?? ""} ${entry.isError ?? false}`;
    case "interrupted":
      return "";
    case "question":
      return entry.questions.map((q) => (q.answer === null ? "?" : "!")).join();
    default: {
      const unhandled: never = entry;
      return unhandled;
    }
  }
}

export function onSessionEvent(event: SessionEvent): string {
  switch (event.type) {
    case "assistant_delta":
    case "thinking_delta":
      return event.text;
    case "assistant_retract":
    case "thinking_retract":
      return String(event.chars);
    case "tool_start":
      return `${event.id} ${event.name} ${event.argsSummary}`;
    case "tool_end":
      return `${event.id} ${event.result}`;
    case "todos_changed": {
      const statuses: TodoStatus[] = event.todos.map((todo: Todo) => todo.status);
      return statuses.join();
    }
    case "mcp_changed":
      return event.servers.map((s) => `${s.name}:${s.state}`).join();
    case "run_metrics":
      return String(event.outputTokens);
    default:
      return timelineText(event);
  }
}

interface ReadArgs {
  path: string;
  lines?: number;
}

const read = defineTool<ReadArgs>({
  name: "read",
  description: "Read a file",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  execute: ({ path, lines }) => `${path}:${lines ?? 0}`,
});
const count: AgentTool<{ items: readonly string[] }> = {
  name: "count",
  description: "Counts items",
  parameters: { type: "object", properties: { items: { type: "array", items: { type: "string" } } } },
  execute: ({ items }) => String(items.length),
};
const tools = [read, count] as const;

export async function session(document: unknown): Promise<string> {
  const parsed = parseSpec(document);
  const codes: SpecIssueCode[] = parsed.errors.map((issue: SpecIssue) => issue.code);
  if (parsed.spec === undefined) return codes.join();
  const spec: AgentSpec = parsed.spec;
  const resolved = resolveAgentSpec([spec]);
  const s = await createSession({ spec, tools });
  const off = s.onEvent((event) => {
    onSessionEvent(event);
  });
  try {
    const result: PromptResult = await s.prompt("hello");
    return `${result.status}${result.reply}${resolved.model}`;
  } catch (e) {
    if (SessionBusyError.isInstance(e)) return e.code;
    if (AgentError.isInstance(e)) {
      const code: AgentErrorCode = e.code;
      return code;
    }
    throw e;
  } finally {
    off();
  }
}

export function agentWith(spec: AgentSpec): Agent {
  const agent = new Agent({ spec, tools: [read, count] });
  agent.subscribe((event: AgentEvent) => {
    if (event.type === "agent_end") void event.sideUsage?.total;
  });
  return agent;
}

export async function fromResolved(spec: AgentSpec): Promise<Session> {
  const resolved = resolveAgentSpec([spec]);
  return createSession({ config: { ...resolved, apiKey: "sk-local" } });
}

/** Every agent event handled by name; `never` proves the switch covers them. */
export function onAgentEvent(event: AgentEvent): string {
  switch (event.type) {
    case "agent_start":
    case "turn_start":
      return event.type;
    case "agent_end":
      return `${event.status} ${event.messages.length} ${event.sideUsage?.total ?? 0} ${event.error ?? ""}`;
    case "turn_end":
      return `${event.message?.role ?? ""} ${event.toolResults.length}`;
    case "message_start":
    case "message_end":
      return event.message.role;
    case "message_update":
      return `${event.delta.type}:${event.delta.text}`;
    case "message_retract":
    case "thinking_retract":
      return String(event.chars);
    case "tool_execution_start":
      return `${event.toolCallId} ${event.toolName}`;
    case "tool_execution_update":
      return `${event.toolCallId} ${String(event.partialResult)}`;
    case "tool_execution_end":
      return `${event.toolCallId} ${event.result} ${event.isError}`;
    case "usage":
      return `${event.usage.total} ${event.sideUsage?.summary.total ?? 0}`;
    case "notice":
      return event.text;
    case "compacted":
      return String(event.messages.length);
    default: {
      const unhandled: never = event;
      return unhandled;
    }
  }
}
