"""``kingrec validate``: replay records through the rules engine and report what is wrong."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import NamedTuple

import click

from kingrec.findings import CleanMatches, MatchReport, Severity
from kingrec.judges import DEFAULT_CHUNK_BYTES, JudgePool
from kingrec.paths import NotRecords, PathProblem, record_paths
from kingrec.records import Damage, RecordFile, open_records
from kingrec.validation import validate_records
from kingrec.verdicts import (
    Tally,
    damage_object,
    error_object,
    listed,
    skipped_object,
    summary_object,
)

from . import teardown
from .bars import file_columns
from .errors import (
    EXIT_CLOSED_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_UNREADABLE,
    Failed,
    user_errors,
)
from .helptext import Command, epilog
from .lines import damage_line, finding_line
from .places import place
from .terminal import Bar, Terminal, escape

__all__ = ["validate"]


class Choices(NamedTuple):  # a NamedTuple: a frozen dataclass cost 3 M instructions to load
    """What the report is asked to show."""

    as_json: bool
    show_all: bool
    quiet: bool


def _reports(
    records: RecordFile,
    progress: Bar,
    show_all: bool,
    seen: set[int],
    pool: JudgePool | None,
) -> Iterator[MatchReport | Damage | CleanMatches]:
    task = progress.add_task(records.name, total=records.size)
    shown = 0
    for item in validate_records(records, count_clean=not show_all, seen=seen, pool=pool):
        yield item
        # Only when more was read (a MiB at a time): a hostile MiB can hold 65,536 items.
        if records.bytes_read != shown:
            shown = records.bytes_read
            progress.update(task, completed=shown)
    progress.remove_task(task)


EXAMPLES = [
    ("kingrec validate games.krec", "check every record of a file"),
    ("kingrec validate matches/", "every .krec/.jsonl/.json/.ndjson file below matches/"),
    ("kingrec validate -q matches/", "only what is wrong, and the summary"),
    ("kingrec validate --json a.krec | jq .", "a machine report, one object per line"),
    ("producer | kingrec validate -", "records on standard input"),
    ("kingrec validate -j 0 big.krec", "on every CPU; the report is the same"),
]


@click.command(
    cls=Command,
    epilog=epilog(
        EXAMPLES,
        (EXIT_OK, EXIT_INVALID, EXIT_UNREADABLE, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_CLOSED_PIPE),
    ),
)
@click.argument("files", nargs=-1, required=True, type=click.Path(allow_dash=True))
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Write a machine report: one JSON object per line for each record with "
    "findings, each damaged frame and each unreadable file, then a summary line.",
)
@click.option("--all", "show_all", is_flag=True, help="Also list the records that are valid.")
@click.option(
    "-q",
    "--quiet",
    is_flag=True,
    help="Print nothing but errors and the summary: invalid records with their errors, "
    "damage and unreadable files (warnings are counted, not listed).",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Show a progress bar on standard error (default: when it is a terminal).",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Processes judging .krec records: this one and N-1 workers (0: one per CPU). The "
    "report and the exit status do not depend on it; JSON records are judged in this process.",
)
@click.option(
    "--chunk-bytes",
    type=click.IntRange(min=1),
    default=DEFAULT_CHUNK_BYTES,
    hidden=True,  # for tests: small ranges put split points everywhere in a small file
    help="Bytes of a .krec file per range sent to a worker (at least 512).",
)
def validate(
    files: tuple[str, ...],
    as_json: bool,
    show_all: bool,
    quiet: bool,
    progress: bool | None,
    jobs: int,
    chunk_bytes: int,
) -> None:
    """Check that every record in FILES is a legal, complete King match.

    Each record is replayed under its own ruleset, and every finding is reported with its
    location (file, frame and byte offset or line, then deal, trick, seat, card). FILES
    are .krec containers or JSON records; a directory stands for the record files in it
    and below it (.krec, .jsonl, .json, .ndjson; in name order; a JSON file
    whose first object is no match is skipped and named); - reads standard input.
    A file that cannot be read is reported and the others are still checked. A record
    seen before in the run, in the same file or another, gets a DUPLICATE_RECORD warning.
    With --jobs, .krec records are judged on several cores; the report is the same.

    Frames are numbered from 1 in the report lines, as `kingrec show --index` counts;
    the --json report keeps the format's frame index, which counts from 0.
    """
    if quiet and show_all:
        raise click.UsageError("--quiet and --all ask for opposite things; give one")
    term = Terminal()
    choices = Choices(as_json, show_all, quiet)
    tally = Tally()
    seen: set[int] = set()  # every record judged in this run: a repeat in any file is a warning
    jobs = jobs or os.cpu_count() or 1
    pool = JudgePool(jobs, chunk_bytes=chunk_bytes) if jobs > 1 else None
    paths = list(record_paths(files))
    with pool or contextlib.nullcontext():
        if pool is not None:
            # The workers start on the next files while one is settled; forked before the
            # progress bar's thread starts (spawned, each would import kingrec afresh).
            expected = [p for p in paths if isinstance(p, str)]
            pool.expect(expected, count_clean=not show_all)
            if any(p.lower().endswith(".krec") for p in expected):
                pool.start()
        with term.progress(file_columns, show=term.wants_bar(progress)) as bar:
            for path in paths:
                if isinstance(path, PathProblem):
                    tally.unreadable += 1
                    _unreadable(term, choices, path.path, path.code, path.message)
                    continue
                if isinstance(path, NotRecords):
                    tally.skipped += 1
                    _skipped(term, choices, path)
                    continue
                try:
                    with user_errors(), open_records(path) as records:
                        tally.files += 1
                        for item in _reports(records, bar, show_all, seen, pool):
                            _emit(term, item, tally, choices)
                except Failed as exc:
                    tally.unreadable += 1
                    _unreadable(term, choices, path, exc.code, exc.format_message())
    if as_json:
        term.json(summary_object(tally))
    else:
        term.line(_summary(tally))
    # The report is out and the workers are joined: the interpreter's teardown (some 30 ms
    # of freeing what the run held) would change nothing, whatever the verdict.
    teardown.needless(teardown.ALWAYS)
    if tally.unreadable or tally.damaged:
        sys.exit(EXIT_UNREADABLE)
    sys.exit(EXIT_INVALID if tally.invalid else EXIT_OK)


def _unreadable(term: Terminal, choices: Choices, path: str, code: str, message: str) -> None:
    if choices.as_json:
        term.json(error_object(path, code, message))
    else:
        term.error(message)


def _skipped(term: Terminal, choices: Choices, skipped: NotRecords) -> None:
    if choices.as_json:
        term.json(skipped_object(skipped.path, skipped.message))
    else:
        term.note(skipped.message)


def _emit(
    term: Terminal, item: MatchReport | Damage | CleanMatches, tally: Tally, choices: Choices
) -> None:
    tally.count(item)
    if isinstance(item, CleanMatches):
        return
    if isinstance(item, Damage):
        _emit_damage(term, item, choices)
        return
    report = item
    if not listed(report, choices.show_all, choices.quiet):
        return
    if choices.as_json:
        from kingrec.jsonl import report_line  # here: a text report needs no kingrec.jsonl

        term.json(report, report_line)
        return
    verdict = "[green]valid[/]" if report.valid else "[bold red]INVALID[/]"
    term.report(
        f"{verdict} {escape(place(report.location))}: match {escape(report.match_id or '(no id)')}"
    )
    for finding in report.findings:
        if not choices.quiet or finding.severity is Severity.ERROR:
            term.report("  " + finding_line(term, finding))


def _emit_damage(term: Terminal, item: Damage, choices: Choices) -> None:
    if choices.as_json:
        term.json(damage_object(item))
        return
    term.report(damage_line(term, item))


def _summary(tally: Tally) -> str:
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
    if tally.skipped:
        parts.append(f"{tally.skipped} file(s) skipped (not records)")
    return "checked " + ", ".join(parts)
