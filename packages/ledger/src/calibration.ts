import { describe, LedgerError, readSettings } from "./errors.js";
import { hasMedia, type RequestBodyLike } from "./messages.js";
import { contextChars, DEFAULT_CHARS_PER_TOKEN } from "./tokens.js";

/**
 * What identifies an endpoint for calibration: an object (such as the capability record
 * `capabilitiesFor` answers for an endpoint, held by identity) or a string (such as its base URL).
 */
export type EndpointKey = object | string;

/** How many of a model's latest readings `charsPerTokenFor` chooses from. */
const READINGS_KEPT = 4;
/** The range a reading has to fall in to be believed, in characters per token. */
const MIN_READING = 1;
/** Also the floor `recordRequest` holds a prompt to: a body's characters over it (not exported from the package). */
export const MAX_READING = 8;

/** Per (endpoint, model) characters-per-token readings, and the divisor they imply. */
export interface Calibration {
  /**
   * Takes a reading from a request whose prompt the endpoint counted: the body's characters over
   * `promptTokens`. Returns the divisor `charsPerTokenFor` now answers, or `undefined` when the
   * reading was not taken — the body carries an image or other media, the count is not above zero, or the ratio
   * falls outside 1 to 8 characters a token.
   */
  calibrate(
    endpoint: EndpointKey,
    model: string | undefined,
    body: RequestBodyLike,
    promptTokens: number,
  ): number | undefined;
  /** The highest of the model's last four readings on that endpoint; 4 until one is taken. */
  charsPerTokenFor(endpoint: EndpointKey, model?: string): number;
  /** Forgets every reading taken for `endpoint` (one tenant); answers whether there were any. */
  forget(endpoint: EndpointKey): boolean;
  /** Forgets every reading. */
  reset(): void;
}

/** How many endpoints named by a string a calibration store keeps readings for. */
export const DEFAULT_MAX_CALIBRATED_ENDPOINTS = 1024;
/** How many models of one endpoint a calibration store keeps readings for. */
export const DEFAULT_MAX_CALIBRATED_MODELS = 64;

/** Options of `createCalibration`. */
export interface CalibrationOptions {
  /**
   * Endpoints named by a string whose readings are kept (least recently used forgotten first);
   * default `DEFAULT_MAX_CALIBRATED_ENDPOINTS`. Readings under an object key live as long as the
   * object does (a capability record the store forgets takes its readings with it).
   */
  maxEndpoints?: number | undefined;
  /** Models kept per endpoint (least recently used forgotten first); default `DEFAULT_MAX_CALIBRATED_MODELS`. */
  maxModels?: number | undefined;
}

function bound(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) {
    throw new LedgerError(
      "invalid-option",
      `createCalibration: ${name} must be a whole number from 1, got ${describe(value)}.`,
    );
  }
  return value;
}

/** Puts `key` last (most recent) in `map` and drops the oldest entries past `max`. */
function touch<V>(map: Map<string, V>, key: string, value: V, max: number): void {
  map.delete(key);
  map.set(key, value);
  while (map.size > max) map.delete(map.keys().next().value as string);
}

function checkEndpoint(endpoint: unknown, where: string): void {
  if ((typeof endpoint !== "object" || endpoint === null) && typeof endpoint !== "string") {
    throw new LedgerError(
      "invalid-option",
      `${where} needs the endpoint as an object (such as its capability record) or a string (such as its base URL), and was given ${describe(endpoint)}.`,
    );
  }
}

/**
 * The key readings are kept under for `model`: its name, or `""` for none (`undefined`, `null`).
 * Anything else (a number, a listing entry passed for its id) is refused: a reading taken under it
 * was kept where no name could read it back.
 */
function modelKey(model: unknown, where: string): string {
  if (model === undefined || model === null) return "";
  if (typeof model !== "string") {
    throw new LedgerError(
      "invalid-option",
      `${where} needs the model as its name (a string) or nothing, and was given ${describe(model)}.`,
    );
  }
  return model;
}

/**
 * Makes an empty calibration store. The top-level `calibrate` and `charsPerTokenFor` use one
 * default store; a host whose tenants must not share readings makes its own. Throws `LedgerError`
 * (`invalid-option`) when `options` is given and is not an object, or a bound is not a whole
 * number from 1.
 */
export function createCalibration(options: CalibrationOptions = {}): Calibration {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new LedgerError(
      "invalid-option",
      `createCalibration takes its options as an object ({ maxEndpoints?, maxModels? }) or nothing, and was given ${describe(options)}.`,
    );
  }
  // Each read once, and never from a polluted Object.prototype (an inherited `maxModels: 1` made every
  // store forget all but one model's readings; an inherited `maxEndpoints: 0` refused every store).
  const read = readSettings(options, ["maxEndpoints", "maxModels"], "createCalibration: the options");
  const maxEndpoints = bound("maxEndpoints", read.maxEndpoints, DEFAULT_MAX_CALIBRATED_ENDPOINTS);
  const maxModels = bound("maxModels", read.maxModels, DEFAULT_MAX_CALIBRATED_MODELS);
  let byObject = new WeakMap<object, Map<string, number[]>>();
  let byString = new Map<string, Map<string, number[]>>();

  const models = (endpoint: EndpointKey, create: boolean): Map<string, number[]> | undefined => {
    const existing = typeof endpoint === "string" ? byString.get(endpoint) : byObject.get(endpoint);
    if (!create) return existing;
    const held = existing ?? new Map<string, number[]>();
    if (typeof endpoint === "string") touch(byString, endpoint, held, maxEndpoints);
    else if (!existing) byObject.set(endpoint, held);
    return held;
  };

  const answer = (readings: readonly number[] | undefined): number =>
    readings && readings.length > 0 ? Math.max(...readings) : DEFAULT_CHARS_PER_TOKEN;

  return {
    calibrate(endpoint, model, body, promptTokens) {
      checkEndpoint(endpoint, "calibrate");
      const key = modelKey(model, "calibrate");
      const chars = contextChars(body).total;
      if (typeof promptTokens !== "number" || !Number.isFinite(promptTokens) || promptTokens <= 0)
        return undefined;
      // An image (or audio, video, a file) is counted in tokens by the server and not at all in
      // characters here, so the ratio it gives is no reading of the text.
      if (hasMedia(body.messages)) return undefined;
      const reading = chars / promptTokens;
      if (!(reading >= MIN_READING && reading <= MAX_READING)) return undefined;
      const perModel = models(endpoint, true) as Map<string, number[]>;
      const readings = perModel.get(key) ?? [];
      readings.push(reading);
      if (readings.length > READINGS_KEPT) readings.splice(0, readings.length - READINGS_KEPT);
      touch(perModel, key, readings, maxModels);
      return answer(readings);
    },

    charsPerTokenFor(endpoint, model) {
      checkEndpoint(endpoint, "charsPerTokenFor");
      const key = modelKey(model, "charsPerTokenFor");
      return answer(models(endpoint, false)?.get(key));
    },

    forget(endpoint) {
      checkEndpoint(endpoint, "forget");
      return typeof endpoint === "string" ? byString.delete(endpoint) : byObject.delete(endpoint);
    },

    reset() {
      byObject = new WeakMap();
      byString = new Map();
    },
  };
}
