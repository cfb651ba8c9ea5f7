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

// Code that compiled before these were generic still does. A transcript whose type cannot hold a
// tool message (roles without "tool", or a `role: string`) comes back as `MessageLike[]`, as it
// did, and takes a tool message after pruning or folding.
declare const chat: { role: "user" | "assistant"; content: string }[];
expectTypeOf(pruneToolResults(chat)).toEqualTypeOf<MessageLike[]>();
pruneToolResults(chat, { keepLast: 1 }).push({ role: "tool", tool_call_id: "c1", content: "x" });
applyCompaction(chat, undefined).push({ role: "tool", tool_call_id: "c1", content: "x" });
applyCompaction(chat, fold).push({ role: "tool", tool_call_id: "c1", content: "x" });
declare const loose: { role: string; content: string }[];
pruneToolResults(loose).push({ role: "tool", tool_call_id: "c1", content: "x" });
export async function amend(transcript: { role: "user" | "assistant"; content: string }[]) {
  const folded = await compactTranscript(transcript, plan, async () => "s");
  folded.push({ role: "tool", tool_call_id: "c1", content: "x" });
  return folded;
}
// A type whose roles name "tool" but that has no `tool_call_id` field cannot hold the loop's tool
// message either: it comes back as `MessageLike[]`, and takes one after pruning or folding.
type Msg = { role: "system" | "user" | "assistant" | "tool"; content: string };
declare const msgs: Msg[];
expectTypeOf(pruneToolResults(msgs)).toEqualTypeOf<MessageLike[]>();
pruneToolResults(msgs, { keepLast: 1 }).push({ role: "tool", tool_call_id: "c1", content: "x" });
applyCompaction(msgs, undefined).push({ role: "tool", tool_call_id: "c1", content: "x" });
applyCompaction(msgs, fold).push({ role: "tool", tool_call_id: "c1", content: "x" });
export async function amendMsg(transcript: Msg[]) {
  const folded = await compactTranscript(transcript, plan, async () => "s");
  folded.push({ role: "tool", tool_call_id: "c1", content: "x" });
  return folded;
}
// With an optional `tool_call_id` it can: the result keeps the type.
type Optional = { role: "system" | "user" | "assistant" | "tool"; content: string; tool_call_id?: string };
declare const optional: Optional[];
expectTypeOf(pruneToolResults(optional)).toEqualTypeOf<(Optional & MessageLike)[]>();
// A host's own closed union with a tool role comes back as itself, as the SDK's does.
type HostMessage =
  | { role: "system" | "user" | "assistant"; content: string }
  | { role: "tool"; tool_call_id: string; content: string };
declare const host: HostMessage[];
expectTypeOf(pruneToolResults(host)).toExtend<HostMessage[]>();
expectTypeOf(applyCompaction(host, fold)).toExtend<(HostMessage | SummaryMessage)[]>();
// An SDK-typed result takes only the SDK's messages; stored as `MessageLike[]`, it takes any.
declare const other: { role: "tool"; content: string; extra: number };
// @ts-expect-error — not a `ChatCompletionMessageParam` (no tool_call_id).
pruneToolResults(messages).push(other);
const stored: MessageLike[] = pruneToolResults(messages);
stored.push(other);
