"""Judging .krec files on several cores, with exactly the report of one.

Judging a run of frames comes in two stages (``kingrec.fastcheck``): the first (the compiled
checker, the reference validator for the records it cannot vouch for, each record's content
key) needs nothing but the frames, so worker processes do it; the second (the run-wide
duplicate set) depends on every record before, so this process does it, in file order, with
the same code as the serial path.

This process walks the frame headers of the file and cuts it into spans of whole frames of
about ``chunk_bytes``; a worker reads its span itself and takes it only if the frame loop of
the reader (``scan_frames``) takes every frame of it whole, checksums and all. From the first
thing that is not a sound frame (a bad header, a frame that runs past the end, a span a worker
refuses, a file that changed) to the end of the file, the file is read here by the reader
itself, resumed at the last frame start known to be good: damage, resyncs and a truncated
last frame are then found and worded exactly as on one core. So the report does not depend on
the number of jobs, by construction, and only sound stretches are ever split.

Only a bounded window of spans is in flight: memory stays flat however big the file. The
workers die with the pool: it is terminated when the run ends, fails or is interrupted, and
they end themselves if this process disappears (``kingrec.simrun``'s convention).
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, BinaryIO, overload

from . import _twins
from .container import (
    FILE_HEADER_SIZE,
    FRAME_HEADER_SIZE,
    FrameRun,
    check_file_header,
    read_frame_runs_from,
)
from .container.layout import FRAME_HEADER
from .fastcheck import (
    PIECE_FRAMES,
    JudgedRun,
    checker_of,
    content_key_of,
    judge_frames,
    judge_payload,
    pieces,
    run_locations,
    settle_frames,
    settle_run,
    validate_runs,
)
from .findings import CleanMatches, Location, MatchReport
from .limits import MAX_FRAME_BYTES
from .records import Damage, RecordFile, located_runs

if TYPE_CHECKING:  # multiprocessing is loaded with the first pool: one job needs none of it
    import multiprocessing.pool

__all__ = ["DEFAULT_CHUNK_BYTES", "JudgePool", "can_read_by_offset", "validate_here"]

DEFAULT_CHUNK_BYTES = 4 << 20  # payload bytes per span sent to a worker
_WINDOW_PER_JOB = 2  # spans in flight per worker: one being judged, one waiting
_BLOCK = 1 << 18  # bytes read at a time while walking the frame headers
# Bytes read at a time when judging in this process: any sound frame fits whole after a
# block's worth of frames (MAX_FRAME_BYTES is 1 MiB).
_HERE_BLOCK = (4 << 20) + MAX_FRAME_BYTES + FRAME_HEADER_SIZE

Verdict = MatchReport | Damage | CleanMatches
# A worker's answer for a span: per piece its first frame index, its frames' offsets and
# stage one's result; None when the span is not all sound frames.
_Piece = tuple[int, list[int], JudgedRun | list[tuple[MatchReport | Damage, int]]]
_Judged = list[_Piece] | None


@dataclass(frozen=True)
class _Span:
    """Whole frames ``first ..`` in bytes ``[start, stop)`` of the file, headers sound."""

    start: int
    stop: int
    first: int


@dataclass(frozen=True)
class _Rest:
    """From frame ``index`` at byte ``offset`` to the end: for the reader itself."""

    offset: int
    index: int


def _twins_named(name: str) -> _twins.Twins:
    if name == _twins.PYTHON.name:
        return _twins.PYTHON
    if _twins.COMPILED is None:
        raise RuntimeError("the compiled twins are not built in this worker")
    return _twins.COMPILED


# A worker's one read buffer, reused span after span (a fresh one each time costs a tenth of
# the checking in page faults).
_buffer = bytearray()


def _judge_span(
    path: str, ident: tuple[int, int], name: str, span: _Span, counted: bool, twins_name: str
) -> _Judged:
    """Stage one for every frame of a span, in a worker (plain, picklable values)."""
    twins = _twins_named(twins_name)
    with open(path, "rb") as f:
        if _identity(f) != ident:
            return None  # not the file the parent opened: it reads the rest itself
        size = span.stop - span.start
        if len(_buffer) < size:
            _buffer.extend(bytes(size - len(_buffer)))
        with memoryview(_buffer) as view, view[:size] as room:
            got = os.preadv(f.fileno(), [room], span.start)
    if got != size:
        return None  # the file is shorter than it was: the reader will say what is left
    if counted:  # the frames judged where they lie: nothing made per clean frame
        ends = list(_judged_pieces(_buffer, size, span.start, span.first, name, twins))
        end = ends[-1][1] if ends else 0
        return [one for one, _ in ends] if end == size else None
    payloads, offsets, end = twins.frames.scan_frames(_buffer, 0, size, MAX_FRAME_BYTES)
    if end != size:
        return None  # damage (or a file that changed under us): the reader will say what
    run = FrameRun(span.first, [span.start + at for at in offsets], payloads)
    out: list[_Piece] = []
    for piece in pieces([run]):
        assert isinstance(piece, FrameRun)
        judged = judge_frames(piece.payloads, run_locations(piece, name), twins=twins)
        out.append((piece.first, piece.offsets, judged))
    return out


def _judged_pieces(
    buf: bytearray, size: int, base: int, first: int, name: str, twins: _twins.Twins
) -> Iterator[tuple[_Piece, int]]:
    """Stage one (``judge_run``) of the sound frames in a row at the start of ``buf[:size]``,
    the file's bytes from offset ``base`` on, the first being frame ``first``: judged where
    they lie by the compiled checker's ``check_frames``, ``PIECE_FRAMES`` at a time, each
    piece with where in ``buf`` it stops. They stop at ``size`` or at the start of the first
    frame not whole and sound. Only the records with something to report become Python
    objects, a piece at a time (a hostile MiB can hold 65,536 empty frames)."""
    checker = checker_of(twins)
    assert checker is not None, "judging frames where they lie needs the compiled checker"
    engine, key_of = twins.engine, content_key_of(twins)
    pos, index = 0, first
    while pos < size:
        stop, packed, clean, deals, dirty, payloads, keys = checker.check_frames(
            buf, pos, size, MAX_FRAME_BYTES, PIECE_FRAMES
        )
        offsets = [base + at for at in memoryview(packed).cast("Q")]
        if not offsets:
            return
        reports = [
            (judge_payload(payload, Location(name, index + i, offsets[i]), engine), key_of(payload))
            for i, payload in zip(dirty, payloads, strict=True)
        ]
        yield (index, offsets, JudgedRun(clean, deals, dirty, keys, reports)), stop
        index += len(offsets)
        pos = stop


def _walk(fd: int, size: int, chunk_bytes: int, twins: _twins.Twins) -> Iterator[_Span | _Rest]:
    """The file's spans of sound frame headers in order, then where the reader takes over.

    Only headers are judged here (marker, checksum, length, the payload within the file),
    as the reader judges them, by the frame twins' ``walk_headers`` a block at a time; the
    payloads' checksums are the worker's to check.
    """
    walk_headers = twins.frames.walk_headers
    pos, index = FILE_HEADER_SIZE, 0
    start, first = pos, index
    block = bytearray(_BLOCK)  # one buffer, reused: a fresh one per read costs page faults
    while pos < size:
        got = os.preadv(fd, [block], pos)
        if got < FRAME_HEADER_SIZE:
            break
        # Headers of this block, until the span is full; ``bound`` is the file's end.
        frames, stop, sound = walk_headers(
            block, 0, got, size - pos, MAX_FRAME_BYTES, chunk_bytes - (pos - start)
        )
        pos += stop
        index += frames
        if not sound:
            break
        if pos - start >= chunk_bytes:
            yield _Span(start, pos, first)
            start, first = pos, index
    if pos > start:
        yield _Span(start, pos, first)
    yield _Rest(pos, index)


class _FramePayloads(Sequence[bytes]):
    """The payloads of frames at known offsets of a file, read when asked for (stage two
    reads only the clean records seen before in the run)."""

    def __init__(self, fd: int, offsets: list[int]) -> None:
        self._fd = fd
        self._offsets = offsets

    def __len__(self) -> int:
        return len(self._offsets)

    @overload
    def __getitem__(self, i: int) -> bytes: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[bytes]: ...

    def __getitem__(self, i: int | slice) -> bytes | Sequence[bytes]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        at = self._offsets[i]
        _, length, _, _ = FRAME_HEADER.unpack(os.pread(self._fd, FRAME_HEADER_SIZE, at))
        return os.pread(self._fd, length, at + FRAME_HEADER_SIZE)


class JudgePool:
    """``jobs`` worker processes judging the frames of one .krec file after another.

    Use it as a context manager (the workers are stopped on leaving it) and pass it to
    ``kingrec.validation.validate_records``. The workers start with the first span.
    """

    def __init__(
        self,
        jobs: int,
        *,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        twins: _twins.Twins | None = None,
    ) -> None:
        if jobs < 1:
            raise ValueError(f"jobs must be at least 1, not {jobs}")
        if chunk_bytes < 1:
            raise ValueError(f"chunk_bytes must be at least 1, not {chunk_bytes}")
        self.jobs = jobs
        self.chunk_bytes = chunk_bytes
        self.twins = twins or _twins.ACTIVE
        self._pool: multiprocessing.pool.Pool | None = None

    def __enter__(self) -> JudgePool:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._end(ended_well=kind is None)

    def close(self) -> None:
        """Stop the workers (at once: whatever they were judging is no longer wanted)."""
        self._end(ended_well=False)

    def _end(self, *, ended_well: bool) -> None:
        if self._pool is not None:
            from .workers import end_pool  # loaded with the pool

            pool, self._pool = self._pool, None
            end_pool(pool, ended_well=ended_well)

    def _workers(self) -> multiprocessing.pool.Pool:
        if self._pool is None:
            # fork starts a worker at once, with kingrec already imported; with other
            # threads running (a progress bar's) a forked child could inherit a lock held
            # by one of them, so then each worker is a fresh interpreter.
            from .workers import worker_pool

            method = "fork" if threading.active_count() == 1 else "spawn"
            self._pool = worker_pool(self.jobs, method)
        return self._pool

    def can_split(self, records: RecordFile) -> bool:
        """Whether the workers can read ``records`` themselves: a regular .krec file."""
        return can_read_by_offset(records)

    def validate_file(
        self, records: RecordFile, *, count_clean: bool, seen: set[int]
    ) -> Iterator[Verdict]:
        """``kingrec.fastcheck.validate_runs`` of a .krec file (``can_split``), stage one in
        the workers: the same items, in the same order."""
        with _reopened(records) as f:
            if f is None:
                # Gone, or the name stands for another file now: the open one, judged here.
                runs = records.raw_frame_runs()
                yield from validate_runs(
                    runs, records.name, count_clean=count_clean, twins=self.twins, seen=seen
                )
                return
            check_file_header(f, records.name)
            yield from self._validate(f, _identity(f), records, count_clean, seen)

    def _validate(
        self,
        f: BinaryIO,
        ident: tuple[int, int],
        records: RecordFile,
        count_clean: bool,
        seen: set[int],
    ) -> Iterator[Verdict]:
        fd, name, twins = f.fileno(), records.name, self.twins
        counted = count_clean and checker_of(twins) is not None
        size = os.fstat(fd).st_size
        window = _WINDOW_PER_JOB * self.jobs
        pending: deque[tuple[_Span, multiprocessing.pool.AsyncResult[_Judged]]] = deque()
        rest: _Rest | None = None  # where the reader itself takes over

        def settle() -> Iterator[Verdict]:
            """The items of the oldest span in flight; sets ``rest`` if it was refused."""
            nonlocal rest
            span, result = pending.popleft()
            judged = result.get()
            if judged is None:
                rest = _Rest(span.start, span.first)
                pending.clear()  # what follows a refused span is read again by the reader
                return
            yield from _settle(judged, fd, name, seen, twins)
            records.note_read(span.stop)

        walked = _Rest(FILE_HEADER_SIZE, 0)
        for item in _walk(fd, size, self.chunk_bytes, twins):
            if isinstance(item, _Rest):
                walked = item
                break
            args = (records.name, ident, name, item, counted, twins.name)
            pending.append((item, self._workers().apply_async(_judge_span, args)))
            # Report what is done as soon as it is; wait once the window is full.
            while rest is None and pending and (len(pending) >= window or pending[0][1].ready()):
                yield from settle()
            if rest is not None:
                break
        while rest is None and pending:
            yield from settle()
        rest = rest or walked
        # The reader itself from the last frame start known good: damage, or nothing (or
        # frames appended since the walk) at the end of the file.
        f.seek(rest.offset)
        runs = located_runs(read_frame_runs_from(f, name, rest.offset, rest.index), name)
        yield from validate_runs(runs, name, count_clean=count_clean, twins=twins, seen=seen)
        records.note_read(size)


def _settle(
    judged: list[_Piece], fd: int, name: str, seen: set[int], twins: _twins.Twins
) -> Iterator[Verdict]:
    """Stage two of judged pieces of the file open as ``fd``, in order."""
    for first, offsets, stage_one in judged:
        if isinstance(stage_one, JudgedRun):
            payloads = _FramePayloads(fd, offsets)
            yield from settle_run(stage_one, first, offsets, payloads, name, seen, twins=twins)
        else:
            yield from settle_frames(stage_one, seen)


def can_read_by_offset(records: RecordFile) -> bool:
    """Whether ``records`` is a regular .krec file, which can be read again by offset."""
    if records.format != "krec" or records.size is None:
        return False
    try:
        return stat.S_ISREG(os.stat(records.name).st_mode)
    except OSError:
        return False


def validate_here(
    records: RecordFile, *, seen: set[int], twins: _twins.Twins | None = None
) -> Iterator[Verdict]:
    """``validate_runs(count_clean=True)`` of a regular .krec file (``can_read_by_offset``)
    in this process, with the same items: a block of the file at a time, its frames judged
    where they lie (``check_frames``: no Python object per clean frame), until the first
    frame that is not whole and sound; from there to the end, the reader itself, as the
    pool does (so damage is found and worded as ever)."""
    twins = twins or _twins.ACTIVE
    name = records.name
    with _reopened(records) as f:
        if f is None:
            # Gone, or the name stands for another file now: the open one, by its reader.
            yield from validate_runs(
                records.raw_frame_runs(), name, count_clean=True, twins=twins, seen=seen
            )
            return
        check_file_header(f, name)
        fd = f.fileno()
        block = bytearray(_HERE_BLOCK)
        pos, index = FILE_HEADER_SIZE, 0
        while True:
            got = os.preadv(fd, [block], pos)
            taken = 0
            for piece, stop in _judged_pieces(block, got, pos, index, name, twins):
                yield from _settle([piece], fd, name, seen, twins)  # each piece as judged
                index += len(piece[1])
                taken = stop
            if not taken:
                break  # the end, or a frame that is not whole and sound: the reader's
            pos += taken
            records.note_read(pos)
        f.seek(pos)
        runs = located_runs(read_frame_runs_from(f, name, pos, index), name)
        yield from validate_runs(runs, name, count_clean=True, twins=twins, seen=seen)
        records.note_read(os.fstat(fd).st_size)


@contextlib.contextmanager
def _reopened(records: RecordFile) -> Iterator[BinaryIO | None]:
    """The file ``records`` reads, opened again by its name so that it can be read by
    offset; None when the name no longer opens that file (gone, or another file now)."""
    try:
        f = open(records.name, "rb")  # noqa: SIM115 - closed below
    except OSError:
        yield None
        return
    with f:
        yield f if _identity(f) == records.identity() else None


def _identity(f: BinaryIO) -> tuple[int, int]:
    info = os.fstat(f.fileno())
    return (info.st_dev, info.st_ino)
