"""Converting record files: .krec to JSON Lines and back, without loss.

Records stream through in constant memory; the output file appears only when complete
(``kingrec.safefile``). A damaged input is refused (``DamagedFileError``, nothing written)
unless ``skip_damaged``, when its readable records are converted and the damage is reported.
A record over one of the bounds of ``kingrec.limits`` counts as damage (LIMIT_EXCEEDED):
kingrec does not judge it, and its other form may be one kingrec cannot read back.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO

from . import jsonl
from .container import KrecWriter
from .errors import DamagedFileError
from .formats import Format, format_for
from .limits import check_match_limits
from .records import Damage, RecordFile, open_records
from .safefile import atomic_output
from .v1 import record_pb2 as pb

__all__ = ["ConversionSummary", "Format", "convert_file", "format_for", "write_matches"]


@dataclass
class ConversionSummary:
    format: Format
    converted: int = 0
    damage: list[Damage] = field(default_factory=list)


def _matches(
    records: RecordFile,
    summary: ConversionSummary,
    skip_damaged: bool,
    on_damage: Callable[[Damage], object] | None,
) -> Iterator[pb.Match]:
    for item in records:
        if not isinstance(item, Damage):
            problem = check_match_limits(item.match)
            if problem is not None:  # its other form may not be readable: a JSON line of
                # a million plays is over MAX_JSON_LINE_BYTES, though its frame was not
                item = Damage(
                    item.location,
                    "LIMIT_EXCEEDED",
                    f"the record is over one of kingrec's bounds: {problem}; it is not converted",
                )
        if isinstance(item, Damage):
            summary.damage.append(item)
            if on_damage is not None:
                on_damage(item)
            if not skip_damaged:
                raise DamagedFileError(
                    f"{records.name} is damaged; nothing written (use --skip-damaged to convert "
                    "the readable records)",
                    (item,),
                )
            continue
        summary.converted += 1
        yield item.match


def write_matches(out: IO[bytes], matches: Iterable[pb.Match], fmt: Format) -> int:
    """Write ``matches`` to a binary stream as a .krec container or JSON Lines; how many.

    The stream stays open: the caller closes it (or renames the file it belongs to).
    """
    if fmt == "krec":
        writer = KrecWriter(out)
        for m in matches:
            writer.write_match(m)
        writer.close()
        return writer.frames_written
    if fmt != "jsonl":
        raise ValueError(f"format {fmt!r} is not 'krec' or 'jsonl'")
    text = io.TextIOWrapper(out, encoding="utf-8", newline="\n", write_through=True)
    try:
        n = jsonl.write_jsonl(text, matches)
        text.flush()
    finally:
        text.detach()  # the caller owns (and closes or renames) the binary file
    return n


def convert_file(
    source: str,
    target: str | IO[bytes],
    *,
    to: Format | None = None,
    skip_damaged: bool = False,
    on_damage: Callable[[Damage], object] | None = None,
) -> ConversionSummary:
    """Convert the records of ``source`` (a path, ``-`` for standard input) into ``target``
    (a path, written atomically, or an open binary stream)."""
    fmt: Format = to or (format_for(target) if isinstance(target, str) else "jsonl")
    summary = ConversionSummary(fmt)
    with open_records(source) as records:
        matches = _matches(records, summary, skip_damaged, on_damage)
        if isinstance(target, str):
            with atomic_output(target) as out:
                write_matches(out, matches, fmt)
        else:
            write_matches(target, matches, fmt)
            target.flush()
    return summary
