// The table as the server's events describe it. The events already say everything the
// rules decide (who won the trick, its units and points, the legal cards, the scores); this
// module only folds them into "what is on the table now" and finds the places a viewer
// can step to. It judges nothing.
//
// Events are MatchEvent in protobuf's JSON mapping, so a field holding 0 (seat 0, the
// lead position, a score of 0) is absent: every read goes through a default.

/** The kind of an event: "card_played", "trick_won", … (the key beside "seq"). */
export function kindOf(event) {
  for (const key of Object.keys(event)) if (key !== "seq") return key;
  return "";
}

/** The body of an event, whatever its kind. */
export function bodyOf(event) {
  return event[kindOf(event)] ?? {};
}

const zeros = () => [0, 0, 0, 0];
const four = (list) => [0, 1, 2, 3].map((i) => (list ?? [])[i] ?? 0);

/** The state before any event. */
export function emptyTable() {
  return {
    match: null, // match_started's body: match_id, players, ruleset, deal_count
    deal: null, // deal_started's body plus contract and trump
    hands: [[], [], [], []], // the cards each seat still shows
    hidden: zeros(), // how many more cards each seat holds face down
    trick: null, // {number, leader, cards: [{seat, card, broke, legal, play}], winner}
    taken: zeros(), // tricks taken this deal
    points: zeros(), // points taken this deal
    totals: zeros(), // running match totals, as the server counted them
    dealEnded: null,
    matchEnded: null,
    last: null, // the last event applied
  };
}

function removeCard(state, seat, card) {
  const hand = state.hands[seat];
  const at = hand.indexOf(card);
  if (at >= 0) hand.splice(at, 1);
  else if (state.hidden[seat] > 0) state.hidden[seat] -= 1;
}

/** Apply one event to the state (in place) and return it. */
export function apply(state, event) {
  const kind = kindOf(event);
  const e = event[kind] ?? {};
  state.last = event;
  switch (kind) {
    case "match_started":
      Object.assign(state, emptyTable(), { match: e, last: event });
      break;
    case "deal_started":
      state.deal = { ...e, number: e.deal ?? 0, declarer: e.declarer ?? 0, contract: "", trump: "" };
      state.hands = [0, 1, 2, 3].map((s) => [...((e.hands ?? [])[s]?.cards ?? [])]);
      state.hidden = [0, 1, 2, 3].map((s) => (e.hands ?? [])[s]?.hidden ?? 0);
      state.trick = null;
      state.taken = zeros();
      state.points = zeros();
      state.totals = four(e.totals);
      state.dealEnded = null;
      break;
    case "contract_chosen":
      if (state.deal) {
        state.deal.contract = e.contract ?? "";
        state.deal.trump = e.trump ?? "";
      }
      break;
    case "card_played": {
      const trick = e.trick ?? 0;
      if (!state.trick || state.trick.winner !== null || state.trick.number !== trick) {
        state.trick = { number: trick, leader: e.seat ?? 0, cards: [], winner: null };
      }
      const seat = e.seat ?? 0;
      state.trick.cards.push({
        seat, card: e.card ?? 0, broke: e.broke ?? "", legal: e.legal ?? [], play: e.play ?? 0,
        deal: e.deal ?? 0, trick,
      });
      removeCard(state, seat, e.card ?? 0);
      break;
    }
    case "trick_won": {
      const number = e.trick ?? 0;
      const leader = e.leader ?? 0;
      const cards = e.cards ?? [];
      // A replay that starts past trick 1 sends the earlier tricks as trick_won alone: their
      // cards leave the hands here.
      const seen = state.trick && state.trick.number === number && state.trick.winner === null;
      if (!seen) {
        state.trick = { number, leader, winner: null, cards: [] };
        cards.forEach((card, i) => {
          const seat = (leader + i) % 4;
          state.trick.cards.push({ seat, card, broke: "", legal: [], play: -1, deal: e.deal ?? 0, trick: number });
          removeCard(state, seat, card);
        });
      }
      const winner = e.winner ?? 0;
      state.trick.winner = winner;
      state.trick.units = e.units ?? 0;
      state.trick.points = e.points ?? 0;
      state.taken[winner] += 1;
      state.points[winner] += e.points ?? 0;
      break;
    }
    case "deal_ended":
      state.dealEnded = { ...e, scores: four(e.scores), totals: four(e.totals) };
      break;
    case "match_ended":
      state.matchEnded = { ...e, totals: four(e.totals) };
      break;
    default:
      break; // an event kind from a newer server: nothing to draw
  }
  return state;
}

/** The state after events[0..upto] (inclusive). */
export function tableAt(events, upto) {
  const state = emptyTable();
  for (let i = 0; i <= upto && i < events.length; i += 1) apply(state, events[i]);
  return state;
}

// Events that settle with the one before them: a trick is shown won with its fourth card,
// a deal's contract with its hands, the deal's end with its last card.
const FOLLOWERS = new Set(["contract_chosen", "trick_won", "deal_ended", "match_ended"]);

/**
 * The places a viewer steps between, in order: after the match's start, after each deal's
 * start (hands dealt, contract named), after each card (with the trick it won and the deal
 * it ended). Each stop: {index (last event of its group), kind ("start" | "deal" | "card"),
 * deal, trick, card (1..4 within the trick), closesTrick, closesDeal}.
 */
export function stopsOf(events) {
  const stops = [];
  let current = null;
  events.forEach((event, index) => {
    const kind = kindOf(event);
    const e = event[kind] ?? {};
    if (current && FOLLOWERS.has(kind)) {
      current.index = index;
      if (kind === "trick_won") current.closesTrick = true;
      if (kind === "deal_ended") current.closesDeal = true;
      return;
    }
    const deal = e.deal ?? current?.deal ?? 0;
    current = { index, kind: "start", deal: 0, trick: 0, card: 0, closesTrick: false, closesDeal: false };
    if (kind === "deal_started") Object.assign(current, { kind: "deal", deal });
    else if (kind === "card_played") {
      Object.assign(current, { kind: "card", deal, trick: e.trick ?? 0, card: (e.position ?? 0) + 1 });
    } else if (kind === "trick_won") {
      // A trick sent alone (a replay from trick N): a stop of its own.
      Object.assign(current, { kind: "card", deal, trick: e.trick ?? 0, card: 4, closesTrick: true });
    } else if (kind !== "match_started") Object.assign(current, { deal });
    stops.push(current);
  });
  return stops;
}

/** The stop for a position of the URL (deal, trick, card), or the nearest one before it. */
export function stopFor(stops, deal, trick, card) {
  const key = (s) => [s.deal, s.kind === "card" ? s.trick : 0, s.kind === "card" ? s.card : 0];
  const want = [deal, trick, card];
  let best = 0;
  stops.forEach((s, i) => {
    const k = key(s);
    const cmp = k[0] - want[0] || k[1] - want[1] || k[2] - want[2];
    if (cmp <= 0) best = i;
  });
  return best;
}

/** The next stop after `at` that passes `test`, or `at` when there is none. */
export function nextStop(stops, at, test) {
  for (let i = at + 1; i < stops.length; i += 1) if (test(stops[i])) return i;
  return at;
}

/** The last stop before `at` that passes `test`, or `at` when there is none. */
export function previousStop(stops, at, test) {
  for (let i = at - 1; i >= 0; i -= 1) if (test(stops[i])) return i;
  return at;
}
