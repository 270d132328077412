"""``kingrec convert``: .krec to JSON Lines and back, without loss."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import TextIO

import click

from kingrec import container, jsonl
from kingrec.records import Damage, RecordFile, open_records
from kingrec.v1 import record_pb2 as pb

from .errors import EXIT_UNREADABLE, Failed, user_errors


class _Refused(Exception):
    """Input damage stopped the conversion; the partial output is thrown away."""


def _target_format(out: str, to: str | None) -> str:
    if to:
        return to
    if out == "-":
        return "jsonl"
    return "krec" if out.endswith(".krec") else "jsonl"


@contextlib.contextmanager
def _atomic_text(path: str) -> Iterator[TextIO]:
    """A text file that appears under ``path`` only when fully written."""
    if path == "-":
        yield sys.stdout
        return
    tmp = path + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def _matches(records: RecordFile, skip_damaged: bool, tally: list[int]) -> Iterator[pb.Match]:
    for item in records:
        if isinstance(item, Damage):
            tally[1] += 1
            click.echo(f"kingrec: {item.location}: {item.code}: {item.message}", err=True)
            if not skip_damaged:
                raise _Refused
            continue
        tally[0] += 1
        yield item[1]


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
    fmt = _target_format(target, to)
    tally = [0, 0]  # converted, damaged
    try:
        with user_errors(), open_records(source) as records:
            matches = _matches(records, skip_damaged, tally)
            if fmt == "krec":
                writer = (
                    container.KrecWriter(sys.stdout.buffer)
                    if target == "-"
                    else container.KrecWriter.open(target)
                )
                with writer:
                    for m in matches:
                        writer.write_match(m)
            else:
                with _atomic_text(target) as out:
                    jsonl.write_jsonl(out, matches)
    except _Refused:
        raise Failed(
            f"{source} is damaged; nothing written (use --skip-damaged to convert "
            "the readable records)"
        ) from None
    converted, damaged = tally
    note = f", skipped {damaged} damaged" if damaged else ""
    click.echo(f"converted {converted} match(es) to {fmt}{note}", err=True)
    if damaged:
        sys.exit(EXIT_UNREADABLE)
