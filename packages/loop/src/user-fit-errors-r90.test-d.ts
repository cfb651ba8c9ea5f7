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

declare const e: unknown;

if (ModelListingError.isInstance(e)) expectTypeOf(e.code).toEqualTypeOf<ModelListingErrorCode>();
if (EventsError.isInstance(e)) expectTypeOf(e.code).toEqualTypeOf<EventsErrorCode>();
if (HooksError.isInstance(e)) expectTypeOf(e.code).toEqualTypeOf<HooksErrorCode>();
if (LedgerError.isInstance(e)) expectTypeOf(e.code).toEqualTypeOf<LedgerErrorCode>();
if (CapabilitySnapshotError.isInstance(e)) expectTypeOf(e.code).toEqualTypeOf<CapabilitySnapshotErrorCode>();
if (SchemaCompatError.isInstance(e)) expectTypeOf(e.code).toEqualTypeOf<SchemaCompatErrorCode>();
if (SideTaskError.isInstance(e)) expectTypeOf(e.code).toEqualTypeOf<SideTaskErrorCode>();
if (EndpointSilent.isInstance(e)) expectTypeOf(e.code).toEqualTypeOf<EndpointSilentCode>();
if (StreamError.isInstance(e)) expectTypeOf(e.code).toEqualTypeOf<StreamErrorCode>();
if (ToolArgumentsError.isInstance(e)) expectTypeOf(e.code).toEqualTypeOf<ToolArgumentsErrorKind>();
if (ToolCallsError.isInstance(e)) expectTypeOf(e.code).toEqualTypeOf<ToolCallsErrorCode>();
if (ToolLoadingError.isInstance(e)) expectTypeOf(e.code).toEqualTypeOf<ToolLoadingErrorCode>();
if (LoopOptionError.isInstance(e)) expectTypeOf(e.code).toEqualTypeOf<LoopOptionErrorCode>();
// An overflow the loop threw is a `ContextOverflow` too, with its sizes.
if (AgentLoopOverflow.isInstance(e)) expectTypeOf(e).toExtend<ContextOverflow>();

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
