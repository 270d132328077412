"""The par analysis of stored deals: ``kingrec.analysis`` run over a store, kept in it.

``analyse_store(store, ...)`` reads stored records (every one, or those of some match ids),
analyses their deals (``kingrec.analysis.batch``: each deal its own budget, on one process
or several) and writes the results into ``deal_par`` (a row per deal and seat) and
``play_costs`` (a row per priced play). A batch of deals is one transaction that first
deletes those deals' rows: an interrupted run leaves whole deals, and a rerun replaces a
deal's rows rather than adding to them. Deals past their budget are stored *unsolved*
(``solved`` false, ``par`` NULL), never guessed.
"""

from __future__ import annotations

import datetime as dt
from collections import deque
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..analysis.batch import DealTask, analyse_deals
from ..analysis.par import DealPar, _contract_name
from ..analysis.review import DealReview
from ..boundary import ruleset_from_proto
from ..contracts import Contract
from ..errors import RulesetError, StoreError
from ..v1 import record_pb2 as pb
from .store import Store

__all__ = ["BATCH_DEALS", "AnalysisSummary", "analyse_store"]

# Deals per transaction: a deal takes milliseconds to seconds to solve, so a commit per few
# dozen costs nothing and an interrupt loses at most that many deals' work.
BATCH_DEALS = 32


@dataclass
class AnalysisSummary:
    """What one analysis of a store did."""

    matches: int = 0
    deals: int = 0
    solved: int = 0  # deals whose par was found within the budget
    unsolved: int = 0
    costs_unsolved: int = 0  # deals with par found but the card costs past the budget
    costly: int = 0  # plays that cost anything
    nodes: int = 0
    skipped: list[str] = field(default_factory=list)  # matches whose ruleset cannot be used
    missing: list[str] = field(default_factory=list)  # match ids asked for but not stored
    longest: int = 0  # the most deals a match analysed has: a deal number past it is none's

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class _Source:
    match_key: int
    deal: int
    declarer: int
    contract: str | None


def analyse_store(
    store: Store,
    match_ids: Sequence[str] | None = None,
    *,
    seats: tuple[int, ...] = (0, 1, 2, 3),
    costs: bool = True,
    from_play: int = 0,
    budget_ms: int = 0,
    budget_nodes: int = 0,
    deals: Collection[int] = (),
    jobs: int = 1,
    batch_deals: int = BATCH_DEALS,
    progress: Callable[[DealPar, bool], object] | None = None,
) -> AnalysisSummary:
    """Analyse the deals of the stored matches (``match_ids``; None: every stored match;
    ``deals``: only those deal numbers, from 1, of each) and store the results;
    ``progress(par, costs_solved)`` is called after each deal."""
    if store.read_only:
        raise StoreError(f"{store.path}: opened read-only; the analysis must write to it")
    summary = AnalysisSummary()
    sources: deque[_Source] = deque()

    def tasks() -> Iterator[DealTask]:
        for key, record in _records(store, match_ids, summary):
            match = pb.Match.FromString(record)
            try:
                rules = ruleset_from_proto(match.ruleset)
            except RulesetError as exc:
                summary.skipped.append(f"match {match.match_id or key}: {exc}")
                continue
            summary.matches += 1
            summary.longest = max(summary.longest, len(match.deals))
            for number, deal in enumerate(match.deals, start=1):
                if deals and number not in deals:
                    continue
                known = int(deal.contract) in Contract._value2member_map_
                name = _contract_name(int(deal.contract)) if known else None
                sources.append(_Source(key, number, deal.declarer, name))
                yield DealTask(
                    deal.SerializeToString(),
                    rules,
                    number,
                    seats,
                    costs,
                    budget_ms,
                    budget_nodes,
                    from_play,
                )

    pending: list[tuple[_Source, DealPar, DealReview | None]] = []
    for result in analyse_deals(tasks(), jobs):
        source = sources.popleft()
        review = result if isinstance(result, DealReview) else None
        par = review.par if review is not None else result
        assert isinstance(par, DealPar)
        _count(summary, par, review)
        pending.append((source, par, review))
        if progress is not None:
            progress(par, review is not None and review.solved)
        if len(pending) >= batch_deals:
            _write(store, pending, budget_ms, budget_nodes)
            pending = []
    if pending:
        _write(store, pending, budget_ms, budget_nodes)
    return summary


def _records(
    store: Store, match_ids: Sequence[str] | None, summary: AnalysisSummary
) -> Iterator[tuple[int, bytes]]:
    """(match_key, record bytes) of the matches asked for, in store order, one at a time."""
    if match_ids is None:
        rows = store.con.execute("SELECT match_key FROM matches ORDER BY match_key").fetchall()
        keys = [int(r[0]) for r in rows]
    else:
        keys = []
        for match_id in dict.fromkeys(match_ids):
            rows = store.con.execute(
                "SELECT match_key FROM matches WHERE match_id = ? ORDER BY match_key", [match_id]
            ).fetchall()
            if not rows:
                summary.missing.append(match_id)
            keys += [int(r[0]) for r in rows]
    for key in keys:
        # The key as a constant, so the records view reads that match's pieces only.
        found = store.con.execute(
            "SELECT record FROM records WHERE match_key = ?", [key]
        ).fetchall()
        if found:
            yield key, bytes(found[0][0])


def _count(summary: AnalysisSummary, par: DealPar, review: DealReview | None) -> None:
    summary.deals += 1
    summary.nodes += par.stats.nodes
    if par.solved:
        summary.solved += 1
        if review is not None and not review.solved:
            summary.costs_unsolved += 1
    else:
        summary.unsolved += 1
    if review is not None:
        summary.costly += len(review.costly)


def _write(
    store: Store,
    results: list[tuple[_Source, DealPar, DealReview | None]],
    budget_ms: int,
    budget_nodes: int,
) -> None:
    """One transaction: the deals' old rows out, their new rows in."""
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    deals = [(s.match_key, s.deal) for s, _, _ in results]
    par_rows: list[tuple[Any, ...]] = []
    cost_rows: list[tuple[Any, ...]] = []
    for source, par, review in results:
        costs_solved = review is not None and review.solved
        for seat in par.seats:
            par_rows.append(
                (
                    source.match_key,
                    source.deal,
                    seat.seat,
                    source.contract,
                    source.declarer,
                    par.at_play,
                    par.solved,
                    seat.par,
                    seat.actual,
                    seat.par_points,
                    seat.actual_points,
                    costs_solved,
                    par.analysed_plays,
                    par.stop,
                    par.stats.nodes,
                    par.stats.ms,
                    budget_ms,
                    budget_nodes,
                    now,
                )
            )
        if not par.seats:  # a deal that cannot be replayed: one row says so
            par_rows.append(
                (
                    source.match_key,
                    source.deal,
                    None,
                    source.contract,
                    source.declarer,
                    par.at_play,
                    False,
                    None,
                    None,
                    None,
                    None,
                    False,
                    0,
                    par.stop,
                    par.stats.nodes,
                    par.stats.ms,
                    budget_ms,
                    budget_nodes,
                    now,
                )
            )
        for cost in review.plays if review is not None else ():
            cost_rows.append(
                (
                    source.match_key,
                    source.deal,
                    cost.play,
                    cost.trick,
                    cost.seat,
                    cost.card,
                    source.contract,
                    cost.before,
                    cost.after,
                    cost.cost,
                    cost.cost_points,
                    list(cost.best),
                )
            )
    con = store.con
    con.execute("BEGIN")
    try:
        for table in ("deal_par", "play_costs"):
            con.executemany(f"DELETE FROM {table} WHERE match_key = ? AND deal = ?", deals)
        if par_rows:
            con.executemany(f"INSERT INTO deal_par VALUES ({_marks(19)})", par_rows)
        if cost_rows:
            con.executemany(f"INSERT INTO play_costs VALUES ({_marks(12)})", cost_rows)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def _marks(n: int) -> str:
    return ", ".join("?" * n)
