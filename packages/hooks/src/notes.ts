/**
 * The most notes about single hooks one call keeps (`gather`, `notify`, `consult`, `assembleContext`):
 * past it, one line says how many more were left out. A runner answering 100 000 outcomes that each
 * cost a note (failed, or over the budget) would otherwise make 100 000 lines, each a notice a loop
 * passes on.
 */
export const MAX_HOOK_NOTES = 40;

/**
 * Where one call's notes go: the first {@link MAX_HOOK_NOTES} notes about single hooks (`push`) are
 * told to `emit` as they come, the rest only counted, and `finish` tells one line saying how many
 * more there were. A note about the whole call (`always`: the runner could not be run, its answer was
 * not a list) is never held back, since there is one of each at most.
 */
export class NoteSink {
  private kept = 0;
  private dropped = 0;

  constructor(private readonly emit: (note: string) => void) {}

  /** A note about one hook: told while fewer than {@link MAX_HOOK_NOTES} were, else counted. */
  push(note: string): void {
    if (this.kept < MAX_HOOK_NOTES) {
      this.kept++;
      this.emit(note);
    } else {
      this.dropped++;
    }
  }

  /** Counts `more` notes about single hooks that were never written: ones held back past the cap. */
  count(more: number): void {
    // Told only once MAX_HOOK_NOTES were, by whoever held them back, so they are past the cap here too.
    this.dropped += more;
  }

  /** A note about the whole call, always told. */
  always(note: string): void {
    this.emit(note);
  }

  /** Tells how many notes were left out, where any were; a second call tells nothing more. */
  finish(): void {
    if (this.dropped === 0) return;
    const more = this.dropped;
    this.dropped = 0;
    this.emit(
      `… and ${more.toLocaleString("en-US")} more ${more === 1 ? "note" : "notes"} like these, left out: only the first ${MAX_HOOK_NOTES} are kept.`,
    );
  }
}

/** What reads a runner's answer tells its notes to: a {@link NoteSink}, or notes held for one. */
export type NoteTaker = Pick<NoteSink, "push" | "always">;

/**
 * Notes held as they come, each with how it came (about one hook, or about the whole call), to be
 * told to a sink later with `tell`: `gather` reads each runner's answer as it comes and tells the
 * notes in the order of the events.
 */
export function heldNotes(): NoteTaker & { tell(sink: NoteSink): void } {
  const held: { always: boolean; note: string }[] = [];
  // Past the cap a sink only counts notes about single hooks, so only the count of those is held:
  // a runner answering 100 000 failed outcomes holds 40 lines, not 100 000.
  let kept = 0;
  let more = 0;
  return {
    push(note) {
      if (kept < MAX_HOOK_NOTES) {
        kept++;
        held.push({ always: false, note });
      } else {
        more++;
      }
    },
    always: (note) => held.push({ always: true, note }),
    tell(sink) {
      for (const { always, note } of held) {
        if (always) sink.always(note);
        else sink.push(note);
      }
      sink.count(more);
    },
  };
}

/** A sink into a list of notes, and the list. */
export function noteList(): { notes: string[]; sink: NoteSink } {
  const notes: string[] = [];
  return { notes, sink: new NoteSink((note) => notes.push(note)) };
}
