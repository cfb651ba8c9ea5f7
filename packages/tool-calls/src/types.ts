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
 * - `"dispatched"`: the tool ran (it may still have failed or been stopped: see `ok`);
 * - `"repeat"`: an identical call in the same step ran and its answer was shared;
 * - `"loop"`: the loop answered it itself (`load_tools`);
 * - `"refused"`: it never reached the tool — arguments unreadable or cut off, the step limit
 *   reached, the run stopped first — and the answer says why.
 */
export type ToolCallSource = "dispatched" | "repeat" | "loop" | "refused";

/**
 * One call of a run after it was answered, as a run's `toolCalls` lists it: enough to tell two
 * calls of one tool apart when parallel results land out of order, and a shared repeat from a
 * call that ran.
 */
export interface ToolCallOutcome {
  /** The call's id, as the transcript holds it. */
  id: string;
  /** The tool the model asked for. */
  name: string;
  /** How the answer came about. */
  source: ToolCallSource;
  /** False when the tool threw, the arguments could not be read, or the call never ran. */
  ok: boolean;
  /** How long the tool ran, in milliseconds; present only for a dispatched call. */
  ms?: number;
}
