import { endpointField } from "./endpoint.js";
import { protoless } from "./protoless.js";

const CONFIG_MARK = Symbol.for("@loopwright/client.EndpointConfigError");
const LISTING_MARK = Symbol.for("@loopwright/client.ModelListingError");

function marked(value: unknown, mark: symbol): boolean {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[mark] === true;
}

/**
 * An endpoint description this package cannot use: no base URL, a base URL that is not an http(s)
 * URL or carries credentials, a query or a fragment, a key or headers that are not strings, a
 * timeout that is not a number of seconds, or a pool option out of range. The message names the field and never quotes a base URL.
 */
export class EndpointConfigError extends Error {
  override readonly name: string = "EndpointConfigError";
  /** The offending field (`"baseUrl"`, `"requestTimeoutSeconds"`, …). */
  readonly field: string;

  constructor(field: string, message: string, options?: { cause?: unknown }) {
    const cause = endpointField(options, "cause");
    super(message, cause === undefined ? undefined : { cause });
    this.field = field;
    Object.defineProperty(this, CONFIG_MARK, protoless({ value: true }));
  }

  /** True for an `EndpointConfigError` from any installed copy of this package. */
  static isInstance(value: unknown): value is EndpointConfigError {
    return marked(value, CONFIG_MARK);
  }
}

/** Why a model listing failed: the server answered an error status, or a body that is not a listing. */
export type ModelListingErrorCode = "http" | "malformed" | "unreachable";

/**
 * `GET /models` did not give a listing. `code` is `"http"` (with the `status` the server answered),
 * `"malformed"` (the body was not JSON holding a listing: a `data` array, a bare array or a `models`
 * array; or it was longer than the pool's `maxLookupBodyBytes`, and was not read past it), or
 * `"unreachable"` (no answer at all, or one cut off before its body ended:
 * refused, reset, DNS — the network error is on `cause`); `url` is the address asked.
 */
export class ModelListingError extends Error {
  override readonly name: string = "ModelListingError";
  /** `"http"`, `"malformed"` or `"unreachable"`. */
  readonly code: ModelListingErrorCode;
  /** The HTTP status, for `"http"`. */
  readonly status: number | undefined;
  /** The listing URL that was asked. */
  readonly url: string;

  constructor(
    code: ModelListingErrorCode,
    url: string,
    message: string,
    options?: { status?: number; cause?: unknown },
  ) {
    // Its own fields: a polluted Object.prototype's `status` or `cause` went on every listing error.
    const cause = endpointField(options, "cause");
    super(message, cause === undefined ? undefined : { cause });
    this.code = code;
    this.url = url;
    this.status = endpointField(options, "status") as number | undefined;
    Object.defineProperty(this, LISTING_MARK, protoless({ value: true }));
  }

  /** True for a `ModelListingError` from any installed copy of this package. */
  static isInstance(value: unknown): value is ModelListingError {
    return marked(value, LISTING_MARK);
  }
}
