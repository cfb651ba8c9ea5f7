import { describe, expect, it } from "vitest";
import { controlsMismatch } from "../../../test-support/controls-parity.js";
import { escapeControls } from "./controls.js";

describe("negotiate's set of controls", () => {
  it("escapes exactly the characters @loopwright/tools escapes in what it echoes", () => {
    // negotiate does not depend on tools: its copy is held to the one tools keeps.
    expect(controlsMismatch(escapeControls)).toBeUndefined();
  });
});
