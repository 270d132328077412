// Matches: the stored matches, a page at a time, filtered by the server (player, preset,
// status, valid, as ListMatches filters) and sorted on the page by any column.

import { api } from "../api.js";
import { el, href, matchPath, replace, signed } from "../dom.js";
import { statusText } from "../names.js";

const COLUMNS = [
  // [key, heading, value for sorting, numeric]
  ["match_id", "match", (m) => m.match_id ?? "", false],
  ["players", "players", (m) => (m.players ?? []).map((p) => p.name || p.id).join(", "), false],
  ["preset", "preset", (m) => m.preset ?? "", false],
  ["status", "status", (m) => statusText(m.status), false],
  ["date", "date", (m) => m.start_time ?? "", false],
  ["valid", "valid", (m) => (m.valid ? 1 : 0), true],
  ["deals", "deals", (m) => m.deals ?? 0, true],
  ["totals", "totals", (m) => Math.max(...(m.totals ?? [0])), true],
  ["source", "source", (m) => m.source ?? "", false],
];

function filtersFrom(query) {
  const out = {};
  for (const key of ["player", "preset", "status", "valid", "limit", "page_token"]) {
    const value = query.get(key);
    if (value) out[key] = value;
  }
  return out;
}

function filterForm(filters) {
  const field = (name, label, input) => el("label", { class: "field" }, el("span", {}, label), input);
  const choice = (name, options) =>
    el("select", { name }, options.map(([value, text]) => el("option", { value, selected: (filters[name] ?? "") === value }, text)));
  const form = el(
    "form",
    { class: "filters", role: "search" },
    field("player", "player", el("input", { name: "player", type: "search", value: filters.player ?? "", placeholder: "id or name", maxlength: "1024" })),
    field("preset", "preset", el("input", { name: "preset", type: "search", value: filters.preset ?? "", placeholder: "classic, short, …", maxlength: "256" })),
    field("status", "status", choice("status", [["", "any"], ["COMPLETE", "complete"], ["ABANDONED", "abandoned"], ["IN_PROGRESS", "in progress"]])),
    field("valid", "valid", choice("valid", [["", "any"], ["true", "valid"], ["false", "invalid"]])),
    field("limit", "per page", choice("limit", [["", "100"], ["25", "25"], ["50", "50"], ["250", "250"], ["1000", "1000"]])),
    el("button", { type: "submit" }, "filter"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const next = {};
    for (const [key, value] of data.entries()) if (value) next[key] = String(value);
    location.hash = href("/matches", next);
  });
  return form;
}

function row(m) {
  const id = m.match_id ?? "";
  const players = (m.players ?? []).map((p) => p.name || p.id || `seat ${p.seat ?? 0}`);
  return el(
    "tr",
    { class: m.valid ? "valid" : "invalid" },
    el("td", { class: "id" }, el("a", { href: href(matchPath("match", id)), title: id }, id || "(no id)")),
    el("td", { class: "players" }, players.map((name) => el("span", { class: "player", title: name }, name)).flatMap((n, i) => (i ? [", ", n] : [n]))),
    el("td", { class: "preset" }, m.preset ?? ""),
    el("td", { class: "status" }, statusText(m.status)),
    // The start as recorded, in UTC, to the minute: ISO text sorts as time does.
    el("td", { class: "date", title: m.start_time ?? "" }, (m.start_time ?? "").slice(0, 16).replace("T", " ")),
    el("td", { class: "verdict" }, m.valid ? "✓ valid" : "✗ invalid"),
    el("td", { class: "num" }, m.deals ?? 0),
    el("td", { class: "num totals" }, (m.totals ?? []).map(signed).join(" ")),
    // A source is often a path: its last part says enough, the whole is in the tooltip.
    el("td", { class: "source", title: m.source ?? "" }, (m.source ?? "").split("/").pop()),
  );
}

export async function render(main, _params, query) {
  const filters = filtersFrom(query);
  const sortKey = query.get("sort") ?? "";
  const descending = query.get("desc") === "1";
  const page = await api.matches(filters);
  const list = [...(page.matches ?? [])];
  const column = COLUMNS.find((c) => c[0] === sortKey);
  if (column) {
    const value = column[2];
    list.sort((a, b) => {
      const va = value(a);
      const vb = value(b);
      const cmp = column[3] ? va - vb : String(va).localeCompare(String(vb));
      return descending ? -cmp : cmp;
    });
  }
  const heading = COLUMNS.map(([key, label]) => {
    const active = key === sortKey;
    const params = { ...filters, sort: key, desc: active && !descending ? "1" : "" };
    const mark = active ? (descending ? " ▼" : " ▲") : "";
    return el("th", { "aria-sort": active ? (descending ? "descending" : "ascending") : "none" },
      el("a", { href: href("/matches", params), title: `sort by ${label}` }, label + mark));
  });
  const table = el("table", { class: "matches" },
    el("thead", {}, el("tr", {}, heading)),
    el("tbody", {}, list.map(row)));
  const pager = el("nav", { class: "pager" });
  if (filters.page_token) {
    const first = { ...filters, page_token: "" };
    pager.appendChild(el("a", { href: href("/matches", first), class: "first-page" }, "⏮ first page"));
  }
  if (page.next_page_token) {
    const next = { ...filters, page_token: page.next_page_token, sort: sortKey, desc: descending ? "1" : "" };
    pager.appendChild(el("a", { href: href("/matches", next), class: "next-page" }, "next page ›"));
  }
  replace(
    main,
    el("h1", {}, "Matches"),
    filterForm(filters),
    list.length ? el("div", { class: "scroll" }, table) : el("p", { class: "empty" }, "No stored match fits these filters."),
    el("p", { class: "count" }, `${list.length} match(es) on this page`),
    pager,
  );
  return undefined;
}
