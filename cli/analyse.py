"""``kingrec analyse``: each deal's par, and what each card cost (docs/ANALYSIS.md)."""

from __future__ import annotations

import shlex
import sys
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

import click

from kingrec.analysis.batch import DealTask, analyse_deals
from kingrec.analysis.par import DealPar
from kingrec.analysis.review import DealReview, PlayCost
from kingrec.boundary import ruleset_from_proto
from kingrec.cards import SUIT_NAMES
from kingrec.contracts import Contract
from kingrec.errors import RulesetError
from kingrec.findings import Location
from kingrec.paths import NotRecords, PathProblem, record_paths
from kingrec.records import Damage, open_records
from kingrec.verdicts import skipped_object

from .bars import deal_columns
from .errors import (
    EXIT_CLOSED_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_UNREADABLE,
    Failed,
    user_errors,
)
from .helptext import Command, epilog
from .lines import damage_line
from .matchview import seat_names
from .places import place
from .store_analysis import AnalyseOptions, analyse_stored, deals_past
from .store_option import store_option
from .terminal import Terminal, escape

__all__ = ["analyse"]

EXIT_UNSOLVED = 1

EXAMPLES = [
    ("kingrec analyse games.krec", "every deal: par, actual, the costly cards"),
    ("kingrec analyse games.krec --deal 3 --seat 0", "deal 3 of each match, seat 0 only"),
    ("kingrec analyse games.krec --deal 1 --deal 3", "deals 1 and 3 of each match"),
    ("kingrec analyse games.krec --par-only --jobs 2", "par and actual only, on two cores"),
    ("kingrec analyse games.krec --json | jq .", "one JSON object per deal, then a summary"),
    ("kingrec analyse big.krec --budget-ms 2000", "give up on a deal after 2 s (unsolved)"),
    ("kingrec analyse games.krec --from-trick 6", "par from trick 6 on, and the cards after"),
    ("kingrec analyse --db games.duckdb --all", "the stored deals, results kept in the store"),
]


@dataclass(frozen=True)
class _Where:
    """Where a task's deal comes from, for its report."""

    location: Location
    match_id: str
    names: list[str]


@dataclass
class _Tally:
    files: int = 0
    matches: int = 0
    deals: int = 0
    solved: int = 0
    unsolved: int = 0
    costly: int = 0
    nodes: int = 0
    unreadable: int = 0
    damaged: int = 0
    skipped: int = 0  # matches whose ruleset cannot be used

    def to_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@click.command(
    cls=Command,
    epilog=epilog(
        EXAMPLES,
        (
            (EXIT_OK, "every deal asked for analysed (stopped-short deals up to their stop)"),
            (EXIT_UNSOLVED, "some deal unsolved: its search ran past the budget"),
            (EXIT_UNREADABLE, "a file unreadable or damaged, a ruleset unusable, or bad usage"),
            EXIT_INTERNAL,
            EXIT_INTERRUPTED,
            EXIT_CLOSED_PIPE,
        ),
    ),
)
@click.argument("files", nargs=-1, type=click.Path(allow_dash=True))
@store_option(
    "Analyse the matches stored in this store instead of FILES, and keep the results in "
    "its tables deal_par and play_costs (with --all or --match)",
    metavar="PATH",
)
@click.option("--all", "all_matches", is_flag=True, help="With --db: analyse every stored match.")
@click.option(
    "--match",
    "match_ids",
    multiple=True,
    metavar="ID",
    help="With --db: analyse the stored match ID; repeat for more.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per deal, then a summary.")
@click.option(
    "--seat",
    "seats",
    type=click.IntRange(0, 3),
    multiple=True,
    metavar="S",
    help="Analyse only seat S (0..3, in order of play); repeat for more. Default: all four.",
)
@click.option(
    "--deal",
    "deal_numbers",
    type=click.IntRange(min=1),
    multiple=True,
    metavar="N",
    help="Analyse only deal N (from 1) of each match; repeat for more (--deal 1 --deal 3). "
    "Default: every deal.",
)
@click.option(
    "--from-trick",
    type=click.IntRange(1, 13),
    default=1,
    show_default=True,
    metavar="T",
    help="Analyse from the start of trick T on: par there (counting the units taken "
    "before it) and the cards from there on. Later tricks are much faster to solve.",
)
@click.option(
    "--par-only",
    is_flag=True,
    help="Only each seat's par and actual result; do not price the cards (much faster).",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="N",
    help="Analyse on N processes; the reports keep the order of the files.",
)
@click.option(
    "--budget-ms",
    type=click.IntRange(min=0),
    default=10_000,
    show_default=True,
    metavar="MS",
    help="Search time allowed per deal; a deal past it is reported unsolved, never guessed "
    "(0: no limit).",
)
@click.option(
    "--budget-nodes",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    metavar="N",
    help="Positions a deal's search may visit (0: no limit); unlike time, the same on "
    "every machine.",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Show a progress bar on standard error (default: when it is a terminal).",
)
def analyse(
    files: tuple[str, ...],
    as_json: bool,
    seats: tuple[int, ...],
    deal_numbers: tuple[int, ...],
    from_trick: int,
    par_only: bool,
    jobs: int,
    budget_ms: int,
    budget_nodes: int,
    progress: bool | None,
    db: str | None,
    all_matches: bool,
    match_ids: tuple[str, ...],
) -> None:
    """Find each deal's par in FILES: the units (tricks, hearts, queens, ...) each seat
    could have made sure of with every hand known and the other three playing against it;
    and for every card, what it cost its player against that guarantee.

    Each deal is shown with every seat's par and actual result (units and points), then
    each card that cost anything, with the cards that would have kept the guarantee. A
    deal is analysed up to its first illegal play or penalized revoke, and says so. FILES
    are .krec containers or JSON records, or directories of them; - reads standard input.

    With --db, the stored matches are analysed instead (--all, or --match ID) and each
    deal's par and card costs are kept in the store (tables deal_par and play_costs, which
    kingrec stats and kingrec query read); analysing a deal again replaces its rows.
    """
    term = Terminal()
    tally = _Tally()
    wanted = tuple(sorted(set(seats))) or (0, 1, 2, 3)
    only = frozenset(deal_numbers)
    options = AnalyseOptions(
        wanted, only, 4 * (from_trick - 1), par_only, jobs, budget_ms, budget_nodes
    )
    if db is not None or all_matches or match_ids:
        if files:
            raise click.UsageError(_store_first(click.get_current_context(), files, db))
        if not all_matches and not match_ids:
            raise click.UsageError("with --db, say which stored matches: --all or --match ID")
        if all_matches and match_ids:
            raise click.UsageError("give --all or --match, not both")
        analyse_stored(term, db, None if all_matches else match_ids, options, as_json, progress)
    if not files:
        raise click.UsageError("give FILES to analyse (or --db PATH with --all or --match ID)")
    wheres: deque[_Where] = deque()
    longest = 0  # the most deals a match has: a --deal past it is no match's

    def tasks() -> Iterator[DealTask]:
        nonlocal longest
        for path in record_paths(files):
            if isinstance(path, PathProblem):
                tally.unreadable += 1
                _problem(term, as_json, path.path, path.code, path.message)
                continue
            if isinstance(path, NotRecords):  # a manifest beside the records, as validate says
                if as_json:
                    term.json(skipped_object(path.path, path.message))
                else:
                    term.note(path.message)
                continue
            try:
                with user_errors(), open_records(path) as records:
                    tally.files += 1
                    for item in records:
                        if isinstance(item, Damage):
                            tally.damaged += 1
                            _damage(term, as_json, item)
                            continue
                        match = item.match
                        try:
                            rules = ruleset_from_proto(match.ruleset)
                        except RulesetError as exc:
                            tally.skipped += 1
                            where = place(item.location)
                            _problem(term, as_json, where, exc.code, f"{where}: {exc}")
                            continue
                        tally.matches += 1
                        longest = max(longest, len(match.deals))
                        names = seat_names(match)
                        for number, deal in enumerate(match.deals, start=1):
                            if only and number not in only:
                                continue
                            wheres.append(_Where(item.location, match.match_id, names))
                            yield DealTask(
                                deal.SerializeToString(),
                                rules,
                                number,
                                wanted,
                                not par_only,
                                budget_ms,
                                budget_nodes,
                                4 * (from_trick - 1),
                            )
            except Failed as exc:
                tally.unreadable += 1
                _problem(term, as_json, path, exc.code, exc.format_message())

    columns = deal_columns("analysing deals")
    with term.progress(columns, show=term.wants_bar(progress)) as bar:
        task_id = bar.add_task("deals", total=None)
        for result in analyse_deals(tasks(), jobs):
            where = wheres.popleft()
            tally.deals += 1
            review = result if isinstance(result, DealReview) else None
            par = review.par if review is not None else result
            assert isinstance(par, DealPar)
            solved = review.solved if review is not None else par.solved
            if solved:
                tally.solved += 1
            else:
                tally.unsolved += 1
            tally.nodes += par.stats.nodes
            costly = review.costly if review is not None else ()
            tally.costly += len(costly)
            if as_json:
                body = review.to_json() if review is not None else par.to_json()
                term.json(
                    {"type": "deal", **_where_json(where), **body},
                )
            else:
                _deal_report(term, where, par, review, budget_ms, budget_nodes)
            bar.update(task_id, advance=1)
    past = deals_past(only, longest, "match")
    if past is not None and tally.matches:
        term.note(past)
    if as_json:
        term.json({"type": "summary", **tally.to_dict()})
    else:
        term.report(_summary(tally))
    if tally.unreadable or tally.damaged or tally.skipped:
        sys.exit(EXIT_UNREADABLE)
    sys.exit(EXIT_UNSOLVED if tally.unsolved else EXIT_OK)


def _store_first(ctx: click.Context, files: tuple[str, ...], db: str | None) -> str:
    """The refusal of FILES with --db, naming the two commands that do it: the analysis of
    a store reads its stored records, so FILES are ingested first."""
    store = ["--db", db] if db is not None else []
    ingest = ["kingrec", "ingest", *files, *store]
    asked = _given_options(ctx)
    if "--all" not in asked and "--match" not in asked:
        asked.append("--all")
    analyse = ["kingrec", "analyse", *asked]
    return (
        "give FILES or --db, not both: --db analyses the records stored there, so store "
        f"FILES first, then analyse them there:\n  {shlex.join(ingest)}\n  {shlex.join(analyse)}"
    )


def _given_options(ctx: click.Context) -> list[str]:
    """The options given on the command line, as they would be typed again."""
    words: list[str] = []
    for param in ctx.command.params:
        name = param.name
        if not isinstance(param, click.Option) or name is None:
            continue
        if ctx.get_parameter_source(name) is not click.core.ParameterSource.COMMANDLINE:
            continue
        value = ctx.params[name]
        flag = max(param.opts, key=len)
        if param.is_flag and param.secondary_opts and not value:
            words.append(max(param.secondary_opts, key=len))
        elif param.is_flag:
            words.append(flag)
        else:
            for item in value if param.multiple else (value,):
                words += [flag, str(item)]
    return words


def _where_json(where: _Where) -> dict[str, object]:
    loc = where.location
    return {"file": loc.file, "frame": loc.frame, "line": loc.line, "match": where.match_id}


def _problem(term: Terminal, as_json: bool, path: str, code: str, message: str) -> None:
    if as_json:
        term.json({"type": "error", "file": path, "code": code, "message": message})
    else:
        term.error(message)


def _damage(term: Terminal, as_json: bool, item: Damage) -> None:
    if as_json:
        loc = item.location
        term.json(
            {
                "type": "damage",
                "file": loc.file,
                "frame": loc.frame,
                "offset": loc.offset,
                "line": loc.line,
                "code": item.code,
                "message": item.message,
            }
        )
    else:
        term.report(damage_line(term, item))


def _label(contract: int) -> str:
    try:
        return Contract(contract).label
    except ValueError:
        return f"contract {contract} (unknown)"


def _deal_report(
    term: Terminal,
    where: _Where,
    par: DealPar,
    review: DealReview | None,
    budget_ms: int,
    budget_nodes: int,
) -> None:
    contract = _label(par.contract)
    if par.trump >= 0:
        contract += f" ({SUIT_NAMES[par.trump]})"
    title = (
        f"[bold]Deal {par.number}[/] — {escape(contract)} — "
        f"{escape(place(where.location))}, match {escape(where.match_id or '(no id)')}"
    )
    term.report(title)
    solved = review.solved if review is not None else par.solved
    if par.at_play:
        term.report(f"  from play {par.at_play + 1} (trick {par.at_play // 4 + 1}) on")
    if par.stop is not None:
        term.report(f"  [yellow]analysed {par.analysed_plays} play(s): {escape(par.stop)}[/]")
    if not par.seats:
        return
    if not par.solved:
        limits = [
            f"{budget_ms} ms" if budget_ms else "",
            f"{budget_nodes} nodes" if budget_nodes else "",
        ]
        budget = " / ".join(x for x in limits if x)
        term.report(f"  [bold red]unsolved[/]: the search ran past its budget ({budget})")
    width = max(len(where.names[s.seat]) for s in par.seats)
    for s in par.seats:
        par_text = "?" if s.par is None else f"{s.par} ({s.par_points:+d})"
        actual = "—" if s.actual is None else f"{s.actual} ({s.actual_points:+d})"
        term.report(
            f"  {escape(where.names[s.seat]).ljust(width)}  par {par_text:<12} actual {actual}"
        )
    if review is None:
        return
    for cost in review.costly:
        term.report("  " + _cost_line(term, where, cost))
    if par.solved and not solved:
        term.report(
            f"  [bold red]unsolved[/]: the card costs ran past the budget after "
            f"{len(review.plays)} play(s)"
        )
    elif par.solved and not review.costly:
        term.report("  [green]no card cost anything[/]")


def _cost_line(term: Terminal, where: _Where, cost: PlayCost) -> str:
    best = ", ".join(term.card(c) for c in cost.best)
    units = "unit" if cost.cost == 1 else "units"
    return (
        f"trick {cost.trick}: {escape(where.names[cost.seat])} played "
        f"[bold]{term.card(cost.card)}[/], giving away {cost.cost} {units} "
        f"({cost.cost_points} points); best: {best}"
    )


def _summary(tally: _Tally) -> str:
    parts = [
        f"{tally.deals} deal(s) of {tally.matches} match(es) in {tally.files} file(s)",
        f"{tally.solved} solved",
        f"{tally.unsolved} unsolved",
        f"{tally.costly} costly card(s)",
        f"{tally.nodes} positions searched",
    ]
    if tally.damaged:
        parts.append(f"{tally.damaged} damaged frame(s) or line(s)")
    if tally.unreadable:
        parts.append(f"{tally.unreadable} unreadable file(s)")
    if tally.skipped:
        parts.append(f"{tally.skipped} match(es) with an unusable ruleset")
    return "analysed " + ", ".join(parts)
