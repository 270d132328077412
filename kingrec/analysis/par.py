"""Par: what each seat of a deal could guarantee with every hand known (docs/ANALYSIS.md).

``deal_par(deal, rules)`` gives each seat's par and actual result for one recorded deal;
``Solver`` is the seam ``kingrec.analysis.review`` prices cards with. The search itself is a
twin (``kingrec._twins``): the compiled ``_par_c`` when built, else the reference
``_par_py``; both give the same values. Results are plain frozen dataclasses with
``to_json()`` for programs (the CLI's ``--json``, a web page).

A deal is analysed up to the first play that stops it being judged as played: an illegal
play (the record is invalid there) or a play marked as a penalized revoke; the result says
where and why it stopped. A search that runs past its budget makes the deal *unsolved*:
no par is given rather than a guess.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Protocol

from .. import _twins
from .._engine_py import Deal
from .._engine_types import END_ALL_TRICKS, END_EARLY, END_PLAYING, LEGAL, VERDICT_NAMES
from ..boundary import engine_trump, replayable
from ..cards import card_name
from ..contracts import UNITS_PER_DEAL, Contract
from ..rules import RevokeRule, Ruleset
from ..v1 import record_pb2 as pb
from ._par_py import _clone

__all__ = [
    "Budget",
    "Course",
    "DealPar",
    "OutOfBudgetError",
    "SeatPar",
    "Solver",
    "Stats",
    "deal_par",
    "four_seat_bounds",
    "par_twin",
    "replay_course",
]


def par_twin() -> ModuleType:
    """The par search twin that runs (``_par_c`` or ``_par_py``)."""
    return _twins.ACTIVE.par


class OutOfBudgetError(Exception):
    """A deal's searches ran past its budget: the deal is unsolved."""


@dataclass(frozen=True)
class Budget:
    """How much search one deal may use: ``ms`` of ``clock`` time and ``nodes`` positions
    (0: no limit). ``clock`` (nanoseconds) is injectable so tests need no real time.
    ``stop``, when given, ends the search from outside once it returns True (a caller that
    went away): the deal is then unsolved, as past its budget."""

    ms: int = 0
    nodes: int = 0
    clock: Callable[[], int] = time.monotonic_ns
    stop: Callable[[], bool] | None = None


# Later than any clock's reading: the deadline of a search with a stop but no time budget.
_NEVER = 1 << 62


def _stoppable(clock: Callable[[], int], stop: Callable[[], bool]) -> Callable[[], int]:
    """``clock``, reading past every deadline once ``stop()``: a stop is a deadline come
    early, so the twins see it where they look at the clock (every ``CLOCK_EVERY`` nodes)
    and need no seam of their own."""

    def read() -> int:
        return _NEVER if stop() else clock()

    return read


class _Searcher(Protocol):
    nodes: int
    tt_probes: int
    tt_hits: int
    nodes_by_card: list[int]
    tt_cuts: int
    searched_starts: int

    def units_left(
        self,
        seat: int,
        held: list[int],
        leader: int,
        trick: list[int],
        played: int,
        ntricks: int,
        node_limit: int = 0,
        deadline_ns: int = 0,
        clock: Callable[[], int] | None = None,
        guess: int = 0,
        floor: int = 0,
        ceiling: int = 13,
    ) -> int: ...


@dataclass(frozen=True)
class Stats:
    """What the search did for one deal: positions searched, table looks and hits."""

    nodes: int = 0
    tt_probes: int = 0
    tt_hits: int = 0
    ms: float = 0.0
    # Where the nodes went (bench/bench_par.py; not in to_json): by the cards already on the
    # table, trick starts the table answered without a search, trick starts searched.
    nodes_by_card: tuple[int, ...] = (0, 0, 0, 0)
    tt_cuts: int = 0
    searched_starts: int = 0

    @property
    def tt_hit_rate(self) -> float:
        return self.tt_hits / self.tt_probes if self.tt_probes else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes,
            "tt_probes": self.tt_probes,
            "tt_hits": self.tt_hits,
            "tt_hit_rate": round(self.tt_hit_rate, 4),
            "ms": round(self.ms, 3),
        }


class Solver:
    """The searches of one deal: one twin search (one table, every hero seat), one budget."""

    def __init__(
        self,
        contract: int,
        trump: int,
        flags: int,
        budget: Budget | None = None,
        twin: ModuleType | None = None,
    ) -> None:
        self.contract, self.trump, self.flags = contract, trump, flags
        self.budget = budget or Budget()
        self.twin = twin or par_twin()
        self._search: _Searcher = self.twin.ParSearch(contract, trump, flags)
        self._started = self.budget.clock()
        self._deadline = self._started + self.budget.ms * 1_000_000 if self.budget.ms else 0
        self._clock = self.budget.clock
        if self.budget.stop is not None:
            self._deadline = self._deadline or _NEVER
            self._clock = _stoppable(self.budget.clock, self.budget.stop)

    def units_left(
        self, deal: Deal, seat: int, guess: int = 0, floor: int = 0, ceiling: int = 13
    ) -> int:
        """The units ``seat`` is sure of from ``deal``'s position on (0 once it has ended);
        ``guess`` is where the search starts (a good one saves passes, any one is right).
        Only a value within ``floor`` .. ``ceiling`` is sought: one at or below the floor
        reads as the floor, one at or above the ceiling as the ceiling (fewer passes).

        Raises ``OutOfBudgetError`` when the deal's budget is spent."""
        if deal.end != END_PLAYING:
            return min(max(0, floor), ceiling)
        limit = self.budget.nodes
        if limit and self._search.nodes >= limit:
            raise OutOfBudgetError
        if self.budget.stop is not None and self.budget.stop():
            raise OutOfBudgetError
        value = self._search.units_left(
            seat,
            deal.held,
            deal.leader,
            deal.trick,
            deal.played,
            len(deal.winners),
            limit,
            self._deadline,
            self._clock if self._deadline else None,
            guess,
            floor,
            ceiling,
        )
        if value < 0:
            raise OutOfBudgetError
        return value

    def stats(self) -> Stats:
        search = self._search
        return Stats(
            search.nodes,
            search.tt_probes,
            search.tt_hits,
            (self.budget.clock() - self._started) / 1e6,
            tuple(search.nodes_by_card),
            search.tt_cuts,
            search.searched_starts,
        )


# -- a recorded deal as positions -----------------------------------------------------------


@dataclass(frozen=True)
class Course:
    """A recorded deal replayed for analysis: the position before each analysed play."""

    positions: list[Deal]  # positions[i]: before play i; one more after the last analysed
    plays: bytes  # the analysed plays
    stop: str | None  # why analysis stops before the recorded plays run out, if it does
    actual: tuple[int, int, int, int] | None  # units per seat of a deal played out legally


def replay_course(deal: pb.Deal, rules: Ruleset) -> Course:
    """Replay ``deal`` (which must be ``replayable``) up to its end or the first play that
    stops analysis (an illegal play, a penalized revoke)."""
    contract = int(deal.contract)
    state = Deal(
        deal.hands, deal.declarer, contract, engine_trump(deal), rules.deal_flags(contract)
    )
    # A revoke mark counts only under revoke = PENALIZE, as the engine judges it.
    penalize = rules.revoke is RevokeRule.PENALIZE
    revoke = deal.revoke_play if penalize and deal.HasField("revoke_play") else -1
    positions = [_clone(state)]
    stop: str | None = None
    analysed = 0
    for index, card in enumerate(deal.plays):
        if state.end != END_PLAYING:
            stop = f"{len(deal.plays) - index} play(s) recorded after the deal's end"
            break
        if index == revoke:
            stop = f"play {index + 1} is marked as a penalized revoke"
            break
        if card >= 52:
            stop = f"play {index + 1} is no card (byte {card})"
            break
        code, _legal = state.judge(card)
        if code != LEGAL:
            stop = f"play {index + 1} ({card_name(card)}) is illegal: {VERDICT_NAMES[code]}"
            break
        state.push(card)
        positions.append(_clone(state))
        analysed += 1
    actual = None
    if stop is None and state.end in (END_ALL_TRICKS, END_EARLY):
        actual = (state.units[0], state.units[1], state.units[2], state.units[3])
    elif stop is None:
        stop = f"the record stops after {analysed} play(s), before the deal's end"
    return Course(positions, bytes(deal.plays[:analysed]), stop, actual)


# -- par --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SeatPar:
    """One seat's par and actual result, in the contract's units and in points."""

    seat: int
    par: int | None  # None: unsolved (past the budget)
    actual: int | None  # None: the deal was not played out legally to its end
    unit_score: int

    @property
    def par_points(self) -> int | None:
        return None if self.par is None else self.par * self.unit_score

    @property
    def actual_points(self) -> int | None:
        return None if self.actual is None else self.actual * self.unit_score

    def to_json(self) -> dict[str, Any]:
        return {
            "seat": self.seat,
            "par": self.par,
            "par_points": self.par_points,
            "actual": self.actual,
            "actual_points": self.actual_points,
        }


@dataclass(frozen=True)
class DealPar:
    """Par of one deal at one position (``at_play``: before that play; 0 is the start)."""

    number: int
    contract: int
    declarer: int
    trump: int  # -1: none
    at_play: int
    seats: tuple[SeatPar, ...]
    solved: bool
    stop: str | None = None  # why the analysis stops short of the recorded plays, if it does
    analysed_plays: int = 0
    stats: Stats = field(default_factory=Stats)

    def to_json(self) -> dict[str, Any]:
        return {
            "deal": self.number,
            "contract": _contract_name(self.contract),
            "declarer": self.declarer,
            "trump": self.trump,
            "at_play": self.at_play,
            "solved": self.solved,
            "stop": self.stop,
            "analysed_plays": self.analysed_plays,
            "seats": [s.to_json() for s in self.seats],
            "search": self.stats.to_json(),
        }


def _contract_name(contract: int) -> str:
    known = contract in Contract._value2member_map_
    return Contract(contract).name if known else f"CONTRACT_{contract}"


def units_so_far(position: Deal, seat: int) -> int:
    return int(position.units[seat])


def _seats(seat: int | Iterable[int] | None) -> tuple[int, ...]:
    if seat is None:
        return (0, 1, 2, 3)
    seats = (seat,) if isinstance(seat, int) else tuple(seat)
    for s in seats:
        if not 0 <= s <= 3:
            raise ValueError(f"seat {s} is not a seat (0..3)")
    return seats


def four_seat_bounds(
    contract: int, in_play: int, known: Mapping[int, int], seat: int
) -> tuple[int, int]:
    """A floor and a ceiling on the units ``seat`` is sure of from a position on (its par
    less what it has taken), from the other seats' at the same position (``known``: seat ->
    its units from there on) and the units still in play there.

    Each seat can play for its own guarantee while the others play for theirs: the four
    strategies together make one line of play to the deal's end, on which every seat does
    at least as well as its guarantee, and which hands out every unit still in play (all
    thirteen tricks in koz, el almaz and son iki; in a card contract every penalty card,
    since the early end waits for the last one). So in koz the seats' tricks sum to at most
    those in play, each seat's to at most what the others' leave; in a penalty contract
    they sum to at least the units in play, and with all three others known the fourth is
    sure to take no less than what theirs leave (docs/ANALYSIS.md has the proof)."""
    others = [units for other, units in known.items() if other != seat]
    if contract == Contract.KOZ:
        return 0, max(0, in_play - sum(others))
    if len(others) == 3:
        return max(0, in_play - sum(others)), in_play
    return 0, in_play


def deal_par(
    deal: pb.Deal,
    rules: Ruleset,
    seat: int | Iterable[int] | None = None,
    at_play: int = 0,
    budget: Budget | None = None,
    *,
    number: int | None = None,
    solver: Solver | None = None,
) -> DealPar:
    """Each seat's par (or the given seats') at the position before play ``at_play``.

    Par counts the units a seat had already taken by then. ``at_play`` past the analysed
    plays raises ``ValueError``; a deal that cannot be replayed (bad deck, contract, seat,
    trump) gives a ``DealPar`` with no seats and ``stop`` saying why.
    """
    seats = _seats(seat)
    contract = int(deal.contract)
    num = deal.number if number is None else number
    if not replayable(deal):
        return DealPar(
            num,
            contract,
            deal.declarer,
            -1,
            at_play,
            (),
            False,
            "the deal cannot be replayed (bad deck, contract, declarer or trump)",
        )
    course = replay_course(deal, rules)
    if not 0 <= at_play < len(course.positions):
        raise ValueError(
            f"at_play {at_play} is outside the {len(course.positions) - 1} analysed play(s)"
        )
    trump = engine_trump(deal)
    solver = solver or Solver(contract, trump, rules.deal_flags(contract), budget)
    position = course.positions[at_play]
    unit = rules.unit_score(contract)
    results: list[SeatPar] = []
    solved = True
    # The units every seat has still to take: each one searched bounds the next ones'.
    in_play = UNITS_PER_DEAL[Contract(contract)] - sum(position.units)
    known: dict[int, int] = {}
    for s in seats:
        actual = None if course.actual is None else course.actual[s]
        try:
            taken = units_so_far(position, s)
            # What the seat went on to take as played is the search's first guess.
            guess = 0 if actual is None else actual - taken
            floor, ceiling = four_seat_bounds(contract, in_play, known, s)
            known[s] = solver.units_left(position, s, guess, floor, ceiling)
            par: int | None = taken + known[s]
        except OutOfBudgetError:
            par, solved = None, False
        results.append(SeatPar(s, par, actual, unit))
        if not solved:
            results.extend(
                SeatPar(r, None, None if course.actual is None else course.actual[r], unit)
                for r in seats[len(results) :]
            )
            break
    return DealPar(
        num,
        contract,
        deal.declarer,
        trump,
        at_play,
        tuple(results),
        solved,
        course.stop,
        len(course.plays),
        solver.stats(),
    )
