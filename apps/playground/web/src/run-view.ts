// Draws one run: the prompt, then per turn its folded blocks (answer, collapsed reasoning, tool cards,
// notice and error lines) and its usage — the context split against the window and the cache hit.
import {
  type ContextBreakdown,
  type DisplayBlock,
  type RunEvent,
  runMetrics,
  type SequencedEvent,
  type UsageEvent,
} from "@loopwright/events";
import { TurnFold } from "./turn-fold.js";

const PARTS = [
  ["system", "system"],
  ["tools", "tools"],
  ["history", "history"],
  ["toolResults", "tool results"],
] as const satisfies ReadonlyArray<readonly [keyof ContextBreakdown, string]>;

const fmt = (n: number) => Math.round(n).toLocaleString("en");
const ms = (n: number) => (n >= 1000 ? `${(n / 1000).toFixed(2)} s` : `${Math.round(n)} ms`);
const pct = (n: number) => `${(n * 100).toFixed(n < 0.1 ? 1 : 0)}%`;

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string,
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

interface Group {
  step: number;
  events: TurnFold;
  section: HTMLElement;
  blocksBox: HTMLElement;
  usageBox: HTMLElement;
  blocks: DisplayBlock[];
  nodes: HTMLElement[];
  usage?: UsageEvent;
  drawnUsage?: UsageEvent;
  dirty: boolean;
}

/** One run on the page. `update` takes every event so far (in `seq` order) and redraws what changed. */
export class RunView {
  private readonly groups: Group[] = [];
  private seen = 0;

  constructor(
    private readonly root: HTMLElement,
    prompt: string,
    private readonly contextLength: number,
  ) {
    root.replaceChildren();
    const you = el("p", "you");
    you.append(el("span", "who", "You"), el("span", "said", prompt));
    root.append(you);
  }

  private group(step: number): Group {
    const section = el("section", "turn");
    section.dataset.step = String(step);
    if (step > 0) section.append(el("h2", "turn-head", `Turn ${step}`));
    const blocksBox = el("div", "blocks");
    const usageBox = el("div", "usage");
    section.append(blocksBox, usageBox);
    this.root.append(section);
    const g: Group = {
      step,
      events: new TurnFold(),
      section,
      blocksBox,
      usageBox,
      blocks: [],
      nodes: [],
      dirty: false,
    };
    this.groups.push(g);
    return g;
  }

  update(events: readonly SequencedEvent[]): void {
    for (; this.seen < events.length; this.seen++) {
      const event = events[this.seen]!;
      let g = this.groups.at(-1);
      if (event.kind === "turn") g = this.group(event.step);
      else if (!g) g = this.group(0);
      g.events.push(event);
      if (event.kind === "usage") g.usage = event;
      g.dirty = true;
    }
    const repeats = new Set<string>();
    for (const g of this.groups) {
      if (g.dirty) g.blocks = g.events.blocks();
      g.blocks.forEach((block, i) => {
        let repeat = false;
        if (block.kind === "tool") {
          const key = `${block.name}\u0000${block.args}`;
          repeat = repeats.has(key);
          repeats.add(key);
        }
        if (g.dirty || repeat) this.drawBlock(g, i, block, repeat);
      });
      // Fewer blocks than drawn (a retract emptied a text block): the extra nodes go.
      if (g.dirty) for (const node of g.nodes.splice(g.blocks.length)) node.remove();
      if (g.usage && g.usage !== g.drawnUsage) {
        g.drawnUsage = g.usage;
        this.drawUsage(g.usageBox, g.usage);
      }
      g.dirty = false;
    }
  }

  private drawBlock(g: Group, i: number, block: DisplayBlock, repeat: boolean): void {
    let node = g.nodes[i];
    if (!node || node.dataset.kind !== block.kind) {
      const fresh = this.createBlock(block);
      if (node) node.replaceWith(fresh);
      else g.blocksBox.append(fresh);
      g.nodes[i] = fresh;
      node = fresh;
    }
    switch (block.kind) {
      case "text":
        setText(node, block.text);
        break;
      case "reasoning":
        setText(node.querySelector(".body")!, block.text);
        break;
      case "notice":
        setText(node, block.text);
        break;
      case "error":
        setText(node, `Error: ${block.message}`);
        break;
      case "tool": {
        node.dataset.id = block.id;
        node.classList.toggle("repeat", repeat);
        (node.querySelector(".badge") as HTMLElement).hidden = !repeat;
        setText(node.querySelector(".name")!, block.name);
        setText(node.querySelector(".args")!, block.args || "{}");
        const state = node.querySelector(".state")!;
        const result = node.querySelector(".result") as HTMLElement;
        if (block.result) {
          node.dataset.state = block.result.ok ? "ok" : "failed";
          setText(
            state,
            `${block.result.ok ? "done" : "failed"}${block.result.ms !== undefined ? ` in ${ms(block.result.ms)}` : ""}`,
          );
          setText(result, block.result.content);
          result.hidden = false;
        } else {
          node.dataset.state = "running";
          setText(state, "running…");
          result.hidden = true;
        }
        break;
      }
    }
  }

  private createBlock(block: DisplayBlock): HTMLElement {
    let node: HTMLElement;
    switch (block.kind) {
      case "text":
        node = el("div", "answer");
        break;
      case "reasoning": {
        const details = el("details", "reasoning");
        details.append(el("summary", undefined, "Reasoning"), el("div", "body"));
        node = details;
        break;
      }
      case "tool": {
        node = el("article", "tool");
        const head = el("header");
        const badge = el("span", "badge", "repeat");
        badge.title = "The same tool with the same arguments was called earlier in this run.";
        head.append(el("span", "name"), badge, el("span", "state"));
        const args = el("pre", "args");
        args.setAttribute("aria-label", "arguments");
        const result = el("pre", "result");
        result.setAttribute("aria-label", "result");
        node.append(head, args, result);
        break;
      }
      case "notice":
        node = el("p", "notice");
        break;
      case "error":
        node = el("p", "error");
        node.setAttribute("role", "alert");
        break;
    }
    node.dataset.kind = block.kind;
    return node;
  }

  private drawUsage(box: HTMLElement, usage: UsageEvent): void {
    const { turn } = usage;
    const prompt = turn.usage.prompt;
    box.replaceChildren();
    const context = turn.context;
    const window = this.contextLength;
    const scale = window > 0 ? window : Math.max(prompt, context?.total ?? 0, 1);
    if (context) {
      const bar = el("div", "bar");
      bar.setAttribute("role", "img");
      const parts = PARTS.map(([key, label]) => `${label} ${fmt(context[key])}`).join(", ");
      bar.setAttribute(
        "aria-label",
        `Context: ${parts}${window > 0 ? ` of a ${fmt(window)}-token window` : ""}`,
      );
      for (const [key, label] of PARTS) {
        const seg = el("span", `seg seg-${key}`);
        seg.dataset.part = key;
        seg.dataset.tokens = String(context[key]);
        seg.style.width = `${(context[key] / scale) * 100}%`;
        seg.title = `${label}: ${fmt(context[key])} tokens`;
        bar.append(seg);
      }
      box.append(bar);
    }
    // A turn that did not finish (stopped, or failed) still ends in its usage event: its counts are
    // only what the endpoint reported by then, usually none, so the zeros below are said to be that.
    if (turn.stopped || turn.failed) {
      box.append(
        el(
          "p",
          "ended",
          `This turn ${turn.stopped ? "was stopped" : "failed"} before it finished: the counts are only what the endpoint reported by then.`,
        ),
      );
    }
    const legend = el("p", "legend");
    const promptNode = el("b", "prompt-tokens", fmt(prompt));
    promptNode.dataset.tokens = String(prompt);
    legend.append(
      "Prompt ",
      promptNode,
      window > 0 ? ` of ${fmt(window)} tokens (${pct(prompt / window)})` : " tokens",
    );
    if (context) {
      const list = el("span", "parts");
      for (const [key, label] of PARTS) {
        const item = el("span", `part part-${key}`, `${label} ${fmt(context[key])}`);
        list.append(item);
      }
      legend.append(": ", list);
    }
    legend.append(` · ${fmt(turn.usage.completion)} completion`);
    box.append(legend);

    const cache = el("p", "cache");
    if (turn.cacheBroken) {
      cache.classList.add("broken");
      cache.textContent = `Cache broke: ${fmt(turn.usage.cached)} of ${fmt(prompt)} cached — ${reason(turn.cacheBreakReason)}`;
    } else if (turn.usage.uncached === undefined && turn.usage.cached === 0) {
      cache.textContent = "Cache: not reported by the endpoint";
    } else if (turn.cacheExpected === undefined && turn.usage.cached === 0) {
      cache.textContent = "Cache: cold (first request)";
    } else {
      cache.textContent = `Cache hit: ${fmt(turn.usage.cached)} of ${fmt(prompt)} (${pct(prompt ? turn.usage.cached / prompt : 0)})`;
    }
    box.append(cache);
  }
}

function reason(code: string | undefined): string {
  switch (code) {
    case "tools-changed":
      return "the tool list changed";
    case "system-changed":
      return "the system prompt changed";
    case "history-rewritten":
      return "earlier history was rewritten";
    case "none-known":
      return "the request only appended; the server dropped the cache";
    default:
      return "reason unknown";
  }
}

/**
 * The most characters of one block of what a run wrote (an answer, reasoning, a tool's name,
 * arguments or result, a notice, an error) the page draws; the user's own prompt is drawn whole.
 * Chromium lays out one line of text in time that grows with its square once the line holds
 * right-to-left text or bidi controls: an endpoint that streamed a 1 MB line with a U+202E in every
 * few dozen characters froze the page for 20 s at each redraw, and 300 KB of Hebrew on one line for
 * 2 s. Drawn, at most this many, and a line saying how many more.
 */
export const SHOWN_MAX = 100_000;

/** `text` as the page draws it: whole up to `max` characters, else cut there, saying so. */
export function shownPart(text: string, max = SHOWN_MAX): string {
  if (text.length <= max) return text;
  // A cut between the two halves of a surrogate pair would leave half a character.
  const end = /[\ud800-\udbff]/.test(text[max - 1]!) ? max - 1 : max;
  return `${text.slice(0, end)}\n[… ${fmt(text.length - end)} more characters, not shown: the page draws the first ${fmt(end)} of ${max === SHOWN_MAX ? "a block" : "a status line"}]`;
}

function setText(node: Element, text: string): void {
  const shown = shownPart(text);
  if (node.textContent !== shown) node.textContent = shown;
}

/** The run's metrics (`runMetrics`) as a definition list. */
export function renderMetrics(box: HTMLElement, events: readonly RunEvent[], contextLength: number): void {
  const m = runMetrics(events, contextLength > 0 ? { contextLength } : {});
  const rows: [string, string][] = [
    ["Outcome", m.outcome],
    ["Turns", String(m.turns)],
    ["Tool calls", `${m.toolCalls}${m.toolErrors ? ` (${m.toolErrors} failed)` : ""}`],
    [
      "Tokens",
      `${fmt(m.tokens.prompt)} prompt (${fmt(m.tokens.cached)} cached), ${fmt(m.tokens.completion)} completion, ${fmt(m.tokens.total)} total`,
    ],
    ["Cache hit ratio", m.cacheHitRatio !== undefined ? pct(m.cacheHitRatio) : "not reported"],
    ["Cache breaks", String(m.cacheBreaks)],
    [
      "Time to first token",
      m.meanFirstTokenMs !== undefined ? `${ms(m.meanFirstTokenMs)} (mean)` : "not measured",
    ],
    [
      "Prefill / decode",
      m.prefillMs !== undefined || m.decodeMs !== undefined
        ? `${m.prefillMs !== undefined ? ms(m.prefillMs) : "–"} / ${m.decodeMs !== undefined ? ms(m.decodeMs) : "–"}`
        : "not reported",
    ],
    ["Tool time", m.toolMs !== undefined ? ms(m.toolMs) : "none"],
  ];
  if (m.largestPrompt) {
    rows.push([
      "Largest prompt",
      `${fmt(m.largestPrompt.tokens)} (turn ${m.largestPrompt.turn}${m.largestPrompt.share !== undefined ? `, ${pct(m.largestPrompt.share)} of the window` : ""})`,
    ]);
  }
  const heading = el("h2", undefined, "Run metrics");
  const list = el("dl");
  for (const [term, value] of rows) {
    const row = el("div");
    row.dataset.metric = term;
    row.append(el("dt", undefined, term), el("dd", undefined, value));
    list.append(row);
  }
  box.replaceChildren(heading, list);
  box.hidden = false;
}
