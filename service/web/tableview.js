// The Table: four seats around the felt, their hands, the trick in the middle, tricks
// taken, the contract and trumps, the running scores; and the controls that step through a
// list of events (a stored replay, or a live match as it grows). Both the Table page and
// the Live page drive this one view.

import { el, replace, signed } from "./dom.js";
import { kindOf, nextStop, previousStop, stopsOf, tableAt } from "./events.js";
import { cardBack, cardNode, cardText, contractText, dealEndText, playerNode, playerText, suitText } from "./names.js";

// Where each seat sits, counted from the seat at the bottom, in order of play
// (anticlockwise, as every source plays: bottom, right, top, left).
const PLACES = ["bottom", "right", "top", "left"];

// Hands drawn by suit, colours alternating (♠ ♥ ♣ ♦), high cards first.
const SUIT_ORDER = [3, 2, 0, 1];
function sortHand(cards) {
  return [...cards].sort((a, b) => {
    const sa = SUIT_ORDER.indexOf(Math.floor(a / 13));
    const sb = SUIT_ORDER.indexOf(Math.floor(b / 13));
    return sa - sb || b - a;
  });
}

/**
 * A table view. options.findingFor(deal, play) returns the sentence of the finding about
 * that card (stored matches have a report; live ones never hold an illegal card).
 * options.onMove(stop) is told each time the view moves (the page keeps the URL).
 */
export function createTable(options = {}) {
  const findingFor = options.findingFor ?? (() => "");
  // What each priced card cost its player (par analysis), by "deal/play": set by the page.
  let costs = new Map();
  let bottom = options.bottomSeat ?? 0;
  let events = [];
  let stops = [];
  let at = 0;
  let following = Boolean(options.follow);
  let timer = null;
  let speed = options.speedMs ?? 800;

  const info = el("div", { class: "table-info", "aria-live": "polite" });
  const seats = [0, 1, 2, 3].map((seat) => el("div", { class: "seat", dataset: { seat: String(seat) } }));
  const trickNode = el("div", { class: "trick", "aria-label": "the trick" });
  const felt = el("div", { class: "felt" }, ...seats, trickNode);
  const finding = el("div", { class: "finding", hidden: true, role: "status" });
  const scores = el("table", { class: "scores" });
  const position = el("span", { class: "position" });
  const playButton = el("button", { type: "button", class: "play", onclick: () => toggle() }, "▶ play");
  const speedSelect = el(
    "select",
    { class: "speed", "aria-label": "speed", onchange: () => setSpeed(Number(speedSelect.value)) },
    ...[2000, 1000, 800, 400, 150].map((ms) =>
      el("option", { value: String(ms), selected: ms === speed }, `${(1000 / ms).toFixed(ms > 1000 ? 1 : ms > 300 ? 2 : 0)} cards/s`)),
  );
  const button = (label, title, action, cls) =>
    el("button", { type: "button", title, "aria-label": title, class: cls, onclick: () => { stop(); action(); } }, label);
  const controls = el(
    "div",
    { class: "controls" },
    button("« deal", "previous deal (Page Up)", () => dealBack(), "deal-back"),
    button("‹ trick", "previous trick (↑)", () => trickBack(), "trick-back"),
    button("‹ card", "previous card (←)", () => go(at - 1), "card-back"),
    playButton,
    button("card ›", "next card (→)", () => go(at + 1), "card-forward"),
    button("trick ›", "next trick (↓)", () => trickForward(), "trick-forward"),
    button("deal »", "next deal (Page Down)", () => dealForward(), "deal-forward"),
    speedSelect,
    position,
  );
  const node = el("section", { class: "table-view" }, info, felt, finding, controls, el("div", { class: "scroll" }, scores));

  function go(index) {
    const clamped = Math.max(0, Math.min(index, stops.length - 1));
    at = clamped;
    following = Boolean(options.follow) && at === stops.length - 1;
    draw();
    if (options.onMove && stops[at]) options.onMove(stops[at]);
  }
  const inDeal = (s) => s.kind === "deal";
  function trickForward() {
    go(nextStop(stops, at, (s) => s.closesTrick || s.kind === "deal"));
  }
  function trickBack() {
    go(previousStop(stops, at, (s) => s.closesTrick || s.kind === "deal"));
  }
  function dealForward() {
    go(nextStop(stops, at, inDeal));
  }
  function dealBack() {
    // To the start of this deal, or of the one before when already there.
    const start = previousStop(stops, at + 1, inDeal);
    go(start < at ? start : previousStop(stops, at, inDeal));
  }
  function stop() {
    if (timer !== null) clearInterval(timer);
    timer = null;
    playButton.textContent = "▶ play";
    playButton.classList.remove("playing");
  }
  function toggle() {
    if (timer !== null) return stop();
    playButton.textContent = "⏸ pause";
    playButton.classList.add("playing");
    timer = setInterval(() => {
      if (at >= stops.length - 1) return stop();
      go(at + 1);
    }, speed);
    return undefined;
  }

  function setSpeed(ms) {
    speed = ms;
    if (timer !== null) { stop(); toggle(); } // playing: go on at the new speed
  }

  function onKey(event) {
    if (event.target instanceof HTMLInputElement || event.target instanceof HTMLSelectElement) return;
    // Space on a focused button is that button's own click; taking it too would undo it.
    if (event.key === " " && event.target instanceof HTMLButtonElement) return;
    const actions = {
      ArrowRight: () => go(at + 1), ArrowLeft: () => go(at - 1),
      ArrowDown: trickForward, ArrowUp: trickBack,
      PageDown: dealForward, PageUp: dealBack,
      Home: () => go(0), End: () => go(stops.length - 1),
      " ": toggle,
    };
    const action = actions[event.key];
    if (!action || event.altKey || event.ctrlKey || event.metaKey) return;
    event.preventDefault();
    if (event.key !== " ") stop();
    action();
  }
  document.addEventListener("keydown", onKey);

  function drawSeat(state, seat, next) {
    const place = PLACES[(seat - bottom + 4) % 4];
    const players = state.match?.players;
    const node = seats[seat];
    node.className = `seat at-${place}`;
    const declarer = state.deal && state.deal.declarer === seat;
    const toPlay = next && kindOf(next) === "card_played" && (next.card_played.seat ?? 0) === seat;
    if (declarer) node.classList.add("declarer");
    if (toPlay) node.classList.add("to-play");
    const legal = new Set(toPlay ? next.card_played.legal ?? [] : []);
    const hand = el("div", { class: "hand" });
    for (const card of sortHand(state.hands[seat])) hand.appendChild(cardNode(card, legal.has(card) ? "legal" : ""));
    for (let i = 0; i < state.hidden[seat]; i += 1) hand.appendChild(cardBack());
    const deal = state.dealEnded ? state.dealEnded.scores[seat] : state.points[seat];
    replace(
      node,
      el("div", { class: "seat-name" }, el("span", { class: "name", title: playerText(players, seat) }, playerNode(players, seat)),
        declarer ? el("span", { class: "badge", title: "declarer" }, "declarer") : null),
      el("div", { class: "seat-meta" },
        el("span", { class: "taken", title: "tricks taken this deal" }, state.taken[seat] === 1 ? "1 trick" : `${state.taken[seat]} tricks`),
        el("span", { class: "deal-points", title: "points this deal" }, `${signed(deal)} pts`)),
      hand,
    );
  }

  function drawTrick(state) {
    replace(trickNode);
    if (!state.trick) return;
    for (const played of state.trick.cards) {
      const place = PLACES[(played.seat - bottom + 4) % 4];
      const classes = ["played", `at-${place}`];
      if (state.trick.winner === played.seat) classes.push("winner");
      if (played.broke) classes.push("illegal");
      const cost = costs.get(`${played.deal}/${played.play}`);
      const costly = cost && cost.cost_units > 0;
      if (costly) classes.push("costly");
      const title = costly
        ? `gave away ${cost.cost_units} of the guarantee (${cost.cost_points} pts); best: ${(cost.best ?? []).map(cardText).join(" ")}`
        : "";
      trickNode.appendChild(el("div", { class: classes.join(" "), dataset: { seat: String(played.seat) }, title },
        cardNode(played.card, played.broke ? "illegal" : ""),
        costly ? el("span", { class: "cost" }, `−${cost.cost_units}`) : null));
    }
    if (state.trick.winner !== null) {
      const pts = state.trick.points ? ` (${signed(state.trick.points)})` : "";
      trickNode.appendChild(el("div", { class: "trick-caption" },
        `trick ${state.trick.number}: `, playerNode(state.match?.players, state.trick.winner), pts));
    }
  }

  function drawFinding(state) {
    const bad = state.trick?.cards.find((c) => c.broke);
    finding.hidden = !bad;
    if (!bad) return replace(finding);
    const sentence = findingFor(bad.deal, bad.play) ||
      `${playerText(state.match?.players, bad.seat)} played ${cardText(bad.card)}: ${bad.broke}`;
    replace(
      finding,
      el("strong", { class: "finding-code" }, bad.broke),
      " ",
      el("span", { class: "finding-message" }, sentence),
      el("div", { class: "finding-legal" }, "legal: ", bad.legal.length ? bad.legal.map((c) => cardNode(c)) : "—"),
    );
    return undefined;
  }

  function drawInfo(state) {
    const players = state.match?.players;
    const parts = [];
    if (state.deal) {
      const count = state.match?.deal_count ? ` of ${state.match.deal_count}` : "";
      parts.push(el("span", { class: "deal-number" }, `Deal ${state.deal.number}${count}`));
      parts.push(el("span", { class: "contract" }, contractText(state.deal.contract)));
      const trump = suitText(state.deal.trump);
      if (trump) parts.push(el("span", { class: "trump" }, `trumps ${trump}`));
      parts.push(el("span", { class: "declarer-name" }, "declarer ", playerNode(players, state.deal.declarer)));
      if (state.trick) parts.push(el("span", { class: "trick-number" }, `trick ${state.trick.number}`));
      if (state.dealEnded) parts.push(el("span", { class: "deal-end" }, dealEndText(state.dealEnded.end)));
      if (state.deal.playable === false) parts.push(el("span", { class: "deal-end" }, "this deal cannot be replayed"));
    } else if (state.match) {
      parts.push(el("span", {}, "before the first deal"));
    }
    if (state.matchEnded) parts.push(el("span", { class: "match-end" }, "match over"));
    replace(info, parts);
  }

  function drawScores(state) {
    const players = state.match?.players;
    const deal = (seat) => (state.dealEnded ? state.dealEnded.scores[seat] : state.points[seat]);
    const total = (seat) => (state.dealEnded ? state.dealEnded.totals[seat] : state.totals[seat] + state.points[seat]);
    replace(
      scores,
      el("thead", {}, el("tr", {}, el("th", {}, "player"), el("th", {}, "tricks"), el("th", {}, "this deal"), el("th", {}, "total"))),
      el("tbody", {}, [0, 1, 2, 3].map((seat) =>
        el("tr", { dataset: { seat: String(seat) } },
          el("td", { class: "name" }, playerNode(players, seat)),
          el("td", { class: "num" }, state.taken[seat]),
          el("td", { class: "num" }, signed(deal(seat))),
          el("td", { class: "num total" }, signed(total(seat)))))),
    );
  }

  function draw() {
    const stopNow = stops[at];
    const state = tableAt(events, stopNow ? stopNow.index : -1);
    const next = stopNow ? events[stopNow.index + 1] : events[0];
    for (let seat = 0; seat < 4; seat += 1) drawSeat(state, seat, next);
    drawTrick(state);
    drawFinding(state);
    drawInfo(state);
    drawScores(state);
    position.textContent = stops.length ? `${at + 1} / ${stops.length}` : "";
    node.dataset.index = String(stopNow ? stopNow.index : -1);
    node.dataset.seq = String(stopNow ? events[stopNow.index].seq ?? 0 : 0);
  }

  return {
    node,
    /** Replace the events (a stored replay) and show stop `index`. */
    setEvents(list, index = 0) {
      events = list;
      stops = stopsOf(events);
      go(index);
    },
    /** Add events at the end (a live match); a view at the last stop follows them. */
    addEvents(list) {
      const wasFollowing = following || stops.length === 0;
      events = events.concat(list);
      stops = stopsOf(events);
      if (wasFollowing) go(stops.length - 1);
      else draw();
    },
    get stops() { return stops; },
    get at() { return at; },
    go,
    /** What priced cards cost (a Map "deal/play" → PlayCost); the trick marks costly ones. */
    setCosts(map) { costs = map; draw(); },
    /** Turn the table so `seat` sits at the bottom. */
    setBottom(seat) { bottom = seat; draw(); },
    /** Stop playing and forget the keyboard (the page is being left). */
    destroy() { stop(); document.removeEventListener("keydown", onKey); },
  };
}
