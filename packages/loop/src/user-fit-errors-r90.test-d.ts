// Type test (compiled by `pnpm type-check`, never run): in a `catch (e)`, each package's
// `isInstance` narrows `unknown` to its class, whose `code` is that package's exported union —
// never a bare `string` — so a `switch` over it can be proved exhaustive.
import { ModelListingError, type ModelListingErrorCode } from "@loopwright/client";
import { EventsError, type EventsErrorCode } from "@loopwright/events";
import { HooksError, type HooksErrorCode } from "@loopwright/hooks";
import { LedgerError, type LedgerErrorCode } from "@loopwright/ledger";
import { CapabilitySnapshotError, type CapabilitySnapshotErrorCode } from "@loopwright/negotiate";
import { SchemaCompatError, type SchemaCompatErrorCode } from "@loopwright/schema-compat";
import { SideTaskError, type SideTaskErrorCode } from "@loopwright/side-task";
import {
  EndpointSilent,
  type EndpointSilentCode,
  StreamError,
  type StreamErrorCode,
} from "@loopwright/stream";
import {
  ToolArgumentsError,
  type ToolArgumentsErrorKind,
  ToolCallsError,
  type ToolCallsErrorCode,
} from "@loopwright/tool-calls";
import { ToolLoadingError, type ToolLoadingErrorCode } from "@loopwright/tool-loading";
import { expectTypeOf } from "vitest";
import {
  AgentLoopOverflow,
  type ContextOverflow,
  LoopOptionError,
  type LoopOptionErrorCode,
} from "./index.js";

/** What a type guard narrows `unknown` to, as `catch (e) { if (X.isInstance(e)) … }` reads it. */
declare function narrowed<T>(guard: (value: unknown) => value is T): T;

expectTypeOf(narrowed(ModelListingError.isInstance).code).toEqualTypeOf<ModelListingErrorCode>();
expectTypeOf(narrowed(EventsError.isInstance).code).toEqualTypeOf<EventsErrorCode>();
expectTypeOf(narrowed(HooksError.isInstance).code).toEqualTypeOf<HooksErrorCode>();
expectTypeOf(narrowed(LedgerError.isInstance).code).toEqualTypeOf<LedgerErrorCode>();
expectTypeOf(narrowed(CapabilitySnapshotError.isInstance).code).toEqualTypeOf<CapabilitySnapshotErrorCode>();
expectTypeOf(narrowed(SchemaCompatError.isInstance).code).toEqualTypeOf<SchemaCompatErrorCode>();
expectTypeOf(narrowed(SideTaskError.isInstance).code).toEqualTypeOf<SideTaskErrorCode>();
expectTypeOf(narrowed(EndpointSilent.isInstance).code).toEqualTypeOf<EndpointSilentCode>();
expectTypeOf(narrowed(StreamError.isInstance).code).toEqualTypeOf<StreamErrorCode>();
expectTypeOf(narrowed(ToolArgumentsError.isInstance).code).toEqualTypeOf<ToolArgumentsErrorKind>();
expectTypeOf(narrowed(ToolCallsError.isInstance).code).toEqualTypeOf<ToolCallsErrorCode>();
expectTypeOf(narrowed(ToolLoadingError.isInstance).code).toEqualTypeOf<ToolLoadingErrorCode>();
expectTypeOf(narrowed(LoopOptionError.isInstance).code).toEqualTypeOf<LoopOptionErrorCode>();
// An overflow the loop threw is a `ContextOverflow` too, with its sizes.
expectTypeOf(narrowed(AgentLoopOverflow.isInstance)).toExtend<ContextOverflow>();

/** One switch a host writes, proved exhaustive by `never`. */
export function streamFailure(code: StreamErrorCode): string {
  switch (code) {
    case "server-error":
    case "malformed-chunk":
    case "connection-lost":
      return "retry";
    case "not-a-stream":
    case "invalid-argument":
      return "fix the call";
    default: {
      const unhandled: never = code;
      return unhandled;
    }
  }
}
