"""The par search's move order for the hero (docs/ANALYSIS.md, "How it is computed"): in the
card contracts it takes a trick that carries no penalty card so far with its highest card
that wins, so that it leads the next trick. An order changes no value: held to plain
minimax on random endings of every preset and house ruleset, both twins giving the same
values and the same node counts."""

from __future__ import annotations

import random
from types import ModuleType

import pytest
from test_par import RULESETS, _ending_under, _exhaustive, _play_on, _units, needs_compiled

from kingrec import _twins
from kingrec.analysis import _par_py
from kingrec.cards import parse_card, parse_cards
from kingrec.contracts import Contract
from kingrec.rules import preset

CARD_CONTRACTS = (Contract.KUPA, Contract.ERKEK, Contract.KIZ, Contract.RIFKI)


def _first_move(
    contract: Contract, hands: tuple[str, str, str, str], leader: int, trick: str
) -> int:
    held = [sum(1 << c for c in parse_cards(h)) for h in hands]
    on_table = list(parse_cards(trick))
    played = ((1 << 52) - 1) & ~sum(held) & ~sum(1 << c for c in on_table)
    flags = preset("classic").deal_flags(contract)
    deal = _par_py._position(
        held, leader, on_table, played, 13 - held[leader].bit_count(), contract, -1, flags
    )
    search = _par_py.ParSearch(contract, -1, flags)
    search.seat = deal.to_play
    return search._moves(deal)[0]


def test_the_hero_last_to_a_trick_without_a_queen_takes_it_with_its_highest_winner() -> None:
    # Kız, seat 3 to play last to a spade trick of the 5, 7 and 9: its ♠K and ♠J both win
    # and carry no queen, its ♠2 ducks. The king is tried first (it wins the lead, and is
    # the card it would most fear being made to win with later).
    hands = ("D2 D3", "D4 D5", "D6 D7", "SK SJ S2 C3 C4 C5")
    first = _first_move(Contract.KIZ, hands, 0, "S5 S7 S9")
    assert first == parse_card("SK")


def test_a_trick_that_holds_a_penalty_card_is_still_ducked_first() -> None:
    # Kupa, a heart on the spade trick (a void's discard): the hero ducks with its highest
    # card under the top, as before.
    hands = ("D2 D3", "D4 D5", "D6 D7", "SK SJ S2 C3 C4 C5")
    first = _first_move(Contract.KUPA, hands, 0, "S5 H7 S9")
    assert first == parse_card("S2")


def test_el_almaz_where_the_trick_is_the_unit_is_still_ducked_first() -> None:
    hands = ("D2 D3", "D4 D5", "D6 D7", "SK SJ S2 C3 C4 C5")
    first = _first_move(Contract.EL_ALMAZ, hands, 0, "S5 S7 S9")
    assert first == parse_card("S2")


def test_a_penalty_card_that_wins_is_not_the_clean_winner() -> None:
    # Erkek: the hero's ♠K is a penalty card itself; its ♠Q wins clean and goes first.
    hands = ("D2 D3", "D4 D5", "D6 D7", "SK SQ S2 C3 C4 C5")
    first = _first_move(Contract.ERKEK, hands, 0, "S5 S7 S9")
    assert first == parse_card("SQ")


@pytest.mark.parametrize("name", list(RULESETS))
def test_taking_a_clean_trick_first_gives_minimaxs_values_in_both_twins(
    par_twin: ModuleType, name: str
) -> None:
    # Three-trick endings of the card contracts and the positions played on from them at
    # random (trick starts and every card of a trick, so the hero is to play at each place
    # in the trick), each seat searched afresh: the value is plain minimax's.
    rules = RULESETS[name]
    rng = random.Random(f"clean trick {name}")
    fired = 0
    for contract in CARD_CONTRACTS:
        checked = 0
        while checked < 4:
            deal = _ending_under(rng, rules, contract, 3)
            if deal is None:
                continue
            for position in _play_on(rng, deal, 5):
                for seat in range(4):
                    search = par_twin.ParSearch(position.contract, position.trump, position.flags)
                    assert _units(search, position, seat) == _exhaustive(position, seat), (
                        name,
                        contract,
                        position.held,
                        position.trick,
                        seat,
                    )
                if position.trick:
                    reference = _par_py.ParSearch(position.contract, -1, position.flags)
                    reference.seat = position.to_play
                    card = reference._moves(position)[0]
                    order = reference._order(
                        position, card, position.trick, position.trick[0] // 13, False
                    )
                    fired += order <= -300
            checked += 1
    assert fired >= 5, fired  # the order was at work on some of these positions


@needs_compiled
def test_the_twins_take_clean_tricks_in_the_same_order_node_for_node() -> None:
    # Four-trick endings of the card contracts under every ruleset: the same values and the
    # same nodes in both twins, as only the same order of moves can give.
    assert _twins.COMPILED is not None
    compiled = _twins.COMPILED.par
    rng = random.Random("clean trick nodes")
    compared = 0
    for name in RULESETS:
        for contract in CARD_CONTRACTS:
            deal = _ending_under(rng, RULESETS[name], contract, 4)
            if deal is None:
                continue
            for position in _play_on(rng, deal, 3):
                seat = rng.randrange(4)
                counts = []
                for twin in (_par_py, compiled):
                    search = twin.ParSearch(position.contract, position.trump, position.flags)
                    counts.append((_units(search, position, seat), search.nodes))
                assert counts[0] == counts[1], (name, contract, position.held, seat)
                compared += 1
    assert compared >= 40
