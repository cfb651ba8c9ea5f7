/**
 * A tool call as it is handed to whatever runs it: the call's id, the tool's name, the arguments
 * read into an object (`{}` where they could not be read), and the model's own argument text as
 * `raw` where there was one.
 */
export interface ToolCallRequest {
  /** The call's id, as the model's turn (or `recoverToolCalls`) gave it; unique within a step. */
  id: string;
  /** The tool the model asked for. */
  name: string;
  /** The arguments, repaired and parsed. */
  args: Record<string, unknown>;
  /** The arguments exactly as the model wrote them. */
  raw?: string;
}

/** What one call produced, as the model will read it in the tool message answering it. */
export interface ToolCallResult {
  /** The id of the call this answers. */
  id: string;
  /** The tool that was called. */
  name: string;
  /** False when the tool threw, the arguments could not be read, or the call never ran. */
  ok: boolean;
  /** The whole text the model reads as the tool's answer. */
  content: string;
}

/**
 * How a call came to have its result:
 * - `"dispatch"`: the tool ran;
 * - `"repeat"`: an identical call in the same step ran and its answer was shared;
 * - `"loop"`: the loop answered it itself (`load_tools`);
 * - `"unreadable"`: the arguments could not be read, so the tool never ran;
 * - `"stopped"`: the run was stopped while the call ran;
 * - `"not-run"`: the run stopped before the call was reached.
 */
export type ToolCallSource = "dispatch" | "repeat" | "loop" | "unreadable" | "stopped" | "not-run";

/** One call of a step after it was answered: what was asked, what came back, and how. */
export interface ToolCallOutcome {
  /** The call as it was (or would have been) handed to dispatch. */
  request: ToolCallRequest;
  /** Its answer, as the transcript holds it. */
  result: ToolCallResult;
  /** How the answer came about. */
  source: ToolCallSource;
  /** How long dispatch took, in milliseconds; absent where dispatch was not called. */
  durationMs?: number;
}
