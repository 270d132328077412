"""The par search's bounds (docs/ANALYSIS.md, "How it is computed"): each one held to plain
minimax on random endings of every preset, and exact on hand-made endings where it settles the
answer."""

from __future__ import annotations

from collections import Counter
from types import ModuleType

import pytest
from test_par import BoundCase, _exhaustive, bound_cases, whole_endings

from kingrec._engine_py import Deal
from kingrec._engine_types import F_VOID_DISCARD, F_WITHHOLDING
from kingrec.analysis import _par_py
from kingrec.cards import DIAMONDS, SPADES, SUIT_MASKS, parse_cards
from kingrec.contracts import Contract
from kingrec.rules import preset

CLASSIC = preset("classic")


def _ending(hands: tuple[str, str, str, str]) -> tuple[list[int], int]:
    """Each seat's cards, and the cards of the tricks already played (all the others)."""
    held = [sum(1 << c for c in parse_cards(h)) for h in hands]
    return held, ((1 << 52) - 1) & ~sum(held)


def _values(
    twin: ModuleType, contract: Contract, held: list[int], leader: int, played: int
) -> tuple[list[int], list[int]]:
    flags = CLASSIC.deal_flags(contract)
    ntricks = 13 - held[leader].bit_count()
    values, nodes = [], []
    for seat in range(4):
        search = twin.ParSearch(contract, -1, flags)
        values.append(search.units_left(seat, held, leader, [], played, ntricks))
        nodes.append(search.nodes)
    return values, nodes


def _bounds(
    contract: Contract, held: list[int], leader: int, played: int, seat: int
) -> tuple[int, int]:
    ntricks = 13 - held[leader].bit_count()
    deal = _par_py._position(
        held, leader, [], played, ntricks, contract, -1, CLASSIC.deal_flags(contract)
    )
    search = _par_py.ParSearch(contract, -1, CLASSIC.deal_flags(contract))
    search.seat = seat
    return search._this_trick(deal, search._units_in_play(deal))


def test_the_trick_about_to_be_played_bounds_the_hero_as_plain_minimax_does() -> None:
    # Penalty contracts of every preset and house variant: the floor (the three can give the
    # hero this trick and its units) and the ceiling (the hero can send this trick's units
    # elsewhere) hold on every random ending where either says anything, and each fires
    # both with the hero on lead and off it.
    def this_trick(search: _par_py.ParSearch, deal: Deal, most: int) -> tuple[int, int] | None:
        if deal.contract == Contract.KOZ or deal.trick:
            return None
        floor, ceiling = search._this_trick(deal, most)
        return None if floor == 0 and ceiling == most else (floor, ceiling)

    seen: set[tuple[str, bool]] = set()
    checked: list[BoundCase] = []
    cases = bound_cases(1918, (2, 3), this_trick, endings=6000)
    for case in whole_endings(cases, lambda: len(checked) >= 150 and len(seen) == 4):
        assert case.holds(), case.where()
        on_lead = case.deal.leader == case.seat
        if case.floor:
            seen.add(("floor", on_lead))
        if case.ceiling < case.most:
            seen.add(("ceiling", on_lead))
        checked.append(case)
    assert len(checked) >= 150 and len(seen) == 4


def test_a_lone_ace_led_into_takes_the_queen_led_and_the_one_a_void_seat_sheds(
    par_twin: ModuleType,
) -> None:
    # Kız, two tricks left, seat 0 leads. Seat 1 holds the ♠A and a low diamond: led the ♠Q
    # it must win it, and seat 3 (no spade) sheds the ♥Q on it. The trick alone is worth two
    # queens to the three, and the ♦2 later loses to the ♦Q: seat 1's par is exactly 2.
    held, played = _ending(("QS 5D", "AS 2D", "3S QD", "QH 4C"))
    assert _bounds(Contract.KIZ, held, 0, played, 1) == (2, 3)
    values, _nodes = _values(par_twin, Contract.KIZ, held, 0, played)
    assert values[1] == 2


def test_a_king_of_hearts_shed_on_a_suit_its_holder_lacks_settles_rifki_at_once(
    par_twin: ModuleType,
) -> None:
    # Rıfkı, two tricks left: seat 0 has only clubs to lead, seat 1 none, so seat 1 sheds the
    # ♥K on the first trick whatever is led: the ceiling is 0 and the search stops at once.
    held, played = _ending(("2C 3C", "KH 2H", "4C 5C", "6C 7C"))
    assert _bounds(Contract.RIFKI, held, 0, played, 1) == (0, 0)
    values, nodes = _values(par_twin, Contract.RIFKI, held, 0, played)
    assert values[1] == 0 and nodes[1] == 1


def test_a_hero_led_into_its_boss_suit_wins_a_trick_in_el_almaz(par_twin: ModuleType) -> None:
    # El almaz, two tricks left, seat 0 leads. Seat 2 holds only the ♠A in spades: led a spade
    # it wins that trick (floor 1); then it leads the ♦2 under seat 0's ♦K and wins no more.
    held, played = _ending(("KS KD", "QS 3D", "AS 2D", "4C 5C"))
    assert _bounds(Contract.EL_ALMAZ, held, 0, played, 2)[0] == 1
    values, _nodes = _values(par_twin, Contract.EL_ALMAZ, held, 0, played)
    assert values[2] == 1


def test_a_hero_on_lead_under_a_seat_that_must_beat_it_saves_its_heart(
    par_twin: ModuleType,
) -> None:
    # Kupa, two tricks left, hearts broken, seat 0 on lead with the ♥5 and the ♣A. Seat 1's
    # hearts are all above the ♥5: led, it must be beaten, so one of the four hearts out is
    # surely not seat 0's (ceiling 3). Seat 1 then leads a heart and the ♣A is shed: par 0.
    held, played = _ending(("5H AC", "9H KH", "2C 3C", "4C 6H"))
    assert _bounds(Contract.KUPA, held, 0, played, 0) == (0, 3)
    values, _nodes = _values(par_twin, Contract.KUPA, held, 0, played)
    assert values[0] == 0


def test_the_trick_on_the_table_bounds_the_hero_as_plain_minimax_does() -> None:
    # The same inside a trick, from every preset: with the hero's card already on the table
    # (beaten, or the highest with nobody forced over it) and still to come (a card to duck
    # with, or only cards that beat all the rest), each bound fires and none is wrong.
    def in_trick(search: _par_py.ParSearch, deal: Deal, most: int) -> tuple[int, int] | None:
        if deal.contract == Contract.KOZ or not deal.trick:
            return None
        floor, ceiling = search._in_trick(deal, most)
        return None if floor == 0 and ceiling == most else (floor, ceiling)

    seen: set[tuple[str, bool]] = set()
    checked: list[BoundCase] = []
    cases = bound_cases(2018, (1, 2, 3), in_trick, endings=6000)
    for case in whole_endings(cases, lambda: len(checked) >= 300 and len(seen) == 4):
        assert case.holds(), case.where()
        deal = case.deal
        played = (case.seat - deal.leader) % 4 < len(deal.trick)
        if case.floor:
            seen.add(("floor", played))
        if case.ceiling < case.most:
            seen.add(("ceiling", played))
        checked.append(case)
    assert len(checked) >= 300 and len(seen) == 4


def _on_the_table(
    twin: ModuleType, contract: Contract, hands: tuple[str, str, str, str], trick: str, seat: int
) -> tuple[int, int]:
    held = [sum(1 << c for c in parse_cards(h)) for h in hands]
    cards = parse_cards(trick)
    played = ((1 << 52) - 1) & ~sum(held) & ~sum(1 << c for c in cards)
    search = twin.ParSearch(contract, -1, CLASSIC.deal_flags(contract))
    ntricks = 13 - held[0].bit_count() - (1 if cards else 0)
    value = search.units_left(seat, held, 0, cards, played, ntricks)
    return value, search.nodes


def test_a_queen_ducked_under_the_king_on_the_table_ends_kiz_at_once(
    par_twin: ModuleType,
) -> None:
    # Kız, the ♠Q the last queen out: seat 0 has led the ♠K, seat 1 drops its ♠Q under it.
    # The ceiling is 0 from the first position; the search ends there.
    hands = ("2C", "QS 2D", "3S 4D", "5S 6D")
    assert _on_the_table(par_twin, Contract.KIZ, hands, "KS", 1) == (0, 1)


def test_an_ace_on_the_table_collects_what_the_others_may_shed_under_it(
    par_twin: ModuleType,
) -> None:
    # Kız: seat 0 has led the ♠A. Seat 1 has no spade and sheds the ♥Q; seat 3 must give its
    # covered ♠Q (withholding): both queens left are seat 0's, settled at once.
    hands = ("2D", "QH 3C", "3S 4D", "QS 5D")
    assert _on_the_table(par_twin, Contract.KIZ, hands, "AS", 0) == (2, 1)


def test_each_seats_trump_tricks_are_a_floor_for_it_and_leave_a_ceiling_for_the_others() -> None:
    # Koz, every preset (ruff, overtrump and raise rules included): of a seat's i highest
    # trumps all but the higher trumps in other hands win, whoever leads; held to plain
    # minimax at trick starts and inside tricks, for the seat itself and for every other.
    def trump_tricks(search: _par_py.ParSearch, deal: Deal, most: int) -> tuple[int, int] | None:
        if deal.contract != Contract.KOZ:
            return None
        sure = [search._trump_tricks(deal, s) for s in range(4)]
        if not any(sure):
            return None
        others = max(sure[s] for s in range(4) if s != search.seat)
        return sure[search.seat], most - others

    def beyond_the_top(case: BoundCase) -> bool:
        # a seat sure of tricks without the highest trump out: past the top trumps in a row
        deal = case.deal
        search = _par_py.ParSearch(deal.contract, deal.trump, deal.flags)
        trumps = SUIT_MASKS[deal.trump] & ~deal.played
        top = 1 << (trumps.bit_length() - 1)
        return any(search._trump_tricks(deal, s) and not deal.held[s] & top for s in range(4))

    endings: set[int] = set()
    past_the_top: set[int] = set()
    cases = bound_cases(2019, (2, 2, 3), trump_tricks)
    for case in whole_endings(cases, lambda: len(endings) >= 100 and len(past_the_top) >= 20):
        assert case.holds(), case.where()
        endings.add(case.ending)
        if beyond_the_top(case):
            past_the_top.add(case.ending)
    assert len(endings) >= 100 and len(past_the_top) >= 20


def test_a_king_and_queen_of_trumps_under_the_ace_win_one_trick_at_once(
    par_twin: ModuleType,
) -> None:
    # Koz, spades trumps, two tricks left, seat 1 leads. The ace takes one of seat 0's king
    # and queen at most: one trick for seat 0, and no more, both settled at the root.
    held, played = _ending(("KS QS", "AS 2D", "3D 4D", "5D 6D"))
    flags = CLASSIC.deal_flags(Contract.KOZ)
    search = par_twin.ParSearch(Contract.KOZ, SPADES, flags)
    assert search.units_left(0, held, 1, [], played, 11) == 1
    assert search.nodes == 2  # one node per null-window pass


def test_a_hero_able_to_duck_every_lead_takes_nothing_as_plain_minimax_says() -> None:
    # Penalty contracts of every preset and house variant: whenever each of the hero's cards
    # of a suit lies below the others' card of the same place from the bottom (and, where
    # withholding or a forced discard could choose its card, a suit with a penalty card under
    # another card lies wholly below theirs), the hero takes nothing more. Held to minimax
    # at trick starts (another seat on lead, past what "every card below all of theirs"
    # settles; the hero on lead with a card some seat must beat) and inside tricks (the
    # hero's card beaten, or the hero yet to play).
    def ducks(search: _par_py.ParSearch, deal: Deal, most: int) -> tuple[int, int] | None:
        if deal.contract == Contract.KOZ or search._ducks_every_lead(deal) < 0:
            return None
        return 0, 0

    seen: Counter[str] = Counter()
    cases = bound_cases(2026, (1, 2, 3), ducks, endings=8000)
    for case in whole_endings(cases, lambda: len(seen) == 4 and min(seen.values()) >= 25):
        assert case.holds(), case.where()
        deal, seat = case.deal, case.seat
        if deal.trick:
            played = (seat - deal.leader) % 4 < len(deal.trick)
            seen["the hero's card beaten" if played else "the hero yet to play"] += 1
        elif deal.leader == seat:
            seen["the hero on lead"] += 1
        else:
            search = _par_py.ParSearch(deal.contract, deal.trump, deal.flags)
            search.seat = seat
            if search._ranked_out(deal, case.most) != 0:
                seen["another seat on lead"] += 1
    assert len(seen) == 4 and min(seen.values()) >= 25, seen


def test_a_hero_on_lead_with_a_card_some_seat_must_beat_then_ducks_the_rest(
    par_twin: ModuleType,
) -> None:
    # El almaz, three tricks left, seat 0 leads. Its ♠5 is under both of seat 1's spades:
    # led, it loses; then its ♦2 ♦9 lie place by place under the others' ♦3 ♦T, and it
    # ducks both diamond tricks (the ♦9 beats the ♦3, so not all below all). Par 0, settled
    # at the root.
    held, played = _ending(("5S 2D 9D", "9S KS 4C", "3D 2C 5C", "TD 3C 6C"))
    flags = CLASSIC.deal_flags(Contract.EL_ALMAZ)
    search = _par_py.ParSearch(Contract.EL_ALMAZ, -1, flags)
    search.seat = 0
    deal = _par_py._position(held, 0, [], played, 10, Contract.EL_ALMAZ, -1, flags)
    assert search._ranked_out(deal, 3) == -1
    assert search._ducks_every_lead(deal) == SUIT_MASKS[SPADES] | SUIT_MASKS[DIAMONDS]
    values, nodes = _values(par_twin, Contract.EL_ALMAZ, held, 0, played)
    assert values[0] == 0 and nodes[0] == 1


def test_a_hero_to_play_under_the_card_led_ducks_the_trick_and_the_rest(
    par_twin: ModuleType,
) -> None:
    # El almaz: seat 0 has led the ♦3. Seat 1's ♦2 ♦9 lie under the ♦3 on the table and seat
    # 2's ♦T, place by place: it plays the ♦2 now, the ♦9 under the ♦T or on the clubs it
    # lacks later, and wins nothing. Settled at once.
    hands = ("5C", "2D 9D", "TD 2C", "3C 4C")
    assert _on_the_table(par_twin, Contract.EL_ALMAZ, hands, "3D", 1) == (0, 1)


def test_a_hero_holding_a_lower_card_for_each_of_theirs_escapes_el_almaz_at_once(
    par_twin: ModuleType,
) -> None:
    # El almaz, two tricks left, seat 0 leads. Seat 1's ♠2 and ♠9 lie under seat 0's ♠3 and
    # ♠T, place by place (not all below all: the ♠9 beats the ♠3): led the ♠3 it plays the
    # ♠2, led the ♠T the ♠9, and it never wins a trick. Settled at the root.
    held, played = _ending(("3S TS", "2S 9S", "2C 3C", "4C 5C"))
    search = _par_py.ParSearch(Contract.EL_ALMAZ, -1, CLASSIC.deal_flags(Contract.EL_ALMAZ))
    search.seat = 1
    deal = _par_py._position(held, 0, [], played, 11, Contract.EL_ALMAZ, -1, search.flags)
    assert search._ranked_out(deal, 2) == -1
    assert search._ducks_every_lead(deal) == SUIT_MASKS[SPADES]
    values, nodes = _values(par_twin, Contract.EL_ALMAZ, held, 0, played)
    assert values[1] == 0 and nodes[1] == 1


def test_a_penalty_card_under_the_heros_own_card_needs_its_suit_wholly_below_theirs() -> None:
    # Kız, seat 0 leads. Seat 1's spades ♠2 ♠Q ♠A lie place by place under the others' ♠3
    # ♠K (the ♠A has no partner). But its ♠Q lies under its ♠A, and the rules may choose the
    # ♠Q (a forced discard on the clubs it lacks, withholding under the ♠K), keeping the ♠A:
    # under the classic rules the suit must lie wholly below theirs, which the ♠A fails.
    held, played = _ending(("4C 3S 9D", "2S QS AS", "KS 2C 5D", "QH 3C 6D"))
    for flags, expected in ((CLASSIC.deal_flags(Contract.KIZ), -1), (0, SUIT_MASKS[SPADES])):
        search = _par_py.ParSearch(Contract.KIZ, -1, flags)
        search.seat = 1
        deal = _par_py._position(held, 0, [], played, 10, Contract.KIZ, -1, flags)
        assert search._ducks_every_lead(deal) == expected


def test_a_hero_that_may_win_this_trick_and_then_lead_a_loser_takes_no_more_than_minimax() -> None:
    # Penalty contracts of every preset and house variant, at trick starts where neither the
    # ranks nor ducking every lead settle it: the hero may be made to win the trick about to
    # be played, but then leads a card some seat must beat and ducks every lead after. The
    # trick's units are a ceiling, held to plain minimax; it fires off lead and on lead with
    # a trick that may carry units, in the card contracts too, and with one that carries none.
    def exits(search: _par_py.ParSearch, deal: Deal, most: int) -> tuple[int, int] | None:
        if deal.contract == Contract.KOZ or deal.trick:
            return None
        if search._ranked_out(deal, most) >= 0 or search._ducks_every_lead(deal) >= 0:
            return None
        ceiling = search._exits_after_this_trick(deal, most)
        return None if ceiling < 0 or ceiling >= most else (0, ceiling)

    seen: Counter[str] = Counter()
    tight = 0
    cases = bound_cases(1999, (2, 3), exits, endings=6000)
    for case in whole_endings(cases, lambda: len(seen) == 4 and min(seen.values()) >= 12):
        assert case.holds(), case.where()
        tight += case.value == case.ceiling
        if case.ceiling == 0:
            seen["a trick that carries nothing, or lost"] += 1
        elif case.deal.leader == case.seat:
            seen["the hero on lead"] += 1
        else:
            seen["another seat on lead"] += 1
        if case.ceiling and case.deal.contract not in (Contract.EL_ALMAZ, Contract.SON_IKI):
            seen["penalty cards counted"] += 1
    assert len(seen) == 4 and min(seen.values()) >= 12, seen
    assert tight >= sum(seen.values()) // 2  # mostly the value itself: a bound that cuts


def _without_exits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_par_py.ParSearch, "_exits_after_this_trick", lambda *_args: -1)


def test_a_lone_ace_led_into_costs_el_almaz_one_trick_then_a_low_diamond_exits(
    par_twin: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    # El almaz, three tricks left, seat 0 leads. Seat 1's ♠A is its only spade: led a spade
    # it wins, then leads the ♦3 under seat 2's ♦Q ♦K (two diamonds: seat 2 still holds one
    # after the spade trick) and ducks the last diamond under the ♦4. Led a club, it sheds
    # the ♠A. Par 1: the ceiling (1) and the trick's floor (the ace above every spade out)
    # settle both null-window passes at the root; without the ceiling the search goes on.
    hands = ("2S 3C 4C", "AS 2D 3D", "KD QD 5C", "3S 4D 6C")
    held, played = _ending(hands)
    flags = CLASSIC.deal_flags(Contract.EL_ALMAZ)
    deal = _par_py._position(held, 0, [], played, 10, Contract.EL_ALMAZ, -1, flags)
    search = _par_py.ParSearch(Contract.EL_ALMAZ, -1, flags)
    search.seat = 1
    assert search._ducks_every_lead(deal) == -1 and search._ranked_out(deal, 3) == -1
    assert search._exits_after_this_trick(deal, 3) == 1
    values, nodes = _values(par_twin, Contract.EL_ALMAZ, held, 0, played)
    assert values[1] == 1 and nodes[1] == 2
    _without_exits(monkeypatch)
    _values_py, nodes_py = _values(_par_py, Contract.EL_ALMAZ, held, 0, played)
    assert _values_py[1] == 1 and nodes_py[1] > 2


def test_a_spade_ace_forced_to_win_two_shed_hearts_caps_kupa_at_two(
    par_twin: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Kupa, three hearts out, seat 0 leads. Seat 1 must win a spade lead with its ♠A, and
    # seats 2 and 3, void in spades, must shed the ♥5 and ♥6 on it (a forced discard): two
    # hearts. Then its ♦3 exits under seat 2's ♦Q ♦K and its ♦2 ducks under the ♦4. Led the
    # ♥7 instead, it sheds the ♠A and takes nothing. The ceiling is 2 of the 3 hearts, which
    # is par: asked only "3?" (a floor of 2), both twins answer at the root; the search
    # without the ceiling cannot.
    hands = ("2S 3C 7H", "AS 2D 3D", "KD QD 5H", "6H 4D 5C")
    held, played = _ending(hands)
    flags = CLASSIC.deal_flags(Contract.KUPA)
    deal = _par_py._position(held, 0, [], played, 10, Contract.KUPA, -1, flags)
    search = _par_py.ParSearch(Contract.KUPA, -1, flags)
    search.seat = 1
    assert search._exits_after_this_trick(deal, 3) == 2
    for twin in (par_twin, _par_py):
        first = twin.ParSearch(Contract.KUPA, -1, flags)
        assert first.units_left(1, held, 0, [], played, 10, floor=2) == 2
        assert first.nodes == 1  # "3 or more?": no, at once
    _without_exits(monkeypatch)
    first = _par_py.ParSearch(Contract.KUPA, -1, flags)
    assert first.units_left(1, held, 0, [], played, 10, floor=2) == 2
    assert first.nodes > 1
    values, _nodes = _values(par_twin, Contract.KUPA, held, 0, played)
    assert values[1] == 2


def test_a_hero_that_may_win_the_trick_on_the_table_then_exit_is_held_to_minimax() -> None:
    # The same ceiling inside a trick, the hero yet to play, from every preset and house
    # variant, where ducking every lead does not settle it: the suit led is known, so the
    # three cannot put off the trick the hero may have to win. Held to plain minimax with
    # the hero to play now and after another seat; with penalty cards counted, and with a
    # trick that carries nothing (or that the hero surely loses). Its card out, it says
    # nothing.
    def exits(search: _par_py.ParSearch, deal: Deal, most: int) -> tuple[int, int] | None:
        if deal.contract == Contract.KOZ or not deal.trick:
            return None
        if search._ducks_every_lead(deal) >= 0:
            return None
        ceiling = search._exits_after_the_trick_on_the_table(deal, most, 13)
        return None if ceiling < 0 or ceiling >= most else (0, ceiling)

    seen: Counter[str] = Counter()
    tight = 0

    def enough() -> bool:
        return len(seen) == 4 and min(seen.values()) >= 12

    cases = bound_cases(2026, (2, 3), exits, endings=6000)
    for case in whole_endings(cases, enough):
        assert case.holds(), case.where()
        deal = case.deal
        tight += case.value == case.ceiling
        place = (case.seat - deal.leader) % 4
        assert place >= len(deal.trick)
        if deal.to_play == case.seat:
            seen["the hero to play now"] += 1
        else:
            seen["the hero to play after another seat"] += 1
        if case.ceiling == 0:
            seen["a trick that carries nothing, or lost"] += 1
        elif deal.contract not in (Contract.EL_ALMAZ, Contract.SON_IKI):
            seen["penalty cards counted"] += 1
    assert enough(), seen
    assert tight >= sum(seen.values()) // 3  # mostly the value itself: a bound that cuts


def test_the_ceiling_on_the_table_counts_its_hearts_and_is_not_worked_out_below_them() -> None:
    # Kupa, seat 3 led the ♥7 and seat 0 put the ♥9 on it; seat 1 must win with its only
    # heart, the ♥A, and seat 2 must follow with the ♥5: four hearts, the ♥6 still out. Then
    # seat 1 leads the ♦3 under seat 2's ♦Q ♦K and ducks the ♦2 under the ♦4: the ceiling is
    # the trick's 4 hearts, which is par. Asked only to settle a window above 1, below the
    # two hearts already on the table, it is not worked out at all.
    held, played = _ending(("2S 6H", "AH 2D 3D", "KD QD 5H", "6S 4D"))
    seven, nine = parse_cards("7H 9H")
    played &= ~(1 << seven | 1 << nine)
    flags = CLASSIC.deal_flags(Contract.KUPA)
    deal = _par_py._position(held, 3, [seven, nine], played, 10, Contract.KUPA, -1, flags)
    search = _par_py.ParSearch(Contract.KUPA, -1, flags)
    search.seat = 1
    most = search._units_in_play(deal)
    assert most == 5 and search._ducks_every_lead(deal) == -1
    assert search._exits_after_the_trick_on_the_table(deal, most, 3) == 4
    assert search._exits_after_the_trick_on_the_table(deal, most, 1) == -1
    assert _exhaustive(deal, 1) == 4


def test_a_lone_ace_to_come_on_the_spade_led_settles_el_almaz_at_the_root_in_both_twins(
    par_twin: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    # El almaz, four tricks left: seat 0 led the ♠2, seat 1 (the ♠3) is to play, then seat
    # 2, whose only spade is the ♠A. Seat 2 wins this trick, then leads the ♦3 under seat
    # 3's ♦Q ♦K and ducks the ♦2 and the ♥2 (par 1). Asked "2 or more?", both twins answer
    # no at the root, from the ceiling on the table; without it the search goes on below.
    held, played = _ending(("3C 4C 7H", "3S 4D 6C 9H", "AS 2D 3D 2H", "KD QD 5C 8H"))
    two = parse_cards("2S")[0]
    played &= ~(1 << two)
    flags = CLASSIC.deal_flags(Contract.EL_ALMAZ)
    for twin in (par_twin, _par_py):
        search = twin.ParSearch(Contract.EL_ALMAZ, -1, flags)
        assert search.units_left(2, held, 0, [two], played, 9, floor=1) == 1
        assert search.nodes == 1
        whole = twin.ParSearch(Contract.EL_ALMAZ, -1, flags)
        assert whole.units_left(2, held, 0, [two], played, 9) == 1
    monkeypatch.setattr(_par_py.ParSearch, "_exits_after_the_trick_on_the_table", lambda *_args: -1)
    search = _par_py.ParSearch(Contract.EL_ALMAZ, -1, flags)
    assert search.units_left(2, held, 0, [two], played, 9, floor=1) == 1
    assert search.nodes > 1


def _pooled(search: _par_py.ParSearch, deal: Deal) -> bool:
    """Whether the hero's cards pass the duck test against the three's held together (as if
    one seat held them all): the test before it counted the tricks each suit can be led."""
    seat, held = search.seat, deal.held
    others = held[(seat + 1) % 4] | held[(seat + 2) % 4] | held[(seat + 3) % 4]
    forced = bool(search.flags & (F_WITHHOLDING | F_VOID_DISCARD))
    return _par_py._ducks_all(held[seat], [others, 0, 0], search.penalty, forced) >= 0


def test_a_suit_the_three_can_lead_only_so_often_ducks_as_plain_minimax_says() -> None:
    # Penalty contracts of every preset and house variant, another seat on lead: where the
    # hero's cards fail the duck test against the three's cards held together but pass it
    # counted up to the longest holding of each suit among them (the hero's cards above its
    # that many lowest never have to be played to the suit), the hero takes nothing more.
    # Held to minimax on random endings of two to four tricks, and it must fire often.
    def counted(search: _par_py.ParSearch, deal: Deal, most: int) -> tuple[int, int] | None:
        if deal.contract == Contract.KOZ or deal.trick or deal.leader == search.seat:
            return None
        if _pooled(search, deal) or search._ducks_every_lead(deal) < 0:
            return None
        return 0, 0

    seen: Counter[int] = Counter()
    cases = bound_cases(2027, (2, 3, 4), counted, endings=6000)
    for case in whole_endings(cases, lambda: sum(seen.values()) >= 50):
        assert case.holds(), case.where()
        seen[case.deal.contract] += 1
    assert sum(seen.values()) >= 50 and len(seen) >= 5, seen


def test_a_lone_spade_each_cannot_make_the_heros_nine_win_el_almaz(
    par_twin: ModuleType,
) -> None:
    # El almaz, two tricks left, seat 0 leads. Seat 1's ♠5 ♠9 against the ♠6 ♠7 ♠8 of the
    # three: held together they could lead the ♠6, then the ♠7 under the ♠9. But each holds
    # one spade, so spades can be led once, and all three follow: the ♠5 ducks it, the ♠9 is
    # shed on the clubs. Par 0, settled at the root by the duck test in both twins.
    held, played = _ending(("6S 2C", "5S 9S", "7S 3C", "8S 4C"))
    flags = CLASSIC.deal_flags(Contract.EL_ALMAZ)
    search = _par_py.ParSearch(Contract.EL_ALMAZ, -1, flags)
    search.seat = 1
    deal = _par_py._position(held, 0, [], played, 11, Contract.EL_ALMAZ, -1, flags)
    assert not _pooled(search, deal) and search._ranked_out(deal, 2) == -1
    assert search._ducks_every_lead(deal) == SUIT_MASKS[SPADES]
    values, nodes = _values(par_twin, Contract.EL_ALMAZ, held, 0, played)
    assert values[1] == 0 and nodes[1] == 1


def test_a_seat_that_keeps_its_low_card_to_lead_later_beats_the_count_of_tricks(
    par_twin: ModuleType,
) -> None:
    # Son iki's last two tricks, seat 3 leads ♦7. Seat 1's ♦2 ♦Q against ♦8 (seat 0), ♦J ♦A
    # (seat 2), ♦7 (seat 3): seat 2 holds two diamonds, so two diamond tricks can be led,
    # and it plays the ♦A to the first, keeps the ♦J and leads it under the ♦Q. The test
    # counts two rounds, so the ♦Q must lie under the three's second-lowest (♦8): it fails,
    # as it must: par 1 (the last trick).
    held, played = _ending(("8D 8H", "2D QD", "JD AD", "JC 7D"))
    flags = CLASSIC.deal_flags(Contract.SON_IKI)
    search = _par_py.ParSearch(Contract.SON_IKI, -1, flags)
    search.seat = 1
    deal = _par_py._position(held, 3, [], played, 11, Contract.SON_IKI, -1, flags)
    assert search._ducks_every_lead(deal) == -1
    values, _nodes = _values(par_twin, Contract.SON_IKI, held, 3, played)
    assert values[1] == 1
