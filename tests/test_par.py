"""The par search (docs/ANALYSIS.md): both twins against an exhaustive minimax, against each
other, and on hand-made deals whose answers are known."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from types import ModuleType

import pytest

from kingrec import _twins
from kingrec._engine_py import Deal
from kingrec.analysis import _par_py
from kingrec.analysis.par import (
    Budget,
    OutOfBudgetError,
    Solver,
    deal_par,
    replay_course,
)
from kingrec.analysis.par import par_twin as active_par_twin
from kingrec.analysis.review import review_deal
from kingrec.cards import CLUBS, HEARTS, SPADES, SUIT_MASKS, cards_in, parse_card, parse_cards
from kingrec.contracts import Contract
from kingrec.rules import PRESETS, RevokeRule, Ruleset, preset
from kingrec.simulate import simulate_match
from kingrec.v1 import record_pb2 as pb

CLASSIC = preset("classic")


needs_compiled = pytest.mark.skipif(_twins.COMPILED is None, reason="not built")


def test_the_compiled_par_twin_runs_when_it_is_built() -> None:
    if _twins.COMPILED is None or _twins.pure_forced():
        assert active_par_twin() is _twins.PYTHON.par
    else:
        assert active_par_twin() is _twins.COMPILED.par


# -- positions -------------------------------------------------------------------------------


def _random_ending(rng: random.Random, tricks_left: int) -> tuple[Deal, Ruleset]:
    """A random deal played at random (legally) until ``tricks_left`` tricks remain, give or
    take the cards of an open trick; under a random preset, contract and trump."""
    while True:
        rules = rng.choice(list(PRESETS.values()))
        contract = rng.choice(list(Contract))
        trump = rng.randrange(4) if contract == Contract.KOZ else -1
        cards = list(range(52))
        rng.shuffle(cards)
        deal = Deal(bytes(cards), rng.randrange(4), contract, trump, rules.deal_flags(contract))
        target = 52 - 4 * tricks_left + rng.randrange(4)
        while deal.nplays < target and deal.end == 0:
            deal.push(rng.choice(list(cards_in(deal.legal()))))
        if deal.end == 0:
            return deal, rules


def _exhaustive(deal: Deal, seat: int) -> int:
    """Units ``seat`` is sure of from ``deal`` on: plain minimax, every legal card, no table,
    no pruning; the hero maximizes in koz and minimizes elsewhere."""
    if deal.end:
        return 0
    values = []
    for card in cards_in(deal.legal()):
        child = _par_py._clone(deal)
        before = child.units[seat]
        child.push(card)
        values.append(child.units[seat] - before + _exhaustive(child, seat))
    hero_max = deal.contract == Contract.KOZ
    return max(values) if (deal.to_play == seat) == hero_max else min(values)


# A bound under test: given the reference search (its seat set), the ending and the units in
# play, the floor and ceiling it puts on the seat's units, or None when it says nothing.
Bound = Callable[[_par_py.ParSearch, Deal, int], "tuple[int, int] | None"]


@dataclass(frozen=True)
class BoundCase:
    """One seat of a random ending on which a bound said something, with the value plain
    minimax gives it."""

    ending: int  # the ending's number in its run (several seats may share one)
    deal: Deal
    seat: int
    floor: int
    ceiling: int
    value: int
    most: int  # the units still in play

    def holds(self) -> bool:
        return self.floor <= self.value <= self.ceiling

    def where(self) -> tuple[object, ...]:
        deal = self.deal
        return (deal.held, deal.leader, deal.trick, deal.contract, deal.flags, self.seat)


def bound_cases(
    seed: int, tricks_left: Sequence[int], bound: Bound, endings: int = 20000
) -> Iterator[BoundCase]:
    """The cases of a bound on up to ``endings`` random endings (``_random_ending``, with
    ``tricks_left`` drawn from the choices given), every seat of each with units still in
    play on which ``bound`` says something, each with its minimax value. The same seed gives
    the same endings whatever the bound."""
    rng = random.Random(seed)
    for ending in range(endings):
        deal, _rules = _random_ending(rng, rng.choice(tricks_left))
        search = _par_py.ParSearch(deal.contract, deal.trump, deal.flags)
        most = search._units_in_play(deal)
        if most == 0:
            continue
        for seat in range(4):
            search.seat = seat
            said = bound(search, deal, most)
            if said is not None:
                floor, ceiling = said
                value = _exhaustive(deal, seat)
                yield BoundCase(ending, deal, seat, floor, ceiling, value, most)


def whole_endings(cases: Iterable[BoundCase], enough: Callable[[], bool]) -> Iterator[BoundCase]:
    """The cases ending by ending, until ``enough()`` says so once an ending's are all out
    (a test counting what it saw stops where a loop over the endings would have)."""
    last = -1
    for case in cases:
        if case.ending != last and last >= 0 and enough():
            return
        last = case.ending
        yield case


def _search(twin: ModuleType, deal: Deal, seat: int) -> tuple[int, int]:
    search = twin.ParSearch(deal.contract, deal.trump, deal.flags)
    value = search.units_left(
        seat, deal.held, deal.leader, deal.trick, deal.played, len(deal.winners)
    )
    return value, search.nodes


def test_both_twins_agree_with_exhaustive_minimax_on_endings_of_up_to_three_tricks(
    par_twin: ModuleType,
) -> None:
    rng = random.Random(18)
    for _ in range(60):
        deal, _rules = _random_ending(rng, rng.choice((1, 2, 3)))
        for seat in range(4):
            assert _search(par_twin, deal, seat)[0] == _exhaustive(deal, seat), (
                deal.held,
                deal.trick,
                deal.contract,
                deal.flags,
                seat,
            )


def test_both_twins_agree_with_exhaustive_minimax_on_four_trick_endings(
    par_twin: ModuleType,
) -> None:
    rng = random.Random(4)
    for i in range(8):
        deal, _rules = _random_ending(rng, 4)
        seat = i % 4
        assert _search(par_twin, deal, seat)[0] == _exhaustive(deal, seat)


def test_a_seat_holding_every_trump_left_takes_a_trick_with_each_even_off_lead(
    par_twin: ModuleType,
) -> None:
    # The bound the search cuts on in koz (one trick per trump for the seat holding all that
    # are left, whoever leads), held to plain minimax for the holder and for the others.
    rng = random.Random(1818)
    checked = 0
    for _ in range(3000):
        deal, _rules = _random_ending(rng, rng.choice((2, 3)))
        trumps = SUIT_MASKS[deal.trump] & ~deal.played if deal.contract == Contract.KOZ else 0
        holders = [s for s in range(4) if trumps and deal.held[s] & trumps == trumps]
        if deal.trick or not holders or holders[0] == deal.leader:
            continue
        for seat in range(4):
            value = _search(par_twin, deal, seat)[0]
            assert value == _exhaustive(deal, seat), (deal.held, deal.leader, seat)
            if seat == holders[0]:
                assert value >= trumps.bit_count()
        checked += 1
        if checked == 12:
            break
    assert checked == 12


def test_the_leaders_quick_tricks_are_a_floor_for_it_and_a_ceiling_for_every_other_seat() -> None:
    # The koz bound when others still hold trumps: the leader's top side cards for as many
    # rounds as every other trump holder follows, then its top trumps. Held to plain minimax
    # on the endings where it says something the all-the-trumps bound cannot.
    def quick_tricks(search: _par_py.ParSearch, deal: Deal, most: int) -> tuple[int, int] | None:
        if deal.contract != Contract.KOZ or deal.trick:
            return None
        sure = search._sure_tricks(deal, deal.leader)
        trumps = SUIT_MASKS[deal.trump] & ~deal.played
        if sure == 0 or not any(deal.held[s] & trumps for s in range(4) if s != deal.leader):
            return None
        return (sure, most) if search.seat == deal.leader else (0, most - sure)

    endings: set[int] = set()
    for case in whole_endings(bound_cases(5, (2, 3), quick_tricks), lambda: len(endings) == 15):
        assert case.holds(), case.where()
        endings.add(case.ending)
    assert len(endings) == 15


def test_top_cards_win_until_a_seat_with_a_trump_runs_out_of_the_suit(
    par_twin: ModuleType,
) -> None:
    # Three tricks left, spades trumps. Seat 0 leads its ♦A ♦K ♦Q; seat 1 follows twice, then
    # ruffs with the ♠2: two tricks for seat 0, one for seat 1, which the bound finds at once.
    hands = ("AD KD QD", "2D 3D 2S", "4D 5D 6D", "2C 3C 4C")
    held = [sum(1 << c for c in parse_cards(h)) for h in hands]
    played = ((1 << 52) - 1) & ~sum(held)
    flags = CLASSIC.deal_flags(Contract.KOZ)
    values = []
    for seat in range(4):
        search = par_twin.ParSearch(Contract.KOZ, SPADES, flags)
        values.append(search.units_left(seat, held, 0, [], played, 10))
    assert values == [2, 1, 0, 0]
    search = par_twin.ParSearch(Contract.KOZ, SPADES, flags)
    assert search.units_left(0, held, 0, [], played, 10, guess=1) == 2
    assert search.nodes == 2  # both null-window passes are answered at the root


def test_when_the_ranks_alone_settle_a_penalty_ending_the_value_is_minimaxs() -> None:
    # The penalty-contract leaf: every card of the hero's below all the others' of its suit
    # (no trick left for it), or above them all (every trick and unit left); held to plain
    # minimax on random endings where it fires, both ways, on and off lead.
    def ranked_out(search: _par_py.ParSearch, deal: Deal, most: int) -> tuple[int, int] | None:
        if deal.contract == Contract.KOZ or deal.trick:
            return None
        ranked = search._ranked_out(deal, most)
        return None if ranked < 0 else (ranked, ranked)

    seen: set[tuple[bool, bool]] = set()
    checked: list[BoundCase] = []
    cases = bound_cases(8, (2, 3), ranked_out)
    for case in whole_endings(cases, lambda: len(checked) >= 40 and len(seen) == 4):
        assert case.holds(), case.where()
        seen.add((case.floor == 0, case.deal.leader == case.seat))
        checked.append(case)
    assert len(checked) >= 40 and len(seen) == 4


def test_a_hand_of_low_cards_takes_nothing_and_a_hand_of_high_cards_takes_every_heart(
    par_twin: ModuleType,
) -> None:
    # Kupa, three tricks left. Seat 1 holds the lowest spades and diamond: it can be made to
    # win nothing. Seat 3 holds the top cards of every suit it shares with the others and
    # all the suits they hold: it takes every trick and every heart left.
    hands = ("5S 6S 7H", "2S 3S 2D", "8H 4D 9H", "AS AD AH")
    held = [sum(1 << c for c in parse_cards(h)) for h in hands]
    played = ((1 << 52) - 1) & ~sum(held)
    flags = CLASSIC.deal_flags(Contract.KUPA)
    values, nodes = [], []
    for seat in range(4):
        search = par_twin.ParSearch(Contract.KUPA, -1, flags)
        values.append(search.units_left(seat, held, 0, [], played, 10))
        nodes.append(search.nodes)
    assert values[1] == 0 and values[3] == 4  # the 7, 8, 9 and ace of hearts
    assert nodes[1] == nodes[3] == 1  # settled at the root


def test_the_highest_trumps_win_a_trick_each_whoever_leads_while_others_hold_trumps() -> None:
    # The koz bound on the seat holding the top trumps in a row (here: with other trumps
    # still out elsewhere), a floor for it and a ceiling for the others; plain minimax.
    def top_trumps(search: _par_py.ParSearch, deal: Deal, most: int) -> tuple[int, int] | None:
        if deal.contract != Contract.KOZ or deal.trick:
            return None
        holder, run = search._top_trumps(deal)
        trumps = SUIT_MASKS[deal.trump] & ~deal.played
        if holder < 0 or run == trumps.bit_count():
            return None
        return (run, most) if search.seat == holder else (0, most - run)

    endings: set[int] = set()
    for case in whole_endings(bound_cases(12, (2, 3), top_trumps), lambda: len(endings) == 15):
        assert case.holds(), case.where()
        endings.add(case.ending)
    assert len(endings) == 15


@needs_compiled
def test_the_twins_agree_on_thousands_of_endings_value_and_node_count() -> None:
    assert _twins.COMPILED is not None
    compiled = _twins.COMPILED.par
    rng = random.Random(2026)
    count = 0
    for _ in range(1500):
        deal, _rules = _random_ending(rng, rng.choice((1, 2, 3, 4)))
        seat = rng.randrange(4)
        reference = _search(_par_py, deal, seat)
        assert _search(compiled, deal, seat) == reference, (deal.held, deal.trick, seat)
        count += 1
    assert count == 1500


@needs_compiled
def test_the_twins_agree_on_where_the_nodes_go() -> None:
    # The figures bench/bench_par.py reports to aim the next speed-up: nodes by the cards on
    # the table, trick starts the table answered, trick starts searched.
    assert _twins.COMPILED is not None
    rng = random.Random(31)
    for _ in range(300):
        deal, _rules = _random_ending(rng, rng.choice((2, 3, 4)))
        seat = rng.randrange(4)
        figures = []
        for twin in (_par_py, _twins.COMPILED.par):
            search = twin.ParSearch(deal.contract, deal.trump, deal.flags)
            search.units_left(
                seat, deal.held, deal.leader, deal.trick, deal.played, len(deal.winners)
            )
            assert sum(search.nodes_by_card) == search.nodes
            assert search.tt_cuts + search.searched_starts <= search.nodes_by_card[0]
            figures.append((list(search.nodes_by_card), search.tt_cuts, search.searched_starts))
        assert figures[0] == figures[1]


@needs_compiled
def test_the_twins_agree_from_three_cards_on_the_table_in_every_contract() -> None:
    # The position under each fourth card tried must be the trick's own again: a twin that
    # plays in place and takes back (docs/ANALYSIS.md, tried) restores the trick's cards,
    # which the plays below reuse, its leader, units and the cards played. From three cards
    # on the table with tricks left to close below, a slip changes the bounds' and the
    # table's answers: the nodes by card, the table's figures, the passes or the value.
    assert _twins.COMPILED is not None
    rng = random.Random(18)
    seen: set[Contract] = set()
    for _ in range(400):
        deal, _rules = _random_ending(rng, 4)
        while len(deal.trick) < 3 and deal.end == 0:
            deal.push(rng.choice(list(cards_in(deal.legal()))))
        if deal.end or len(deal.trick) != 3:
            continue
        seen.add(Contract(deal.contract))
        seat = rng.randrange(4)
        figures = []
        for twin in (_par_py, _twins.COMPILED.par):
            search = twin.ParSearch(deal.contract, deal.trump, deal.flags)
            value = search.units_left(
                seat, deal.held, deal.leader, deal.trick, deal.played, len(deal.winners)
            )
            figures.append(
                (value, list(search.nodes_by_card), search.tt_probes, search.tt_hits, search.passes)
            )
        assert figures[0] == figures[1], (deal.held, deal.trick, deal.contract, seat)
    assert seen == set(Contract)


# -- hand-made deals -------------------------------------------------------------------------


def _suit_deal(contract: Contract, *, trump: int = -1, suit: int = SPADES) -> pb.Deal:
    """A deal where seat 0 (the declarer) holds the whole of ``suit``; the other 39 cards go
    round the other three seats in order, and nothing has been played."""
    whole = list(cards_in(SUIT_MASKS[suit]))
    rest = [c for c in range(52) if c // 13 != suit]
    deal = pb.Deal(number=1, declarer=0, contract=pb.Contract.ValueType(contract))
    deal.hands = bytes(whole + rest)
    if trump >= 0:
        deal.trump = pb.Suit.ValueType(trump + 1)
    return deal


def test_a_hand_of_all_the_trumps_takes_all_thirteen_tricks() -> None:
    result = deal_par(_suit_deal(Contract.KOZ, trump=SPADES), CLASSIC)
    assert result.solved
    assert [s.par for s in result.seats] == [13, 0, 0, 0]
    assert [s.par_points for s in result.seats] == [650, 0, 0, 0]


@pytest.mark.parametrize(
    ("contract", "units"),
    [
        (Contract.EL_ALMAZ, 13),
        (Contract.KUPA, 13),
        (Contract.ERKEK, 8),
        (Contract.KIZ, 4),
        (Contract.SON_IKI, 2),
    ],
)
def test_a_declarer_holding_a_whole_suit_takes_every_unit_of_a_penalty_contract(
    contract: Contract, units: int
) -> None:
    # Seat 0 leads its suit every trick and nobody can follow: it wins them all, and the void
    # discards of the others give it their penalty cards.
    suit = HEARTS if contract == Contract.KUPA else SPADES
    result = deal_par(_suit_deal(contract, suit=suit), CLASSIC)
    assert [s.par for s in result.seats] == [units, 0, 0, 0]


def test_a_void_forces_the_king_of_hearts_and_the_deal_ends_early() -> None:
    # Seat 0 holds every club and leads one: the ♥K's holder is void and must discard it, so
    # seat 0 takes the ♥K on the first trick, and with it gone the deal is over.
    deal = _suit_deal(Contract.RIFKI, suit=CLUBS)
    result = deal_par(deal, CLASSIC)
    assert [s.par for s in result.seats] == [1, 0, 0, 0]
    assert [s.par_points for s in result.seats] == [-320, 0, 0, 0]
    assert result.stats.nodes < 5000  # the early end cuts the tree after one trick


def test_par_at_a_later_play_counts_the_units_already_taken() -> None:
    deal = _suit_deal(Contract.KIZ)
    spades = list(cards_in(SUIT_MASKS[SPADES]))
    # Trick 1: seat 0 leads ♠2, the others shed the ♣Q, ♦Q and ♥Q as they must.
    deal.plays = bytes([spades[0], parse_card("QC"), parse_card("QD"), parse_card("QH")])
    result = deal_par(deal, CLASSIC, at_play=4)
    assert result.seats[0].par == 4  # three taken, the ♠Q to come


# -- records that stop short ---------------------------------------------------------------


def test_analysis_stops_before_an_illegal_play_and_says_which() -> None:
    match = simulate_match(CLASSIC, 7)
    deal = match.deals[0]
    plays = bytearray(deal.plays)
    plays[0], plays[1] = plays[1], plays[0]  # the declarer leads a card seat 1 holds
    deal.plays = bytes(plays)
    course = replay_course(deal, CLASSIC)
    assert course.plays == b""
    assert course.stop is not None and "play 1" in course.stop and "NOT_IN_HAND" in course.stop
    assert course.actual is None


def test_a_penalized_revoke_ends_the_analysis_at_the_revoke() -> None:
    rules = CLASSIC.replace(revoke=RevokeRule.PENALIZE)
    match = simulate_match(rules, 3, revoke_in_deal=2)
    deal = match.deals[1]
    assert deal.HasField("revoke_play")
    result = deal_par(deal, rules, budget=Budget(nodes=1))
    assert result.analysed_plays == deal.revoke_play
    assert result.stop is not None and "revoke" in result.stop
    assert all(s.actual is None for s in result.seats)


def test_a_deal_that_cannot_be_replayed_gets_no_par_and_a_reason() -> None:
    deal = pb.Deal(number=3, declarer=0, contract=pb.CONTRACT_KIZ, hands=bytes(52))
    result = deal_par(deal, CLASSIC)
    assert not result.solved and result.seats == ()
    assert result.stop is not None and "cannot be replayed" in result.stop


# -- the budget ------------------------------------------------------------------------------


def test_a_deal_past_its_node_budget_is_unsolved_never_guessed() -> None:
    deal = simulate_match(CLASSIC, 1).deals[3]
    result = deal_par(deal, CLASSIC, budget=Budget(nodes=1000))
    assert not result.solved
    assert [s.par for s in result.seats] == [None, None, None, None]
    assert [s.actual for s in result.seats] == [
        replay_course(deal, CLASSIC).actual[s]  # type: ignore[index]
        for s in range(4)
    ]


def test_a_deal_past_its_time_budget_is_unsolved_on_an_injected_clock() -> None:
    ticks = iter(range(0, 10**12, 400_000))  # every look at the clock: 0.4 ms later

    def clock() -> int:
        return next(ticks)

    deal = simulate_match(CLASSIC, 1).deals[3]
    solver = Solver(
        deal.contract, deal.trump - 1, CLASSIC.deal_flags(deal.contract), Budget(ms=1, clock=clock)
    )
    course = replay_course(deal, CLASSIC)
    with pytest.raises(OutOfBudgetError):
        solver.units_left(course.positions[0], 0)


def test_the_budget_is_checked_before_the_first_node(par_twin: ModuleType) -> None:
    search = par_twin.ParSearch(Contract.KOZ, SPADES, CLASSIC.deal_flags(Contract.KOZ))
    deal = replay_course(_suit_deal(Contract.KOZ, trump=SPADES), CLASSIC).positions[0]
    value = search.units_left(0, deal.held, 0, [], 0, 0, 0, 5, lambda: 10)
    assert value == -1 and search.nodes == 0


def test_a_stop_from_outside_ends_a_search_under_way_in_both_twins(par_twin: ModuleType) -> None:
    deal = simulate_match(CLASSIC, 1).deals[3]  # from the first card: a long search
    position = replay_course(deal, CLASSIC).positions[0]
    flags = CLASSIC.deal_flags(deal.contract)
    looks: list[int] = []  # the nodes searched at each look at the stop

    def stop() -> bool:  # "stop" at the first look from inside the search
        looks.append(solver.stats().nodes)
        return looks[-1] > 0

    solver = Solver(deal.contract, deal.trump - 1, flags, Budget(stop=stop), twin=par_twin)
    with pytest.raises(OutOfBudgetError):
        solver.units_left(position, 0)
    assert looks[-1] > 0 and not any(looks[:-1])  # stopped at that look, not before
    assert solver.stats().nodes < 2 * par_twin.CLOCK_EVERY  # within a few thousand positions
    # the same search with a stop that never says stop runs on past that look, to its budget
    never: list[int] = []

    def go_on() -> bool:
        never.append(0)
        return False

    budget = Budget(nodes=3 * par_twin.CLOCK_EVERY, stop=go_on)
    with pytest.raises(OutOfBudgetError):
        Solver(deal.contract, deal.trump - 1, flags, budget, twin=par_twin).units_left(position, 0)
    assert len(never) >= 3


def test_a_stop_that_never_says_stop_changes_no_value(par_twin: ModuleType) -> None:
    deal = simulate_match(CLASSIC, 1).deals[3]
    course = replay_course(deal, CLASSIC)
    flags = CLASSIC.deal_flags(deal.contract)
    for at in (36, 40, 44):
        for seat in range(4):
            plain = Solver(deal.contract, deal.trump - 1, flags, twin=par_twin)
            watched = Solver(
                deal.contract, deal.trump - 1, flags, Budget(stop=lambda: False), twin=par_twin
            )
            position = course.positions[at]
            assert watched.units_left(position, seat) == plain.units_left(position, seat)


def test_a_deal_stopped_from_outside_is_unsolved_and_searches_nothing() -> None:
    deal = simulate_match(CLASSIC, 1).deals[3]
    result = deal_par(deal, CLASSIC, budget=Budget(stop=lambda: True))
    assert not result.solved and result.stats.nodes == 0
    assert [s.par for s in result.seats] == [None] * 4


# -- card costs ------------------------------------------------------------------------------


def test_a_review_of_a_deal_nobody_can_spoil_finds_no_costly_card() -> None:
    # Seat 0 holds every spade (trumps) and leads: any card keeps all 13.
    deal = _suit_deal(Contract.KOZ, trump=SPADES)
    deal.plays = bytes(parse_cards("2S 2C 2D 2H"))
    review = review_deal(deal, CLASSIC)
    assert review.solved and len(review.plays) == 4
    assert review.costly == ()
    assert review.plays[0].before == review.plays[0].after == 13


def test_leading_into_a_forced_ruff_costs_a_trick_and_the_trumps_were_best() -> None:
    # Seat 0: ♠3..♠A and ♦A. Seat 1: ♠2 and twelve clubs. Leading ♦A lets seat 1 ruff (must
    # ruff) with ♠2; a trump lead first draws it and keeps all 13 tricks.
    spades = list(cards_in(SUIT_MASKS[SPADES]))
    hands = (
        spades[1:] + parse_cards("AD"),
        spades[:1] + parse_cards("3C 4C 5C 6C 7C 8C 9C TC JC QC KC 2C"),
        parse_cards("2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AC"),
        list(cards_in(SUIT_MASKS[HEARTS])),
    )
    deal = pb.Deal(number=1, declarer=0, contract=pb.CONTRACT_KOZ, trump=pb.SUIT_SPADES)
    deal.hands = bytes(c for hand in hands for c in hand)
    deal.plays = bytes(parse_cards("AD 2S 2D 2H"))
    review = review_deal(deal, CLASSIC, seat=0)
    (lead,) = review.plays
    assert (lead.before, lead.after, lead.cost, lead.cost_points) == (13, 12, 1, 50)
    assert lead.best == tuple(spades[1:])
    assert review.costly == (lead,)
    assert review.to_json()["costly_plays"][0]["best"][0] == "3S"


def test_a_review_of_a_simulated_ending_matches_the_par_before_and_after_each_card() -> None:
    match = simulate_match(CLASSIC, 11)
    deal = next(d for d in match.deals if d.contract == pb.CONTRACT_KOZ)
    plays = len(deal.plays)
    # The last three tricks: cheap enough to check every card against two more searches.
    review = review_deal(deal, CLASSIC, from_play=plays - 12)
    assert review.solved and len(review.plays) == 12
    assert review.par.at_play == plays - 12
    for cost in review.plays:
        before = deal_par(deal, CLASSIC, cost.seat, cost.play).seats[0].par
        after = deal_par(deal, CLASSIC, cost.seat, cost.play + 1).seats[0].par
        assert before is not None and after is not None
        assert (cost.before, cost.after) == (before, after)
        assert cost.cost == before - after  # koz: tricks given away
        assert cost.cost_points == 50 * cost.cost
        assert (cost.card in cost.best) == (cost.cost == 0)


# -- the table: relevant ranks ---------------------------------------------------------------

# Every preset and the house options no preset turns on, alone and all together: the rules
# that make a low card's rank matter (must raise, must overtrump, withholding), the lead
# bans, forced discards, the rıfkı heart after the king, and the early end on or off.
RULESETS = {
    **PRESETS,
    "overtrump": CLASSIC.replace(must_overtrump=True),
    "no-ruff": CLASSIC.replace(must_ruff=False),
    "no-early-end": CLASSIC.replace(early_end=frozenset()),
    "withholding-everywhere": CLASSIC.replace(
        withholding=frozenset(Contract) - {Contract.KOZ},
        heart_lead_ban=frozenset(Contract) - {Contract.KOZ},
    ),
    "everything": CLASSIC.replace(
        must_overtrump=True,
        must_raise_on_trump_lead=True,
        trump_lead_needs_break=True,
        rifki_heart_after_king=True,
        withholding=frozenset(Contract) - {Contract.KOZ},
    ),
}


def _ending_under(
    rng: random.Random, rules: Ruleset, contract: Contract, tricks_left: int
) -> Deal | None:
    """A random deal of ``contract`` under ``rules`` played at random to a trick start with
    ``tricks_left`` tricks to go (None when it ended before)."""
    trump = rng.randrange(4) if contract == Contract.KOZ else -1
    cards = list(range(52))
    rng.shuffle(cards)
    deal = Deal(bytes(cards), rng.randrange(4), contract, trump, rules.deal_flags(contract))
    while deal.nplays < 52 - 4 * tricks_left and deal.end == 0:
        deal.push(rng.choice(list(cards_in(deal.legal()))))
    return deal if deal.end == 0 else None


def _play_on(rng: random.Random, deal: Deal, plays: int) -> list[Deal]:
    """The positions of ``deal`` played on at random for up to ``plays`` cards."""
    positions = [deal]
    for _ in range(plays):
        if positions[-1].end:
            break
        nxt = _par_py._clone(positions[-1])
        nxt.push(rng.choice(list(cards_in(nxt.legal()))))
        if nxt.end:
            break
        positions.append(nxt)
    return positions


def _units(search: object, deal: Deal, seat: int) -> int:
    return search.units_left(  # type: ignore[attr-defined,no-any-return]
        seat, deal.held, deal.leader, deal.trick, deal.played, len(deal.winners)
    )


@pytest.mark.parametrize("name", list(RULESETS))
def test_one_table_shared_by_every_seat_and_position_agrees_with_exhaustive_minimax(
    par_twin: ModuleType, name: str
) -> None:
    # The table's entries answer for positions they were not searched on: one ParSearch (one
    # table) searches each seat of a three-trick ending and of the positions played on from
    # it at random, the way a review does, under every contract; each value is minimax's.
    rules = RULESETS[name]
    rng = random.Random(f"relevant ranks {name}")
    for contract in Contract:
        checked = 0
        while checked < 3:
            deal = _ending_under(rng, rules, contract, 3)
            if deal is None:
                continue
            search = par_twin.ParSearch(deal.contract, deal.trump, deal.flags)
            for position in _play_on(rng, deal, 6):
                for seat in range(4):
                    assert _units(search, position, seat) == _exhaustive(position, seat), (
                        name,
                        contract,
                        position.held,
                        position.trick,
                        seat,
                    )
            checked += 1


def _exact_only(codes: tuple[int, ...], relevant: int, played: int) -> object:
    # The table as it was before relevant ranks: every entry names every card.
    return _relevant_ranks(codes, (1 << 52) - 1, played)


_relevant_ranks = _par_py._relevant_ranks


@needs_compiled
@pytest.mark.parametrize("name", list(RULESETS))
def test_relevant_ranks_change_no_value_of_longer_endings(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Five-trick endings, too long for minimax: the compiled twin with relevant
    # ranks, one table for all four seats and the positions played on, against the reference
    # whose entries name every card (a table keyed on the whole position, as it was).
    assert _twins.COMPILED is not None
    compiled = _twins.COMPILED.par
    rules = RULESETS[name]
    rng = random.Random(f"longer endings {name}")
    exact_values = []
    positions_and_searches = []
    for contract in Contract:
        deal = None
        while deal is None:
            deal = _ending_under(rng, rules, contract, 5)
        search = compiled.ParSearch(deal.contract, deal.trump, deal.flags)
        played_on = _play_on(rng, deal, 5)
        for position in (played_on[0], played_on[-1]):
            for seat in range(4):
                positions_and_searches.append((position, seat, _units(search, position, seat)))
    monkeypatch.setattr(_par_py, "_relevant_ranks", _exact_only)
    for position, seat, value in positions_and_searches:
        reference = _par_py.ParSearch(position.contract, position.trump, position.flags)
        exact_values.append(_units(reference, position, seat))
        assert value == exact_values[-1], (name, position.contract, position.held, seat)
    assert len(exact_values) >= 4 * len(Contract)


def test_entries_answer_for_positions_they_were_not_searched_on_and_save_nodes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The same searches (four-trick endings, every seat, one table each) with relevant
    # ranks and with entries that name every card: the same values, more trick starts
    # answered by the table and fewer nodes with relevant ranks.
    rng = random.Random(1818)
    endings = [_random_ending(rng, 4)[0] for _ in range(30)]

    def run() -> tuple[list[int], int, int]:
        values: list[int] = []
        nodes = cuts = 0
        for deal in endings:
            search = _par_py.ParSearch(deal.contract, deal.trump, deal.flags)
            values.extend(_units(search, deal, seat) for seat in range(4))
            nodes, cuts = nodes + search.nodes, cuts + search.tt_cuts
        return values, nodes, cuts

    values, nodes, cuts = run()
    monkeypatch.setattr(_par_py, "_relevant_ranks", _exact_only)
    exact_values, exact_nodes, exact_cuts = run()
    assert values == exact_values
    assert cuts > exact_cuts and nodes < exact_nodes


def test_under_must_raise_positions_alike_but_for_a_low_trumps_rank_get_their_own_values(
    par_twin: ModuleType,
) -> None:
    # Koz under must-raise-on-trump-lead, two tricks left: seat 0 leads the 5 of spades
    # (trumps) and seat 1, holding the 4 and the 6, must raise and wins; with the 6 led
    # against its 4 and 5 it cannot. Searched with one table, each position gets minimax's
    # value, and the two values differ: the entry of the first does not answer for the second.
    rules = CLASSIC.replace(must_raise_on_trump_lead=True)
    flags = rules.deal_flags(Contract.KOZ)
    search = par_twin.ParSearch(Contract.KOZ, SPADES, flags)
    values = []
    for hands in (("5S 2D", "4S 6S", "2C 3C", "4C 5C"), ("6S 2D", "4S 5S", "2C 3C", "4C 5C")):
        held = [sum(1 << c for c in parse_cards(h)) for h in hands]
        played = ((1 << 52) - 1) & ~sum(held)
        deal = Deal(bytes(range(52)), 0, Contract.KOZ, SPADES, flags)
        deal.held, deal.played, deal.winners = held, played, bytearray(11)
        values.append((search.units_left(1, held, 0, [], played, 11), _exhaustive(deal, 1)))
    assert values[0][0] == values[0][1] and values[1][0] == values[1][1]
    assert values[0][0] != values[1][0]


@needs_compiled
def test_the_twins_agree_on_the_null_window_passes_and_the_table_figures() -> None:
    assert _twins.COMPILED is not None
    rng = random.Random(77)
    for _ in range(200):
        deal, _rules = _random_ending(rng, rng.choice((2, 3, 4)))
        figures = []
        for twin in (_par_py, _twins.COMPILED.par):
            search = twin.ParSearch(deal.contract, deal.trump, deal.flags)
            for seat in range(4):
                _units(search, deal, seat)
            assert search.passes <= search.nodes
            figures.append((search.passes, search.tt_probes, search.tt_hits, search.tt_cuts))
        assert figures[0] == figures[1]


@needs_compiled
@pytest.mark.parametrize("name", list(RULESETS))
def test_the_twins_key_and_find_the_same_trick_starts_with_cards_gone_from_the_suits(
    name: str,
) -> None:
    # The compiled key is made from masks (each suit's thirteen ranks, then the cards
    # played taken out) and a look hashes its chains from terms worked out once: on
    # five-trick endings of every contract with cards gone from anywhere in the suits and
    # one suit gone whole, every seat searched with one table, the twins find the same
    # positions in the table, answer as many from it and search as many nodes.
    assert _twins.COMPILED is not None
    rules = RULESETS[name]
    rng = random.Random(f"keys {name}")
    probes = 0
    for contract in Contract:
        for _draw in range(1000):
            deal = _ending_under(rng, rules, contract, 5)
            if deal is not None and any(deal.played & mask == mask for mask in SUIT_MASKS):
                break
        else:
            pytest.fail(f"no five-trick ending of {contract} with a suit gone")
        figures = []
        for twin in (_par_py, _twins.COMPILED.par):
            search = twin.ParSearch(deal.contract, deal.trump, deal.flags)
            values = [_units(search, deal, seat) for seat in range(4)]
            figures.append((values, search.nodes, search.tt_probes, search.tt_hits, search.tt_cuts))
        assert figures[0] == figures[1], (name, contract, deal.held)
        probes += figures[0][2]
    assert probes > 0  # the table was looked into


@needs_compiled
@pytest.mark.parametrize("pool", [2, 3, 8])
def test_a_compiled_table_swept_when_full_keeps_every_value(pool: int) -> None:
    # A pool of a few entries fills at once on four-trick endings: each time it is full it
    # keeps the costlier half and forgets the rest. The values are the reference's (which
    # never forgets), searching every seat with one table.
    assert _twins.COMPILED is not None
    compiled = _twins.COMPILED.par
    rng = random.Random(4040)
    sweeps = 0
    for _ in range(25):
        deal, _rules = _random_ending(rng, 4)
        small = compiled.ParSearch(deal.contract, deal.trump, deal.flags, pool)
        reference = _par_py.ParSearch(deal.contract, deal.trump, deal.flags)
        for seat in range(4):
            assert _units(small, deal, seat) == _units(reference, deal, seat)
        sweeps += small.sweeps
    assert sweeps > 25


@needs_compiled
def test_a_compiled_table_needs_room_for_two_entries() -> None:
    assert _twins.COMPILED is not None
    with pytest.raises(ValueError, match="the pool holds"):
        _twins.COMPILED.par.ParSearch(Contract.KOZ, SPADES, 0, 1)


# -- the drivers: clamped searches, a review's null windows, a pool that grows ----------------


@pytest.mark.parametrize("seed", range(3))
def test_a_search_clamped_to_a_floor_and_a_ceiling_gives_the_value_within_them(
    par_twin: ModuleType, seed: int
) -> None:
    # units_left(floor=, ceiling=) answers the value where it lies between them, the floor
    # for any value at or below it and the ceiling for any at or above it, from any guess
    # (even a wrong one outside them), in no more passes than the exact search; the twins
    # agree on the passes (tests below compare their node counts).
    rng = random.Random(f"clamped {seed}")
    for _ in range(40):
        deal, _rules = _random_ending(rng, 3)
        seat = rng.randrange(4)
        exact = _par_py.ParSearch(deal.contract, deal.trump, deal.flags)
        value = _units(exact, deal, seat)
        floor = rng.randrange(0, 6)
        ceiling = floor + rng.randrange(0, 4)
        search = par_twin.ParSearch(deal.contract, deal.trump, deal.flags)
        clamped = search.units_left(
            seat, deal.held, deal.leader, deal.trick, deal.played, len(deal.winners),
            guess=rng.randrange(-3, 16), floor=floor, ceiling=ceiling,
        )  # fmt: skip
        assert clamped == min(max(value, floor), ceiling), (value, floor, ceiling)
        assert clamped == _exhaustive_clamped(deal, seat, floor, ceiling)


def _exhaustive_clamped(deal: Deal, seat: int, floor: int, ceiling: int) -> int:
    return min(max(_exhaustive(deal, seat), floor), ceiling)


@pytest.mark.parametrize(("floor", "ceiling"), [(3, 2), (-1, 4)])
def test_a_floor_above_the_ceiling_or_below_0_is_refused(
    par_twin: ModuleType, floor: int, ceiling: int
) -> None:
    # (a value clamped below 0 would read as -1, the answer of a search past its budget)
    deal, _rules = _random_ending(random.Random(5), 2)
    search = par_twin.ParSearch(deal.contract, deal.trump, deal.flags)
    with pytest.raises(ValueError, match=f"the floor {floor} is not within 0 .. the ceiling"):
        search.units_left(
            0, deal.held, deal.leader, deal.trick, deal.played, len(deal.winners),
            floor=floor, ceiling=ceiling,
        )  # fmt: skip


def test_a_review_finds_the_same_best_cards_and_guarantees_as_exact_searches_of_every_card() -> (
    None
):
    # review_deal asks of each card but the played one only "worse, as good or better than
    # the best so far?"; what it reports must be what exact searches of every card give.
    for seed in (3, 11, 29):
        match = simulate_match(CLASSIC, seed)
        for deal in match.deals[:8]:
            plays = len(deal.plays)
            start = max(0, plays - 16)
            review = review_deal(deal, CLASSIC, from_play=start)
            assert review.solved
            course = replay_course(deal, CLASSIC)
            wants_units = deal.contract == pb.CONTRACT_KOZ
            for cost in review.plays:
                position = course.positions[cost.play]
                solver = Solver(position.contract, position.trump, position.flags)
                values = {}
                for card in cards_in(position.legal()):
                    child = _par_py._clone(position)
                    child.push(card)
                    values[card] = child.units[cost.seat] + solver.units_left(child, cost.seat)
                before = max(values.values()) if wants_units else min(values.values())
                assert (cost.before, cost.after) == (before, values[cost.card])
                assert cost.best == tuple(c for c, v in values.items() if v == before)


@needs_compiled
def test_a_compiled_pool_that_grows_from_two_entries_keeps_the_reference_node_counts() -> None:
    # The compiled pool starts small and doubles (its index made anew each time): the
    # searches, their values and node counts are the reference's, which never forgets.
    assert _twins.COMPILED is not None
    compiled = _twins.COMPILED.par
    rng = random.Random(2718)
    grown = 0
    for _ in range(30):
        deal, _rules = _random_ending(rng, 4)
        small = compiled.ParSearch(deal.contract, deal.trump, deal.flags, first=2)
        reference = _par_py.ParSearch(deal.contract, deal.trump, deal.flags)
        for seat in range(4):
            assert _units(small, deal, seat) == _units(reference, deal, seat)
        assert (small.nodes, small.passes, small.tt_hits) == (
            reference.nodes,
            reference.passes,
            reference.tt_hits,
        )
        assert small.sweeps == 0
        grown = max(grown, small.capacity)
    assert grown >= 64


@needs_compiled
def test_a_compiled_pool_must_start_with_room_for_two_entries() -> None:
    assert _twins.COMPILED is not None
    with pytest.raises(ValueError, match="starts with room for 2"):
        _twins.COMPILED.par.ParSearch(Contract.KOZ, SPADES, 0, 8, 1)
