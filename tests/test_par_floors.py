"""Floors that see past one trick (docs/ANALYSIS.md, "How it is computed"): the masters of a
suit the three can lead until the hero has won them all (``_led_until_won``), held to plain
minimax on random endings of every preset, and exact on hand-made endings it settles."""

from __future__ import annotations

import random
from collections import Counter
from types import ModuleType

from test_par import _exhaustive, _random_ending, needs_compiled

from kingrec import _twins
from kingrec._engine_py import Deal
from kingrec.analysis import _par_py
from kingrec.cards import SUIT_MASKS, parse_cards
from kingrec.contracts import Contract
from kingrec.rules import preset

CLASSIC = preset("classic")


def _ending(hands: tuple[str, str, str, str]) -> tuple[list[int], int]:
    """Each seat's cards, and the cards of the tricks already played (all the others)."""
    held = [sum(1 << c for c in parse_cards(h)) for h in hands]
    return held, ((1 << 52) - 1) & ~sum(held)


def _position(contract: Contract, held: list[int], leader: int, played: int) -> Deal:
    ntricks = 13 - held[leader].bit_count()
    return _par_py._position(
        held, leader, [], played, ntricks, contract, -1, CLASSIC.deal_flags(contract)
    )


def _floor(deal: Deal, seat: int) -> tuple[int, int]:
    search = _par_py.ParSearch(deal.contract, deal.trump, deal.flags)
    search.seat = seat
    return search._led_until_won(deal)


def _par(twin: ModuleType, deal: Deal, seat: int) -> tuple[int, int]:
    search = twin.ParSearch(deal.contract, deal.trump, deal.flags)
    value = search.units_left(
        seat, deal.held, deal.leader, deal.trick, deal.played, len(deal.winners)
    )
    return value, search.nodes


def _has_low_seat(deal: Deal, seat: int, suit_mask: int) -> bool:
    """Whether a seat of the three holds fewer cards of the suit than the hero (so the floor
    held only because it ducks every lead of the hero's)."""
    k = (deal.held[seat] & suit_mask).bit_count()
    return any((deal.held[(seat + i) % 4] & suit_mask).bit_count() < k for i in (1, 2, 3))


def test_the_masters_the_three_lead_into_are_a_floor_as_plain_minimax_says() -> None:
    # Penalty contracts of every preset and house variant, at trick starts: wherever the
    # floor says anything, the three can force at least that many units onto the hero. It
    # must fire in el almaz and in the card contracts, with the hero on lead and off it,
    # with every seat of the three long in the suit and with one low, and above what the
    # trick about to be played alone gives (_this_trick).
    rng = random.Random(2018)
    seen: Counter[str] = Counter()
    for _ in range(2500):
        deal, _rules = _random_ending(rng, rng.choice((2, 3, 3, 4)))
        if deal.contract in (Contract.KOZ, Contract.SON_IKI) or deal.trick:
            continue
        search = _par_py.ParSearch(deal.contract, deal.trump, deal.flags)
        for seat in range(4):
            floor, read = _floor(deal, seat)
            if not floor:
                continue
            value = _exhaustive(deal, seat)
            assert floor <= value, (deal.held, deal.leader, deal.contract, deal.flags, seat)
            seen["el almaz" if deal.contract == Contract.EL_ALMAZ else "card contract"] += 1
            seen["on lead" if deal.leader == seat else "off lead"] += 1
            suit_mask = next(m for m in SUIT_MASKS if read & m and deal.held[seat] & m)
            seen["a low seat" if _has_low_seat(deal, seat, suit_mask) else "all long"] += 1
            search.seat = seat
            if floor > search._this_trick(deal, search._units_in_play(deal))[0]:
                seen["beyond this trick"] += 1
    for case in ("el almaz", "card contract", "on lead", "off lead", "a low seat", "all long"):
        assert seen[case] >= 8, seen
    assert seen["beyond this trick"] >= 20, seen


@needs_compiled
def test_the_twins_search_alike_where_the_floor_fires() -> None:
    # The same values and the same node counts on endings where the floor says something at
    # the root (the compiled twin's floor is cdef: the node counts are what show it agrees).
    assert _twins.COMPILED is not None
    compiled = _twins.COMPILED.par
    rng = random.Random(77)
    fired = 0
    for _ in range(1500):
        deal, _rules = _random_ending(rng, rng.choice((3, 4, 5)))
        if deal.contract in (Contract.KOZ, Contract.SON_IKI) or deal.trick:
            continue
        for seat in range(4):
            if not _floor(deal, seat)[0]:
                continue
            fired += 1
            assert _par(_par_py, deal, seat) == _par(compiled, deal, seat), (deal.held, seat)
    assert fired >= 40


def test_an_ace_and_king_led_into_twice_are_two_tricks_in_el_almaz(par_twin: ModuleType) -> None:
    # El almaz, three tricks left, seat 1 leads. Seat 0 holds the ♠A and ♠K and the lowest
    # diamond, and each of the others two spades: led a spade, seat 0 wins; it leads a
    # spade or the ♦2 (which loses), and whoever wins leads a spade again. Two tricks are
    # sure (the trick alone promised one), and the ♦2 wins none: par 2.
    held, played = _ending(("AS KS 2D", "2S 3S 3D", "4S 5S 4D", "6S 7S 5D"))
    deal = _position(Contract.EL_ALMAZ, held, 1, played)
    assert _floor(deal, 0) == (2, SUIT_MASKS[3])
    value, nodes = _par(par_twin, deal, 0)
    assert value == 2 == _exhaustive(deal, 0)
    assert nodes <= 60


def test_a_seat_void_in_the_suit_that_ducks_every_other_lead_does_not_break_the_floor(
    par_twin: ModuleType,
) -> None:
    # El almaz, three tricks left, seat 1 leads. Seat 3 has no spade, but its diamonds lie
    # under seat 0's (2-3-4 against the 5), so it never wins a trick: only seat 0 or a seat
    # still holding spades is ever on lead. Seat 0 wins its ♠A and ♠K: par 2.
    held, played = _ending(("AS KS 5D", "2S 3S 9D", "4S 6S TD", "2D 3D 4D"))
    deal = _position(Contract.EL_ALMAZ, held, 1, played)
    floor, read = _floor(deal, 0)
    assert floor == 2 and read == SUIT_MASKS[3] | SUIT_MASKS[1]  # spades, and the diamonds
    value, nodes = _par(par_twin, deal, 0)
    assert value == 2 == _exhaustive(deal, 0)
    assert nodes <= 60


def test_a_queen_kept_under_the_ace_is_won_on_the_second_round_in_kiz(
    par_twin: ModuleType,
) -> None:
    # Kız, three tricks left, the ♠K gone, seat 2 leads. Seat 0 holds the ♠A and ♠Q over
    # every spade out, and each other seat two spades: whatever it does, the ♠Q wins a spade
    # trick. This trick alone promises nothing (the ♠A may go first); par 1.
    held, played = _ending(("AS QS 2C", "2S 3S 3C", "4S 5S 4C", "6S 7S 5C"))
    deal = _position(Contract.KIZ, held, 2, played)
    assert _floor(deal, 0) == (1, SUIT_MASKS[3])
    search = _par_py.ParSearch(deal.contract, deal.trump, deal.flags)
    search.seat = 0
    assert search._this_trick(deal, search._units_in_play(deal))[0] == 0
    value, nodes = _par(par_twin, deal, 0)
    assert value == 1 == _exhaustive(deal, 0)
    assert nodes <= 60


def test_hearts_the_three_may_not_lead_yet_promise_nothing_until_the_leader_may() -> None:
    # Kupa, four tricks left, no heart played yet (all thirteen are in the hands), seat 1
    # leads; seat 0 holds the ♥A, ♥K and ♥Q over every heart, each other seat three or more.
    # Under the plain preset the three lead hearts at once: seat 0 wins its three hearts and
    # the three they give it on the first trick (six). With the heart lead ban added, seat 1
    # (holding a club) may not lead a heart, so the floor says nothing; led by seat 3, which
    # holds nothing but hearts, it holds again.
    held, played = _ending(("AH KH QH 2C", "2H 3H 4H 3C", "5H 6H 7H 4C", "8H 9H TH JH"))
    plain = preset("plain")
    banned = plain.replace(heart_lead_ban=frozenset({Contract.KUPA}))
    floors = {}
    for name, rules, leader in (("plain", plain, 1), ("ban", banned, 1), ("ban, 3", banned, 3)):
        deal = _par_py._position(
            held, leader, [], played, 9, Contract.KUPA, -1, rules.deal_flags(Contract.KUPA)
        )
        floors[name] = _floor(deal, 0)
        assert floors[name][0] <= _exhaustive(deal, 0)
    assert floors == {"plain": (6, SUIT_MASKS[2]), "ban": (0, 0), "ban, 3": (6, SUIT_MASKS[2])}
