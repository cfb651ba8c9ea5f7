// Test-only: what the tests import, so each names the public surface it exercises.
export type { ChatMessage as ChatMessageLike } from "@loopwright/loop";
export * from "./index.js";
