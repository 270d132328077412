"""The Analyse RPC: par analysis of one match, with the work of a call bounded.

A par search is CPU work of seconds per deal; an attacker asking for many deals with a big
budget would hold a thread for as long as it liked. A call is therefore checked before any
search runs: at most ``MAX_DEALS`` deals, ``MAX_BUDGET_MS`` per deal and ``MAX_CALL_MS`` for
the call (deals times the per-deal budget); past a bound it is refused with LIMIT_EXCEEDED.
The searches run on threads of their own (``SEARCH_THREADS``), never on the event loop nor
on the threads the other calls share (asyncio's default pool): calls past those wait, and
many of them cannot starve Validate or the store's calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from kingrec.analysis.batch import DealTask, analyse_deal
from kingrec.analysis.par import DealPar
from kingrec.analysis.review import DealReview
from kingrec.boundary import ruleset_from_proto
from kingrec.v1 import record_pb2 as pb
from kingrec.v1 import service_pb2 as svc

from .errors import AnalysisTooBigError, BadRequestError

__all__ = [
    "DEFAULT_BUDGET_MS",
    "MAX_BUDGET_MS",
    "MAX_CALL_MS",
    "MAX_DEALS",
    "SEARCH_THREADS",
    "analyse_match",
]

MAX_DEALS = 20
DEFAULT_BUDGET_MS = 2000
MAX_BUDGET_MS = 10_000
MAX_CALL_MS = 20_000
SEARCH_THREADS = 2  # a search is CPU work: more threads than cores only share them
_SEARCHES = ThreadPoolExecutor(SEARCH_THREADS, thread_name_prefix="kingrec-analyse")


def _tasks(match: pb.Match, request: svc.AnalyseRequest) -> list[DealTask]:
    """The request's deals as tasks, once the request is within every bound."""
    rules = ruleset_from_proto(match.ruleset)  # RulesetError: the client's input
    count = len(match.deals)
    numbers = list(dict.fromkeys(request.deals)) or list(range(1, count + 1))
    for number in numbers:
        if not 1 <= number <= count:
            raise BadRequestError(f"deal {number} is not in the match (deals 1..{count})")
    seats = tuple(sorted(set(request.seats))) or (0, 1, 2, 3)
    if any(s > 3 for s in seats):
        raise BadRequestError(f"seat {max(seats)} is not a seat (0..3)")
    if request.from_trick > 13:
        raise BadRequestError(f"from_trick {request.from_trick} is past trick 13")
    budget_ms = request.budget_ms or DEFAULT_BUDGET_MS
    if len(numbers) > MAX_DEALS:
        raise AnalysisTooBigError(
            f"{len(numbers)} deals asked for; one call analyses at most {MAX_DEALS} "
            "(ask for the rest in further calls)"
        )
    if budget_ms > MAX_BUDGET_MS:
        raise AnalysisTooBigError(
            f"budget_ms {budget_ms} is over the {MAX_BUDGET_MS} ms a deal may use"
        )
    if len(numbers) * budget_ms > MAX_CALL_MS:
        raise AnalysisTooBigError(
            f"{len(numbers)} deals of {budget_ms} ms each is over the {MAX_CALL_MS} ms one "
            "call may search; ask for fewer deals or a smaller budget_ms"
        )
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


def _analyse(tasks: Sequence[DealTask]) -> svc.AnalyseResponse:
    return svc.AnalyseResponse(deals=[_deal(analyse_deal(task)) for task in tasks])


async def analyse_match(match: pb.Match, request: svc.AnalyseRequest) -> svc.AnalyseResponse:
    """The analysis ``request`` asks for of ``match``, searched on a search thread."""
    tasks = _tasks(match, request)
    return await asyncio.get_running_loop().run_in_executor(_SEARCHES, _analyse, tasks)
