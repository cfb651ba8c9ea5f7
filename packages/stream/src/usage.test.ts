import { describe, expect, it } from "vitest";
import { readUsage } from "./usage.js";

describe("readUsage", () => {
  it("reads zeros, and no uncached or reasoningTokens, when the server reported nothing", () => {
    expect(readUsage(undefined)).toEqual({ prompt: 0, completion: 0, total: 0, cached: 0 });
    expect(readUsage(null)).toEqual({ prompt: 0, completion: 0, total: 0, cached: 0 });
  });

  it("tells a cold cache (reported 0) from no cache report", () => {
    expect(
      readUsage({
        prompt_tokens: 10,
        completion_tokens: 2,
        total_tokens: 12,
        prompt_tokens_details: { cached_tokens: 0 },
      }),
    ).toEqual({ prompt: 10, completion: 2, total: 12, cached: 0, uncached: 10 });
    expect(
      readUsage({ prompt_tokens: 10, completion_tokens: 2, total_tokens: 12, prompt_tokens_details: null }),
    ).toEqual({
      prompt: 10,
      completion: 2,
      total: 12,
      cached: 0,
    });
  });

  it("reads DeepSeek's prompt_cache_hit_tokens and prompt_cache_miss_tokens", () => {
    expect(
      readUsage({
        prompt_tokens: 339,
        completion_tokens: 83,
        prompt_cache_hit_tokens: 320,
        prompt_cache_miss_tokens: 19,
      }),
    ).toEqual({
      prompt: 339,
      completion: 83,
      total: 422,
      cached: 320,
      uncached: 19,
    });
  });

  it("reads a cache count sent at the top level of usage", () => {
    expect(
      readUsage({ prompt_tokens: 10, completion_tokens: 955, total_tokens: 965, cached_tokens: 4 }),
    ).toMatchObject({
      cached: 4,
      uncached: 6,
    });
  });

  it("reports reasoningTokens only when the server measured them, from either place servers put them", () => {
    expect(
      readUsage({ prompt_tokens: 1, completion_tokens_details: { reasoning_tokens: 7 } }).reasoningTokens,
    ).toBe(7);
    expect(readUsage({ prompt_tokens: 1, reasoning_tokens: 0 }).reasoningTokens).toBe(0);
    expect("reasoningTokens" in readUsage({ prompt_tokens: 1, completion_tokens: 5 })).toBe(false);
    expect("reasoningTokens" in readUsage({ prompt_tokens: 1, completion_tokens_details: null })).toBe(false);
  });

  it("ignores counts that are not numbers and fills total from the parts", () => {
    expect(readUsage({ prompt_tokens: "5" as never, completion_tokens: 3 })).toEqual({
      prompt: 0,
      completion: 3,
      total: 3,
      cached: 0,
    });
  });
});
