/** One server-sent event: its `event:` name (`null` when it had none) and its `data:` lines joined with "\n". */
export interface SseEvent {
  event: string | null;
  data: string;
}

/** Any of the three line ends the event-stream format allows. */
const LINE_END = /\r\n|\r|\n/g;

/**
 * Reads server-sent events from text as it arrives, in time linear in the text: each piece is
 * searched once for line ends, and a line still arriving is kept in pieces and joined once, when
 * its end comes. (A reader that appends every piece to one buffer and searches it again from the
 * start makes one long event cost the square of its length.)
 *
 * Lines end in CRLF, CR or LF, also when the CR and LF arrive in different pieces. A line starting
 * with `:` is a comment; `field: value` loses one space after the colon; a line with no colon is a
 * field with an empty value. `event` and `data` are kept (several `data:` lines joined with "\n"),
 * an `error:` line (old llama.cpp's mid-stream error) is read as `event: error` plus a `data:` line
 * holding its value, every other field is ignored, and a blank line ends the event — one without a
 * `data:` line (a bare `event: ping`) is no event, as the format says.
 */
export class SseDecoder {
  /** The pieces of the line still arriving. */
  private line: string[] = [];
  /** The last piece ended on a CR: a LF first in the next piece ends nothing more. */
  private afterCr = false;
  private event: string | null = null;
  private data: string[] = [];

  /** Reads `text` on from where the last piece stopped; answers the events it completed. */
  push(text: string): SseEvent[] {
    const events: SseEvent[] = [];
    // An empty read is nothing: a CR before it may still meet its LF in the next.
    if (text === "") return events;
    let from = 0;
    if (this.afterCr && text.startsWith("\n")) from = 1;
    this.afterCr = false;
    LINE_END.lastIndex = from;
    for (let end = LINE_END.exec(text); end; end = LINE_END.exec(text)) {
      // A CR last in the piece may be the first half of a CRLF cut between two reads.
      if (end[0] === "\r" && end.index === text.length - 1) this.afterCr = true;
      let line = text.slice(from, end.index);
      from = end.index + end[0].length;
      // Most lines arrive whole: only one begun in an earlier piece is joined (and no array is made per line).
      if (this.line.length > 0) {
        this.line.push(line);
        line = this.line.join("");
        this.line.length = 0;
      }
      const event = this.readLine(line);
      if (event) events.push(event);
    }
    if (from < text.length) this.line.push(text.slice(from));
    return events;
  }

  /**
   * The body has ended: a last line without its line end is read, and an event left open (no blank
   * line after it) is answered as the last one rather than dropped.
   */
  end(): SseEvent[] {
    const events: SseEvent[] = [];
    if (this.line.length > 0) {
      const event = this.readLine(this.line.join(""));
      this.line = [];
      if (event) events.push(event);
    }
    const last = this.dispatch();
    if (last) events.push(last);
    return events;
  }

  private readLine(line: string): SseEvent | undefined {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) return undefined;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.event = value;
    else if (field === "data") this.data.push(value);
    else if (field === "error") {
      // llama.cpp before ggml-org/llama.cpp#16109 wrote a mid-stream error as `error: {…}`: read as
      // `event: error` with that data, so the server's error is not dropped as an unknown field.
      this.event = "error";
      this.data.push(value);
    }
    return undefined;
  }

  private dispatch(): SseEvent | undefined {
    if (this.data.length === 0) {
      // No data line: nothing to hand on (as the event-stream format says), whatever its name.
      this.event = null;
      return undefined;
    }
    const event: SseEvent = { event: this.event, data: this.data.join("\n") };
    this.event = null;
    this.data = [];
    return event;
  }
}
