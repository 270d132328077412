"""The thin functions of ``import kingrec`` where the library's own are awkward for a client.

``read_records`` and ``validate_file`` take an open binary stream as well as a path,
``write_records`` writes either format to either, and ``validate`` judges one match in
process with the same bounds as a file. Everything else ``kingrec`` exports comes straight
from the module that owns it. The heavier modules are imported by the function that needs
them, so a user of one function does not load the others.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Iterator
from typing import IO, BinaryIO, Literal, TextIO

from .findings import Location, MatchReport
from .records import Damage, Record, RecordFile, open_records
from .v1 import record_pb2 as pb

__all__ = ["read_records", "validate", "validate_file", "write_records"]

Source = str | os.PathLike[str] | BinaryIO
"""Where records come from: a path (``-`` for standard input) or an open binary stream."""


def _stream_file(stream: object) -> RecordFile:
    if isinstance(stream, io.TextIOBase):
        raise TypeError(
            "records are read from a binary stream: open(path, 'rb'), sys.stdin.buffer or "
            "io.BytesIO, not a text stream"
        )
    name = getattr(stream, "name", None)
    return RecordFile(name if isinstance(name, str) else "<stream>", stream, None)  # type: ignore[arg-type]


def read_records(source: Source) -> Iterator[Record | Damage]:
    """Every record of a .krec or JSON file or stream, in order, with damage in between.

    ``source`` is a path (``-``: standard input) or an open binary stream; the format is
    sniffed from the content. Each ``Record`` carries its ``location`` (file, frame or line,
    byte offset) and its ``match``; a damaged frame or line is a ``Damage`` item and reading
    goes on after it. Raises a ``RecordFileError`` when the source cannot be read as records
    at all. A path is opened on the first ``next()`` and closed when the iterator is done::

        for item in kingrec.read_records("matches.krec"):
            if isinstance(item, kingrec.Damage):
                print(item.location, item.message)
            else:
                print(item.location, item.match.match_id)
    """
    if isinstance(source, str | os.PathLike):
        with open_records(os.fspath(source)) as records:
            yield from records
    else:
        yield from _stream_file(source)


def write_records(
    target: str | os.PathLike[str] | IO[bytes] | TextIO,
    matches: pb.Match | Iterable[pb.Match],
    *,
    format: Literal["krec", "jsonl"] | None = None,
) -> int:
    """Write ``matches`` (or one match) as a .krec container or JSON Lines; how many were
    written.

    To a path the write is atomic: the file appears under its name only when complete (a
    failure midway leaves the old file or none), and ``format`` defaults to the extension
    (``.krec``, else JSON Lines). To an open stream ``format`` must be given; a text stream
    takes JSON Lines only. Raises ``LimitError`` for a match over the .krec frame bound.
    """
    if isinstance(matches, pb.Match):
        matches = [matches]
    if isinstance(target, str | os.PathLike):
        from .convert import format_for, write_matches
        from .safefile import atomic_output

        path = os.fspath(target)
        with atomic_output(path) as out:
            return write_matches(out, matches, format or format_for(path))
    if format is None:
        raise ValueError("say format='krec' or format='jsonl' when writing to a stream")
    if isinstance(target, io.TextIOBase):
        if format != "jsonl":
            raise TypeError(f"format={format!r} needs a binary stream, not a text stream")
        from .jsonl import write_jsonl

        return write_jsonl(target, matches)
    from .convert import write_matches

    return write_matches(target, matches, format)  # type: ignore[arg-type]


def validate(match: pb.Match, location: Location | None = None) -> MatchReport:
    """Judge one match by its own ruleset: every finding, with its code and location.

    ``report.valid`` is True when no finding is an error (warnings allowed). A match over
    one of the bounds of ``kingrec.limits`` gets one LIMIT_EXCEEDED finding, as in a file.
    ``location`` says where the match came from (a ``Record``'s), for the report.
    """
    from .findings import limit_report
    from .limits import check_match_limits
    from .validator import validate_match

    where = location or Location()
    problem = check_match_limits(match)
    if problem is not None:
        return limit_report(match.match_id, where, problem)
    return validate_match(match, where)


def validate_file(source: Source) -> Iterator[MatchReport | Damage]:
    """A ``MatchReport`` for every record of a file or binary stream, with its damage, in
    order: the same reports as ``validate`` on each record, found the fast way (.krec frames
    are judged from their bytes by the compiled checker where it is built).

    Raises a ``RecordFileError`` when the source cannot be read as records at all.
    (``kingrec.validation.validate_file`` can also count the clean records instead.)
    """
    from .validation import validate_records

    if isinstance(source, str | os.PathLike):
        with open_records(os.fspath(source)) as records:
            yield from _reports(validate_records(records))
    else:
        yield from _reports(validate_records(_stream_file(source)))


def _reports(items: Iterable[object]) -> Iterator[MatchReport | Damage]:
    for item in items:
        assert isinstance(item, MatchReport | Damage)  # no CleanMatches: count_clean is off
        yield item
