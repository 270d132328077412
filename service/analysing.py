"""The Analyse RPC: par analysis of one match, with the work of a call bounded.

A par search is CPU work of seconds per deal; an attacker asking for many deals with a big
budget would hold a thread for as long as it liked. A call is therefore checked before any
search runs: at most ``MAX_DEALS`` deals, ``MAX_BUDGET_MS`` per deal and ``MAX_CALL_MS`` for
the call (deals times the per-deal budget); past a bound it is refused with LIMIT_EXCEEDED.
What the request alone decides (``check_request``) and the server's cap below are checked
before its match is read: a refused call costs no store read and decodes no record.

The searches run on the server's ``Analyser``: threads of their own
(``AnalyseLimits.threads``), never the event loop nor the threads the other calls share
(asyncio's default pool), so many calls cannot starve Validate or the store's calls. At
most ``AnalyseLimits.waiting`` calls wait for a thread behind those searching; one more is
refused at once, before any search (``AnalysisBusyError``: RESOURCE_EXHAUSTED,
``kingrec-code`` ANALYSES_BUSY), rather than queued without end. A call that ends before its
search does (the client cancelled, its deadline passed, the server stops) stops the search
(``Budget.stop``: the twins see it where they look at the clock), so its thread is free for
the next call within a few thousand positions.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from kingrec.analysis.batch import DealTask, analyse_deal
from kingrec.analysis.par import DealPar
from kingrec.analysis.review import DealReview
from kingrec.boundary import ruleset_from_proto
from kingrec.v1 import record_pb2 as pb
from kingrec.v1 import service_pb2 as svc

from .errors import AnalysisBusyError, AnalysisTooBigError, BadRequestError, ShuttingDownError

__all__ = [
    "DEFAULT_BUDGET_MS",
    "MAX_BUDGET_MS",
    "MAX_CALL_MS",
    "MAX_DEALS",
    "SEARCH_THREADS",
    "WAITING_CALLS",
    "AnalyseLimits",
    "Analyser",
    "check_request",
]

MAX_DEALS = 20
DEFAULT_BUDGET_MS = 2000
MAX_BUDGET_MS = 10_000
MAX_CALL_MS = 20_000
SEARCH_THREADS = 2  # a search is CPU work: more threads than cores only share them
# Calls that may wait for a search thread. Each may search for MAX_CALL_MS, so the last of
# them waits at most WAITING_CALLS / SEARCH_THREADS * MAX_CALL_MS (40 s) before it starts:
# about as long as a client would wait, and the server holds no more than that in hand.
WAITING_CALLS = 4
STOPPING = "the server is shutting down: analyse again once it is back"


@dataclass(frozen=True)
class AnalyseLimits:
    """How many Analyse calls search at once (``threads``) and how many more may wait for
    a thread (``waiting``; 0: none, a call finds a thread free or is refused)."""

    threads: int = SEARCH_THREADS
    waiting: int = WAITING_CALLS


def check_request(request: svc.AnalyseRequest) -> None:
    """The bounds a request breaks whatever match it names (its seats, its trick, the deals
    and budget it asks for): checked before the match is read, so a call refused for its
    size costs no store read."""
    seats = request.seats
    if any(s > 3 for s in seats):
        raise BadRequestError(f"seat {max(seats)} is not a seat (0..3)")
    if request.from_trick > 13:
        raise BadRequestError(f"from_trick {request.from_trick} is past trick 13")
    _check_size(len(dict.fromkeys(request.deals)), request.budget_ms or DEFAULT_BUDGET_MS)


def _check_size(deals: int, budget_ms: int) -> None:
    if deals > MAX_DEALS:
        raise AnalysisTooBigError(
            f"{deals} deals asked for; one call analyses at most {MAX_DEALS} "
            "(ask for the rest in further calls)"
        )
    if budget_ms > MAX_BUDGET_MS:
        raise AnalysisTooBigError(
            f"budget_ms {budget_ms} is over the {MAX_BUDGET_MS} ms a deal may use"
        )
    if deals * budget_ms > MAX_CALL_MS:
        raise AnalysisTooBigError(
            f"{deals} deals of {budget_ms} ms each is over the {MAX_CALL_MS} ms one "
            "call may search; ask for fewer deals or a smaller budget_ms"
        )


def _tasks(match: pb.Match, request: svc.AnalyseRequest) -> list[DealTask]:
    """The request's deals of ``match`` as tasks, once the request, already within
    ``check_request``'s bounds, is within those of the match too: its deals, all of them
    when none is named."""
    rules = ruleset_from_proto(match.ruleset)  # RulesetError: the client's input
    count = len(match.deals)
    numbers = list(dict.fromkeys(request.deals)) or list(range(1, count + 1))
    for number in numbers:
        if not 1 <= number <= count:
            raise BadRequestError(f"deal {number} is not in the match (deals 1..{count})")
    seats = tuple(sorted(set(request.seats))) or (0, 1, 2, 3)
    budget_ms = request.budget_ms or DEFAULT_BUDGET_MS
    _check_size(len(numbers), budget_ms)
    from_play = 4 * (max(request.from_trick, 1) - 1)
    return [
        DealTask(
            match.deals[n - 1].SerializeToString(),
            rules,
            n,
            seats,
            not request.par_only,
            budget_ms,
            request.budget_nodes,
            from_play,
        )
        for n in numbers
    ]


def _deal(result: DealReview | DealPar) -> svc.DealAnalysis:
    review = result if isinstance(result, DealReview) else None
    par = review.par if review is not None else result
    assert isinstance(par, DealPar)
    out = svc.DealAnalysis(
        deal=par.number,
        contract=par.contract,  # type: ignore[arg-type]  # the engine's numbers are the enum's
        declarer=par.declarer,
        from_play=par.at_play,
        solved=par.solved,
        costs_solved=review is not None and review.solved,
        stop=par.stop or "",
        analysed_plays=par.analysed_plays,
        nodes=par.stats.nodes,
        search_ms=par.stats.ms,
    )
    for seat in par.seats:
        entry = out.seats.add(seat=seat.seat)
        if seat.par is not None and seat.par_points is not None:
            entry.par, entry.par_points = seat.par, seat.par_points
        if seat.actual is not None and seat.actual_points is not None:
            entry.actual, entry.actual_points = seat.actual, seat.actual_points
    for cost in review.plays if review is not None else ():
        out.plays.add(
            play=cost.play,
            trick=cost.trick,
            seat=cost.seat,
            card=cost.card,
            before=cost.before,
            after=cost.after,
            cost_units=cost.cost,
            cost_points=cost.cost_points,
            best=list(cost.best),
        )
    return out


def _analyse(tasks: Sequence[DealTask], stop: threading.Event) -> svc.AnalyseResponse:
    deals = []
    for task in tasks:
        if stop.is_set():  # the caller is gone: the deals left would be searched for nobody
            break
        deals.append(_deal(analyse_deal(task, stop.is_set)))
    return svc.AnalyseResponse(deals=deals)


class Analyser:
    """The server's par searches: ``limits.threads`` threads, ``limits.waiting`` calls
    waiting behind them at most, each call's search stopped when the call ends first."""

    def __init__(self, limits: AnalyseLimits | None = None) -> None:
        self.limits = limits or AnalyseLimits()
        self._pool = ThreadPoolExecutor(self.limits.threads, thread_name_prefix="kingrec-analyse")
        self._lock = threading.Lock()
        self._stops: set[threading.Event] = set()  # one per call searching or waiting
        self._closed = False

    @property
    def in_flight(self) -> int:
        """Calls searching or waiting for a search thread."""
        with self._lock:
            return len(self._stops)

    def _admit(self) -> threading.Event:
        places = self.limits.threads + self.limits.waiting
        with self._lock:
            if self._closed:
                raise ShuttingDownError(STOPPING)
            if len(self._stops) >= places:
                raise AnalysisBusyError(
                    f"the server searches {self.limits.threads} Analyse call(s) at once and "
                    f"keeps {self.limits.waiting} waiting, and all {places} places are taken; "
                    "try again shortly"
                )
            stop = threading.Event()
            self._stops.add(stop)
        return stop

    def _give_back(self, stop: threading.Event) -> None:
        with self._lock:
            self._stops.discard(stop)

    async def analyse(
        self, request: svc.AnalyseRequest, match_of: Callable[[], Awaitable[pb.Match]]
    ) -> svc.AnalyseResponse:
        """The analysis ``request`` asks for of the match ``match_of`` reads, searched on a
        search thread. The bounds of the request (``AnalysisTooBigError``, BadRequestError)
        and the server's (``AnalysisBusyError``) are checked before the match is read: a
        refused call reads no store and decodes no record."""
        check_request(request)
        stop = self._admit()
        try:
            tasks = _tasks(await match_of(), request)
        except BaseException:  # no such match, a bound of the match, the call gone: free
            self._give_back(stop)
            raise
        try:
            work = self._pool.submit(_analyse, tasks, stop)
        except RuntimeError:  # closed between the admission and here
            self._give_back(stop)
            raise ShuttingDownError(STOPPING) from None
        # The place is given back when the work is done or dropped, not when the call ends:
        # a stopped search still holds its thread for the few positions until it looks.
        work.add_done_callback(lambda _: self._give_back(stop))
        try:
            return await asyncio.wrap_future(work)
        except asyncio.CancelledError:
            stop.set()  # the call ended first (cancelled, past its deadline): stop searching
            work.cancel()  # and if it still waits for a thread, drop it
            raise

    def close(self) -> None:
        """Stop every search, take no more calls, let the threads end."""
        with self._lock:
            self._closed = True
            stops = list(self._stops)
        for stop in stops:
            stop.set()
        self._pool.shutdown(wait=False, cancel_futures=True)
