import type { ChunkLike } from "../chunk.js";

/** A small deterministic generator, so a fast-check seed reproduces a re-chunking exactly. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `text` (a string or bytes) cut at the given places (each from 1 to its length − 1; repeats and order do not matter). */
export function splitAt<T extends string | Uint8Array>(text: T, places: Iterable<number>): T[] {
  const sorted = [...new Set(places)].filter((p) => p > 0 && p < text.length).sort((a, b) => a - b);
  const parts: T[] = [];
  let last = 0;
  for (const p of sorted) {
    parts.push(text.slice(last, p) as T);
    last = p;
  }
  parts.push(text.slice(last) as T);
  return parts;
}

function cuts(text: string, rand: () => number, max: number): string[] {
  const n = Math.floor(rand() * (max + 1));
  const points: number[] = [];
  for (let i = 0; i < n && text.length > 1; i++) points.push(1 + Math.floor(rand() * (text.length - 1)));
  return splitAt(text, points);
}

type Json = Record<string, unknown>;
const TEXT_FIELDS = ["content", "reasoning_content", "reasoning"] as const;

/** Options of {@link rechunk}. */
export interface RechunkOptions {
  /** Repeat the tool call's id on every piece (a server that does). */
  repeatIds?: boolean;
  /** Send `index` only on the first piece of a call (a server that does). */
  indexOnce?: boolean;
}

/**
 * The same stream with its deltas cut differently: text and arguments split into more chunks at
 * random points, names split in two, and runs of plain content chunks merged.
 */
export function rechunk(
  chunks: readonly ChunkLike[],
  rand: () => number,
  options: RechunkOptions = {},
): ChunkLike[] {
  const out: Json[] = [];
  for (const original of chunks) {
    const chunk = JSON.parse(JSON.stringify(original)) as Json;
    const choices = chunk.choices as Json[] | undefined;
    const choice = Array.isArray(choices) && choices.length === 1 ? choices[0] : undefined;
    const delta = choice?.delta as Json | undefined;
    if (!choice || !delta || typeof delta !== "object") {
      out.push(chunk);
      continue;
    }
    const texts = TEXT_FIELDS.filter((f) => typeof delta[f] === "string" && delta[f] !== "");
    const calls = Array.isArray(delta.tool_calls) ? (delta.tool_calls as Json[]) : [];
    const details = delta.reasoning_details as Json[] | undefined;
    const detailsMirror =
      Array.isArray(details) &&
      details.length === 1 &&
      details[0]?.text === delta.reasoning &&
      texts[0] === "reasoning";
    const detailsOk = !Array.isArray(details) || details.length === 0 || detailsMirror;
    let pieces: Json[] = [];
    if (texts.length === 1 && calls.length === 0 && detailsOk) {
      const field = texts[0]!;
      for (const part of cuts(delta[field] as string, rand, 4)) {
        const d: Json = { [field]: part };
        if (detailsMirror) d.reasoning_details = [{ ...details![0], text: part }];
        pieces.push(d);
      }
    } else if (texts.length === 0 && calls.length === 1) {
      const call = calls[0]!;
      const fn = (call.function ?? {}) as Json;
      const name = typeof fn.name === "string" ? fn.name : "";
      const args = typeof fn.arguments === "string" ? fn.arguments : "";
      const names = name.length > 1 && rand() < 0.5 ? cuts(name, rand, 1) : [name];
      const argParts = cuts(args, rand, 6);
      const seq: { name?: string; arguments?: string }[] = [];
      for (const n of names) seq.push({ name: n });
      // The arguments begin once the name is whole, as servers that split a name send it: a name's
      // second half after whole arguments would be another tool named alone (a further call, from
      // servers that number every call 0).
      seq[seq.length - 1]!.arguments = argParts[0];
      for (const a of argParts.slice(1)) seq.push({ arguments: a });
      pieces = seq.map((s, i) => {
        const piece: Json = {};
        if (call.index !== undefined && (i === 0 || !options.indexOnce)) piece.index = call.index;
        if (call.id !== undefined && (i === 0 || options.repeatIds)) piece.id = call.id;
        if (i === 0 && call.type !== undefined) piece.type = call.type;
        const f: Json = {};
        if (s.name !== undefined) f.name = s.name;
        if (s.arguments !== undefined) f.arguments = s.arguments;
        piece.function = f;
        return { tool_calls: [piece] };
      });
    }
    if (pieces.length <= 1) {
      out.push(chunk);
      continue;
    }
    const rest: Json = { ...delta };
    for (const f of [...TEXT_FIELDS, "tool_calls", "reasoning_details"]) delete rest[f];
    pieces.forEach((piece, i) => {
      const last = i === pieces.length - 1;
      const c: Json = { ...chunk };
      if (!last) delete c.usage;
      c.choices = [
        {
          ...choice,
          delta: i === 0 ? { ...rest, ...piece } : piece,
          finish_reason: last ? choice.finish_reason : null,
        },
      ];
      out.push(c);
    });
  }
  // Merge runs of chunks that carry nothing but plain content.
  const merged: Json[] = [];
  const plain = (c: Json | undefined): string | undefined => {
    const ch = c?.choices as Json[] | undefined;
    if (!c || !Array.isArray(ch) || ch.length !== 1 || c.usage) return undefined;
    const d = ch[0]?.delta as Json | undefined;
    if (ch[0]?.finish_reason || !d || Object.keys(d).length !== 1 || typeof d.content !== "string")
      return undefined;
    return d.content;
  };
  for (const c of out) {
    const prev = merged[merged.length - 1];
    const a = plain(prev);
    const b = plain(c);
    if (a !== undefined && b !== undefined && rand() < 0.5) {
      ((prev!.choices as Json[])[0]!.delta as Json).content = a + b;
    } else merged.push(c);
  }
  return merged as ChunkLike[];
}
