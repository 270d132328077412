"""``kingrec convert``: .krec to JSON Lines and back, without loss."""

from __future__ import annotations

import sys

import click

from kingrec.convert import convert_file
from kingrec.records import Damage

from .errors import EXIT_UNREADABLE, user_errors

__all__ = ["convert"]


def _report_damage(item: Damage) -> None:
    click.echo(f"kingrec: {item.location}: {item.code}: {item.message}", err=True)


@click.command()
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
def convert(source: str, target: str, to: str | None, skip_damaged: bool) -> None:
    """Convert SOURCE into TARGET: .krec to JSON Lines (one match per line) or back.

    Nothing is lost: fields from newer writers survive the round trip. Records stream
    through in constant memory; the output is written to a temporary file and moved into
    place only when complete. A damaged SOURCE is refused (exit 2, nothing written)
    unless --skip-damaged is given. - means standard input or output.
    """
    with user_errors():
        summary = convert_file(
            source,
            sys.stdout.buffer if target == "-" else target,
            to=to,  # type: ignore[arg-type]
            skip_damaged=skip_damaged,
            on_damage=_report_damage,
        )
    damaged = len(summary.damage)
    note = f", skipped {damaged} damaged" if damaged else ""
    click.echo(f"converted {summary.converted} match(es) to {summary.format}{note}", err=True)
    if damaged:
        sys.exit(EXIT_UNREADABLE)
