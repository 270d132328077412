"""Bots that play plausible King: choose a contract, name trumps, pick a card.

Everything works on the engine's plain ints (cards 0..51, 52-bit card masks, suits
0..3). The bots are deterministic: the ``random.Random`` they are given only breaks ties
(and adds a little noise to the contract choice), so the same state and the same rng
state give the same answer.

Play heuristics, in short:

* penalty deals (el almaz, kupa, erkek, kız, rıfkı, the last two tricks of son iki):
  duck — play the highest card that still loses the trick (a penalty card first, since it
  then goes to someone else); when every card wins, play the highest harmless card if last
  to play, else the lowest. Void: discard the most dangerous card (penalty cards, then high
  cards of short suits). Lead low cards of short suits, never a sure winner if avoidable.
* son iki before the last two tricks: shed high cards.
* koz: win cheaply (the lowest card that wins the trick, a sure winner when not last);
  when the trick cannot be won, throw the lowest card, off-trump first. Lead sure winners,
  draw trumps when long in them, else lead low from the shortest side suit.
"""

from __future__ import annotations

import random
from collections.abc import Collection

from ._engine_py import trick_winner
from .cards import HEARTS, KING, KING_OF_HEARTS, QUEEN, SUIT_MASKS
from .contracts import PENALTY_MASKS, Contract
from .game import DealPlay
from .rules import Ruleset

__all__ = ["choose_contract", "choose_play", "choose_trump", "contract_utilities"]

_ALL = (1 << 52) - 1
_RANKS = 0x1FFF  # the 13 rank bits of one suit
_ACE, _JACK = 12, 9


def _low(mask: int) -> int:
    """The lowest card of a non-empty mask."""
    return (mask & -mask).bit_length() - 1


def _high(mask: int) -> int:
    """The highest card of a non-empty mask."""
    return mask.bit_length() - 1


def _above(card: int) -> int:
    """The cards of ``card``'s suit that outrank it."""
    return SUIT_MASKS[card // 13] & ~((2 << card) - 1)


def _below(card: int) -> int:
    """The cards of ``card``'s suit that it outranks."""
    return SUIT_MASKS[card // 13] & ((1 << card) - 1)


def _best(cards: list[tuple[int, int]], rng: random.Random) -> int:
    """The card with the highest score; the rng breaks ties."""
    top = max(score for score, _ in cards)
    ties = [card for score, card in cards if score == top]
    return ties[0] if len(ties) == 1 else rng.choice(ties)


def _cards(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


# -- trumps and contracts -------------------------------------------------------------


def _suit_key(hand_mask: int, suit: int) -> tuple[int, int]:
    """Length, then strength (sum of rank weights, high cards count most)."""
    ranks = hand_mask >> (13 * suit) & _RANKS
    strength = sum((r + 1) ** 2 for r in range(13) if ranks >> r & 1)
    return ranks.bit_count(), strength


def choose_trump(hand_mask: int, rng: random.Random) -> int:
    """The trump suit (0..3) a koz declarer names: the longest suit, then the strongest."""
    keyed = [(_suit_key(hand_mask, s), s) for s in range(4)]
    top = max(key for key, _ in keyed)
    ties = [s for key, s in keyed if key == top]
    return ties[0] if len(ties) == 1 else rng.choice(ties)


# The mean of each raw estimate below over random hands (sampled): a contract's utility
# is how many more (or fewer) units than an average hand this hand should take.
_RAW_MEAN: dict[Contract, float] = {
    Contract.KOZ: 3.59,
    Contract.EL_ALMAZ: 1.90,
    Contract.KUPA: 2.10,
    Contract.ERKEK: 1.40,
    Contract.KIZ: 0.83,
    Contract.RIFKI: 0.244,
    Contract.SON_IKI: 0.50,
}


def _estimates(hand_mask: int) -> dict[Contract, float]:
    """Rough raw estimates of the units this hand takes in each contract."""
    suits = [hand_mask >> (13 * s) & _RANKS for s in range(4)]
    lengths = [r.bit_count() for r in suits]

    # No-trump trick taking: high cards count, low cards are escapes.
    tricks_nt = 0.0
    for ranks, n in zip(suits, lengths, strict=True):
        if ranks >> _ACE & 1:
            tricks_nt += 1.0
        if ranks >> KING & 1:
            tricks_nt += 0.75 if n >= 2 else 0.35
        if ranks >> QUEEN & 1:
            tricks_nt += 0.45 if n >= 3 else 0.2
        if ranks >> _JACK & 1:
            tricks_nt += 0.2 if n >= 4 else 0.05
        if n > 4:
            tricks_nt += 0.25 * (n - 4) * (ranks >> 8).bit_count() / 5
    lows = sum((ranks & 0x1F).bit_count() for ranks in suits)  # 2..6
    tricks_nt = max(0.0, tricks_nt - 0.1 * lows)

    # Koz with the suit this hand would name.
    trump = max(range(4), key=lambda s: (_suit_key(hand_mask, s), -s))
    koz = 0.0
    for s, (ranks, n) in enumerate(zip(suits, lengths, strict=True)):
        if s == trump:
            koz += (ranks >> _ACE & 1) + 0.8 * (ranks >> KING & 1 and n >= 2)
            koz += 0.5 * (ranks >> QUEEN & 1 and n >= 3) + 0.9 * max(0, n - 3)
        else:
            koz += 0.9 * (ranks >> _ACE & 1) + 0.5 * (ranks >> KING & 1 and n >= 2)
            if n <= 1 and lengths[trump] >= 3:
                koz += 0.6 - 0.3 * n
    hearts = suits[HEARTS]

    kupa = 0.8 * tricks_nt
    for r in range(13):
        if hearts >> r & 1:
            kupa += 0.5 if r >= _JACK else 0.2 if r >= 5 else -0.1

    erkek = 0.45 * tricks_nt
    kiz = 0.2 * tricks_nt
    for ranks in suits:
        below_j = (ranks & ((1 << _JACK) - 1)).bit_count()
        if ranks >> KING & 1:
            erkek += (0.7, 0.45, 0.3)[below_j] if below_j < 3 else 0.2
        if ranks >> _JACK & 1:
            erkek += (0.5, 0.3)[below_j] if below_j < 2 else 0.15
        if ranks >> QUEEN & 1:
            guards = (ranks & ((1 << QUEEN) - 1)).bit_count()
            kiz += (0.75, 0.5, 0.3)[guards] if guards < 3 else 0.15
        else:
            kiz += 0.1 * ((ranks >> KING & 1) + (ranks >> _ACE & 1))

    if hand_mask >> KING_OF_HEARTS & 1:
        guards = (hearts & ((1 << KING) - 1)).bit_count()
        rifki = (0.85, 0.6, 0.4)[guards] if guards < 3 else 0.25
    else:
        rifki = 0.1 + 0.15 * (hearts >> _ACE & 1) + 0.04 * tricks_nt - 0.05 * (lengths[HEARTS] <= 1)

    highs = sum((ranks >> QUEEN).bit_count() for ranks in suits)  # Q K A
    son_iki = min(2.0, max(0.0, 0.5 + 0.07 * (highs - 3) - 0.06 * (lows - 5)))

    return {
        Contract.KOZ: koz,
        Contract.EL_ALMAZ: tricks_nt,
        Contract.KUPA: kupa,
        Contract.ERKEK: erkek,
        Contract.KIZ: kiz,
        Contract.RIFKI: rifki,
        Contract.SON_IKI: son_iki,
    }


def contract_utilities(rules: Ruleset, hand_mask: int) -> dict[Contract, float]:
    """How many points better than an average hand this hand should score in each contract."""
    est = _estimates(hand_mask)
    return {c: rules.unit_score(c) * (raw - _RAW_MEAN[c]) for c, raw in est.items()}


def choose_contract(
    rules: Ruleset, hand_mask: int, allowed: Collection[Contract], rng: random.Random
) -> Contract:
    """The contract a declarer holding ``hand_mask`` picks among those ``allowed``.

    Each contract's utility estimates how much better than average this hand does in it
    (koz with a long strong suit, kupa with few low hearts, kız with guarded queens, rıfkı
    without the ♥K or with it well guarded, erkek with few kings and jacks, el almaz and
    son iki with low cards); a little noise makes the choice less mechanical.
    """
    options = sorted(set(allowed))
    if not options:
        raise ValueError("no contract is allowed")
    if len(options) == 1:
        return options[0]
    util = contract_utilities(rules, hand_mask)
    scored = [(util[c] + rng.gauss(0.0, 20.0), c) for c in options]
    return max(scored)[1]


# -- card play ------------------------------------------------------------------------


def choose_play(state: DealPlay, rng: random.Random, legal: int | None = None) -> int:
    """A legal card for the seat to play in ``state``.

    ``legal`` may pass ``state.legal_plays()`` when the caller already has it.
    """
    if legal is None:
        legal = state.legal_plays()
    if not legal:
        raise ValueError("the deal is over" if state.over else "no legal card")
    if not legal & (legal - 1):
        return _low(legal)
    contract = state.contract
    if contract == Contract.KOZ:
        return _play_koz(state, legal, rng)
    if contract == Contract.SON_IKI and len(state.winners) < 11:
        return _shed_high(legal, rng)
    return _play_penalty(state, legal, rng)


def _outstanding(state: DealPlay, hand: int) -> int:
    """Cards still in the other players' hands."""
    out = _ALL & ~state.played & ~hand
    for card in state.trick:
        out &= ~(1 << card)
    return out


def _shed_high(legal: int, rng: random.Random) -> int:
    """The highest-ranked legal card (son iki, early: tricks now cost nothing)."""
    return _best([(card % 13, card) for card in _cards(legal)], rng)


def _discard(hand: int, legal: int, penalty: int, rng: random.Random) -> int:
    """The most dangerous card to throw away: penalty cards, then high cards of short suits."""
    scored = []
    for card in _cards(legal):
        length = (hand & SUIT_MASKS[card // 13]).bit_count()
        scored.append((500 * (penalty >> card & 1) + 10 * (card % 13) - 3 * length, card))
    return _best(scored, rng)


def _play_penalty(state: DealPlay, legal: int, rng: random.Random) -> int:
    hand = state.held[state.to_play]
    trick = state.trick
    penalty = PENALTY_MASKS[state.contract]
    if not trick:
        return _lead_low(state, hand, legal, penalty, rng)
    led = trick[0] // 13
    follow = legal & SUIT_MASKS[led]
    if not follow:
        return _discard(hand, legal, penalty, rng)
    top = trick[trick_winner(trick, -1)]
    under = follow & ((1 << top) - 1)  # same suit, lower than the winning card
    if under:
        give = under & penalty
        return _high(give or under)
    harmless = follow & ~penalty
    if len(trick) == 3:  # the trick is ours anyway: spend the highest card
        return _high(harmless or follow)
    return _low(harmless or follow)


def _lead_low(state: DealPlay, hand: int, legal: int, penalty: int, rng: random.Random) -> int:
    """Lead a card unlikely to win: low against what is out, from a short suit."""
    out = _outstanding(state, hand)
    scored = []
    for card in _cards(legal):
        higher = out & _above(card)
        lower = out & _below(card)
        length = (hand & SUIT_MASKS[card // 13]).bit_count()
        danger = 2 * lower.bit_count() + length
        if not higher:  # a sure winner
            danger += 100 + 50 * (penalty >> card & 1)
        scored.append((-danger, card))
    return _best(scored, rng)


def _play_koz(state: DealPlay, legal: int, rng: random.Random) -> int:
    hand = state.held[state.to_play]
    trick = state.trick
    trump = state.trump
    trumps = SUIT_MASKS[trump]
    out = _outstanding(state, hand)
    if not trick:
        return _lead_koz(hand, legal, trumps, out, rng)
    win = trick[trick_winner(trick, trump)]
    beaters = legal & _above(win)
    if win // 13 != trump:
        beaters |= legal & trumps
    if beaters:
        if len(trick) < 3:
            # Not last: prefer a card nobody left can beat.
            sure = 0
            for card in _cards(beaters):
                if not out & _above(card) and (
                    card // 13 == trump or not out & trumps or out & SUIT_MASKS[card // 13]
                ):
                    sure |= 1 << card
            if sure:
                return _low(sure)
        return _low(beaters & ~trumps or beaters)
    side = legal & ~trumps
    if side:
        lowest = min(card % 13 for card in _cards(side))
        scored = []
        for card in _cards(side):
            if card % 13 == lowest:
                scored.append((-(hand & SUIT_MASKS[card // 13]).bit_count(), card))
        return _best(scored, rng)
    return _low(legal)


def _lead_koz(hand: int, legal: int, trumps: int, out: int, rng: random.Random) -> int:
    masters = 0
    for card in _cards(legal):
        if not out & _above(card):
            masters |= 1 << card
    our_trumps = hand & trumps
    if masters & trumps and our_trumps.bit_count() >= (out & trumps).bit_count():
        return _high(masters & trumps)  # draw trumps
    side_masters = 0
    for card in _cards(masters & ~trumps):
        if not out & trumps or (out & SUIT_MASKS[card // 13]).bit_count() >= 2:
            side_masters |= 1 << card
    if side_masters:
        return _best([(-(card % 13), card) for card in _cards(side_masters)], rng)
    side = legal & ~trumps
    if side:
        scored = []
        for card in _cards(side):
            length = (hand & SUIT_MASKS[card // 13]).bit_count()
            scored.append((-(20 * length + card % 13), card))
        return _best(scored, rng)
    return _high(masters) if masters else _low(legal)
