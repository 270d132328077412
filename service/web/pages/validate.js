// Validate: drop a record file (or pick one); the server judges it as `kingrec validate
// --json --all` does, and each record's verdict and findings are listed with their place.

import { api } from "../api.js";
import { el, errorBox, replace } from "../dom.js";
import { findingPlace } from "./match.js";

function where(line) {
  const parts = [line.file ?? ""];
  if (line.frame !== undefined && line.frame !== null) parts.push(`frame ${line.frame + 1}`);
  if (line.offset !== undefined && line.offset !== null) parts.push(`byte ${line.offset}`);
  if (line.line !== undefined && line.line !== null) parts.push(`line ${line.line}`);
  return parts.filter(Boolean).join(", ");
}

function verdictItem(line) {
  if (line.type === "match") {
    return el("li", { class: `verdict ${line.valid ? "valid" : "invalid"}` },
      el("strong", { class: "verdict-word" }, line.valid ? "valid" : "INVALID"), " ",
      el("span", { class: "where" }, where(line)), ": match ",
      el("span", { class: "id" }, line.match_id || "(no id)"),
      (line.findings ?? []).length
        ? el("ul", { class: "findings" }, line.findings.map((f) => el("li", { class: `finding-item sev-${f.severity ?? ""}` },
          el("strong", { class: "code" }, f.code ?? ""), " ", el("span", { class: "severity" }, f.severity ?? ""), " ",
          el("span", { class: "message" }, f.message ?? ""), " ", el("span", { class: "place" }, findingPlace(f)))))
        : null);
  }
  if (line.type === "damage") {
    return el("li", { class: "verdict damaged" }, el("strong", { class: "verdict-word" }, "DAMAGED"), " ",
      el("span", { class: "where" }, where(line)), ": ", el("strong", { class: "code" }, line.code ?? ""), " ",
      el("span", { class: "message" }, line.message ?? ""));
  }
  if (line.type === "error") {
    return el("li", { class: "verdict unreadable" }, el("strong", { class: "verdict-word" }, "UNREADABLE"), " ",
      el("strong", { class: "code" }, line.code ?? ""), " ", el("span", { class: "message" }, line.message ?? ""));
  }
  return null;
}

function summaryText(s) {
  const parts = [`${s.matches ?? 0} match(es), ${s.deals ?? 0} deal(s)`, `${(s.matches ?? 0) - (s.invalid ?? 0)} valid`,
    `${s.invalid ?? 0} invalid`];
  if (s.warnings) parts.push(`${s.warnings} warning(s)`);
  if (s.damaged) parts.push(`${s.damaged} damaged frame(s) or line(s)`);
  if (s.unreadable) parts.push(`${s.unreadable} unreadable file(s)`);
  return `checked ${parts.join(", ")}`;
}

export async function render(main) {
  const results = el("div", { class: "results", "aria-live": "polite" });
  const input = el("input", { type: "file", accept: ".krec,.jsonl,.json,.ndjson", class: "file-input" });
  const zone = el("label", { class: "drop-zone" },
    el("span", {}, "Drop a .krec or JSON Lines file here, or pick one: "), input);
  async function judge(file) {
    replace(results, el("p", { class: "loading" }, `judging ${file.name}…`));
    try {
      const lines = await api.validate(file);
      const summary = lines.find((l) => l.type === "summary");
      replace(results,
        el("h2", { class: "file-name" }, file.name),
        el("ol", { class: "verdicts" }, lines.map(verdictItem)),
        summary ? el("p", { class: "summary" }, summaryText(summary)) : null);
    } catch (err) {
      replace(results, errorBox(err));
    }
  }
  input.addEventListener("change", () => { if (input.files?.length) judge(input.files[0]); });
  // Dropping a file anywhere on the zone; the browser would otherwise open it.
  zone.addEventListener("dragover", (event) => { event.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    const file = event.dataTransfer?.files?.[0];
    if (file) judge(file);
  });
  replace(main, el("h1", {}, "Validate a record file"), zone, results);
  return undefined;
}
