// Table (a stored match): the replay's events from the server, stepped through in the
// table view; the position lives in the URL (deal, trick, card) so a link opens at that
// card, and `seat` shows what one player saw.

import { api } from "../api.js";
import { el, href, matchPath, replace } from "../dom.js";
import { stopFor, stopsOf } from "../events.js";
import { cardText, playerText } from "../names.js";
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
  const par = parPanel(id, table, players);
  replace(
    main,
    el("h1", { class: "match-id" }, el("a", { href: href(matchPath("match", id)), title: id, class: "id" }, id)),
    el("div", { class: "toolbar" }, view),
    table.node,
    par,
  );
  const deal = number(query, "deal");
  const stops = stopsOf(events);
  table.setEvents(events, deal ? stopFor(stops, deal, number(query, "trick"), number(query, "card")) : 0);
  return () => table.destroy();
}

// Par: asked for on demand (a deal from its first trick can take the server's whole budget),
// for the deal shown, from the trick shown; the server answers unsolved rather than guess.
function parPanel(id, table, players) {
  const state = el("span", { class: "par-state", role: "status" });
  const result = el("div", { class: "par-result" });
  const ask = el("button", { type: "button", class: "par-ask" }, "par from this trick");
  ask.addEventListener("click", async () => {
    const stop = table.stops[table.at];
    if (!stop || !stop.deal) {
      state.textContent = "step into a deal first";
      return;
    }
    const fromTrick = stop.trick || 1;
    state.textContent = `analysing deal ${stop.deal} from trick ${fromTrick}…`;
    ask.disabled = true;
    try {
      const answer = await api.par(id, { deal: stop.deal, from_trick: fromTrick, budget_ms: 5000 });
      const deal = (answer.deals ?? [])[0];
      if (!deal) throw new Error("no analysis came back");
      const costs = new Map();
      for (const p of deal.plays ?? []) costs.set(`${deal.deal}/${p.play ?? 0}`, p);
      table.setCosts(costs);
      replace(result, parTable(deal, players));
      const costly = (deal.plays ?? []).filter((p) => (p.cost_units ?? 0) > 0);
      state.textContent = !deal.solved
        ? `deal ${deal.deal}: not solved within the budget (${deal.nodes} positions); nothing is guessed`
        : `deal ${deal.deal} from trick ${fromTrick}: ${costly.length} costly card(s) marked on the tricks` +
          (deal.stop ? ` (analysis stops: ${deal.stop})` : "");
      result.dataset.deal = String(deal.deal);
      result.dataset.solved = String(Boolean(deal.solved));
      result.dataset.costly = costly.map((p) => `${p.play ?? 0}:${cardText(p.card ?? 0)}`).join(" ");
    } catch (err) {
      state.textContent = `${err.code ?? "ERROR"}: ${err.message}`;
    } finally {
      ask.disabled = false;
    }
  });
  return el("section", { class: "par", "aria-label": "par analysis" }, ask, state, result);
}

function parTable(deal, players) {
  const units = (seat, key) => (seat[key] === undefined ? "—" : String(seat[key]));
  return el(
    "table",
    { class: "par-table" },
    el("caption", {}, "par: the units each player could make sure of, every hand known, against the other three " +
      "(the most in koz, the fewest in a penalty contract); a costly card gave part of it away"),
    el("thead", {}, el("tr", {}, ["player", "par", "actual", "par pts", "actual pts"].map((h) => el("th", {}, h)))),
    el("tbody", {}, (deal.seats ?? []).map((seat) =>
      el("tr", { dataset: { seat: String(seat.seat ?? 0) } },
        el("td", { class: "name" }, playerText(players, seat.seat ?? 0)),
        el("td", { class: "num par" }, units(seat, "par")),
        el("td", { class: "num actual" }, units(seat, "actual")),
        el("td", { class: "num" }, units(seat, "par_points")),
        el("td", { class: "num" }, units(seat, "actual_points"))))),
  );
}
