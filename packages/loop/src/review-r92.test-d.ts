// Type test (compiled by `pnpm type-check`; never run): a host that installed only
// `@loopwright/loop` (and openai) narrows every cause the README says a failed run carries —
// `LoopOptionError`, `EndpointSilent` ("a second silence ends the run with `AgentLoopError` ←
// `EndpointSilent`"), `StreamError` (a reply the server cut or garbled) and `EventsError` (a
// `runId` refused) — importing each from the loop, with a `switch` on its `code` proved exhaustive.
// Before, the last three were not exported here (TS2305): under an isolated install (pnpm, npm
// --install-strategy=linked) such a host had to add @loopwright/stream and @loopwright/events to
// its own dependencies just to write `isInstance`.
import {
  AgentLoopError,
  EndpointSilent,
  type EndpointSilentCode,
  EventsError,
  type EventsErrorCode,
  LoopOptionError,
  runAgentLoop,
  StreamError,
  type StreamErrorCode,
} from "./index.js";

function silence(code: EndpointSilentCode): string {
  switch (code) {
    case "first-chunk":
      return "no first chunk";
    case "idle":
      return "went quiet";
    default: {
      const never: never = code;
      return never;
    }
  }
}

export async function ask(): Promise<string> {
  try {
    const result = await runAgentLoop({
      config: { baseUrl: "http://127.0.0.1:8080/v1", model: "m" },
      messages: [{ role: "user", content: "hi" }],
      dispatch: () => "no tools here",
    });
    return result.turn.content;
  } catch (error) {
    if (!AgentLoopError.isInstance(error)) throw error;
    const cause = error.cause;
    if (EndpointSilent.isInstance(cause)) return silence(cause.code);
    if (StreamError.isInstance(cause)) {
      const code: StreamErrorCode = cause.code;
      return code;
    }
    if (EventsError.isInstance(cause)) {
      const code: EventsErrorCode = cause.code;
      return code;
    }
    if (LoopOptionError.isInstance(cause)) return `${cause.code}: ${cause.option}`;
    return error.message;
  }
}
