// Shared by the side-task tests: a fresh client pool and capability store per test, so latches
// learned in one test are not the next one's, and the bodies a test server received.
import { createClientPool } from "@loopwright/client";
import { createCapabilityStore } from "@loopwright/negotiate";
import {
  llamacppFormatTypeRefusal,
  type RecordedRequest,
  type Reply,
  recordedError,
  type TestServer,
} from "@loopwright/testkit";
import type { SideTaskOptions } from "../src/call.js";
import { SideTaskError } from "../src/errors.js";

export function isolated(): Required<Pick<SideTaskOptions, "capabilities" | "clients">> & {
  capabilities: ReturnType<typeof createCapabilityStore>;
} {
  return { capabilities: createCapabilityStore(), clients: createClientPool() };
}

/** Isolated options that keep every notice, and the notices they kept. */
export function noticed() {
  const notices: string[] = [];
  return { notices, options: { ...isolated(), onNotice: (m: string) => notices.push(m) } };
}

/** What a side task throws, for a look at its code, message and cause; anything else fails. */
export async function thrown(run: Promise<unknown>): Promise<SideTaskError> {
  const error = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!SideTaskError.isInstance(error)) throw new Error(`expected a SideTaskError, got ${String(error)}`);
  return error;
}

export function bodies(server: TestServer): Record<string, unknown>[] {
  return server.chatRequests.map((r: RecordedRequest) => r.body as Record<string, unknown>);
}

export function userContent(body: Record<string, unknown>): unknown {
  const messages = body.messages as { role: string; content: unknown }[];
  return messages.find((m) => m.role === "user")?.content;
}

export function systemContent(body: Record<string, unknown>): string {
  const messages = body.messages as { role: string; content: unknown }[];
  return String(messages.find((m) => m.role === "system")?.content ?? "");
}

/** llama.cpp before json_schema support: capture 23's refusal, naming json_schema as the type it got. */
export function olderLlamacpp(): Reply {
  return llamacppFormatTypeRefusal("json_schema");
}

/** LM Studio's recorded refusal of json_object. */
export const lmstudioRefusal: Reply = recordedError(
  400,
  "lmstudio/response-format-json-object-rejected.json",
);
