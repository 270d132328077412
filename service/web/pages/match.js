// Match: who played, under which rules (in words), the score table deal by deal with the
// running totals (the server's deal_ended events), and the validator's findings with
// their place; a deal or a finding opens the Table there.

import { api } from "../api.js";
import { el, href, matchPath, replace, signed } from "../dom.js";
import { bodyOf, kindOf } from "../events.js";
import { cardLabel, contractText, dealEndShort, dealEndText, rulesetSentences, statusText, suitText } from "../names.js";

/** Each deal's row from the events: {deal, declarer, contract, trump, end, scores, totals}. */
function dealRows(events) {
  const rows = new Map();
  for (const event of events) {
    const kind = kindOf(event);
    const e = bodyOf(event);
    if (kind === "deal_started") rows.set(e.deal, { deal: e.deal, declarer: e.declarer, playable: e.playable });
    const r = rows.get(e.deal);
    if (!r) continue;
    if (kind === "contract_chosen") Object.assign(r, { contract: e.contract, trump: e.trump });
    if (kind === "deal_ended") Object.assign(r, { end: e.end, scores: e.scores, totals: e.totals });
  }
  return [...rows.values()];
}

/** Where each play sits in its trick: "deal/play" → {trick, card}, for links to a finding. */
function playPlaces(events) {
  const places = new Map();
  for (const event of events) {
    if (kindOf(event) !== "card_played") continue;
    const e = event.card_played;
    places.set(`${e.deal}/${e.play}`, { trick: e.trick, card: (e.position ?? 0) + 1 });
  }
  return places;
}

export function findingPlace(f) {
  const parts = [];
  if (f.deal !== undefined) parts.push(`deal ${f.deal}`);
  if (f.trick !== undefined) parts.push(`trick ${f.trick}`);
  if (f.seat !== undefined) parts.push(`seat ${f.seat}`);
  if (f.card !== undefined) parts.push(cardLabel(f.card));
  return parts.join(", ");
}

export async function render(main, [id]) {
  const [record, report, events] = await Promise.all([api.match(id), api.report(id), api.replay(id)]);
  const players = [...(record.players ?? [])].sort((a, b) => (a.seat ?? 0) - (b.seat ?? 0));
  const name = (seat) => players.find((p) => (p.seat ?? 0) === seat)?.name || `seat ${seat}`;
  const md = record.metadata ?? {};
  const replayLink = (params) => href(matchPath("replay", id), params);

  const facts = el("dl", { class: "facts" });
  const fact = (label, value) => {
    if (value === undefined || value === null || value === "") return;
    facts.append(el("dt", {}, label), el("dd", {}, value));
  };
  fact("status", statusText(record.status) + (record.status_reason ? ` — ${record.status_reason}` : ""));
  fact("verdict", report.valid ? "valid" : "invalid");
  fact("event", md.event);
  fact("site", md.site);
  fact("started", md.start_time);
  fact("client", [md.client_name, md.client_version].filter(Boolean).join(" "));
  const tags = Object.entries(md.tags ?? {});
  if (tags.length) fact("tags", el("span", {}, tags.map(([k, v]) => el("span", { class: "tag" }, `${k}=${v}`))));

  const playerTable = el("table", { class: "players" },
    el("thead", {}, el("tr", {}, el("th", {}, "seat"), el("th", {}, "name"), el("th", {}, "id"), el("th", {}, "seat name"))),
    el("tbody", {}, players.map((p) => el("tr", {},
      el("td", { class: "num" }, p.seat ?? 0), el("td", { class: "name" }, p.name ?? ""),
      el("td", { class: "pid" }, p.id ?? ""), el("td", {}, p.seat_name ?? "")))));

  const ruleset = record.ruleset ?? {};
  const rules = el("section", { class: "ruleset" },
    el("h2", {}, "Rules: ", ruleset.preset || "(no preset name)"),
    el("ul", {}, rulesetSentences(ruleset).map((s) => el("li", {}, s))));

  const rows = dealRows(events);
  const scoreTable = el("table", { class: "score-table" },
    el("thead", {}, el("tr", {}, el("th", {}, "deal"), el("th", {}, "contract"), el("th", {}, "declarer"),
      [0, 1, 2, 3].map((s) => el("th", { class: "num", title: name(s) }, name(s))), el("th", {}, "end"))),
    el("tbody", {}, rows.map((r) => el("tr", { dataset: { deal: String(r.deal) } },
      el("td", { class: "num" }, el("a", { href: replayLink({ deal: r.deal }), title: `replay deal ${r.deal}` }, `▶ ${r.deal}`)),
      el("td", {}, contractText(r.contract), r.trump && suitText(r.trump) ? ` ${suitText(r.trump)}` : ""),
      el("td", {}, name(r.declarer ?? 0)),
      [0, 1, 2, 3].map((s) => el("td", { class: "num" },
        r.scores ? signed(r.scores[s] ?? 0) : "",
        r.totals ? el("span", { class: "running" }, signed(r.totals[s] ?? 0)) : "")),
      el("td", { class: "end", title: dealEndText(r.end) }, r.playable === false ? "not playable" : dealEndShort(r.end))))));

  const places = playPlaces(events);
  const findings = report.findings ?? [];
  const findingList = findings.length
    ? el("ol", { class: "findings" }, findings.map((f) => {
      const at = f.deal !== undefined && f.play !== undefined ? places.get(`${f.deal}/${f.play}`) : undefined;
      const link = at ? { deal: f.deal, trick: at.trick, card: at.card } : f.deal !== undefined ? { deal: f.deal } : null;
      return el("li", { class: `finding-item sev-${f.severity ?? ""}` },
        el("strong", { class: "code" }, f.code ?? ""), " ",
        el("span", { class: "severity" }, f.severity ?? ""), " ",
        el("span", { class: "message" }, f.message ?? ""), " ",
        link ? el("a", { href: replayLink(link), class: "place" }, `▶ ${findingPlace(f)}`) : el("span", { class: "place" }, findingPlace(f)));
    }))
    : el("p", { class: "empty" }, "No findings: the validator has nothing to say about this record.");

  replace(
    main,
    el("h1", { class: "match-id", title: id }, "Match ", el("span", { class: "id" }, id)),
    el("p", { class: "actions" },
      el("a", { href: replayLink({}), class: "button" }, "▶ replay"), " ",
      el("a", { href: `/api/matches/${encodeURIComponent(id)}?format=krec`, class: "button", download: "" }, "⬇ .krec"), " ",
      el("a", { href: `/api/matches/${encodeURIComponent(id)}`, class: "button" }, "JSON")),
    facts,
    el("h2", {}, "Players"),
    el("div", { class: "scroll" }, playerTable),
    rules,
    el("h2", {}, "Scores"),
    el("div", { class: "scroll" }, scoreTable),
    el("h2", {}, `Findings (${findings.length})`),
    findingList,
  );
  return undefined;
}
