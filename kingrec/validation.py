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

from . import _twins
from .fastcheck import validate_runs
from .findings import CleanMatches, MatchReport, limit_report
from .limits import check_match_limits
from .records import Damage, RecordFile, open_records
from .validator import validate_match

__all__ = ["validate_file", "validate_records"]

Verdict = MatchReport | Damage | CleanMatches


def validate_records(
    records: RecordFile, *, count_clean: bool = False, twins: _twins.Twins | None = None
) -> Iterator[Verdict]:
    """A report for every record of an open record file, with its damage, in file order.

    With ``count_clean`` the records the compiled checker vouches for are counted in
    ``CleanMatches`` items instead of reported one by one (the fast way when only the
    records with something to say are wanted).
    """
    if records.format == "krec":
        runs = records.raw_frame_runs()
        yield from validate_runs(runs, records.name, count_clean=count_clean, twins=twins)
        return
    engine = (twins or _twins.ACTIVE).engine
    for item in records:
        if isinstance(item, Damage):
            yield item
            continue
        problem = check_match_limits(item.match)
        if problem is not None:
            yield limit_report(item.match.match_id, item.location, problem)
        else:
            yield validate_match(item.match, item.location, engine)


def validate_file(
    path: str, *, count_clean: bool = False, twins: _twins.Twins | None = None
) -> Iterator[Verdict]:
    """``validate_records`` of the file at ``path`` (``-``: standard input).

    Raises ``RecordFileError`` (or a subclass) when the file cannot be read as records at all.
    """
    with open_records(path) as records:
        yield from validate_records(records, count_clean=count_clean, twins=twins)
