// Shows a loaded agent spec: its faults, then every field as written with parseSpec's warning beside it.

/** What the server says about a loaded spec (see src/web/spec.ts). */
export interface SpecReport {
  errors: string[];
  warnings: { path: string; message: string }[];
  fields: { path: string; value: string }[];
  applied?: { name?: string; model: string; baseUrl?: string; system: boolean; maxToolIterations: number };
  error?: string;
}

/** A warning belongs beside a field at its path, or under it (a dropped object's leaves). */
const under = (field: string, warning: string) =>
  field === warning || field.startsWith(`${warning}.`) || field.startsWith(`${warning}[`);

/** Draws `report` into `box`, replacing what was there. */
export function renderSpec(box: HTMLElement, report: SpecReport): void {
  box.replaceChildren();
  const line = (className: string, text: string) => {
    const p = document.createElement("p");
    p.className = className;
    p.textContent = text;
    box.append(p);
  };
  if (report.error) line("error", report.error);
  for (const error of report.errors ?? []) line("error", `Refused: ${error}`);
  if (report.applied) {
    const a = report.applied;
    line(
      "applied",
      `Applied${a.name ? ` “${a.name}”` : ""}: model ${a.model}${a.baseUrl ? ` at ${a.baseUrl}` : ""}, ` +
        `${a.system ? "its own system prompt" : "the playground's system prompt"}, at most ${a.maxToolIterations} tool steps.`,
    );
  }
  const placed = new Set<number>();
  const list = document.createElement("dl");
  list.className = "fields";
  for (const field of report.fields ?? []) {
    const row = document.createElement("div");
    row.className = "field";
    row.dataset.path = field.path;
    const term = document.createElement("dt");
    term.textContent = field.path || "(document)";
    const value = document.createElement("dd");
    value.textContent = field.value;
    row.append(term, value);
    report.warnings.forEach((warning, i) => {
      if (!warning.path || !under(field.path, warning.path)) return;
      if (placed.has(i) && field.path !== warning.path) return;
      placed.add(i);
      row.classList.add("warned");
      const note = document.createElement("dd");
      note.className = "warning";
      note.setAttribute("role", "note");
      note.textContent = warning.message;
      row.append(note);
    });
    list.append(row);
  }
  report.warnings.forEach((warning, i) => {
    if (!placed.has(i)) line("warning", warning.message);
  });
  box.append(list);
}
