"""Many deals analysed in order, on one process or several: what ``kingrec analyse`` runs.

``analyse_deals(tasks, jobs)`` yields each task's result (``DealReview``, or ``DealPar``
for a par-only task) in the order of the tasks, with at most a bounded window of tasks in
flight, so memory stays flat however many deals there are. Each deal has its own budget;
a worker is one process per job (``jobs`` > 1) that ends with the run.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.pool
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from ..boundary import replayable
from ..rules import Ruleset
from ..v1 import record_pb2 as pb
from ..workers import run_pool
from .par import Budget, DealPar, deal_par, replay_course
from .review import DealReview, review_deal

__all__ = ["DealTask", "analyse_deal", "analyse_deals"]

_WINDOW_PER_JOB = 8  # tasks in flight per worker: enough to keep it busy, few to hold


@dataclass(frozen=True)
class DealTask:
    """One deal to analyse: its record bytes, its ruleset, where it is, what is asked."""

    deal: bytes  # a serialized kingrec.v1.Deal
    rules: Ruleset
    number: int  # the deal's position in its match, from 1
    seats: tuple[int, ...] = (0, 1, 2, 3)
    costs: bool = True  # price every play, not only the par
    budget_ms: int = 0
    budget_nodes: int = 0
    from_play: int = 0  # analyse from the position before this play (past the end: the end)


def analyse_deal(task: DealTask, stop: Callable[[], bool] | None = None) -> DealReview | DealPar:
    """The analysis one task asks for, on this process; ``stop`` (a caller gone) ends its
    search early, the deal then unsolved (``Budget.stop``)."""
    deal = pb.Deal.FromString(task.deal)
    budget = Budget(ms=task.budget_ms, nodes=task.budget_nodes, stop=stop)
    start = 0
    if task.from_play and replayable(deal):
        start = min(task.from_play, len(replay_course(deal, task.rules).plays))
    if task.costs:
        return review_deal(
            deal, task.rules, task.seats, budget, from_play=start, number=task.number
        )
    return deal_par(deal, task.rules, task.seats, start, budget, number=task.number)


def analyse_deals(tasks: Iterable[DealTask], jobs: int = 1) -> Iterator[DealReview | DealPar]:
    """Each task's result, in the order of ``tasks``; ``jobs`` processes (1: this one)."""
    if jobs <= 1:
        for task in tasks:
            yield analyse_deal(task)
        return
    with run_pool(jobs) as pool:  # terminated on any failure or interrupt
        pending: deque[multiprocessing.pool.AsyncResult[DealReview | DealPar]] = deque()
        todo = iter(tasks)
        exhausted = False
        while not exhausted or pending:
            while not exhausted and len(pending) < _WINDOW_PER_JOB * jobs:
                following = next(todo, None)
                if following is None:
                    exhausted = True
                    break
                pending.append(pool.apply_async(analyse_deal, (following,)))
            if pending:
                yield pending.popleft().get()
