"""Son iki's early tricks in the par search (docs/ANALYSIS.md, "How it is computed"): the
order its first eleven tricks are searched in, held to plain minimax and to the other twin,
and the bound of a hero the three may lead into its top cards (``_led_into_tops``), held to
plain minimax on random endings of every preset and exact on hand-made son iki endings."""

from __future__ import annotations

import random
from collections import Counter
from types import ModuleType

import pytest
from test_par import _exhaustive, _random_ending, _search

from kingrec import _twins
from kingrec._engine_py import Deal
from kingrec.analysis import _par_py
from kingrec.analysis.par import replay_course
from kingrec.cards import parse_cards
from kingrec.contracts import Contract
from kingrec.rules import PRESETS, preset
from kingrec.simulate import derive_seed, simulate_match

CLASSIC = preset("classic")
needs_compiled = pytest.mark.skipif(_twins.COMPILED is None, reason="not built")


def _son_iki_ending(hands: tuple[str, str, str, str], leader: int) -> Deal:
    """A classic son iki deal standing at a trick start with these hands (all other cards
    played in the tricks before)."""
    held = [sum(1 << c for c in parse_cards(h)) for h in hands]
    flags = CLASSIC.deal_flags(Contract.SON_IKI)
    ntricks = 13 - held[leader].bit_count()
    played = ((1 << 52) - 1) & ~sum(held)
    return _par_py._position(held, leader, [], played, ntricks, Contract.SON_IKI, -1, flags)


def _random_son_iki_ending(rng: random.Random, tricks_left: int) -> Deal:
    """A random son iki deal played at random until ``tricks_left`` tricks remain, give or
    take the cards of an open trick, under a random preset."""
    while True:
        deal, _rules = _random_ending(rng, tricks_left)
        if deal.contract == Contract.SON_IKI:
            return deal


def test_son_iki_endings_searched_high_cards_first_keep_plain_minimax_values(
    par_twin: ModuleType,
) -> None:
    # The first eleven tricks (the ones that carry nothing) are searched high cards first;
    # the order changes no value: every seat of three- and four-trick endings, open tricks
    # among them, as plain minimax says.
    rng = random.Random(712)
    for i in range(12):
        deal = _random_son_iki_ending(rng, 3 if i % 3 else 4)
        for seat in range(4) if i % 3 else (i % 4,):
            value = _search(par_twin, deal, seat)[0]
            assert value == _exhaustive(deal, seat), (deal.held, deal.trick, seat)


@needs_compiled
def test_the_twins_agree_on_son_iki_from_its_early_tricks_value_and_node_count() -> None:
    # Both twins search the same tree in the same order from trick 8 of simulated son iki
    # deals (tricks the new order applies to all the way down to trick 11).
    assert _twins.COMPILED is not None
    compiled = _twins.COMPILED.par
    checked = nodes = 0
    match = 0
    while checked < 6:
        for record in simulate_match(CLASSIC, derive_seed(18, match)).deals:
            if int(record.contract) != Contract.SON_IKI or len(record.plays) < 52:
                continue
            position = replay_course(record, CLASSIC).positions[28]
            seat = checked % 4
            reference = _search(_par_py, position, seat)
            assert _search(compiled, position, seat) == reference, (record.number, seat)
            nodes += reference[1]
            checked += 1
        match += 1
    assert nodes > 2000  # real searches, not bounds at the root


def test_son_iki_tops_led_into_win_both_last_tricks_at_once(par_twin: ModuleType) -> None:
    # Seat 0 holds the top spades and the top heart; seat 1, on lead at trick 11, may lead
    # the two of spades into them: the hero wins that trick, then leads its tops and wins
    # the last two. The others hold clubs the hero lacks (so the ranks alone would not say
    # it), and the bound settles it at the root.
    deal = _son_iki_ending(("AS KS AH", "2C 3C 2S", "QS JS 2H", "TS 9S 3H"), leader=1)
    value, nodes = _search(par_twin, deal, 0)
    assert value == 2 == _exhaustive(deal, 0)
    assert nodes == 1  # one pass, answered at the root


def test_son_iki_tops_never_led_into_take_nothing(par_twin: ModuleType) -> None:
    # The same tops, but the leader holds only clubs and nobody else holds one: it leads a
    # club to each of the last three tricks, the hero sheds its tops on them and takes
    # nothing. The bound must not fire (the leader cannot lead into the tops).
    deal = _son_iki_ending(("AS KS AH", "2C 3C 4C", "QS JS 2H", "TS 9S 3H"), leader=1)
    assert _exhaustive(deal, 0) == 0
    value, nodes = _search(par_twin, deal, 0)
    assert value == 0 and nodes > 1


def test_son_iki_tops_led_into_at_trick_nine_settle_it_at_the_root(
    par_twin: ModuleType,
) -> None:
    # Five tricks left: the hero's every card beats all of theirs in its suit and seat 2 may
    # lead a diamond into them: the hero wins that trick and every one after, so both last
    # tricks are its (a search would have to play all five tricks out).
    deal = _son_iki_ending(
        ("AS KS AD KD AH", "2C 3C 4C 5C 6C", "QS 2D 3D 4D 2H", "JS TS 9S 3H 4H"), leader=2
    )
    assert _search(par_twin, deal, 0) == (2, 1)  # one pass, answered at the root


def test_a_hero_led_into_its_tops_takes_every_unit_left_as_plain_minimax_says() -> None:
    # Penalty contracts of every preset and house variant: wherever another seat is on lead,
    # every card of the hero's tops its suit and the leader may lead one of the hero's
    # suits, plain minimax gives the hero every unit still in play; the bound fires in every
    # penalty contract, beyond what the ranks alone (_ranked_out) settle.
    rng = random.Random(1212)
    fired: Counter[int] = Counter()
    for _ in range(40000):
        deal, _rules = _random_ending(rng, rng.choice((2, 3)))
        if deal.trick or deal.contract == Contract.KOZ:
            continue
        search = _par_py.ParSearch(deal.contract, -1, deal.flags)
        most = search._units_in_play(deal)
        for seat in range(4):
            search.seat = seat
            if search._ranked_out(deal, most) >= 0 or not search._led_into_tops(deal):
                continue
            assert _exhaustive(deal, seat) == most, (deal.held, deal.leader, seat)
            fired[deal.contract] += 1
        if len(fired) == 6 and min(fired.values()) >= 3:
            break
    assert set(fired) == {c for c in Contract if c != Contract.KOZ}, fired
    assert min(fired.values()) >= 3, fired


def _kupa_ending(rules_name: str) -> tuple[Deal, _par_py.ParSearch]:
    """Kupa, four tricks left, no heart played yet: the hero (seat 0) holds the top hearts,
    seat 1 (on lead) the lowest heart and three clubs nobody else holds."""
    flags = PRESETS[rules_name].deal_flags(Contract.KUPA)
    hands = ("AH KH QH JH", "2H 2C 3C 4C", "3H 4H 5H 6H", "7H 8H 9H TH")
    held = [sum(1 << c for c in parse_cards(h)) for h in hands]
    played = ((1 << 52) - 1) & ~sum(held)
    deal = _par_py._position(held, 1, [], played, 9, Contract.KUPA, -1, flags)
    search = _par_py.ParSearch(Contract.KUPA, -1, flags)
    search.seat = 0
    return deal, search


def test_a_leader_free_to_lead_its_heart_into_the_top_hearts_gives_the_hero_them_all() -> None:
    # Plain rules (no heart lead ban): seat 1 leads the two of hearts, the hero wins it and
    # every trick after, taking all thirteen hearts.
    deal, search = _kupa_ending("plain")
    assert search._led_into_tops(deal)
    assert _exhaustive(deal, 0) == 13 == search.units_left(
        0, deal.held, 1, [], deal.played, 9
    )  # fmt: skip


def test_a_heart_lead_ban_keeps_the_leader_from_leading_into_the_top_hearts() -> None:
    # Classic rules ban the heart lead while no heart is broken and the leader holds clubs:
    # it must lead a club, which the hero cannot follow, so the bound stays silent, and the
    # search finds what plain minimax does.
    deal, search = _kupa_ending("classic")
    assert not search._led_into_tops(deal)
    expected = _exhaustive(deal, 0)
    assert expected < 13
    assert search.units_left(0, deal.held, 1, [], deal.played, 9) == expected
