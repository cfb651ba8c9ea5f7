import { readdirSync } from "node:fs";
import { join } from "node:path";
import { fixturesDir, readFixture } from "@loopwright/testkit";
import type { ChunkLike } from "../chunk.js";

/** Every recorded stream under wire/, as paths relative to the fixtures folder. */
export function wireStreams(): string[] {
  const dir = join(fixturesDir(), "wire");
  const out: string[] = [];
  for (const provider of readdirSync(dir).sort()) {
    for (const file of readdirSync(join(dir, provider)).sort()) {
      if (file.endsWith(".sse")) out.push(`wire/${provider}/${file}`);
    }
  }
  return out;
}

/** The JSON chunks of an SSE text: `data:` lines of each event, without `[DONE]` or comments. */
export function parseSse(text: string): ChunkLike[] {
  const chunks: ChunkLike[] = [];
  for (const event of text.split(/\r?\n\r?\n/)) {
    const data = event
      .split(/\r?\n/)
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).replace(/^ /, ""))
      .join("\n");
    if (data === "" || data.startsWith("[DONE]")) continue;
    chunks.push(JSON.parse(data) as ChunkLike);
  }
  return chunks;
}

const parsed = new Map<string, string>();

/** The chunks of a recorded stream (a fresh copy each call; the parse is cached). */
export function fixtureChunks(rel: string): ChunkLike[] {
  let json = parsed.get(rel);
  if (json === undefined) {
    json = JSON.stringify(parseSse(readFixture(rel)));
    parsed.set(rel, json);
  }
  return JSON.parse(json) as ChunkLike[];
}

/** Chunks written back as an SSE body. */
export function toSse(chunks: readonly unknown[], done = true): string {
  return chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join("") + (done ? "data: [DONE]\n\n" : "");
}
