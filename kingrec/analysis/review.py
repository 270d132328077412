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
            before, after, best = _guarantees(solver, position, mover, card, hero_wants_units)
        except OutOfBudgetError:
            return DealReview(_with_stats(par, solver), tuple(costs), False)
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
                best,
            )
        )
    return DealReview(_with_stats(par, solver), tuple(costs), True)


def _guarantees(
    solver: Solver, position: Any, seat: int, played: int, wants_units: bool
) -> tuple[int, int, tuple[int, ...]]:
    """The guarantee ``seat`` had before ``played`` (its best card's), the one it kept with
    ``played`` (units of the whole deal) and the legal cards that keep the best.

    Only the played card's guarantee is needed exactly; each other card's only as far as
    "worse than, as good as or better than the best so far" until it proves better: one
    or two null-window passes instead of a search for its exact value."""
    sign = 1 if wants_units else -1  # the seat takes as many units as it can in koz only
    cards = tuple(cards_in(position.legal()))
    values: dict[int, int] = {}  # exact, or a bound on the wrong side of the best so far
    best = -1
    for card in (played, *(c for c in cards if c != played)):
        child = _clone(position)
        child.push(card)
        taken = child.units[seat]
        if card == played:
            value = taken + solver.units_left(child, seat)
        else:
            near = best - taken  # the best so far, in the child's units left (may be < 0)
            floor = max(0, near - 1)  # (no unit left is below 0: a floor of 0 is exact)
            value = taken + solver.units_left(child, seat, near, floor, max(floor, near + 1))
            if sign * (value - best) > 0:  # better: its exact value, from that side on
                beyond = value - taken
                floor, ceiling = (beyond, 13) if wants_units else (0, beyond)
                value = taken + solver.units_left(child, seat, beyond, floor, ceiling)
        values[card] = value
        if card == played or sign * (value - best) > 0:
            best = value
    return best, values[played], tuple(c for c in cards if values[c] == best)


def _with_stats(par: DealPar, solver: Solver) -> DealPar:
    """``par`` with the search figures of the whole review."""
    return replace(par, stats=solver.stats())
