"""``kingrec show``: a match laid out for people."""

from __future__ import annotations

import click

from kingrec.boundary import ruleset_from_proto
from kingrec.errors import RulesetError
from kingrec.findings import limit_report
from kingrec.limits import check_match_limits
from kingrec.records import Damage, open_records
from kingrec.selection import deal_position, pick_record
from kingrec.validator import validate_match

from .errors import (
    EXIT_CLOSED_PIPE,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_UNREADABLE,
    user_errors,
)
from .helptext import Command, epilog
from .lines import damage_text
from .matchview import MatchView
from .terminal import Terminal

__all__ = ["show"]

EXAMPLES = [
    ("kingrec show games.krec", "the first match of the file"),
    ("kingrec show games.krec --index 3", "record 3: frame 3 as validate lists it"),
    ("kingrec show games.jsonl --match m-17 --deal 5", "deal 5 of match m-17"),
    ("kingrec show games.krec --deal 1 --hands", "deal 1 with the hands as dealt"),
]


@click.command(
    cls=Command,
    epilog=epilog(
        EXAMPLES,
        (
            (EXIT_OK, "shown (valid or not: what is wrong is marked)"),
            (
                EXIT_UNREADABLE,
                "no such record or deal, the record damaged, the file unreadable, or bad usage",
            ),
            EXIT_INTERNAL,
            EXIT_CLOSED_PIPE,
        ),
    ),
)
@click.argument("file", type=click.Path(allow_dash=True, dir_okay=False))
@click.option("--match", "match_id", metavar="ID", help="Show the match with this id.")
@click.option(
    "--index",
    type=click.IntRange(min=1),
    metavar="N",
    help="Show record N of the file, counted from 1 with damaged ones, as validate lists "
    "them (frame N of a .krec file). Default: the first readable record.",
)
@click.option(
    "--deal",
    "deal_number",
    type=click.IntRange(min=1),
    metavar="N",
    help="Show only deal N (from 1) of the match.",
)
@click.option("--hands", is_flag=True, help="Also show the four hands as dealt.")
def show(
    file: str, match_id: str | None, index: int | None, deal_number: int | None, hands: bool
) -> None:
    """Show one match of FILE: contracts, every trick and its winner, scores and running
    totals, and what is wrong with it.

    FILE is a .krec container or JSON records; - reads standard input. Illegal cards are
    marked in their trick (!1, !2, ...) with a footnote giving the finding and the cards
    that were legal; other findings are listed with their deal or under the match. Damage
    passed over on the way to the match is named on standard error.
    """
    if match_id is not None and index is not None:
        raise click.UsageError("--match and --index each pick a match; give one of them")
    term = Terminal()

    def passed_over(damage: Damage) -> None:
        term.note(f"damaged: {damage_text(damage)}")

    with user_errors(), open_records(file) as records:
        record = pick_record(
            records, match_id=match_id, number=index, name=records.name, on_damage=passed_over
        )
    match, location = record.match, record.location
    with user_errors():
        only = None if deal_number is None else deal_position(match, deal_number)
    problem = check_match_limits(match)
    rules = None
    if problem is not None:  # too big to lay out: say so, as validate does
        report = limit_report(match.match_id, location, problem)
    else:
        report = validate_match(match, location)
        try:
            rules = ruleset_from_proto(match.ruleset)
        except RulesetError:
            rules = None  # the report says why (RULESET_INVALID)
    view = MatchView(term, match, location, report, rules)
    view.header()
    if problem is None:
        view.deals(only, hands)
