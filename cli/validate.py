"""``kingrec validate``: replay records through the rules engine and report what is wrong."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TextIO

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

from kingrec.findings import CleanMatches, MatchReport, Severity
from kingrec.records import Damage, RecordFile, open_records
from kingrec.validation import validate_records

from .errors import EXIT_INVALID, EXIT_OK, EXIT_UNREADABLE, Failed, user_errors


@dataclass
class Tally:
    files: int = 0
    matches: int = 0
    deals: int = 0
    invalid: int = 0
    warnings: int = 0
    damaged: int = 0
    unreadable: int = 0

    def to_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def _reports(
    records: RecordFile, progress: Progress | None, show_all: bool
) -> Iterator[MatchReport | Damage | CleanMatches]:
    task = None
    if progress is not None:
        task = progress.add_task(records.name, total=records.size)
    for item in validate_records(records, count_clean=not show_all):
        yield item
        if progress is not None and task is not None:
            progress.update(task, completed=records.bytes_read)
    if progress is not None and task is not None:
        progress.remove_task(task)


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(allow_dash=True, dir_okay=False))
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Write a machine report: one JSON object per line for each record with "
    "findings and each damaged frame, then a summary line.",
)
@click.option("--all", "show_all", is_flag=True, help="Also list the records that are valid.")
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Show a progress bar (default: when standard error is a terminal).",
)
def validate(files: tuple[str, ...], as_json: bool, show_all: bool, progress: bool | None) -> None:
    """Check that every record in FILES is a legal, complete King match.

    Each record is replayed under its own ruleset, and every finding is reported with
    its location (file, frame and byte offset, match, deal, trick, seat, card). Use - to
    read standard input. FILES may be .krec containers or JSON Lines.

    Exit status: 0 all records valid, 1 some record invalid, 2 a file could not be read
    or is damaged.
    """
    out = sys.stdout
    console = Console(file=out, highlight=False, soft_wrap=True)
    err_console = Console(stderr=True)
    show_progress = err_console.is_terminal if progress is None else progress
    tally = Tally()
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
        disable=not show_progress,
    )
    with bar:
        for path in files:
            try:
                with user_errors(), open_records(path) as records:
                    tally.files += 1
                    for item in _reports(records, bar if show_progress else None, show_all):
                        _emit(item, tally, console, out, as_json=as_json, show_all=show_all)
            except Failed as exc:
                tally.unreadable += 1
                if as_json:
                    error = {"type": "error", "file": path, "code": exc.code}
                    _json_line(out, {**error, "message": exc.format_message()})
                else:
                    exc.show()
    if as_json:
        _json_line(out, {"type": "summary", **tally.to_dict()})
    else:
        _print_summary(console, tally)
    if tally.unreadable or tally.damaged:
        sys.exit(EXIT_UNREADABLE)
    sys.exit(EXIT_INVALID if tally.invalid else EXIT_OK)


def _emit(
    item: MatchReport | Damage | CleanMatches,
    tally: Tally,
    console: Console,
    out: TextIO,
    *,
    as_json: bool,
    show_all: bool,
) -> None:
    if isinstance(item, CleanMatches):
        tally.matches += item.count
        tally.deals += item.deals
        return
    if isinstance(item, Damage):
        tally.damaged += 1
        if as_json:
            loc = item.location
            _json_line(
                out,
                {
                    "type": "damage",
                    "file": loc.file,
                    "frame": loc.frame,
                    "offset": loc.offset,
                    "line": loc.line,
                    "code": item.code,
                    "message": item.message,
                },
            )
        else:
            console.print(
                f"[bold red]DAMAGED[/] {escape(str(item.location))}: {item.code}: "
                f"{escape(item.message)}"
            )
        return
    report = item
    tally.matches += 1
    tally.deals += report.deals
    warnings = sum(1 for f in report.findings if f.severity is Severity.WARNING)
    tally.warnings += warnings
    if not report.valid:
        tally.invalid += 1
    if as_json:
        if report.findings or show_all:
            _json_line(out, {"type": "match", **report.to_dict()})
        return
    if report.findings or show_all:
        verdict = "[green]valid[/]" if report.valid else "[bold red]INVALID[/]"
        console.print(
            f"{verdict} {escape(str(report.location))}: match "
            f"{escape(report.match_id or '(no id)')}"
        )
        for f in report.findings:
            colour = "red" if f.severity is Severity.ERROR else "yellow"
            console.print(f"  [{colour}]{f.severity}[/] [bold]{f.code}[/] {escape(f.message)}")


def _print_summary(console: Console, tally: Tally) -> None:
    parts = [
        f"{tally.matches} match(es), {tally.deals} deal(s) in {tally.files} file(s)",
        f"{tally.matches - tally.invalid} valid",
        f"{tally.invalid} invalid",
    ]
    if tally.warnings:
        parts.append(f"{tally.warnings} warning(s)")
    if tally.damaged:
        parts.append(f"{tally.damaged} damaged frame(s) or line(s)")
    if tally.unreadable:
        parts.append(f"{tally.unreadable} unreadable file(s)")
    console.print("checked " + ", ".join(parts))


def _json_line(out: TextIO, obj: dict[str, object]) -> None:
    out.write(json.dumps(obj, ensure_ascii=False) + "\n")
