"""What each card of a deal cost: the guarantee its player had before it, minus after it.

``review_deal(deal, rules)`` replays a recorded deal and, before every analysed play, finds
the guarantee of every legal card for the seat to play (docs/ANALYSIS.md): the best of them
is the guarantee before the play, the played card's is the guarantee after it, and the cards
that keep the guarantee are the best cards. Costs are given in units (given away: more units
taken than need be in a penalty contract, fewer tricks in koz) and in points (always >= 0).
All the searches of a deal share one table and one budget (``kingrec.analysis.par.Solver``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from .._engine_types import END_PLAYING
from ..boundary import engine_trump, replayable
from ..cards import card_name, cards_in
from ..contracts import Contract
from ..rules import Ruleset
from ..v1 import record_pb2 as pb
from ._par_py import _clone
from .par import Budget, DealPar, OutOfBudgetError, Solver, deal_par, replay_course

__all__ = ["DealReview", "PlayCost", "review_deal"]


@dataclass(frozen=True)
class PlayCost:
    """One play, priced for the seat that made it."""

    play: int  # index into the deal's plays
    trick: int  # 1-based
    seat: int
    card: int
    before: int  # the seat's guarantee (units, the deal's whole) before the card
    after: int  # and after it
    cost: int  # units given away (>= 0)
    cost_points: int  # points given away (>= 0)
    best: tuple[int, ...]  # the legal cards that keep the guarantee

    def to_json(self) -> dict[str, Any]:
        return {
            "play": self.play,
            "trick": self.trick,
            "seat": self.seat,
            "card": card_name(self.card),
            "before": self.before,
            "after": self.after,
            "cost": self.cost,
            "cost_points": self.cost_points,
            "best": [card_name(c) for c in self.best],
        }


@dataclass(frozen=True)
class DealReview:
    """A deal's par and the price of each analysed play of the reviewed seats.

    ``solved`` is False when the budget ran out: ``plays`` then holds the plays priced
    before it did (each exact) and ``par`` may be unsolved too.
    """

    par: DealPar
    plays: tuple[PlayCost, ...]
    solved: bool

    @property
    def costly(self) -> tuple[PlayCost, ...]:
        """The plays that cost anything."""
        return tuple(p for p in self.plays if p.cost > 0)

    def to_json(self) -> dict[str, Any]:
        out = self.par.to_json()
        out["solved"] = self.solved
        out["reviewed_plays"] = len(self.plays)
        out["costly_plays"] = [p.to_json() for p in self.costly]
        return out


def review_deal(
    deal: pb.Deal,
    rules: Ruleset,
    seat: int | Iterable[int] | None = None,
    budget: Budget | None = None,
    *,
    from_play: int = 0,
    number: int | None = None,
) -> DealReview:
    """Par of ``deal`` at play ``from_play`` (0: the start) and the cost of every analysed
    play from there on by ``seat`` (default: every seat)."""
    contract = int(deal.contract)
    if not replayable(deal):
        return DealReview(deal_par(deal, rules, seat, number=number), (), False)
    solver = Solver(contract, engine_trump(deal), rules.deal_flags(contract), budget)
    par = deal_par(deal, rules, seat, from_play, number=number, solver=solver)
    if not par.solved:
        return DealReview(par, (), False)
    seats = {s.seat for s in par.seats}
    course = replay_course(deal, rules)
    hero_wants_units = contract == Contract.KOZ
    unit = rules.unit_score(contract)
    costs: list[PlayCost] = []
    for index in range(from_play, len(course.plays)):
        card = course.plays[index]
        position = course.positions[index]
        mover = position.to_play
        if mover not in seats:
            continue
        try:
            values = _guarantees(solver, position, mover)
        except OutOfBudgetError:
            return DealReview(_with_stats(par, solver), tuple(costs), False)
        choose = max if hero_wants_units else min
        before = choose(values.values())
        after = values[card]
        costs.append(
            PlayCost(
                index,
                len(position.winners) + 1,
                mover,
                card,
                before,
                after,
                abs(before - after),
                (before - after) * unit,
                tuple(c for c, v in values.items() if v == before),
            )
        )
    return DealReview(_with_stats(par, solver), tuple(costs), True)


def _guarantees(solver: Solver, position: Any, seat: int) -> dict[int, int]:
    """The guarantee ``seat`` keeps with each legal card (units of the whole deal)."""
    values: dict[int, int] = {}
    for card in cards_in(position.legal()):
        child = _clone(position)
        child.push(card)
        left = solver.units_left(child, seat) if child.end == END_PLAYING else 0
        values[card] = child.units[seat] + left
    return values


def _with_stats(par: DealPar, solver: Solver) -> DealPar:
    """``par`` with the search figures of the whole review."""
    return replace(par, stats=solver.stats())
