// `pnpm playground --web`: starts the web page's server and prints its URL until Ctrl-C.
import { readFile } from "node:fs/promises";
import { startWebServer } from "./server.js";
import { shownUrl } from "./spec.js";

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
  const port = flags.port === undefined ? 0 : Number(flags.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stdout.write(`error: --port must be a whole number from 0 to 65535, not ${flags.port}\n`);
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
            model: flags.model ?? process.env.LOOPWRIGHT_MODEL ?? "gpt-4o-mini",
            ...(contextLength > 0 ? { contextLength } : {}),
          },
        }
      : {}),
  });
  process.stdout.write(
    `${baseUrl ? `Endpoint: ${shownUrl(baseUrl)}` : "Simulator: a scripted model on a loopback server (set OPENAI_BASE_URL to use a real endpoint)."}\n` +
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
