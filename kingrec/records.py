"""Reading record files of either kind: .krec containers and JSON records.

``read_records`` sniffs the format, streams the records in constant memory, and turns
damage (a corrupt frame, a bad JSON record) into ``Damage`` items located in the file,
so callers report it and go on with the records after it. JSON records are JSON Lines, a
JSON array or pretty-printed matches (``kingrec.jsonl``); the format is named "jsonl"
for all three. A file that cannot be read as records at all raises a ``RecordFileError``
(from ``kingrec.errors``).
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, NamedTuple

from . import container
from .errors import RecordFileError, UnreadableFileError
from .findings import Location

if TYPE_CHECKING:  # reading frames loads no protobuf: container.decode_frame does
    from .v1 import record_pb2 as pb

__all__ = [
    "Damage",
    "Record",
    "RecordFile",
    "RecordFileError",
    "decode_frame",
    "located_runs",
    "open_records",
    "read_records",
]


@dataclass(frozen=True)
class Damage:
    """A stretch of a file that holds no readable record."""

    location: Location
    code: str  # FRAME_CORRUPT, FRAME_TRUNCATED, FRAME_UNDECODABLE, JSON_INVALID, LIMIT_EXCEEDED
    message: str


class Record(NamedTuple):
    """A readable record: where it is, the match, and what reading it had to leave out.

    ``unknown_keys`` holds the paths of the keys of a JSON record that the schema does not
    know (``"deals[3].bonus"``): dropped from the match, worth a warning. A .krec frame keeps
    unknown fields in the match itself, so its records have none.
    """

    location: Location
    match: pb.Match
    unknown_keys: tuple[str, ...] = ()


class _CountingRaw(io.RawIOBase):
    """Counts the bytes read from a file, for progress bars."""

    def __init__(self, inner: BinaryIO, name: str) -> None:
        self.inner = inner
        self.count = 0
        self.name = name  # the container reader names the file in its messages

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        # One read of what is there (a pipe need not fill the buffer), straight into it.
        into = getattr(self.inner, "readinto1", None) or getattr(self.inner, "readinto", None)
        if into is not None:
            n = into(buffer) or 0
        else:
            data = self.inner.read(len(buffer))
            n = len(data)
            buffer[:n] = data
        self.count += n
        return n


class RecordFile:
    """An open record file: its name, size (None for a stream), format and records."""

    def __init__(self, name: str, raw: BinaryIO, size: int | None) -> None:
        self.name = name
        self.size = size
        self._counter = _CountingRaw(raw, name)
        self._stream = io.BufferedReader(self._counter, buffer_size=1 << 16)
        head = self._stream.peek(1 << 16).removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
        # JSON records start with '{' (JSON Lines, pretty-printed matches) or '[' (an array);
        # anything else is read as a .krec file, whose reader explains what the file looks
        # like when it is not one. Only a blank file is told by its name.
        json_name = name.endswith((".jsonl", ".json", ".ndjson"))
        json_start = head[:1] in (b"{", b"[")
        self.format = "jsonl" if json_start or (json_name and not head) else "krec"

    @property
    def bytes_read(self) -> int:
        return self._counter.count

    def __iter__(self) -> Iterator[Record | Damage]:
        if self.format == "krec":
            yield from self._krec()
        else:
            yield from self._jsonl()

    def _krec(self) -> Iterator[Record | Damage]:
        for item in self.raw_frames():
            if isinstance(item, Damage):
                yield item
                continue
            location, payload = item
            decoded = decode_frame(location, payload)
            yield decoded if isinstance(decoded, Damage) else Record(location, decoded)

    def raw_frames(self) -> Iterator[tuple[Location, bytes] | Damage]:
        """The frames of a .krec file as undecoded payloads, with damage in between.

        For callers that judge records from their bytes (``kingrec.fastcheck``). Frames are
        not decoded here: ``decode_frame`` gives the Match or the FRAME_UNDECODABLE damage
        that iterating the file would have given.
        """
        for batch in self.raw_frame_batches():
            yield from batch

    def raw_frame_runs(self) -> Iterator[container.FrameRun | Damage]:
        """The frames of a .krec file as runs of undecoded payloads, with damage between.

        The cheapest way through a file: nothing is made per frame. Frame ``run.first + i``
        of this file has its header at ``run.offsets[i]``.
        """
        if self.format != "krec":
            raise RecordFileError(f"{self.name}: raw frames need a .krec file, not JSON Lines")
        yield from located_runs(container.read_frame_runs(self._stream), self.name)

    def identity(self) -> tuple[int, int] | None:
        """``(st_dev, st_ino)`` of the open file, None for a stream without one."""
        try:
            info = os.fstat(self._counter.inner.fileno())
        except (AttributeError, OSError, ValueError):
            return None
        return (info.st_dev, info.st_ino)

    def note_read(self, upto: int) -> None:
        """The file has been read up to byte ``upto`` by other means (``kingrec.judges``):
        ``bytes_read`` says so, for progress bars."""
        self._counter.count = max(self._counter.count, upto)

    def raw_frame_batches(
        self, batch: int = 256
    ) -> Iterator[list[tuple[Location, bytes] | Damage]]:
        """``raw_frames`` in lists of ``batch`` items (the last may be shorter), in file order."""
        if batch < 1:
            raise ValueError(f"batch must be at least 1, not {batch}")
        name = self.name
        items: list[tuple[Location, bytes] | Damage] = []
        for run in self.raw_frame_runs():
            if isinstance(run, Damage):
                items.append(run)
            else:
                places = enumerate(run.offsets, run.first)
                items += zip([Location(name, i, at) for i, at in places], run.payloads, strict=True)
            if len(items) >= batch:
                full = len(items) - len(items) % batch
                for start in range(0, full, batch):
                    yield items[start : start + batch]
                items = items[full:]
        if items:
            yield items

    def _jsonl(self) -> Iterator[Record | Damage]:
        from . import jsonl  # imported when a JSON file is read: .krec readers need none of it

        for item in jsonl.read_jsonl(self._stream):
            location = Location(self.name, line=item.line)
            if isinstance(item, jsonl.JsonLineError):
                yield Damage(location, item.code, item.message)  # JSON_INVALID, LIMIT_EXCEEDED
            else:
                yield Record(location, item.match, item.unknown_keys)


def located_runs(
    runs: Iterator[container.FrameRun | container.FrameDamage], name: str
) -> Iterator[container.FrameRun | Damage]:
    """The container reader's runs of file ``name``, its damage as located ``Damage``."""
    for run in runs:
        if isinstance(run, container.FrameDamage):
            code = "FRAME_TRUNCATED" if run.kind == "truncated" else "FRAME_CORRUPT"
            yield Damage(Location(name, run.index, run.offset), code, run.message)
        else:
            yield run


def decode_frame(location: Location, payload: bytes) -> pb.Match | Damage:
    """A raw frame's Match, or the FRAME_UNDECODABLE damage iterating the file gives."""
    decoded = container.decode_frame(
        container.Frame(location.frame or 0, location.offset or 0, payload)
    )
    if isinstance(decoded, container.FrameDamage):
        return Damage(location, "FRAME_UNDECODABLE", decoded.message)
    return decoded


@contextmanager
def open_records(path: str) -> Iterator[RecordFile]:
    """Open ``path`` (``-`` for standard input) as a record file."""
    if path == "-":
        yield RecordFile("<stdin>", sys.stdin.buffer, None)
        return
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below, after the caller is done
    except OSError as exc:
        raise UnreadableFileError(f"{path}: cannot open: {exc.strerror or exc}") from None
    with f:
        yield RecordFile(path, f, os.fstat(f.fileno()).st_size)


def read_records(path: str) -> Iterator[Record | Damage]:
    """Every record of a file, in order, with damage in between where there is some."""
    with open_records(path) as records:
        yield from records
