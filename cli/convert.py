"""``kingrec convert``: .krec to JSON Lines and back, without loss."""

from __future__ import annotations

import sys
from typing import IO

import click

from kingrec.convert import Format, convert_file, format_for
from kingrec.records import Damage

from .errors import (
    EXIT_CLOSED_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_UNREADABLE,
    user_errors,
)
from .helptext import Command, epilog
from .lines import damage_text
from .terminal import Terminal

__all__ = ["convert"]

EXAMPLES = [
    ("kingrec convert games.krec games.jsonl", ".krec to JSON Lines"),
    ("kingrec convert games.jsonl games.krec", "and back, byte for byte"),
    ("kingrec convert games.krec - | jq .match_id", "JSON Lines on standard output"),
    ("kingrec convert --skip-damaged bad.krec ok.krec", "keep what a damaged file still holds"),
]


@click.command(
    cls=Command,
    epilog=epilog(
        EXAMPLES,
        (
            (EXIT_OK, "converted"),
            (EXIT_UNREADABLE, "SOURCE unreadable or damaged, TARGET not written, or bad usage"),
            EXIT_INTERNAL,
            EXIT_INTERRUPTED,
            EXIT_CLOSED_PIPE,
        ),
    ),
)
@click.argument("source", type=click.Path(allow_dash=True, dir_okay=False))
@click.argument("target", type=click.Path(allow_dash=True, dir_okay=False))
@click.option(
    "--to",
    type=click.Choice(["krec", "jsonl"]),
    help="Output format (default: from TARGET's extension; .krec or else JSON Lines).",
)
@click.option(
    "--skip-damaged",
    is_flag=True,
    help="Convert the readable records of a damaged file instead of refusing.",
)
@click.option("-q", "--quiet", is_flag=True, help="No summary line; errors and damage only.")
def convert(source: str, target: str, to: str | None, skip_damaged: bool, quiet: bool) -> None:
    """Convert SOURCE into TARGET: .krec to JSON Lines (one match per line) or back.

    Nothing is lost: fields from newer writers survive the round trip. Records stream
    through in constant memory; the output is written to a temporary file and moved into
    place only when complete. A damaged SOURCE is refused (exit 2, nothing written)
    unless --skip-damaged is given, and its damage is named on standard error either way.
    - means standard input or output.
    """
    term = Terminal()

    def report_damage(item: Damage) -> None:
        term.note(f"damaged: {damage_text(item)}")

    fmt: Format = "krec" if (to or format_for(target)) == "krec" else "jsonl"
    out: str | IO[bytes] = target
    if target == "-":
        out = term.records_stream() if fmt == "jsonl" else term.stdout.buffer
    with user_errors():
        summary = convert_file(
            source, out, to=fmt, skip_damaged=skip_damaged, on_damage=report_damage
        )
    damaged = len(summary.damage)
    if not quiet:
        note = f", skipped {damaged} damaged" if damaged else ""
        term.tell(f"converted {summary.converted} match(es) to {summary.format}{note}")
    if damaged:
        sys.exit(EXIT_UNREADABLE)
