"""``kingrec ingest``: store record files in a DuckDB store, judged on the way in."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any

import click

from kingrec.paths import NotRecords, PathProblem, record_paths
from kingrec.store import IngestSummary, Store
from kingrec.store.db import default_path
from kingrec.store.store import BATCH_MATCHES

from . import teardown
from .bars import file_columns
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
from .places import damage_sentence, place
from .stops import Stops
from .store_option import store_option
from .terminal import Terminal, escape

__all__ = ["ingest"]

EXAMPLES = [
    ("kingrec ingest games.krec", "into ./kingrec.duckdb (or $KINGREC_DB)"),
    ("kingrec ingest --db club.duckdb matches/", "every record file below matches/"),
    ("producer | kingrec ingest -", "records on standard input"),
    ("kingrec ingest --json a.krec | jq .stored", "one JSON object for scripts"),
]

LISTED = 100  # damaged stretches and rejected records listed per file (all are in the store)
# KINGREC_DEBUG_BATCHES=1: a line on standard error each time a batch is handed to the
# writers (its transaction begins), so that a test can stop an ingest inside a write;
# =hold: then wait for a line on standard input (the writes go on meanwhile), so that the
# test's signal lands there, however slowly the test runs.
MARK_BATCHES = os.environ.get("KINGREC_DEBUG_BATCHES", "") not in ("", "0")
HOLD_BATCHES = os.environ.get("KINGREC_DEBUG_BATCHES", "") == "hold"


@dataclass
class Run:
    """What the whole command did, over every file."""

    summary: IngestSummary = field(default_factory=IngestSummary)
    unreadable: list[dict[str, str]] = field(default_factory=list)
    listed: list[dict[str, Any]] = field(default_factory=list)  # damage and rejects, in order
    skipped: list[dict[str, str]] = field(default_factory=list)  # files that hold no records

    def add(self, part: IngestSummary) -> None:
        total = self.summary
        for name in ("files", "stored", "stored_invalid", "duplicates", "rejected", "damaged"):
            setattr(total, name, getattr(total, name) + getattr(part, name))
        total.deals += part.deals
        total.seconds += part.seconds


@click.command(
    cls=Command,
    epilog=epilog(
        EXAMPLES,
        (
            (EXIT_OK, "every record stored or already there (invalid ones included, flagged)"),
            (
                EXIT_UNREADABLE,
                "a file unreadable, a frame damaged, a record rejected, the store "
                "unusable (locked, newer, not a store), or bad usage",
            ),
            EXIT_INTERNAL,
            (
                EXIT_INTERRUPTED,
                "interrupted (Ctrl-C; SIGTERM gives 143): whole batches are "
                "stored, run the same command again to finish",
            ),
            EXIT_CLOSED_PIPE,
        ),
    ),
)
@click.argument("files", nargs=-1, required=True, type=click.Path(allow_dash=True))
@store_option("The store, a DuckDB file, created when new")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Write one JSON object for scripts: the counts, the damage and rejected records with "
    "their locations, the files that could not be read.",
)
@click.option(
    "--batch",
    type=click.IntRange(min=1),
    default=BATCH_MATCHES,
    show_default=True,
    help="Records per transaction: an interrupted ingest keeps whole batches.",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Show a progress bar on standard error (default: when it is a terminal).",
)
def ingest(
    files: tuple[str, ...], db: str | None, as_json: bool, batch: int, progress: bool | None
) -> None:
    """Store every record of FILES in a DuckDB store, to ask it anything in SQL.

    FILES are .krec containers or JSON records; a directory stands for the record files in
    it and below it (.krec, .jsonl, .json, .ndjson; in name order; a JSON file
    whose first object is no match is skipped and named); - reads standard input.
    Each record is judged as `kingrec validate` judges it: valid records are stored, invalid
    ones are stored too with their findings and matches.valid false, so `WHERE valid` is
    the analyst's choice. A record the store holds already (the same bytes) is skipped and
    counted as a duplicate; another record under a match id already stored is stored and
    flagged with the warning MATCH_ID_REUSED. Damaged frames and lines are counted, listed
    with their locations and kept in the store's damage table.

    Records are committed in batches: after a crash, kill -9 or Ctrl-C the store holds
    whole batches only, and running the same command again completes the job with nothing
    stored twice. Ask the store with `kingrec query` and `kingrec stats`; docs/STORE.md
    describes its tables.
    """
    term = Terminal()
    where = db or default_path()
    run = Run()
    stops = Stops()
    try:
        # The store is opened (created) while the first batch is read; a store that cannot
        # be opened is the command's failure, said before anything about the files.
        with stops.installed(), user_errors(), Store.open_beside(where) as store:
            with term.progress(file_columns, show=term.wants_bar(progress)) as bar:
                for path in record_paths(files):
                    if isinstance(path, PathProblem | NotRecords):
                        store.ready()
                    if isinstance(path, PathProblem):
                        _unreadable(term, run, as_json, path.path, path.code, path.message)
                        continue
                    if isinstance(path, NotRecords):
                        run.skipped.append({"file": path.path, "message": path.message})
                        if not as_json:
                            term.note(path.message)
                        continue
                    task = bar.add_task(path, total=_size(path))

                    def advance(done: int, task: Any = task) -> None:
                        bar.update(task, completed=done)
                        if MARK_BATCHES:  # for tests that stop an ingest while it writes
                            _mark(b"batch handed to the writers")
                            if stops.signum is not None:
                                _mark(b"stopping, the writes finishing")
                        stops.check()

                    part = IngestSummary()
                    try:
                        with user_errors():
                            store.ingest_file(
                                path, progress=advance, summary=part, batch_matches=batch
                            )
                    except Failed as exc:
                        store.ready()  # the store's failure, if it is one, not the file's
                        part.files = 0  # counted with the unreadable ones instead
                        _unreadable(term, run, as_json, path, exc.code, exc.format_message())
                        continue
                    finally:  # counted also when interrupted: what was committed
                        run.add(part)
                        bar.remove_task(task)
                    _list(term, run, part, as_json)
                    stops.check()
            held = (store.count("matches"), store.count("deals"))
            stops.check()
    except KeyboardInterrupt:
        done = run.summary.stored + run.summary.stored_invalid
        term.note(
            f"stopped after storing whole batches ({done} record(s) of this run are in "
            f"{where}); run the same command again to finish"
        )
        raise
    # The store is committed and closed: the interpreter's teardown would only spend CPU
    # freeing what the ingest held (its modules, DuckDB's and Arrow's memory).
    teardown.needless(teardown.ON_SUCCESS)
    if as_json:
        term.json(_to_json(run, where, held))
    else:
        term.report(escape(_summary(run, where, held)))
    broken = run.unreadable or run.summary.damaged or run.summary.rejected
    sys.exit(EXIT_UNREADABLE if broken else EXIT_OK)


def _mark(what: bytes) -> None:
    """KINGREC_DEBUG_BATCHES: say ``what`` on standard error; with =hold, then wait for a
    line (or the end) of standard input."""
    os.write(2, b"kingrec: debug: " + what + b"\n")
    if HOLD_BATCHES:
        while os.read(0, 1) not in (b"\n", b""):
            pass


def _size(path: str) -> int | None:
    try:
        return os.path.getsize(path) if path != "-" else None
    except OSError:
        return None


def _unreadable(term: Terminal, run: Run, as_json: bool, path: str, code: str, text: str) -> None:
    run.unreadable.append({"file": path, "code": code, "message": text})
    if not as_json:
        term.error(text)


def _list(term: Terminal, run: Run, part: IngestSummary, as_json: bool) -> None:
    """The damage and the rejected records of one file, with their locations."""
    for damage in part.damage[:LISTED]:
        loc = damage.location
        run.listed.append(
            {"type": "damage", "file": loc.file, "frame": loc.frame, "offset": loc.offset,
             "line": loc.line, "code": damage.code, "message": damage.message}
        )  # fmt: skip
        if not as_json:
            term.report(damage_line(term, damage))
    for verdict in part.rejects[:LISTED]:
        loc = verdict.location
        run.listed.append(
            {"type": "rejected", "file": loc.file, "frame": loc.frame, "offset": loc.offset,
             "line": loc.line, "match_id": verdict.match_id, "message": verdict.message}
        )  # fmt: skip
        if not as_json:
            text = term.sentence(damage_sentence(loc, verdict.message))
            term.report(f"[bold red]REJECTED[/] {escape(place(loc))}: {escape(text)}")
    more = part.damaged + part.rejected - len(part.damage[:LISTED]) - len(part.rejects[:LISTED])
    if more > 0 and not as_json:
        term.report(f"  … and {more} more (SELECT * FROM damage lists them all)")


def _summary(run: Run, where: str, held: tuple[int, int]) -> str:
    s = run.summary
    parts = [
        f"stored {s.stored + s.stored_invalid} record(s) ({s.stored} valid, "
        f"{s.stored_invalid} invalid)",
        f"{s.duplicates} duplicate(s)",
    ]
    if s.rejected:
        parts.append(f"{s.rejected} rejected")
    if s.damaged:
        parts.append(f"{s.damaged} damaged frame(s) or line(s)")
    if run.unreadable:
        parts.append(f"{len(run.unreadable)} unreadable file(s)")
    if run.skipped:
        parts.append(f"{len(run.skipped)} file(s) skipped (not records)")
    return (
        ", ".join(parts)
        + f" from {s.files} file(s); {where} holds {held[0]} match(es), {held[1]} deal(s)"
    )


def _to_json(run: Run, where: str, held: tuple[int, int]) -> dict[str, Any]:
    s = run.summary
    return {
        "type": "summary",
        "db": where,
        "files": s.files,
        "stored": s.stored,
        "stored_invalid": s.stored_invalid,
        "duplicates": s.duplicates,
        "rejected": s.rejected,
        "damaged": s.damaged,
        "unreadable": len(run.unreadable),
        "deals": s.deals,
        "seconds": round(s.seconds, 3),
        "store": {"matches": held[0], "deals": held[1]},
        "problems": run.listed,
        "errors": run.unreadable,
        "skipped": run.skipped,
    }
