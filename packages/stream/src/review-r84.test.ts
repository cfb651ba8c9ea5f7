import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { type Fence, FenceSplitter, stripThinking } from "./fences.js";
import { streamTurn } from "./stream-turn.js";
import { body, chunk, harness, sse } from "./test-support/http.js";

// Review r84, over real HTTP to the testkit.

/** The turn a stream answering "Hi" reads when it sends the usage objects `usages`, one a chunk. */
async function turnWith(...usages: unknown[]) {
  const { client } = await harness([
    {
      type: "raw",
      headers: sse,
      chunks: [
        chunk([{ index: 0, delta: { role: "assistant", content: "Hi" } }]),
        ...usages.map((usage) => chunk([], { usage })),
        chunk([{ index: 0, delta: {}, finish_reason: "stop" }]),
        "data: [DONE]\n\n",
      ],
    },
  ]);
  return streamTurn(client, body());
}

// R84-2: the turn keeps each count from the last usage object that reports it (README), but an
// earlier chat-spelling count was read before a later Responses-spelling one: a relay that sends
// `{prompt_tokens: 100, …}` early and the turn's final `{input_tokens: 120, …}` at the end read 100.
describe("R84-2: the later report of a count wins whichever spelling it is in", () => {
  it("reads the later Responses-spelling counts over earlier chat ones", async () => {
    const turn = await turnWith(
      {
        prompt_tokens: 100,
        completion_tokens: 1,
        prompt_tokens_details: { cached_tokens: 10 },
        completion_tokens_details: { reasoning_tokens: 1 },
      },
      {
        input_tokens: 120,
        output_tokens: 30,
        input_tokens_details: { cached_tokens: 90 },
        output_tokens_details: { reasoning_tokens: 12 },
      },
    );
    expect(turn.usage).toEqual({
      prompt: 120,
      completion: 30,
      total: 150,
      cached: 90,
      uncached: 30,
      reasoningTokens: 12,
    });
  });

  it("reads the later chat-spelling counts over earlier Responses ones, and a later DeepSeek cache count", async () => {
    const turn = await turnWith(
      { input_tokens: 100, output_tokens: 1, input_tokens_details: { cached_tokens: 10 } },
      { prompt_tokens: 120, completion_tokens: 30, prompt_tokens_details: { cached_tokens: 90 } },
    );
    expect(turn.usage).toEqual({ prompt: 120, completion: 30, total: 150, cached: 90, uncached: 30 });
    const deepSeek = await turnWith(
      { prompt_tokens: 100, prompt_tokens_details: { cached_tokens: 10 }, prompt_cache_miss_tokens: 90 },
      { prompt_tokens: 120, completion_tokens: 30, prompt_cache_hit_tokens: 100 },
    );
    expect(deepSeek.usage).toEqual({ prompt: 120, completion: 30, total: 150, cached: 100, uncached: 20 });
  });

  it("keeps an earlier count that a later object sends as none, in either spelling", async () => {
    const turn = await turnWith(
      { prompt_tokens: 100, completion_tokens: 5 },
      { input_tokens: -1, output_tokens: 30 },
    );
    expect(turn.usage).toEqual({ prompt: 100, completion: 30, total: 130, cached: 0 });
  });
});

// R84-3: custom fence tables where one marker is a prefix of another (`<<` and `<<<`, an opener
// that begins with another fence's closer): the splitter holds back a piece ending in part of a
// marker, and over any split of a text its totals must equal stripThinking of the whole.
describe("R84-3: FenceSplitter with markers that are prefixes of one another", () => {
  const tables: Fence[][] = [
    [
      { open: "<<", close: ">>" },
      { open: "<<<", close: ">>>" },
    ],
    [
      { open: "[t]", close: "[/t]", implicitOpen: true },
      { open: "[t]]", close: "[/t]]" },
    ],
    [
      { open: "<a>", close: "<a>/", resume: "<a>//" },
      { open: "<a>x", close: "<", implicitOpen: true },
    ],
    [{ open: "@@", close: "@", implicitOpen: true }],
  ];

  it("property: any split of a text reads as stripThinking of the whole", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: tables.length - 1 }).chain((i) => {
          const fences = tables[i] as Fence[];
          const markers = fences.flatMap((f) => [f.open, f.close, f.resume ?? "", f.open.slice(0, -1)]);
          const part = fc.constantFrom(
            ...markers.filter((m) => m !== ""),
            "a",
            " ",
            "\n",
            "x",
            "<",
            "/",
            "]",
          );
          return fc.tuple(
            fc.constant(fences),
            fc.array(part, { maxLength: 16 }).map((p) => p.join("")),
          );
        }),
        fc.array(fc.nat(), { maxLength: 8 }),
        fc.boolean(),
        ([fences, whole], cuts, startInReasoning) => {
          const options = { fences, startInReasoning };
          const points = [...new Set(cuts.map((c) => c % (whole.length + 1)))].sort((a, b) => a - b);
          const splitter = new FenceSplitter(options);
          let shown = "";
          let thought = "";
          let last = 0;
          for (const piece of [
            ...[...points, whole.length].map((p) => {
              const text = whole.slice(last, p);
              last = p;
              return splitter.push(text);
            }),
            splitter.flush(),
          ]) {
            shown = shown.slice(0, shown.length - piece.retracted) + piece.content;
            thought += piece.reasoning;
          }
          const expected = stripThinking(whole, options);
          expect({ content: shown, reasoning: thought }, JSON.stringify([whole, points])).toEqual(expected);
          expect({ content: splitter.content, reasoning: splitter.reasoning }).toEqual(expected);
        },
      ),
      propertyRuns(1500),
    );
  });
});
