// Holding a package's copy of the echo rule's character set to the one @loopwright/tools keeps.

import { readFileSync } from "node:fs";

/**
 * The set of characters `@loopwright/tools` writes as `\uXXXX` in what it echoes (its `CONTROLS`
 * pattern), read from its source: packages that may not depend on tools (side-task, tool-loading,
 * agent) keep a copy, and their parity tests compare the copy with this one.
 */
export function toolsControls(): RegExp {
  const source = readFileSync(new URL("../packages/tools/src/tool.ts", import.meta.url), "utf8");
  const written = /const CONTROLS = (\/\[.*\]\/g);/.exec(source)?.[1];
  if (written === undefined)
    throw new Error("packages/tools/src/tool.ts no longer holds `const CONTROLS = /[…]/g;`");
  return new RegExp(written.slice(1, -2), "g");
}

/**
 * The first code unit (U+0000 to U+FFFF; the surrogate halves too unless `skipSurrogates`) whose
 * text `escaped(char)` differs from what tools' set makes of it (`\uXXXX` for a character in the
 * set, the character itself otherwise), as `U+xxxx: <answer>`; undefined where every one agrees.
 * `escaped` gets the character alone and answers its escaped text; wrap it to put it in context.
 */
export function controlsMismatch(
  escaped: (char: string) => string,
  skipSurrogates = false,
): string | undefined {
  const theirs = toolsControls();
  for (let code = 0; code <= 0xffff; code++) {
    if (skipSurrogates && code >= 0xd800 && code <= 0xdfff) continue;
    const char = String.fromCharCode(code);
    const expected = char.replace(theirs, `\\u${code.toString(16).padStart(4, "0")}`);
    const answer = escaped(char);
    if (answer !== expected) return `U+${code.toString(16)}: ${answer}`;
  }
  return undefined;
}
