"""``kingrec analyse --db``: the stored matches analysed, the results kept in the store."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

from .bars import deal_columns
from .errors import EXIT_OK, EXIT_UNREADABLE, user_errors
from .terminal import Terminal, escape

__all__ = ["AnalyseOptions", "analyse_stored", "deals_past"]

EXIT_UNSOLVED = 1  # as kingrec analyse on files


@dataclass(frozen=True)
class AnalyseOptions:
    """What ``kingrec analyse`` was asked, for files or a store alike."""

    seats: tuple[int, ...]
    deals: frozenset[int]  # the deal numbers asked for, from 1 (empty: every deal)
    from_play: int
    par_only: bool
    jobs: int
    budget_ms: int
    budget_nodes: int


def deals_past(asked: frozenset[int], longest: int, matches: str) -> str | None:
    """What to say of the deal numbers ``asked`` for that no match has (``longest``: the
    most deals a match analysed has; ``matches``: what they are, "match" or "stored
    match"), or None when every one is some match's."""
    beyond = sorted(n for n in asked if n > longest)
    if not beyond:
        return None
    numbers = ", ".join(str(n) for n in beyond)
    return f"no {matches} has deal {numbers}: the longest has {longest} deal(s)"


def analyse_stored(
    term: Terminal,
    db: str | None,
    match_ids: Sequence[str] | None,
    options: AnalyseOptions,
    as_json: bool,
    progress: bool | None,
) -> None:
    """Analyse the stored matches (``match_ids``; None: all), report, exit."""
    from kingrec.store import Store
    from kingrec.store.db import default_path
    from kingrec.store.par import analyse_store

    columns = deal_columns("analysing stored deals")
    with (
        user_errors(),
        Store.open(db or default_path(), create=False) as store,  # a mistyped path: refused
        term.progress(columns, show=term.wants_bar(progress)) as bar,
    ):
        task_id = bar.add_task("deals", total=None)
        summary = analyse_store(
            store,
            match_ids,
            seats=options.seats,
            costs=not options.par_only,
            from_play=options.from_play,
            budget_ms=options.budget_ms,
            budget_nodes=options.budget_nodes,
            deals=options.deals,
            jobs=options.jobs,
            progress=lambda _par, _costs: bar.update(task_id, advance=1),
        )
        where = store.path
    for match_id in summary.missing:
        message = f"{where}: no stored match has the id {match_id!r}"
        if as_json:
            term.json({"type": "error", "code": "NOT_FOUND", "message": message})
        else:
            term.error(message)
    for problem in summary.skipped:
        if as_json:
            term.json({"type": "error", "code": "RULESET_INVALID", "message": problem})
        else:
            term.error(problem)
    past = deals_past(options.deals, summary.longest, "stored match")
    if past is not None and summary.matches:
        term.note(past)
    if as_json:
        term.json({"type": "summary", "db": where, **summary.to_dict()})
    else:
        term.report(
            f"analysed {summary.deals} deal(s) of {summary.matches} stored match(es) into "
            f"{escape(where)}: {summary.solved} solved, {summary.unsolved} unsolved"
            + (
                f" ({summary.costs_unsolved} more with card costs past the budget)"
                if summary.costs_unsolved
                else ""
            )
            + f", {summary.costly} costly card(s), {summary.nodes} positions searched"
        )
    if summary.missing or summary.skipped:
        sys.exit(EXIT_UNREADABLE)
    sys.exit(EXIT_UNSOLVED if summary.unsolved or summary.costs_unsolved else EXIT_OK)
