// Shared by the masking tests: a credential as different writers put it back into text.

const hex4 = (c: string) => c.charCodeAt(0).toString(16).padStart(4, "0");

/** The same value as different writers put it. */
export const ENCODINGS: Record<string, (value: string) => string> = {
  "as is": (v) => v,
  "percent-encoded": encodeURIComponent,
  "percent-encoded, lower-case hex": (v) =>
    encodeURIComponent(v).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()),
  "percent-encoded, RFC 3986 strict (!'()* too)": (v) =>
    encodeURIComponent(v).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`),
  "form-encoded": (v) => new URLSearchParams({ v }).toString().slice(2),
  "JSON.stringify": (v) => JSON.stringify(v).slice(1, -1),
  "PHP json_encode (\\/)": (v) => JSON.stringify(v).slice(1, -1).replace(/\//g, "\\/"),
  "Gson (<>&=' as \\u)": (v) =>
    JSON.stringify(v)
      .slice(1, -1)
      .replace(/[<>&=']/g, (c) => `\\u${hex4(c)}`),
  "every symbol as \\u, capital hex": (v) =>
    JSON.stringify(v)
      .slice(1, -1)
      .replace(/\\(["\\])/g, "$1")
      .replace(/[^A-Za-z0-9]/g, (c) => `\\u${hex4(c).toUpperCase()}`),
};
