// How the stdio transport cuts a server's output into messages, and finds which call a message too
// large to take answered. The transport itself is exercised by every stdio test; these pin the
// edges: lines across chunks, CRLF, an oversized line across chunks with a good one after it.
import { describe, expect, it } from "vitest";
import { answeredId, LineSplitter } from "./stdio-transport.js";

const feed = (splitter: LineSplitter, ...chunks: string[]) =>
  chunks.flatMap((chunk) => splitter.push(Buffer.from(chunk)));

describe("LineSplitter", () => {
  it("gives whole lines, however the chunks fall", () => {
    const splitter = new LineSplitter(100);
    expect(feed(splitter, '{"a":', '1}\n{"b"', ":2}\r\n", "\n", '{"c":3}\n{"d"')).toEqual([
      { text: '{"a":1}' },
      { text: '{"b":2}\r' },
      { text: "" },
      { text: '{"c":3}' },
    ]);
    expect(feed(splitter, ":4}\n")).toEqual([{ text: '{"d":4}' }]);
  });

  it("skips a line longer than its limit to its newline, keeping its size and ends, and goes on", () => {
    const splitter = new LineSplitter(10);
    const long = `{"result":"${"x".repeat(5000)}","id":7}`;
    const lines = feed(
      splitter,
      '{"ok":1}\n',
      long.slice(0, 7),
      long.slice(7, 3000),
      `${long.slice(3000)}\n{"ok":2}\n`,
    );
    expect(lines).toHaveLength(3);
    expect(lines[0]).toEqual({ text: '{"ok":1}' });
    expect(lines[1]).toMatchObject({ bytes: long.length });
    expect((lines[1] as { head: string }).head.startsWith('{"result":"xxx')).toBe(true);
    expect((lines[1] as { tail: string }).tail.endsWith('xxx","id":7}')).toBe(true);
    expect(lines[2]).toEqual({ text: '{"ok":2}' });
    // A line of exactly the limit is taken.
    expect(feed(splitter, `${"y".repeat(10)}\n`)).toEqual([{ text: "y".repeat(10) }]);
  });
});

describe("answeredId", () => {
  const big = "z".repeat(50);
  it("finds the id of an answer first or last, as a number or a string", () => {
    expect(answeredId(`{"jsonrpc":"2.0","id":3,"result":{"content":[{"text":"${big}`, `${big}"}]}}`)).toBe(3);
    expect(answeredId(`{"result":{"content":[{"text":"${big}`, `${big}"}]},"jsonrpc":"2.0","id":12}`)).toBe(
      12,
    );
    expect(answeredId(`{"error":{"code":1,"message":"${big}`, `${big}"},"jsonrpc":"2.0","id":"r-1"}`)).toBe(
      "r-1",
    );
  });

  it("does not take an id nested in the result, or one quoted inside a string, for the answer's", () => {
    expect(
      answeredId(`{"result":{"structuredContent":{"id":99,"rows":"${big}`, `${big}"}},"jsonrpc":"2.0"}`),
    ).toBe(undefined);
    expect(answeredId(`{"result":{"content":[{"text":"${big}`, `${big} \\"id\\":5}"}]}}`)).toBe(undefined);
  });

  it("gives nothing for a request or a notification from the server", () => {
    expect(
      answeredId(
        `{"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{"x":"${big}`,
        `${big}"}}`,
      ),
    ).toBe(undefined);
    expect(
      answeredId(`{"method":"elicitation/create","params":{"x":"${big}`, `${big}"},"jsonrpc":"2.0","id":0}`),
    ).toBe(undefined);
    expect(
      answeredId(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"${big}`, `${big}"}}`),
    ).toBe(undefined);
    expect(answeredId(`["${big}`, `${big}"]`)).toBe(undefined);
  });
});
