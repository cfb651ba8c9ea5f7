/** One HTTP request the server received, as tests read it back. */
export interface RecordedRequest {
  /** HTTP method, upper case. */
  method: string;
  /** Path without the query string, e.g. `/v1/chat/completions`. */
  path: string;
  /** Full request target including any query string. */
  url: string;
  /** Request headers, names lower-cased, repeated headers joined with `, `. */
  headers: Record<string, string>;
  /** The body parsed as JSON, or undefined when empty or not JSON. */
  body: unknown;
  /** The body exactly as received, as UTF-8 text. */
  raw: string;
}
