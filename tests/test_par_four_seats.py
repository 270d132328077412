"""The four seats of one deal bound each other's par (``four_seat_bounds``, docs/ANALYSIS.md):
the relation against plain minimax on random endings of every preset, and ``deal_par``'s use
of it against searches of each seat alone, on both twins."""

from __future__ import annotations

import itertools
import random
from types import ModuleType

from test_par import _exhaustive, _random_ending

from kingrec.analysis import _par_py
from kingrec.analysis.par import Solver, deal_par, four_seat_bounds, replay_course
from kingrec.boundary import engine_trump
from kingrec.contracts import UNITS_PER_DEAL, Contract
from kingrec.rules import preset
from kingrec.simulate import simulate_match

CLASSIC = preset("classic")


def test_the_four_seats_minimax_units_sum_to_at_most_the_tricks_in_koz_and_at_least_the_units_elsewhere() -> (  # noqa: E501
    None
):
    # Every preset and contract, early end included: each seat's minimax value lies within
    # the bounds the other seats' values give it, for every subset of them known. Were the
    # relation false (say, a penalty sum below the units in play once the early end stops
    # the deal), some seat would fall outside them here.
    rng = random.Random(2026)
    tight = {"koz": 0, "penalty": 0}
    strict = 0
    for _ in range(45):
        deal, _rules = _random_ending(rng, rng.choice((1, 2, 3)))
        in_play = UNITS_PER_DEAL[Contract(deal.contract)] - sum(deal.units)
        search = _par_py.ParSearch(deal.contract, deal.trump, deal.flags)
        assert in_play == search._units_in_play(deal)  # the search's own count agrees
        values = [_exhaustive(deal, seat) for seat in range(4)]
        koz = deal.contract == Contract.KOZ
        assert sum(values) <= in_play if koz else sum(values) >= in_play
        strict += sum(values) != in_play
        for seat in range(4):
            others = [s for s in range(4) if s != seat]
            for size in range(4):
                for subset in itertools.combinations(others, size):
                    known = {s: values[s] for s in subset}
                    floor, ceiling = four_seat_bounds(deal.contract, in_play, known, seat)
                    where = (deal.held, deal.trick, deal.contract, deal.flags, seat, known)
                    assert floor <= values[seat] <= ceiling, where
                    if koz and size and ceiling == values[seat]:
                        tight["koz"] += 1
                    if not koz and floor and floor == values[seat]:
                        tight["penalty"] += 1
    # The bounds settle seats of both kinds of contract, and the sums are not always equal
    # (the relation is an inequality, not a count).
    assert tight["koz"] > 0 and tight["penalty"] > 0, tight
    assert strict > 0


def test_deal_par_bounded_by_the_other_seats_gives_the_pars_of_each_seat_searched_alone(
    par_twin: ModuleType,
) -> None:
    # Late positions of simulated deals, where one seat's par often pins another's: the
    # pars are those of each seat searched with no bound, in fewer null-window passes.
    match = simulate_match(CLASSIC, 18)
    bounded_passes = alone_passes = 0
    for deal in match.deals[:12]:
        course = replay_course(deal, CLASSIC)
        assert course.actual is not None  # (the bots play every deal out)
        flags = CLASSIC.deal_flags(int(deal.contract))
        for at_play in (36, 40):
            if at_play >= len(course.positions) - 1:
                continue
            trump = engine_trump(deal)
            solver = Solver(int(deal.contract), trump, flags, twin=par_twin)
            bounded = deal_par(deal, CLASSIC, at_play=at_play, solver=solver)
            bounded_passes += solver._search.passes  # type: ignore[attr-defined]
            position = course.positions[at_play]
            alone = []
            for seat in range(4):
                single = Solver(int(deal.contract), trump, flags, twin=par_twin)
                taken = position.units[seat]
                guess = course.actual[seat] - taken  # deal_par's first guess
                alone.append(taken + single.units_left(position, seat, guess))
                alone_passes += single._search.passes  # type: ignore[attr-defined]
            assert [s.par for s in bounded.seats] == alone, (deal.number, at_play)
    assert bounded_passes < alone_passes
