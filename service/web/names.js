// Names for display: cards, suits, contracts, statuses, the ruleset in words. This is
// presentation only; what is legal, who won and what it scores comes from the server's
// events, never from here.

import { el } from "./dom.js";

const SUITS = ["♣", "♦", "♥", "♠"];
const SUIT_WORDS = ["clubs", "diamonds", "hearts", "spades"];
const RANKS = ["2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A"];

/** A card code (suit * 13 + rank) as people write it: ♠Q, ♥10. */
export function cardText(code) {
  if (!Number.isInteger(code) || code < 0 || code > 51) return `card ${code}`;
  return SUITS[Math.floor(code / 13)] + RANKS[code % 13];
}

/** A card given by code (events) or by the format's name ("QS", "TH": the record's JSON
 * form and validate's reports), as people write it. */
export function cardLabel(value) {
  if (typeof value !== "string") return cardText(value);
  const found = /^([2-9TJQKA])([CDHS])$/.exec(value);
  if (!found) return value;
  return cardText("CDHS".indexOf(found[2]) * 13 + "23456789TJQKA".indexOf(found[1]));
}

/** A card as an element, coloured by suit; data-card holds the code for tests and CSS. */
export function cardNode(code, extra = "") {
  const suit = Number.isInteger(code) && code >= 0 && code < 52 ? Math.floor(code / 13) : -1;
  const colour = suit === 1 || suit === 2 ? "red" : "black";
  return el(
    "span",
    { class: `card ${colour} ${extra}`.trim(), dataset: { card: String(code) },
      title: suit >= 0 ? `${RANKS[code % 13]} of ${SUIT_WORDS[suit]}` : undefined },
    cardText(code),
  );
}

/** A face-down card (a hand the view hides). */
export function cardBack() {
  return el("span", { class: "card back", "aria-label": "hidden card" });
}

// Enum values come as protobuf names (CONTRACT_KOZ, SUIT_SPADES) in events and as short
// names (KOZ, SPADES) in the record's JSON form; both are accepted.
function short(value, prefix) {
  const text = String(value ?? "");
  return text.startsWith(prefix) ? text.slice(prefix.length) : text;
}

const CONTRACTS = {
  KOZ: "Koz", EL_ALMAZ: "El almaz", KUPA: "Kupa almaz", ERKEK: "Erkek almaz",
  KIZ: "Kız almaz", RIFKI: "Rıfkı", SON_IKI: "Son iki",
};

/** A contract's name: Koz, Kız almaz, … */
export function contractText(value) {
  const key = short(value, "CONTRACT_");
  return CONTRACTS[key] ?? (key || "—");
}

/** A suit enum (SUIT_SPADES / SPADES) as its symbol and word. */
export function suitText(value) {
  const key = short(value, "SUIT_").toLowerCase();
  const i = SUIT_WORDS.indexOf(key);
  return i < 0 ? "" : `${SUITS[i]} ${key}`;
}

/** A match status: complete, abandoned, in progress. */
export function statusText(value) {
  const key = short(value, "MATCH_STATUS_");
  return key ? key.toLowerCase().replace(/_/g, " ") : "—";
}

/** How a deal ended. */
export function dealEndText(value) {
  const key = short(value, "DEAL_END_");
  return {
    ALL_TRICKS: "all thirteen tricks", EARLY: "ended early: the last penalty card fell",
    ABANDONED: "abandoned", REVOKE: "stopped by a revoke",
  }[key] ?? "";
}

/** How a deal ended, in a word or two (a table cell; the sentence is dealEndText). */
export function dealEndShort(value) {
  const key = short(value, "DEAL_END_");
  return { ALL_TRICKS: "13 tricks", EARLY: "early", ABANDONED: "abandoned", REVOKE: "revoke" }[key] ?? "";
}

/** A player's name with the seat, the way the CLI writes it: Ayşe (0). */
export function playerText(players, seat) {
  const p = (players ?? []).find((x) => (x.seat ?? 0) === seat);
  const name = p ? p.name || p.id || "" : "";
  return name ? `${name} (${seat})` : `seat ${seat}`;
}

/** The same as an element: the name isolated (<bdi>), so a right-to-left override in it
 * cannot reorder the seat number after it. */
export function playerNode(players, seat) {
  const p = (players ?? []).find((x) => (x.seat ?? 0) === seat);
  const name = p ? p.name || p.id || "" : "";
  return name ? [el("bdi", {}, name), ` (${seat})`] : [`seat ${seat}`];
}

function contractList(list) {
  const names = (list ?? []).map(contractText);
  return names.length ? names.join(", ") : "none";
}

/** The ruleset as sentences (from the record's JSON form, where every option is spelled out). */
export function rulesetSentences(r) {
  if (!r) return [];
  const out = [];
  const schedule = short(r.schedule, "SCHEDULE_KIND_");
  const deals = r.deal_count ?? "?";
  if (schedule === "QUOTA") {
    out.push(`${deals} deals; each player declares ${r.koz_quota ?? 0} koz and ` +
      `${r.penalty_quota ?? 0} penalty deals; each penalty contract at most ` +
      `${r.max_per_penalty ?? 0} times in the match` +
      (r.penalty_only_deals ? `; no koz in the first ${r.penalty_only_deals} deals` : "") + ".");
  } else if (schedule === "ROTATION") {
    out.push(`${deals} deals; every player declares each of the seven contracts once.`);
  } else if (schedule === "FIXED") {
    const order = Array.isArray(r.fixed_order) ? r.fixed_order : r.fixed_order?.contracts;
    out.push(`${deals} deals in a fixed order: ${contractList(order)}.`);
  }
  const first = short(r.first_declarer, "FIRST_DECLARER_RULE_");
  if (first === "HOLDER_OF_CARD") {
    out.push(`The first declarer holds ${cardLabel(r.first_declarer_card)} in the first deal.`);
  } else if (first) out.push("The first declarer is chosen by lot.");
  const koz = [];
  if (r.must_ruff) koz.push("a player void in the led suit must ruff");
  if (r.must_overtrump) koz.push("must overtrump a trump on the trick");
  if (r.must_raise_on_trump_lead) koz.push("must play higher when trumps are led");
  if (r.trump_lead_needs_break) koz.push("trumps may not be led until broken");
  if (koz.length) out.push(`Koz: ${koz.join("; ")}.`);
  const ban = r.heart_lead_ban?.contracts ?? r.heart_lead_ban;
  if (ban?.length) out.push(`Hearts may not be led until broken in ${contractList(ban)}.`);
  const hold = r.withholding?.contracts ?? r.withholding;
  if (hold?.length) out.push(`A covered penalty card must be given in ${contractList(hold)}.`);
  const discard = r.void_discard?.contracts ?? r.void_discard;
  if (discard?.length) out.push(`A void player must discard a penalty card in ${contractList(discard)}` +
    (r.rifki_heart_after_king ? "; in Rıfkı, a heart once the ♥K is gone." : "."));
  const early = r.early_end?.contracts ?? r.early_end;
  if (early?.length) out.push(`The deal ends when the last penalty card falls in ${contractList(early)}.`);
  const revoke = short(r.revoke, "REVOKE_RULE_");
  if (revoke === "PENALIZE") out.push("A marked revoke ends the deal; the revoker takes the full penalty.");
  else if (revoke === "REJECT") out.push("An illegal card makes the record invalid.");
  if (r.play_timeout_ms) out.push(`Move clock: ${r.play_timeout_ms / 1000} s a card` +
    (r.trump_timeout_ms ? `, ${r.trump_timeout_ms / 1000} s to name trumps.` : "."));
  return out;
}
