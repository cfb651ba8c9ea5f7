// Type tests: a transcript typed with the `openai` SDK is pruned and compacted and comes back typed
// so, with no cast. Checked by `pnpm type-check` (tsc includes src); nothing here runs.
import type {
  ChatCompletionMessageParam,
  ChatCompletionSystemMessageParam,
} from "openai/resources/chat/completions";
import { expectTypeOf } from "vitest";
import {
  applyCompaction,
  type CompactionPlan,
  compactTranscript,
  type Fold,
  type MessageLike,
  pruneToolResults,
  type SummaryMessage,
} from "./index.js";

declare const messages: ChatCompletionMessageParam[];
declare const plan: CompactionPlan;
declare const fold: Fold | undefined;

// The SDK's messages fit the narrow shape this package reads.
expectTypeOf<ChatCompletionMessageParam>().toExtend<MessageLike>();

// Pruning hands back the caller's message type, each message still a `MessageLike`: its fields
// read on any member (`tool_call_id` on the union), as they did when the result was `MessageLike[]`.
expectTypeOf(pruneToolResults(messages)).toExtend<ChatCompletionMessageParam[]>();
expectTypeOf(pruneToolResults(messages, { keepLast: 2 })).toExtend<ChatCompletionMessageParam[]>();
expectTypeOf(pruneToolResults(messages)).toExtend<MessageLike[]>();
expectTypeOf(pruneToolResults(messages)[0]!.tool_call_id).toEqualTypeOf<string | undefined>();
expectTypeOf(pruneToolResults(messages)[0]!.role).toEqualTypeOf<ChatCompletionMessageParam["role"]>();

// A fold adds one system message, which the SDK takes as a system message.
expectTypeOf<SummaryMessage>().toExtend<ChatCompletionSystemMessageParam>();
expectTypeOf(applyCompaction(messages, fold)).toExtend<(ChatCompletionMessageParam | SummaryMessage)[]>();
expectTypeOf(applyCompaction(messages, fold)).toExtend<ChatCompletionMessageParam[]>();
expectTypeOf(applyCompaction(messages, fold)[0]!.tool_call_id).toEqualTypeOf<string | undefined>();
expectTypeOf(compactTranscript(messages, plan, async () => "s")).resolves.toExtend<
  ChatCompletionMessageParam[]
>();

// An untyped transcript stays `MessageLike`.
declare const plain: MessageLike[];
expectTypeOf(pruneToolResults(plain)).toEqualTypeOf<MessageLike[]>();
expectTypeOf(applyCompaction(plain, fold)).toExtend<MessageLike[]>();
expectTypeOf(compactTranscript(plain, plan, async () => "s")).resolves.toExtend<MessageLike[]>();

// The calls a user writes, spelled out: no cast anywhere.
export async function keep(transcript: ChatCompletionMessageParam[]): Promise<ChatCompletionMessageParam[]> {
  const pruned: ChatCompletionMessageParam[] = pruneToolResults(transcript);
  const folded: ChatCompletionMessageParam[] = await compactTranscript(pruned, plan, async () => "s");
  return applyCompaction(folded, fold);
}
