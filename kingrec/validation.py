"""Validating record files: every record of a file judged, the fast way where it can be.

``validate_records`` is the library's one entry point for "judge everything in this file":
.krec frames are judged from their wire bytes by the compiled checker in runs and only the
records it cannot vouch for go through the reference validator; JSON records always take
the reference. Reports are the reference's either way. Records over one of the bounds of
``kingrec.limits`` get a LIMIT_EXCEEDED report and are not judged further. The CLI, the gRPC
service and the store all call this.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from . import _twins
from .fastcheck import checker_of, content_key_of, note_duplicate, validate_runs
from .findings import CleanMatches, Finding, MatchReport, Severity, limit_report
from .limits import check_match_limits
from .records import Damage, RecordFile, open_records

if TYPE_CHECKING:
    from .judges import JudgePool

__all__ = ["validate_file", "validate_records"]

Verdict = MatchReport | Damage | CleanMatches


def validate_records(
    records: RecordFile,
    *,
    count_clean: bool = False,
    twins: _twins.Twins | None = None,
    seen: set[int] | None = None,
    pool: JudgePool | None = None,
) -> Iterator[Verdict]:
    """A report for every record of an open record file, with its damage, in file order.

    With ``count_clean`` the records the compiled checker vouches for are counted in
    ``CleanMatches`` items instead of reported one by one (the fast way when only the
    records with something to say are wanted). ``seen`` holds the keys of the records
    judged so far: pass one set to several calls to catch a record repeated across files
    (DUPLICATE_RECORD, a warning); by default repeats are caught within the file.
    With a ``pool`` (``kingrec.judges``) the records of a regular .krec file are judged in its
    worker processes, with the same items as a result; JSON records and streams are judged
    here.
    """
    seen = set() if seen is None else seen
    if records.format == "krec":
        if pool is not None and pool.can_split(records):
            yield from pool.validate_file(records, count_clean=count_clean, seen=seen)
            return
        if count_clean and checker_of(twins) is not None:
            from . import judges  # here: JSON records and streams need none of it

            if judges.can_read_by_offset(records):
                yield from judges.validate_here(records, seen=seen, twins=twins)
                return
        runs = records.raw_frame_runs()
        yield from validate_runs(
            runs, records.name, count_clean=count_clean, twins=twins, seen=seen
        )
        return
    engine = (twins or _twins.ACTIVE).engine
    key_of = content_key_of(twins)
    for item in records:
        if isinstance(item, Damage):
            yield item
            continue
        problem = check_match_limits(item.match)
        if problem is not None:
            yield limit_report(item.match.match_id, item.location, problem)
            continue
        from .validator import validate_match  # here: .krec runs of clean records skip it

        report = validate_match(item.match, item.location, engine)
        if item.unknown_keys:
            report.findings.append(_unknown_keys(item.unknown_keys))
        key = key_of(item.match.SerializeToString(deterministic=True))
        yield note_duplicate(report, key, seen)


def _unknown_keys(keys: tuple[str, ...]) -> Finding:
    shown = ", ".join(keys[:10]) + (f" and {len(keys) - 10} more" if len(keys) > 10 else "")
    return Finding(
        "UNKNOWN_JSON_KEY",
        Severity.WARNING,
        f"JSON keys the schema does not know were dropped: {shown}.",
    )


def validate_file(
    path: str,
    *,
    count_clean: bool = False,
    twins: _twins.Twins | None = None,
    seen: set[int] | None = None,
) -> Iterator[Verdict]:
    """``validate_records`` of the file at ``path`` (``-``: standard input).

    Raises ``RecordFileError`` (or a subclass) when the file cannot be read as records at all.
    """
    with open_records(path) as records:
        yield from validate_records(records, count_clean=count_clean, twins=twins, seen=seen)
