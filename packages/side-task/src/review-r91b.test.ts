// r91 review: askJson's Standard Schema check holds to the caller's signal. Before, a schema whose
// asynchronous refinement never settled (a lookup waiting on something hung) kept the task pending
// after the caller stopped it: the signal said "abandons the side task", and nothing happened.
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { isolated } from "../test/wire.js";
import { askJson } from "./ask.js";
import { SideTaskError } from "./errors.js";

let server: TestServer | undefined;
afterEach(() => server?.close());

describe("r91b askJson: a stop ends the task while the schema's check is pending", () => {
  it("rejects with aborted when the signal fires during an asynchronous refinement that never settles", async () => {
    server = await startServer({ personality: "llamacpp", replies: [{ content: '{"city":"Oslo"}' }] });
    const controller = new AbortController();
    let checks = 0;
    const City = z.object({
      city: z.string().refine(async () => {
        checks++;
        // The user stops the task while the refinement waits on something that never answers.
        controller.abort(new Error("stopped by the user"));
        return new Promise<boolean>(() => {});
      }),
    });
    const error = await askJson({ baseUrl: server.baseUrl }, "m", "Pick.", "Which city?", City, {
      ...isolated(),
      signal: controller.signal,
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    // zod's validate tries the refinement synchronously first, then again asynchronously.
    expect(checks).toBeGreaterThan(0);
    expect(SideTaskError.isInstance(error) && error.code).toBe("aborted");
    expect((error as Error).message).toBe("askJson: abandoned by the caller's signal.");
  });
});
