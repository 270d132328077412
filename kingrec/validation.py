"""Validating record files: every record of a file judged, the fast way where it can be.

``validate_records`` is the library's one entry point for "judge everything in this file":
.krec frames are judged from their wire bytes by the compiled checker in batches and only
the records it cannot vouch for go through the reference validator; JSON records always
take the reference. Reports are the reference's either way. The CLI, the gRPC service and
the store all call this.
"""

from __future__ import annotations

from collections.abc import Iterator

from . import _twins
from .fastcheck import validate_frames
from .findings import MatchReport
from .records import Damage, RecordFile, open_records
from .validator import validate_match

__all__ = ["validate_file", "validate_records"]


def validate_records(
    records: RecordFile, *, twins: _twins.Twins | None = None
) -> Iterator[MatchReport | Damage]:
    """A report for every record of an open record file, with its damage, in file order."""
    if records.format == "krec":
        yield from validate_frames(records.raw_frames(), twins=twins)
        return
    engine = (twins or _twins.ACTIVE).engine
    for item in records:
        if isinstance(item, Damage):
            yield item
        else:
            yield validate_match(item.match, item.location, engine)


def validate_file(
    path: str, *, twins: _twins.Twins | None = None
) -> Iterator[MatchReport | Damage]:
    """``validate_records`` of the file at ``path`` (``-``: standard input).

    Raises ``RecordFileError`` (or a subclass) when the file cannot be read as records at all.
    """
    with open_records(path) as records:
        yield from validate_records(records, twins=twins)
