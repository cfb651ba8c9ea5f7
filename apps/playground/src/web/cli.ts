// `pnpm playground --web`: starts the web page's server and prints its URL until Ctrl-C.
import { readFile } from "node:fs/promises";
import { escapeUnseen, printable } from "../printable.js";
import { startWebServer } from "./server.js";
import { shownText, shownUrl } from "./spec.js";

/** What `--web` reads off the command line. */
export interface WebFlags {
  model?: string;
  spec?: string;
  port?: string;
  redis?: string;
}

/** Runs the web playground until SIGINT/SIGTERM; resolves with the exit code. */
export async function runWeb(flags: WebFlags): Promise<number> {
  const baseUrl = process.env.OPENAI_BASE_URL;
  // Digits only: Number() would read "" (and " ") as 0, a random port, "0x1f90" as 8080 and "8e3" as 8000.
  const port = flags.port === undefined ? 0 : /^\d{1,5}$/.test(flags.port) ? Number(flags.port) : Number.NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stdout.write(
      `error: --port must be a whole number from 0 to 65535, not ${JSON.stringify(escapeUnseen(flags.port ?? ""))}\n`,
    );
    return 1;
  }
  const spec = flags.spec === undefined ? undefined : await readFile(flags.spec, "utf8");
  const contextLength = Number(process.env.LOOPWRIGHT_CONTEXT_LENGTH ?? 0);
  const server = await startWebServer({
    port,
    ...(flags.redis !== undefined ? { redis: flags.redis } : {}),
    ...(spec !== undefined ? { spec } : {}),
    ...(baseUrl
      ? {
          endpoint: {
            baseUrl,
            apiKey: process.env.OPENAI_API_KEY ?? "",
            // An empty LOOPWRIGHT_MODEL is read as unset, as an empty OPENAI_BASE_URL is.
            model:
              flags.model ??
              (process.env.LOOPWRIGHT_MODEL?.trim() ? process.env.LOOPWRIGHT_MODEL : "gpt-4o-mini"),
            ...(contextLength > 0 ? { contextLength } : {}),
          },
        }
      : {}),
  });
  // A --spec with errors applies nothing: said here, as a missing file is, rather than only on the page.
  const report = server.spec;
  const named = flags.spec === undefined ? "" : escapeUnseen(flags.spec);
  if (report && report.errors.length > 0) {
    process.stdout.write(
      `error: --spec ${named}: ${report.errors.map((e) => printable(shownText(e))).join("\n  ")}\n`,
    );
    await server.close();
    return 1;
  }
  for (const warning of report?.warnings ?? []) {
    process.stdout.write(
      `warning: --spec ${named}: ${escapeUnseen(warning.path)}: ${printable(shownText(warning.message))}\n`,
    );
  }
  const applied = report?.applied;
  // Where the runs go: the spec's endpoint where it names one, else OPENAI_BASE_URL, else the simulator.
  const first = applied?.baseUrl
    ? `Spec ${named}: model ${escapeUnseen(applied.model)} at Endpoint ${shownUrl(applied.baseUrl)}`
    : `${baseUrl ? `Endpoint: ${shownUrl(baseUrl)}` : "Simulator: a scripted model on a loopback server (set OPENAI_BASE_URL to use a real endpoint)."}${applied ? `\nSpec ${named}: model ${escapeUnseen(applied.model)}` : ""}`;
  process.stdout.write(
    `${first}\n` +
      (flags.redis !== undefined
        ? `Runs shared through Redis at ${shownUrl(flags.redis)}: another playground with the same --redis shows them live.\n`
        : "") +
      `Playground page: ${server.url}  (Ctrl-C to stop)\n`,
  );
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await server.close();
  return 0;
}
