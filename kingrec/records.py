"""Reading record files of either kind: .krec containers and JSON Lines.

``read_records`` sniffs the format, streams the records in constant memory, and turns
damage (a corrupt frame, a bad JSON line) into ``Damage`` items located in the file,
so callers report it and go on with the records after it.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import BinaryIO

from . import container, jsonl
from .findings import Location
from .v1 import record_pb2 as pb

__all__ = ["Damage", "RecordFile", "RecordFileError", "open_records", "read_records"]


class RecordFileError(Exception):
    """A file that cannot be read as records at all (missing, unreadable, unknown format)."""


@dataclass(frozen=True)
class Damage:
    """A stretch of a file that holds no readable record."""

    location: Location
    code: str  # FRAME_CORRUPT, FRAME_TRUNCATED, FRAME_UNDECODABLE or JSON_INVALID
    message: str


class _CountingRaw(io.RawIOBase):
    """Counts the bytes read from a file, for progress bars."""

    def __init__(self, inner: BinaryIO) -> None:
        self.inner = inner
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
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
        self._counter = _CountingRaw(raw)
        self._stream = io.BufferedReader(self._counter, buffer_size=1 << 16)
        head = self._stream.peek(len(container.MAGIC))[: len(container.MAGIC)]
        self.format = "krec" if container.is_krec(head) else "jsonl"
        if self.format == "jsonl" and head and head.lstrip()[:1] not in (b"{", b""):
            raise RecordFileError(
                f"{name}: not a .krec file and not JSON Lines (starts with {head[:8]!r})"
            )

    @property
    def bytes_read(self) -> int:
        return self._counter.count

    def __iter__(self) -> Iterator[tuple[Location, pb.Match] | Damage]:
        if self.format == "krec":
            yield from self._krec()
        else:
            yield from self._jsonl()

    def _krec(self) -> Iterator[tuple[Location, pb.Match] | Damage]:
        try:
            for item in container.iter_matches(self._stream):
                if isinstance(item, container.FrameDamage):
                    code = {"truncated": "FRAME_TRUNCATED", "undecodable": "FRAME_UNDECODABLE"}.get(
                        item.kind, "FRAME_CORRUPT"
                    )
                    yield Damage(Location(self.name, item.index, item.offset), code, item.message)
                else:
                    frame, match = item
                    yield Location(self.name, frame.index, frame.offset), match
        except container.ContainerError as exc:
            raise RecordFileError(f"{self.name}: {exc}") from None

    def _jsonl(self) -> Iterator[tuple[Location, pb.Match] | Damage]:
        text = io.TextIOWrapper(self._stream, encoding="utf-8", errors="replace", newline=None)
        for item in jsonl.read_jsonl(text):
            if isinstance(item, jsonl.JsonLineError):
                yield Damage(Location(self.name, line=item.line), "JSON_INVALID", item.message)
            else:
                line, match = item
                yield Location(self.name, line=line), match


@contextmanager
def open_records(path: str) -> Iterator[RecordFile]:
    """Open ``path`` (``-`` for standard input) as a record file."""
    if path == "-":
        yield RecordFile("<stdin>", sys.stdin.buffer, None)
        return
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below, after the caller is done
    except OSError as exc:
        raise RecordFileError(f"{path}: cannot open: {exc.strerror or exc}") from None
    with f:
        yield RecordFile(path, f, os.fstat(f.fileno()).st_size)


def read_records(path: str) -> Iterator[tuple[Location, pb.Match] | Damage]:
    """Every record of a file, in order, with damage in between where there is some."""
    with open_records(path) as records:
        yield from records
