import type { TurnUsage } from "@loopwright/stream";

/** Which side task made a request: the function the host called. */
export type SideTaskKind = "ask" | "askReply" | "askJson" | "summariser" | "preselect";

/**
 * What one side-task request cost, as `onUsage` is told it: once for every answer a server sent back
 * (a summary asked again after its window ran out, a request sent again past a refusal: each answer
 * its own report).
 */
export interface SideTaskUsage {
  /** The side task that made the request. */
  task: SideTaskKind;
  /** The model the request was sent to, as the endpoint knows it. */
  model: string;
  /**
   * The server's token counts, read as `@loopwright/stream` reads a turn's (`TurnUsage`): `prompt`,
   * `completion`, `total` and `cached` always there, zero where the server reported none; `uncached`
   * and `reasoningTokens` only where it counted them.
   */
  usage: TurnUsage;
}
