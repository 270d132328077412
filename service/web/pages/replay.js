// Table (a stored match): the replay's events from the server, stepped through in the
// table view; the position lives in the URL (deal, trick, card) so a link opens at that
// card, and `seat` shows what one player saw.

import { api } from "../api.js";
import { el, href, matchPath, replace } from "../dom.js";
import { stopFor, stopsOf } from "../events.js";
import { playerText } from "../names.js";
import { createTable } from "../tableview.js";

function seatParam(query) {
  const seat = query.get("seat");
  return seat !== null && /^[0-3]$/.test(seat) ? Number(seat) : null;
}

const number = (query, key) => {
  const n = Number.parseInt(query.get(key) ?? "", 10);
  return Number.isFinite(n) && n >= 0 ? n : 0;
};

export async function render(main, [id], query) {
  const seat = seatParam(query);
  const params = seat === null ? {} : { seat };
  const [events, report] = await Promise.all([api.replay(id, params), api.report(id).catch(() => null)]);
  // The sentence of the finding about a card, by its deal and play (the report's place).
  const sentences = new Map();
  for (const f of report?.findings ?? []) {
    if (f.deal !== undefined && f.play !== undefined) sentences.set(`${f.deal}/${f.play}`, f.message ?? "");
  }
  const keep = (stop) => {
    const position = stop.kind === "card"
      ? { deal: stop.deal, trick: stop.trick, card: stop.card }
      : stop.kind === "deal" ? { deal: stop.deal } : {};
    const hash = href(matchPath("replay", id), { ...position, seat: seat ?? "" });
    // replaceState: stepping is not navigation (Back leaves the table), and it fires no hashchange.
    history.replaceState(null, "", hash);
  };
  const table = createTable({
    bottomSeat: seat ?? 0,
    findingFor: (deal, play) => sentences.get(`${deal}/${play}`) ?? "",
    onMove: keep,
  });
  const players = events[0]?.match_started?.players ?? [];
  const view = el("select", { class: "seat-view", "aria-label": "whose view" },
    el("option", { value: "", selected: seat === null }, "all hands"),
    [0, 1, 2, 3].map((s) => el("option", { value: String(s), selected: seat === s }, `${playerText(players, s)}'s view`)));
  view.addEventListener("change", () => {
    const stop = table.stops[table.at];
    const position = stop && stop.kind === "card" ? { deal: stop.deal, trick: stop.trick, card: stop.card } : { deal: stop?.deal || "" };
    location.hash = href(matchPath("replay", id), { ...position, seat: view.value });
  });
  replace(
    main,
    el("h1", { class: "match-id" }, el("a", { href: href(matchPath("match", id)), title: id, class: "id" }, id)),
    el("div", { class: "toolbar" }, view),
    table.node,
  );
  const deal = number(query, "deal");
  const stops = stopsOf(events);
  table.setEvents(events, deal ? stopFor(stops, deal, number(query, "trick"), number(query, "card")) : 0);
  return () => table.destroy();
}
