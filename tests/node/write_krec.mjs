// A second-language writer of kingrec records, written from docs/FORMAT.md and
// docs/RULES.md alone: plain Node (18+), no npm packages, nothing read from kingrec.
//
//   node tests/node/write_krec.mjs OUTDIR
//
// plays one complete 8-deal match under the `short` preset (each deal a deck shuffled from
// a fixed seed, every card picked among the legal ones by the filters of RULES.md) and
// writes it three ways, all holding the same match:
//
//   OUTDIR/match.krec            a .krec container with one frame (FORMAT.md §2, §3.1)
//   OUTDIR/match.jsonl           the friendly JSON form, one line (FORMAT.md §4.1)
//   OUTDIR/match.protojson.json  protobuf's standard JSON, pretty-printed (FORMAT.md §4.2)
//
// The match is valid: the writer intends no finding at all. It also carries one field
// "from a newer schema" (field 1000 of Match), which the .krec and the friendly form
// keep (FORMAT.md §2.7) and ProtoJSON cannot (§4.2).
// tests/test_format_spec.py runs this and checks the files with kingrec.

import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

function check(condition, message) {
  if (!condition) throw new Error(`write_krec: ${message}`);
}

// -- CRC-32/ISO-HDLC (FORMAT.md §2.3) ----------------------------------------------------

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1;
    table[i] = c >>> 0;
  }
  return table;
})();

function crc32(bytes) {
  let crc = 0xffffffff;
  for (const b of bytes) crc = CRC_TABLE[(crc ^ b) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

check(crc32(Buffer.from("123456789", "ascii")) === 0xcbf43926, "crc32 test vector");

// -- protobuf wire encoding (FORMAT.md §3.1) ---------------------------------------------

const VARINT = 0;
const LEN = 2;

function varint(out, n) {
  check(Number.isSafeInteger(n) && n >= 0, `varint of ${n}`);
  while (n >= 0x80) {
    out.push((n % 0x80) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
}

function zigzag(n) {
  return ((n << 1) ^ (n >> 31)) >>> 0;
}

// A message under construction: fields must be added in field-number order (§3.1).
class Message {
  constructor() {
    this.bytes = [];
    this.last = 0;
  }
  key(field, wire) {
    check(field >= this.last, `field ${field} after field ${this.last}`);
    this.last = field;
    varint(this.bytes, (field << 3) | wire);
  }
  // A plain proto3 scalar: not written at its default.
  uint(field, value) {
    if (value) this.presentUint(field, value);
  }
  // An `optional` scalar: written whenever set, even to 0 or false.
  presentUint(field, value) {
    if (value === undefined) return;
    this.key(field, VARINT);
    varint(this.bytes, Number(value));
  }
  presentSint(field, value) {
    if (value === undefined) return;
    this.key(field, VARINT);
    varint(this.bytes, zigzag(value));
  }
  lengthDelimited(field, bytes) {
    this.key(field, LEN);
    varint(this.bytes, bytes.length);
    for (const b of bytes) this.bytes.push(b);
  }
  string(field, text) {
    if (text) this.lengthDelimited(field, Buffer.from(text, "utf8"));
  }
  raw(field, bytes) {
    if (bytes.length) this.lengthDelimited(field, bytes);
  }
  // A sub-message field: written whenever present, even when empty.
  message(field, sub) {
    if (sub !== undefined) this.lengthDelimited(field, sub.bytes);
  }
  // Repeated uint32/enum (or sint32 with zig = true): packed, nothing when empty.
  packed(field, values, zig = false) {
    if (!values.length) return;
    const body = [];
    for (const v of values) varint(body, zig ? zigzag(v) : v);
    this.lengthDelimited(field, body);
  }
}

// -- cards, contracts, suits (FORMAT.md §3.2, §3.3) --------------------------------------

const RANKS = "23456789TJQKA";
const SUITS = "CDHS";
const suitOf = (card) => Math.floor(card / 13);
const rankOf = (card) => card % 13;
const cardName = (card) => RANKS[rankOf(card)] + SUITS[suitOf(card)];
const CLUBS = 0;
const HEARTS = 2;
const KING_OF_HEARTS = HEARTS * 13 + 11;

const CONTRACTS = ["UNSPECIFIED", "KOZ", "EL_ALMAZ", "KUPA", "ERKEK", "KIZ", "RIFKI", "SON_IKI"];
const [KOZ, EL_ALMAZ, KUPA, ERKEK, KIZ, RIFKI, SON_IKI] = [1, 2, 3, 4, 5, 6, 7];
const SUIT_ENUM = ["UNSPECIFIED", "CLUBS", "DIAMONDS", "HEARTS", "SPADES"]; // card suit + 1
const STATUS_COMPLETE = 1;
const END_NAMES = ["UNSPECIFIED", "ALL_TRICKS", "EARLY", "ABANDONED", "REVOKE"];
const [END_ALL_TRICKS, END_EARLY] = [1, 2];

check(cardName(49) === "QS" && cardName(34) === "TH" && cardName(13) === "2D", "card codes");

// -- the rules (RULES.md) -----------------------------------------------------------------

// The `short` preset, every option spelled out (RULES.md "Presets"; FORMAT.md §3.7).
const RULES = {
  preset: "short",
  schedule: 1, // QUOTA
  deal_count: 8,
  koz_quota: 1,
  penalty_quota: 1,
  max_per_penalty: 2,
  penalty_only_deals: 0,
  first_declarer: 1, // ANY_SEAT
  first_declarer_card: 13, // ♦2
  dealer: 0, // not checked
  must_ruff: true,
  must_overtrump: false,
  must_raise_on_trump_lead: false,
  trump_lead_needs_break: false,
  heart_lead_ban: [KUPA, RIFKI],
  withholding: [ERKEK, KIZ, RIFKI],
  void_discard: [KUPA, ERKEK, KIZ, RIFKI],
  rifki_heart_after_king: false,
  early_end: [KUPA, ERKEK, KIZ, RIFKI],
  revoke: 1, // REJECT
  play_timeout_ms: 16000,
  trump_timeout_ms: 12000,
  scoring: {
    koz_trick: 50,
    el_almaz_trick: -50,
    kupa_heart: -30,
    erkek_card: -60,
    kiz_queen: -100,
    rifki_king: -320,
    son_iki_trick: -180,
  },
};
const UNIT_SCORE = {
  [KOZ]: RULES.scoring.koz_trick,
  [EL_ALMAZ]: RULES.scoring.el_almaz_trick,
  [KUPA]: RULES.scoring.kupa_heart,
  [ERKEK]: RULES.scoring.erkek_card,
  [KIZ]: RULES.scoring.kiz_queen,
  [RIFKI]: RULES.scoring.rifki_king,
  [SON_IKI]: RULES.scoring.son_iki_trick,
};

// Penalty cards of the card contracts (RULES.md "Contracts and scores").
function isPenaltyCard(card, contract) {
  const rank = RANKS[rankOf(card)];
  if (contract === KUPA) return suitOf(card) === HEARTS;
  if (contract === ERKEK) return rank === "K" || rank === "J";
  if (contract === KIZ) return rank === "Q";
  if (contract === RIFKI) return card === KING_OF_HEARTS;
  return false;
}

function highestOfSuit(trick, suit) {
  let best = -1;
  for (const c of trick) if (suitOf(c) === suit && c > best) best = c;
  return best;
}

// The legal cards: the filters of RULES.md "Which rule a bad card breaks", in order; each
// keeps only the cards it names and is skipped when it would keep none.
function legalCards(hand, trick, contract, trump, brokenSuits) {
  let cands = [...hand];
  const keep = (subset) => {
    if (subset.length) cands = subset;
  };
  const koz = contract === KOZ;
  if (!trick.length) {
    if (koz && RULES.trump_lead_needs_break && !brokenSuits.has(trump)) {
      keep(cands.filter((c) => suitOf(c) !== trump));
    } else if (!koz && RULES.heart_lead_ban.includes(contract) && !brokenSuits.has(HEARTS)) {
      keep(cands.filter((c) => suitOf(c) !== HEARTS));
    }
    return cands;
  }
  const led = suitOf(trick[0]);
  const following = cands.filter((c) => suitOf(c) === led);
  if (following.length) {
    keep(following);
    if (koz && led === trump && RULES.must_raise_on_trump_lead) {
      keep(cands.filter((c) => c > highestOfSuit(trick, trump)));
    } else if (!koz && RULES.withholding.includes(contract)) {
      const top = highestOfSuit(trick, led);
      keep(cands.filter((c) => isPenaltyCard(c, contract) && c < top));
    }
  } else if (koz) {
    if (RULES.must_ruff) keep(cands.filter((c) => suitOf(c) === trump));
    const top = highestOfSuit(trick, trump);
    if (RULES.must_overtrump && top >= 0) {
      keep(cands.filter((c) => suitOf(c) === trump && c > top));
    }
  } else if (RULES.void_discard.includes(contract)) {
    const penalty = cands.filter((c) => isPenaltyCard(c, contract));
    if (penalty.length) keep(penalty);
    else if (contract === RIFKI && RULES.rifki_heart_after_king) {
      keep(cands.filter((c) => suitOf(c) === HEARTS));
    }
  }
  return cands;
}

// Position in the trick (0 = leader) of the winning card.
function trickWinner(trick, trump) {
  let best = 0;
  for (let i = 1; i < trick.length; i++) {
    const card = trick[i];
    const top = trick[best];
    if (suitOf(card) === suitOf(top)) {
      if (card > top) best = i;
    } else if (suitOf(card) === trump) {
      best = i;
    }
  }
  return best;
}

// Scoring units a trick's winner takes (RULES.md "Contracts and scores").
function trickUnits(trick, trickIndex, contract) {
  if (contract === KOZ || contract === EL_ALMAZ) return 1;
  if (contract === SON_IKI) return trickIndex >= 11 ? 1 : 0;
  return trick.filter((c) => isPenaltyCard(c, contract)).length;
}

// The contract quota of RULES.md "Choosing contracts": what `contract` by `seat` breaks.
function scheduleProblem(tally, number, seat, contract) {
  if (contract === KOZ) {
    if (number <= RULES.penalty_only_deals) return "koz in a penalty-only deal";
    return tally.koz[seat] >= RULES.koz_quota ? "koz quota used up" : null;
  }
  if (tally.penalty[seat] >= RULES.penalty_quota) return "penalty quota used up";
  if ((tally.perContract[contract] ?? 0) >= RULES.max_per_penalty) return "contract limit";
  return null;
}

// -- playing the match ----------------------------------------------------------------------

// A small deterministic generator (mulberry32), so every run writes the same bytes.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const random = rng(20240501);
const pick = (items) => items[Math.floor(random() * items.length)];
const between = (low, high) => low + Math.floor(random() * (high - low + 1));

const FIRST_DECLARER = 2; // "chosen by lot"
// The declarers' choices, deal by deal: each seat declares one koz and one penalty deal.
const CONTRACT_PLAN = [KUPA, KOZ, RIFKI, ERKEK, KOZ, SON_IKI, KOZ, KOZ];
const AUTO_PLAY = { deal: 3, play: 5 }; // one play the server made for a player out of time

function playDeal(number, tally) {
  const declarer = (FIRST_DECLARER + number - 1) % 4;
  const contract = CONTRACT_PLAN[number - 1];
  const problem = scheduleProblem(tally, number, declarer, contract);
  check(problem === null, `deal ${number}: ${problem}`);
  tally.perContract[contract] = (tally.perContract[contract] ?? 0) + 1;
  if (contract === KOZ) tally.koz[declarer]++;
  else tally.penalty[declarer]++;

  // Shuffle a fresh deck; each seat's thirteen cards sorted.
  const deck = Array.from({ length: 52 }, (_, i) => i);
  for (let i = deck.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [deck[i], deck[j]] = [deck[j], deck[i]];
  }
  const hands = [0, 1, 2, 3].map((s) => deck.slice(13 * s, 13 * s + 13).sort((x, y) => x - y));

  // The declarer names as trumps the suit they hold most of (koz only).
  let trump = -1;
  if (contract === KOZ) {
    const counts = [0, 0, 0, 0];
    for (const c of hands[declarer]) counts[suitOf(c)]++;
    trump = counts.indexOf(Math.max(...counts));
  }

  const held = hands.map((h) => [...h]);
  const plays = [];
  const thinkMs = [];
  const autoPlays = [];
  const units = [0, 0, 0, 0];
  const brokenSuits = new Set(); // suits played to a completed trick
  const fallen = new Set(); // cards of completed tricks
  const penaltyCards = Array.from({ length: 52 }, (_, c) => c).filter((c) =>
    isPenaltyCard(c, contract),
  );
  let leader = declarer;
  let end = 0;
  for (let trickIndex = 0; trickIndex < 13 && !end; trickIndex++) {
    const trick = [];
    for (let k = 0; k < 4; k++) {
      const seat = (leader + k) % 4;
      const card = pick(legalCards(held[seat], trick, contract, trump, brokenSuits));
      held[seat].splice(held[seat].indexOf(card), 1);
      trick.push(card);
      const auto = number === AUTO_PLAY.deal && plays.length === AUTO_PLAY.play;
      if (auto) autoPlays.push(plays.length);
      thinkMs.push(auto ? RULES.play_timeout_ms + 250 : between(150, 9000));
      plays.push(card);
    }
    const winner = (leader + trickWinner(trick, trump)) % 4;
    units[winner] += trickUnits(trick, trickIndex, contract);
    for (const c of trick) {
      brokenSuits.add(suitOf(c));
      fallen.add(c);
    }
    leader = winner;
    if (trickIndex === 12) end = END_ALL_TRICKS;
    else if (RULES.early_end.includes(contract) && penaltyCards.every((c) => fallen.has(c))) {
      end = END_EARLY;
    }
  }
  return {
    number,
    dealer: (declarer + 3) % 4, // the seat before the declarer (informational)
    declarer,
    contract,
    trump: trump + 1, // the Suit enum: card suit + 1, 0 = none
    hands,
    plays,
    thinkMs,
    autoPlays,
    end,
    claimedScores: units.map((u) => u * UNIT_SCORE[contract]),
    trumpThinkMs: contract === KOZ ? between(500, 11000) : undefined,
  };
}

const tally = { koz: [0, 0, 0, 0], penalty: [0, 0, 0, 0], perContract: {} };
const deals = [];
for (let n = 1; n <= RULES.deal_count; n++) deals.push(playDeal(n, tally));
const totals = [0, 1, 2, 3].map((s) => deals.reduce((sum, d) => sum + d.claimedScores[s], 0));

const MATCH = {
  format_version: 1,
  match_id: "node-writer-short-1",
  metadata: {
    event: "second-language writer",
    site: "tests/node",
    start_time: 1714588200, // 2024-05-01T18:30:00Z, whole seconds
    client_name: "write_krec.mjs",
    client_version: "1.0",
    tags: { language: "javascript" },
    direction: 1, // ANTICLOCKWISE
  },
  players: [
    { id: "js-0", name: "Ayşe", seat: 0, seat_name: "South" },
    { id: "js-1", name: "Çağrı", seat: 1, seat_name: "East" },
    { id: "js-2", name: "Zeynep", seat: 2, seat_name: "North" },
    { id: "js-3", name: "İsmail", seat: 3, seat_name: "West" },
  ],
  status: STATUS_COMPLETE,
  deals,
  claimed_totals: totals,
  // Field 1000, a string: a field this schema does not know (FORMAT.md §2.7).
  unknown: { field: 1000, text: "from a newer schema" },
};

// -- the Match as protobuf (FORMAT.md §3.1, §3.4–§3.7) -------------------------------------

function contractSet(contracts) {
  const m = new Message();
  m.packed(1, contracts);
  return m;
}

function encodeRuleset() {
  const r = new Message();
  r.string(1, RULES.preset);
  r.presentUint(2, RULES.schedule);
  r.presentUint(3, RULES.deal_count);
  r.presentUint(4, RULES.koz_quota);
  r.presentUint(5, RULES.penalty_quota);
  r.presentUint(6, RULES.max_per_penalty);
  r.presentUint(7, RULES.penalty_only_deals);
  r.presentUint(9, RULES.first_declarer);
  r.presentUint(10, RULES.first_declarer_card);
  r.presentUint(11, RULES.dealer);
  r.presentUint(12, RULES.must_ruff ? 1 : 0);
  r.presentUint(13, RULES.must_overtrump ? 1 : 0);
  r.presentUint(14, RULES.must_raise_on_trump_lead ? 1 : 0);
  r.presentUint(15, RULES.trump_lead_needs_break ? 1 : 0);
  r.message(16, contractSet(RULES.heart_lead_ban));
  r.message(17, contractSet(RULES.withholding));
  r.message(18, contractSet(RULES.void_discard));
  r.presentUint(19, RULES.rifki_heart_after_king ? 1 : 0);
  r.message(20, contractSet(RULES.early_end));
  r.presentUint(21, RULES.revoke);
  r.presentUint(22, RULES.play_timeout_ms);
  r.presentUint(23, RULES.trump_timeout_ms);
  const s = new Message();
  Object.values(RULES.scoring).forEach((points, i) => s.presentSint(i + 1, points));
  r.message(24, s);
  return r;
}

function encodeDeal(d) {
  const m = new Message();
  m.uint(1, d.number);
  m.presentUint(2, d.dealer);
  m.uint(3, d.declarer);
  m.uint(4, d.contract);
  m.uint(5, d.trump);
  m.raw(6, d.hands.flat());
  m.raw(7, d.plays);
  m.packed(8, d.thinkMs);
  m.packed(9, d.autoPlays);
  m.uint(11, d.end);
  m.packed(12, d.claimedScores, true);
  m.presentUint(13, d.trumpThinkMs);
  return m;
}

function unknownFieldBytes() {
  const m = new Message();
  m.string(MATCH.unknown.field, MATCH.unknown.text);
  return m.bytes;
}

function encodeMatch() {
  const m = new Message();
  m.uint(1, MATCH.format_version);
  m.string(2, MATCH.match_id);
  const meta = new Message();
  const md = MATCH.metadata;
  meta.string(1, md.event);
  meta.string(2, md.site);
  const ts = new Message();
  ts.uint(1, md.start_time);
  meta.message(3, ts);
  meta.string(4, md.client_name);
  meta.string(5, md.client_version);
  for (const [k, v] of Object.entries(md.tags)) {
    const entry = new Message();
    entry.string(1, k);
    entry.string(2, v);
    meta.message(6, entry);
  }
  meta.uint(7, md.direction);
  m.message(3, meta);
  for (const p of MATCH.players) {
    const pm = new Message();
    pm.string(1, p.id);
    pm.string(2, p.name);
    pm.uint(3, p.seat);
    pm.string(4, p.seat_name);
    m.message(4, pm);
  }
  m.message(5, encodeRuleset());
  m.uint(6, MATCH.status);
  for (const d of MATCH.deals) m.message(8, encodeDeal(d));
  m.packed(9, MATCH.claimed_totals, true);
  return Uint8Array.from([...m.bytes, ...unknownFieldBytes()]); // unknown fields last
}

// -- the .krec container (FORMAT.md §2.1, §2.2, §2.6) --------------------------------------

function u16(n) {
  return [n & 0xff, (n >>> 8) & 0xff];
}

function u32(n) {
  return [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, (n >>> 24) & 0xff];
}

function krecFile(payloads) {
  const MAGIC = [0x89, 0x4b, 0x52, 0x45, 0x43, 0x0d, 0x0a, 0x1a];
  const MAX_FRAME_BYTES = 1048576;
  const out = [...MAGIC, ...u16(1), ...u16(0)];
  for (const payload of payloads) {
    check(payload.length <= MAX_FRAME_BYTES, "payload over MAX_FRAME_BYTES");
    const head = [0x4b, 0x52, 0x46, 0x31, ...u32(payload.length), ...u32(crc32(payload))];
    out.push(...head, ...u32(crc32(head)), ...payload);
  }
  return Uint8Array.from(out);
}

// -- the JSON forms (FORMAT.md §4.1, §4.2) -------------------------------------------------

function rfc3339(seconds) {
  return new Date(seconds * 1000).toISOString().replace(".000Z", "Z");
}

// The friendly form: proto names, short enum names, card names, presence kept.
function friendly() {
  const ruleset = {
    ...RULES,
    schedule: "QUOTA",
    first_declarer: "ANY_SEAT",
    first_declarer_card: cardName(RULES.first_declarer_card),
    dealer: "UNSPECIFIED",
    heart_lead_ban: RULES.heart_lead_ban.map((c) => CONTRACTS[c]),
    withholding: RULES.withholding.map((c) => CONTRACTS[c]),
    void_discard: RULES.void_discard.map((c) => CONTRACTS[c]),
    early_end: RULES.early_end.map((c) => CONTRACTS[c]),
    revoke: "REJECT",
  };
  const deal = (d) => {
    const out = { number: d.number, dealer: d.dealer };
    if (d.declarer) out.declarer = d.declarer;
    out.contract = CONTRACTS[d.contract];
    if (d.trump) out.trump = SUIT_ENUM[d.trump];
    out.hands = d.hands.map((h) => h.map(cardName));
    out.plays = d.plays.map(cardName);
    out.think_ms = d.thinkMs;
    if (d.autoPlays.length) out.auto_plays = d.autoPlays;
    out.end = END_NAMES[d.end];
    out.claimed_scores = d.claimedScores;
    if (d.trumpThinkMs !== undefined) out.trump_think_ms = d.trumpThinkMs;
    return out;
  };
  const md = MATCH.metadata;
  return {
    format_version: MATCH.format_version,
    match_id: MATCH.match_id,
    metadata: {
      event: md.event,
      site: md.site,
      start_time: rfc3339(md.start_time),
      client_name: md.client_name,
      client_version: md.client_version,
      tags: md.tags,
      direction: "ANTICLOCKWISE",
    },
    players: MATCH.players, // seat always written, seat 0 included
    ruleset,
    status: "COMPLETE",
    deals: MATCH.deals.map(deal),
    claimed_totals: MATCH.claimed_totals,
    _unknown: Buffer.from(unknownFieldBytes()).toString("base64"),
  };
}

// Protobuf's standard JSON: lowerCamelCase names, full enum names, base64 bytes.
function protoJson() {
  const full = (prefix, names, n) => `${prefix}_${names[n]}`;
  const contracts = (list) => ({ contracts: list.map((c) => full("CONTRACT", CONTRACTS, c)) });
  const camel = (name) => name.replace(/_([a-z])/g, (_, ch) => ch.toUpperCase());
  const ruleset = {};
  for (const [key, value] of Object.entries(RULES)) ruleset[camel(key)] = value;
  Object.assign(ruleset, {
    schedule: "SCHEDULE_KIND_QUOTA",
    firstDeclarer: "FIRST_DECLARER_RULE_ANY_SEAT",
    dealer: "DEALER_RULE_UNSPECIFIED",
    heartLeadBan: contracts(RULES.heart_lead_ban),
    withholding: contracts(RULES.withholding),
    voidDiscard: contracts(RULES.void_discard),
    earlyEnd: contracts(RULES.early_end),
    revoke: "REVOKE_RULE_REJECT",
    scoring: Object.fromEntries(Object.entries(RULES.scoring).map(([k, v]) => [camel(k), v])),
  });
  const deal = (d) => {
    const out = { number: d.number, dealer: d.dealer };
    if (d.declarer) out.declarer = d.declarer;
    out.contract = full("CONTRACT", CONTRACTS, d.contract);
    if (d.trump) out.trump = full("SUIT", SUIT_ENUM, d.trump);
    out.hands = Buffer.from(d.hands.flat()).toString("base64");
    out.plays = Buffer.from(d.plays).toString("base64");
    out.thinkMs = d.thinkMs;
    if (d.autoPlays.length) out.autoPlays = d.autoPlays;
    out.end = full("DEAL_END", END_NAMES, d.end);
    out.claimedScores = d.claimedScores;
    if (d.trumpThinkMs !== undefined) out.trumpThinkMs = d.trumpThinkMs;
    return out;
  };
  const md = MATCH.metadata;
  return {
    formatVersion: MATCH.format_version,
    matchId: MATCH.match_id,
    metadata: {
      event: md.event,
      site: md.site,
      startTime: rfc3339(md.start_time),
      clientName: md.client_name,
      clientVersion: md.client_version,
      tags: md.tags,
      direction: "DIRECTION_ANTICLOCKWISE",
    },
    players: MATCH.players.map((p) => {
      const out = { id: p.id, name: p.name };
      if (p.seat) out.seat = p.seat; // ProtoJSON leaves out seat 0
      out.seatName = p.seat_name;
      return out;
    }),
    ruleset,
    status: "MATCH_STATUS_COMPLETE",
    deals: MATCH.deals.map(deal),
    claimedTotals: MATCH.claimed_totals,
  };
}

// -- write ------------------------------------------------------------------------------------

const outdir = process.argv[2];
check(outdir, "usage: node write_krec.mjs OUTDIR");
mkdirSync(outdir, { recursive: true });
writeFileSync(join(outdir, "match.krec"), krecFile([encodeMatch()]));
writeFileSync(join(outdir, "match.jsonl"), `${JSON.stringify(friendly())}\n`);
writeFileSync(join(outdir, "match.protojson.json"), `${JSON.stringify(protoJson(), null, 2)}\n`);
const summary = deals.map((d) => `${d.number}:${CONTRACTS[d.contract]}/${END_NAMES[d.end]}`);
console.log(`wrote 1 match (${summary.join(" ")}; totals ${totals.join(" ")}) to ${outdir}`);
