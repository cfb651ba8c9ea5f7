// Type test (compiled by `pnpm type-check`, never run): `askJson` with a zod schema, giving a typed
// result with no `as` — the answer is checked by the same schema, so the type is earned.
import { z } from "zod";
import { askJson, SideTaskError, type SideTaskErrorCode } from "./index.js";

const Verdict = z.object({ ok: z.boolean(), reasons: z.array(z.string()) });

export async function verdict(): Promise<z.output<typeof Verdict> | undefined> {
  try {
    const answer = await askJson(
      { baseUrl: "http://127.0.0.1:8080/v1" },
      "m",
      "Judge the text.",
      "The text.",
      z.toJSONSchema(Verdict),
    );
    const read = Verdict.safeParse(answer);
    return read.success ? read.data : undefined;
  } catch (e) {
    if (SideTaskError.isInstance(e)) {
      const code: SideTaskErrorCode = e.code;
      return code === "invalid-input" ? undefined : undefined;
    }
    throw e;
  }
}
