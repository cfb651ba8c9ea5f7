import type { TurnReply } from "./replies.js";

/** The parts of a chat request the scripted model reads. */
export interface ScriptedModelRequest {
  messages?: unknown;
  tools?: unknown;
}

/** The rule-based demo model: answers every request with one plain turn. */
export function scriptedModel(_request: ScriptedModelRequest): TurnReply {
  return { content: "I am the loopwright testkit's scripted model, a simulator." };
}
