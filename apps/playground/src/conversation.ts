// What a conversation keeps of a run that did not finish: the terminal (--prompt) and the web page
// share it, so a failed or stopped prompt is never left dangling for the next one to be joined onto.
import type { RunEvent } from "@loopwright/events";
import type { ChatMessage } from "@loopwright/loop";

/** The conversation to go on with after a run that failed or was stopped, and what to tell the user. */
export interface SettledRun {
  messages: ChatMessage[];
  /** One line for the user, where the conversation is not simply the run's transcript. */
  notice?: string;
}

/** Collects the answer text the current turn streamed so far (taken back on `retract`). */
export function partialAnswer(): { see(event: RunEvent): void; readonly text: string } {
  let text = "";
  return {
    see(event) {
      if (event.kind === "turn" || event.kind === "tool-call") text = "";
      else if (event.kind === "output") text += event.text;
      else if (event.kind === "retract") text = text.slice(0, Math.max(0, text.length - event.chars));
    },
    get text() {
      return text;
    },
  };
}

/**
 * The conversation after a run that ended in an error (`stopped` false) or a stop:
 * - stopped after some answer text streamed: that text (what the user saw) is kept as the assistant's
 *   message, so the next prompt is a new turn;
 * - failed or stopped before the model completed any turn: the prompt is dropped (the conversation
 *   is as it was before it), with a notice saying it was not kept;
 * - otherwise the run's transcript (the tool steps that finished, every call answered).
 *
 * `failed` is the failed run's transcript (`failedRun(error).messages`); `undefined` when the
 * error carried none, which keeps `before`.
 */
export function settleRun(
  before: readonly ChatMessage[],
  failed: readonly ChatMessage[] | undefined,
  stopped: boolean,
  partial: string,
): SettledRun {
  if (!failed) {
    return {
      messages: [...before],
      notice: "The prompt was not kept in the conversation (the run did not start): send it again.",
    };
  }
  const messages = [...failed];
  if (stopped && partial.trim() !== "") {
    return {
      messages: [...messages, { role: "assistant", content: partial }],
      notice: "Stopped: the answer so far is kept in the conversation; every tool call answered.",
    };
  }
  let asked = messages.length - 1;
  while (asked >= 0 && messages[asked]!.role !== "user") asked--;
  const answered = asked >= 0 && messages.slice(asked + 1).some((m) => m.role === "assistant");
  if (asked >= 0 && !answered) {
    return {
      messages: messages.slice(0, asked),
      notice: stopped
        ? "Stopped before the model answered: the prompt was not kept in the conversation; send it again."
        : "The prompt was not kept in the conversation (the run failed before the model answered): send it again.",
    };
  }
  return stopped ? { messages, notice: "Stopped: every tool call answered." } : { messages };
}
