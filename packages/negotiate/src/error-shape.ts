/**
 * Reading a failed request structurally. An `openai` `APIError` keeps the body's `error` member on
 * `.error` and its own `"400 …"` line on `.message`; other clients keep the whole body on `.body`,
 * `.responseBody` (a string) or `.response.data`. Everything here reads those shapes without
 * importing any client, so two installed copies of a client, or a fetch wrapper, read the same.
 */

import { own } from "./own.js";

/** What a failed request said, read off any error-like value. */
export interface ErrorFacts {
  /** HTTP status: the error's own, else a numeric `code` in the body that looks like one. */
  status: number | undefined;
  /** Every human-readable line found (message, body message, nested details), joined by newlines. */
  text: string;
  /** The first message found, the body's own where there is one (not the client's "400 …" line). */
  primary: string;
  /** `code` from the body's error object (a string at OpenAI, a number at llama.cpp and vLLM). */
  code: string | number | undefined;
  /** `type` from the body's error object. */
  type: string | undefined;
  /** `param` from the body's error object (`"max_tokens"`, `"tools[0].function.parameters"`). */
  param: string | undefined;
  /** The error objects found, outermost first: the body, its `error` member, nested details. */
  objects: Record<string, unknown>[];
  /** Response headers where the error kept them. */
  headers: HeaderReader | undefined;
}

/** Reads one header by name, case-insensitively. */
export type HeaderReader = (name: string) => string | undefined;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function parseMaybeJson(value: unknown): unknown {
  if (typeof value !== "string") return value;
  const trimmed = value.trim();
  if (!trimmed.startsWith("{") && !trimmed.startsWith("[")) return value;
  try {
    return JSON.parse(trimmed);
  } catch {
    return value;
  }
}

function statusLike(value: unknown): number | undefined {
  const n = typeof value === "string" && /^\d{3}$/.test(value) ? Number(value) : value;
  return typeof n === "number" && Number.isInteger(n) && n >= 100 && n <= 599 ? n : undefined;
}

function headerReader(headers: unknown): HeaderReader | undefined {
  if (!headers || typeof headers !== "object") return undefined;
  const getter = own(headers, "get");
  if (typeof getter === "function") {
    return (name) => {
      const value = (getter as (name: string) => unknown).call(headers, name);
      return typeof value === "string" ? value : undefined;
    };
  }
  const entries = Object.entries(headers as Record<string, unknown>);
  return (name) => {
    const wanted = name.toLowerCase();
    const hit = entries.find(([key]) => key.toLowerCase() === wanted)?.[1];
    return typeof hit === "string"
      ? hit
      : Array.isArray(hit) && typeof hit[0] === "string"
        ? hit[0]
        : undefined;
  };
}

/** The most of one message the classifiers read (64 KiB): the words that classify an error lead it. */
export const MAX_ERROR_TEXT = 64 * 1024;

/**
 * Reads an error-like value (an `openai` `APIError`, a fetch client's error, a plain
 * `{ status, body }`, a bare string) into the facts the classifiers here decide on. Never throws.
 */
export function readError(error: unknown): ErrorFacts {
  try {
    const facts = readErrorAt(error, 0);
    const headers = facts.headers;
    // A header store that throws (a Proxy, a getter) reads as no header.
    if (headers) {
      facts.headers = (name) => {
        try {
          return headers(name);
        } catch {
          return undefined;
        }
      };
    }
    return facts;
  } catch {
    // Only a value no server sends gets here (a throwing getter or Proxy, a BigInt in a message):
    // it reads as an error that says nothing.
    return {
      status: undefined,
      text: "",
      primary: "",
      code: undefined,
      type: undefined,
      param: undefined,
      objects: [],
      headers: undefined,
    };
  }
}

function readErrorAt(error: unknown, depth: number): ErrorFacts {
  const texts: string[] = [];
  // What `texts` holds, for the check before each add: a wrapper's cause comes back line by line,
  // and a search of the array for each line was quadratic in the lines (a minute for 1 MB).
  const held = new Set<string>();
  const objects: Record<string, unknown>[] = [];
  const seen = new Set<unknown>();

  const addText = (raw: unknown): void => {
    if (typeof raw !== "string") return;
    // A proxy's error page can be megabytes; what a classifier reads is at its start.
    const value = raw.length > MAX_ERROR_TEXT ? raw.slice(0, MAX_ERROR_TEXT) : raw;
    if (value.trim() !== "" && !held.has(value)) {
      held.add(value);
      texts.push(value);
    }
  };

  // Walk a body: collect objects that look like error records, and their messages.
  const visit = (raw: unknown, depth: number): void => {
    const value = parseMaybeJson(raw);
    if (depth > 4 || value === undefined || value === null || seen.has(value)) return;
    if (typeof value === "string") {
      addText(value);
      return;
    }
    if (Array.isArray(value)) {
      seen.add(value);
      for (const item of value.slice(0, 16)) visit(item, depth + 1);
      return;
    }
    if (!isRecord(value)) return;
    seen.add(value);
    objects.push(value);
    // The body's own fields, never a polluted Object.prototype's (an inherited `message` object was
    // read as the server's words, and named the field it refused).
    const message = own(value, "message");
    // A relay that put the upstream's whole JSON body in `message` (Ollama, one-api) is read as that
    // body, so its own words come first; `visit` keeps a string that does not parse as text.
    if (typeof message === "string" && !/^\s*[{[]/.test(message)) addText(message);
    else if (message !== undefined) visit(message, depth + 1);
    addText(own(value, "msg"));
    const detail = own(value, "detail");
    if (typeof detail === "string") addText(detail);
    else if (detail !== undefined) visit(detail, depth + 1);
    const inner = own(value, "error");
    if (inner !== undefined) visit(inner, depth + 1);
    // DeepInfra's { error_message }, Gemini's errors[] and details[].fieldViolations[].description,
    // pydantic's detail[] — every place a server tucked the words that say what was wrong.
    addText(own(value, "error_message"));
    addText(own(value, "description"));
    for (const key of ["errors", "details", "fieldViolations"]) {
      const list = own(value, key);
      if (Array.isArray(list)) visit(list, depth + 1);
    }
    addText(own(own(value, "metadata"), "raw"));
  };

  let status: number | undefined;
  let headers: HeaderReader | undefined;
  if (typeof error === "string") {
    addText(error);
  } else if (isRecord(error) || error instanceof Error) {
    // The error's own fields (or its class's: an `Error`'s `message`), never a polluted
    // Object.prototype's: an inherited `body` or `responseBody` was read as what the server said.
    const e = (name: string): unknown => own(error, name);
    status = statusLike(e("status")) ?? statusLike(e("statusCode"));
    const given = e("response");
    const response = isRecord(given) ? given : undefined;
    if (status === undefined && response) status = statusLike(own(response, "status"));
    headers =
      headerReader(e("headers")) ??
      headerReader(e("responseHeaders")) ??
      headerReader(own(response, "headers"));
    // `serverError`: an error object a server put inside a stream, as a stream reader keeps it.
    for (const body of [e("error"), e("body"), e("responseBody"), own(response, "data"), e("serverError")]) {
      visit(body, 0);
    }
    addText(e("message"));
    // A wrapper (a stream reader's error, an `Error` with `cause`) is read through to what it wraps.
    const cause = e("cause");
    if (depth < 3 && cause !== undefined && cause !== error) {
      const inner = readErrorAt(cause, depth + 1);
      for (const text of inner.text.split("\n")) addText(text);
      objects.push(...inner.objects);
      status ??= inner.status;
      headers ??= inner.headers;
    }
  }

  const first = (key: string): unknown => {
    for (const object of objects) {
      const value = own(object, key);
      if (value !== undefined && value !== null) return value;
    }
    return undefined;
  };
  const code = first("code");
  const type = first("type");
  const param = first("param");
  if (status === undefined) status = statusLike(code);
  return {
    status,
    text: texts.join("\n"),
    primary: texts[0] ?? "",
    code: typeof code === "string" || typeof code === "number" ? code : undefined,
    type: typeof type === "string" ? type : undefined,
    param: typeof param === "string" ? param : undefined,
    objects,
    headers,
  };
}
