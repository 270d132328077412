"""The bots (kingrec.bots): contracts, trumps and cards a plausible player picks."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from kingrec._twins import Twins
from kingrec.bots import choose_contract, choose_play, choose_trump
from kingrec.cards import mask_of, parse_card, parse_cards
from kingrec.contracts import Contract
from kingrec.game import DealPlay
from kingrec.rules import PRESETS, preset
from kingrec.simulate import simulate_matches
from kingrec.v1 import record_pb2 as pb

from rulesets import KI, KU, K, R


def _hands(fixed: dict[int, Sequence[int]]) -> bytes:
    """52 hand bytes: the fixed cards, then the rest of the deck to the seats in order."""
    seats = [sorted(fixed.get(s, ())) for s in range(4)]
    used = mask_of(c for cards in seats for c in cards)
    rest = [c for c in range(52) if not used >> c & 1]
    for s in range(4):
        while len(seats[s]) < 13:
            seats[s].append(rest.pop(0))
    return b"".join(bytes(sorted(cards)) for cards in seats)


def _cards(text: str) -> list[int]:
    return parse_cards(text)


def test_choose_trump_longest_then_strongest() -> None:
    rng = random.Random(0)
    hand = mask_of(_cards("2C 3C 4C 5C 6C AD KD QD JD AH KH 2S 3S"))
    assert choose_trump(hand, rng) == 0  # five clubs beat four strong diamonds
    hand = mask_of(_cards("2C 3C 4C 5C AD KD QD JD AH KH 2S 3S 4S"))
    assert choose_trump(hand, rng) == 1  # four each: the diamonds are stronger


def test_koz_declarers_name_their_longest_suit() -> None:
    for match in simulate_matches(preset("classic"), 3, seed=5, think_times=False):
        for deal in match.deals:
            if deal.contract != pb.CONTRACT_KOZ:
                continue
            hand = deal.hands[13 * deal.declarer : 13 * deal.declarer + 13]
            lengths = [sum(1 for c in hand if c // 13 == s) for s in range(4)]
            assert lengths[deal.trump - 1] == max(lengths)


def test_choose_contract() -> None:
    rules = preset("classic")
    spades = mask_of(range(39, 52))
    bare_king = mask_of(_cards("KH 2C 3C 4C 5C 6C 7C 2D 3D 4D 5D 6D 7D"))
    for seed in range(20):
        rng = random.Random(seed)
        assert choose_contract(rules, spades, list(Contract), rng) is K
        assert choose_contract(rules, bare_king, [R, KU], rng) is KU
        assert choose_contract(rules, bare_king, [KI], rng) is KI
    with pytest.raises(ValueError):
        choose_contract(rules, spades, [], random.Random(0))


def test_kiz_discards_queen_under_winning_card() -> None:
    # Seat 0 leads ♣A, seat 1 follows ♣2; seat 2 has no clubs and the ♠Q: it throws the
    # queen, which the ♣A wins for seat 0. Under `plain` nothing forces it to.
    hands = _hands(
        {
            0: _cards("AC 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AD"),
            1: _cards("2C 2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH"),
            2: _cards("QS 2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD"),
        }
    )
    for name in ("plain", "classic"):
        state = DealPlay(preset(name), hands, 0, Contract.KIZ)
        state.push(parse_card("AC"))
        state.push(parse_card("2C"))
        assert choose_play(state, random.Random(1)) == parse_card("QS")


def test_kiz_gives_queen_under_a_higher_card() -> None:
    hands = _hands(
        {
            0: _cards("KS 2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC"),
            1: _cards("QS 3S 2D 3D 4D 5D 6D 7D 8D 9D TD JD QD"),
        }
    )
    state = DealPlay(preset("plain"), hands, 0, Contract.KIZ)
    state.push(parse_card("KS"))
    assert choose_play(state, random.Random(0)) == parse_card("QS")


def test_penalty_duck_and_shed() -> None:
    # El almaz: following ♦9 with ♦8 and ♦T in hand, the bot ducks with the ♦8; last to play
    # with only higher cards it wins with the highest.
    hands = _hands(
        {
            0: _cards("9D"),
            1: _cards("8D TD"),
            3: _cards("QD KD"),
            2: _cards("2D"),
        }
    )
    state = DealPlay(preset("classic"), hands, 0, Contract.EL_ALMAZ)
    state.push(parse_card("9D"))
    assert choose_play(state, random.Random(0)) == parse_card("8D")
    state.push(parse_card("TD"))
    state.push(parse_card("2D"))
    assert choose_play(state, random.Random(0)) == parse_card("KD")


def test_koz_wins_cheaply_or_throws_low() -> None:
    rules = preset("classic")
    spades = 3
    # Last to play, following: the lowest diamond that beats the ♦8.
    hands = _hands(
        {
            0: _cards("5D"),
            1: _cards("8D"),
            2: _cards("2D"),
            3: _cards("9D JD AD 2C 3C 4C 5C 6C 7C 8C 9C TC JC"),
        }
    )
    state = DealPlay(rules, hands, 0, Contract.KOZ, spades)
    for card in ("5D", "8D", "2D"):
        state.push(parse_card(card))
    assert choose_play(state, random.Random(0)) == parse_card("9D")
    # Void without trumps and beaten: the lowest card, from the shorter suit on a tie.
    hands = _hands(
        {
            0: _cards("5D"),
            1: _cards("8D"),
            2: _cards("AD"),
            3: _cards("2C 3C 4C 5C 6C 7C 2H 3H 4H 5H 6H 7H 8H"),
        }
    )
    state = DealPlay(rules, hands, 0, Contract.KOZ, spades)
    for card in ("5D", "8D", "AD"):
        state.push(parse_card(card))
    assert choose_play(state, random.Random(0)) == parse_card("2C")
    # Void with trumps: ruff, and overruff with the cheapest trump that wins.
    hands = _hands(
        {
            0: _cards("5D"),
            1: _cards("8D"),
            2: _cards("4S 2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH"),
            3: _cards("3S 9S KS 2C 3C 4C 5C 6C 7C 8C 9C TC JC"),
        }
    )
    state = DealPlay(rules, hands, 0, Contract.KOZ, spades)
    for card in ("5D", "8D", "4S"):
        state.push(parse_card(card))
    assert choose_play(state, random.Random(0)) == parse_card("9S")


def test_bots_play_whole_deals_legally(twins: Twins) -> None:
    # Every preset and contract, random deals: the bots only pick legal cards, on either
    # engine twin underneath.
    rng = random.Random(3)
    for rules in PRESETS.values():
        for contract in Contract:
            deck = list(range(52))
            rng.shuffle(deck)
            trump = rng.randrange(4) if contract == Contract.KOZ else -1
            state = DealPlay(
                rules, bytes(deck), rng.randrange(4), contract, trump, engine=twins.engine
            )
            while not state.over:
                card = choose_play(state, rng)
                assert state.legal_plays() >> card & 1
                state.push(card)


def test_a_koz_deal_without_trumps_cannot_be_played() -> None:
    with pytest.raises(ValueError, match="trump suit"):
        DealPlay(preset("classic"), bytes(range(52)), 0, Contract.KOZ)
