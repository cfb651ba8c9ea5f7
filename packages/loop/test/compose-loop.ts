import { getClient } from "@loopwright/client";
import { buildBody, capabilitiesFor, negotiate, type ToolDefinition } from "@loopwright/negotiate";
import { restoreArguments, sanitizeTools, takesStringAt } from "@loopwright/schema-compat";
import { streamTurn, type Turn } from "@loopwright/stream";
import { type ArgumentPath, parseToolArguments, ToolArgumentsError } from "@loopwright/tool-calls";
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";

export interface MiniLoopOptions {
  endpoint: { baseUrl: string; apiKey?: string; model: string };
  messages: ChatCompletionMessageParam[];
  tools: ToolDefinition[];
  run: (name: string, args: Record<string, unknown>) => unknown;
  maxSteps?: number;
}

export async function miniLoop(
  options: MiniLoopOptions,
): Promise<{ turn: Turn; messages: ChatCompletionMessageParam[] }> {
  const { endpoint, tools, run, maxSteps = 8 } = options;
  const messages = [...options.messages];
  const client = getClient(endpoint);
  const supports = capabilitiesFor(endpoint.baseUrl, endpoint.apiKey);
  // (1) Declare tools a strict server accepts (names made legal: fs.read goes as fs_read). The
  // answer keeps the order, so each wire name finds the host's tool: its name and original schema.
  const declared = sanitizeTools(tools);
  const hostTools = new Map(tools.map((tool, i) => [declared[i]?.function.name ?? tool.function.name, tool]));
  for (let step = 0; step < maxSteps; step++) {
    // (2) negotiate rebuilds the body per attempt from what the endpoint has refused so far.
    const turn = await negotiate(
      supports,
      (supports, produced, model) =>
        streamTurn(client, buildBody(endpoint, supports, model, messages, declared), { produced }),
      { model: endpoint.model },
    );
    if (turn.toolCalls.length === 0) {
      messages.push({ role: "assistant", content: turn.content });
      return { turn, messages };
    }
    // (3) Parse (and repair) each call's arguments; drop the nulls a strict server made the model send.
    const calls = turn.toolCalls.map((call) => {
      const { name, arguments: raw } = call.function;
      const host = hostTools.get(name)?.function.name ?? name;
      try {
        const schema = hostTools.get(name)?.function.parameters;
        // A number JS cannot hold as written: its digits where the tool takes a string, else refused.
        const takesString = (path: ArgumentPath) => takesStringAt(schema, path);
        const parsed = parseToolArguments(raw, { finishReason: turn.finishReason, name, takesString });
        return { call, host, json: parsed.json, args: restoreArguments(parsed.value, schema) };
      } catch (error) {
        if (!ToolArgumentsError.isInstance(error)) throw error;
        return { call, host, json: "{}", refusal: `Error: ${error.message}` };
      }
    });
    // (4) The assistant message carries the calls, replaying the repaired JSON, never the raw text.
    messages.push({
      role: "assistant",
      content: turn.content || null,
      tool_calls: calls.map(({ call, json }) => ({
        id: call.id,
        type: "function",
        function: { name: call.function.name, arguments: json },
      })),
    });
    // (5) One tool message per call, in order, a failure included: an unanswered call is refused,
    // and so is a tool message without text, so a tool that returned nothing is said to have.
    for (const { call, host, args, refusal } of calls) {
      let content = refusal ?? "";
      if (args !== undefined) {
        try {
          const result = await run(host, args);
          const text: string | undefined = typeof result === "string" ? result : JSON.stringify(result);
          content = text?.trim() ? text : "(the tool returned no output)";
        } catch (error) {
          content = `Error: ${error instanceof Error ? error.message : String(error)}`;
        }
      }
      messages.push({ role: "tool", tool_call_id: call.id, content });
    }
  }
  throw new Error(`miniLoop: no answer within ${maxSteps} steps`);
}
