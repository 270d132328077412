"""Judging .krec files on several cores, with exactly the report of one.

Judging a run of frames comes in two stages (``kingrec.fastcheck``): the first (the compiled
checker, the reference validator for the records it cannot vouch for, each record's content
key) needs nothing but the frames, so any process can do it; the second (the run-wide
duplicate set) depends on every record before, so this process does it, in file order, with
the same code as the serial path.

``jobs`` processes judge: this one and ``jobs - 1`` workers. Each file is cut into byte
ranges of about ``chunk_bytes``, sent to the workers in order; when the next range to settle
is not back yet, this process judges the next range to come itself (``_judge_range``, the
workers' own call) instead of waiting. So ``--jobs 2`` is two busy processes for two cores,
not a worker on each core and a third process waking beside them for every result. A range
is judged by the process that reads it: it finds the first frame that starts in it
(``find_frame``: a sound header whose payload lies within the file), takes the frames that
start in the range as the reader takes them (headers, payloads, checksums), does stage one
of them and returns what stage two needs: counts, the clean records' keys packed, the
few records with something to report (the range mapped rather than copied into a buffer:
``_maps_range``). Header-shaped bytes inside a payload could fool a sync, so a range is
taken only where it follows on: its first frame must start where the frames before it end;
one that does not is judged again from there. From the first thing that is not a sound frame
(a bad header, a frame that runs past the end, a file that changed) to the end of the file,
the file is read here by the reader itself, resumed at the last frame start known good:
damage, resyncs and a truncated last frame are then found and worded exactly as on one core.
So the report does not depend on the number of jobs, by construction, and only sound
stretches are ever split.

Told the files to come (``JudgePool.expect``), the pool sends the ranges of the next files
while this one is settled, so many small files keep every worker busy too. Only a bounded
window of ranges is in flight, and this process judges only a few ahead of the one it
settles: memory stays flat however big the files. The workers die with the pool: closed and
joined when the run ends well, terminated when it fails or is interrupted, and they end
themselves if this process disappears. They are forks of this process on pipes
(``kingrec.forked``: no ``multiprocessing``, no helper thread waking this one for each
result) where that is safe, else a ``multiprocessing`` pool; a worker that dies has its
ranges judged here.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
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

if TYPE_CHECKING:  # the workers are loaded with the first of them: one job needs none
    import mmap

    from .forked import Result, Workers

__all__ = ["DEFAULT_CHUNK_BYTES", "JudgePool", "can_read_by_offset", "validate_here"]

DEFAULT_CHUNK_BYTES = 4 << 20  # bytes of a file per range sent to a worker
MIN_CHUNK_BYTES = 512  # a smaller range would cost more in tasks than it splits
# Ranges in flight per worker: one being judged, three waiting. This process judges ranges
# too, holding the GIL for a range at a time (some 10 ms for 4 MiB), and meanwhile sends
# none: a worker must not run dry in that time.
_WINDOW_PER_WORKER = 4
# Most ranges this process has judged ahead of the one it settles: their results are kept
# until their turn, so memory stays flat whatever the file.
_AHEAD_HERE = 8
# The end of a file is cut finer, so that the processes finish together: whoever takes the
# last range, the others hold at most a window of ranges still to judge, and those are
# small. From the end back: ``_WINDOW_PER_WORKER`` ranges per worker of an eighth of a
# range, as many of a quarter, as many of a half (``--jobs 2`` on 4 MiB ranges: 4 of
# 512 KiB, 4 of 1 MiB, 4 of 2 MiB; at most 2 MiB left to one process when the other runs
# dry, instead of 16 MiB). A file of one range is not cut, and no range is cut finer than
# ``_TAIL_MIN_BYTES``: a smaller one costs more in tasks than it evens out (so the tests'
# small ``chunk_bytes`` cut files evenly, as before).
_TAIL_PARTS = (8, 4, 2)
_TAIL_MIN_BYTES = 64 << 10
# Bytes a worker reads past its range at once: the frame that starts in the range and ends
# past it mostly fits (a longer one is read in a second go).
_MARGIN = 64 << 10
# Bytes read at a time when judging in this process: any sound frame fits whole after a
# block's worth of frames (MAX_FRAME_BYTES is 1 MiB).
_HERE_BLOCK = (4 << 20) + MAX_FRAME_BYTES + FRAME_HEADER_SIZE

Verdict = MatchReport | Damage | CleanMatches
# Stage one of a piece of frames: its first frame's index, its frames' offsets, the result.
_Piece = tuple[int, list[int], JudgedRun | list[tuple[MatchReport | Damage, int]]]


@dataclass(frozen=True)
class _Range:
    """Bytes ``[start, stop)`` of a file: its frames are those that start there. ``known``:
    a frame starts at ``start`` (else the worker finds the first)."""

    start: int
    stop: int
    known: bool


@dataclass(frozen=True)
class _Taken:
    """What a worker took of a range: ``frames`` frames in a row from byte ``first`` (None:
    no frame header starts in the range), ending at ``end``: at or past the range's stop, or
    before it where the next frame is not whole and sound. The frame indices of ``pieces``
    count from the first frame taken: only this process knows how many frames come before."""

    first: int | None
    end: int
    frames: int
    pieces: list[_Piece]


def _twins_named(name: str) -> _twins.Twins:
    if name == _twins.PYTHON.name:
        return _twins.PYTHON
    if _twins.COMPILED is None:
        raise RuntimeError("the compiled twins are not built in this worker")
    return _twins.COMPILED


# A worker's one read buffer, reused range after range (a fresh one each time costs a tenth
# of the checking in page faults).
_buffer = bytearray()


def _read_into(fd: int, at: int, offset: int, size: int) -> int:
    """Read up to ``size`` bytes of the file from ``offset`` into ``_buffer[at:]``; how many."""
    if len(_buffer) < at + size:
        _buffer.extend(bytes(at + size - len(_buffer)))
    got = 0
    with memoryview(_buffer) as view:
        while got < size:
            with view[at + got : at + size] as room:
                more = os.preadv(fd, [room], offset + got)
            if not more:
                break
            got += more
    return got


def _judge_range(
    path: str, ident: tuple[int, int], name: str, job: _Range, counted: bool, twins_name: str
) -> _Taken | None:
    """Stage one for the frames that start in a range of a file, in a worker or here (plain,
    picklable values); None when ``path`` is not the file this process opened."""
    twins = _twins_named(twins_name)
    with contextlib.ExitStack() as held:
        try:
            taken = _take_range(path, ident, job, counted and _maps_range(twins), twins, held)
        except OSError:
            # Gone, unreadable now, or cut short under its mapping: the parent reads the rest.
            return None
        if taken is None or isinstance(taken, _Taken):
            return taken
        buf, at, end, mapped = taken
        if counted:  # judged where they lie: nothing made per clean frame
            with memoryview(buf) as view, view[at:end] as room:
                judged = list(
                    _judged_pieces(room, end - at, job.start + at, 0, name, twins, mapped=mapped)
                )
            out = [piece for piece, _ in judged]
            stop = at + (judged[-1][1] if judged else 0)
        else:
            payloads, offsets, stop = twins.frames.scan_frames(buf, at, end, MAX_FRAME_BYTES)
            run = FrameRun(0, [job.start + offset for offset in offsets], payloads)
            out = []
            for piece in pieces([run]):
                assert isinstance(piece, FrameRun)
                located = run_locations(piece, name)
                out.append(
                    (piece.first, piece.offsets, judge_frames(piece.payloads, located, twins=twins))
                )
    return _Taken(job.start + at, job.start + stop, sum(len(one[1]) for one in out), out)


def _take_range(
    path: str,
    ident: tuple[int, int],
    job: _Range,
    mapping: bool,
    twins: _twins.Twins,
    held: contextlib.ExitStack,
) -> tuple[bytearray | memoryview, int, int, bool] | _Taken | None:
    """The bytes of the frames that start in a range: ``(buf, at, end, mapped)``, the file
    from the range's start in ``buf`` (the worker's buffer, or with ``mapping`` the file
    mapped, held open by ``held``), its first frame at ``at``, the last ending at or before
    ``end``; a ``_Taken`` of no frame when none starts in it; None when ``path`` is not the
    file this process opened."""
    frames = twins.frames
    with open(path, "rb") as f:
        if _identity(f) != ident:
            return None  # not the file the parent opened: it reads the rest itself
        fd = f.fileno()
        length = job.stop - job.start
        size = os.fstat(fd).st_size
        bound = size - job.start  # the file's end, from the range's start
        # Mapped: up to the end of the longest frame that can start in the range.
        reach = job.stop + FRAME_HEADER_SIZE + MAX_FRAME_BYTES
        room = _mapped_range(fd, job.start, min(reach, size)) if mapping else None
        buf: bytearray | memoryview
        if room is not None:
            buf = held.enter_context(room)
            got = len(buf)
        else:
            buf, got = _buffer, _read_into(fd, 0, job.start, max(0, min(bound, length + _MARGIN)))
        if job.known:
            at = 0
        else:
            at = frames.find_frame(buf, 0, got, bound, MAX_FRAME_BYTES, length)
            if at < 0:
                return _Taken(None, job.start, 0, [])
        # Where the frames that start in the range end, by their headers; the payloads
        # and their checksums are taken as they are judged.
        _, stop, _ = frames.walk_headers(buf, at, got, bound, MAX_FRAME_BYTES, length - at)
        if stop > got:  # the last of them ends past what was read (never past a mapping)
            got += _read_into(fd, got, job.start + got, stop - got)
    return buf, at, min(stop, got), buf is not _buffer


def _maps_range(twins: _twins.Twins) -> bool:
    """Whether a range is judged in the file mapped (``mmap``) rather than read into this
    process's buffer: with the checksum in C, in a worker and in the command alike. Every
    read of the mapping is under the SIGBUS guard (``_busguard.pxd``): a file cut short
    under it stops the walk over the headers or the sync (``OSError``: the range is left to
    the reader, in this process) or the check (at the frame it was reading)."""
    return _MAP_RANGES and _can_map(twins)


def _mapped_range(
    fd: int, start: int, stop: int
) -> contextlib.AbstractContextManager[memoryview] | None:
    """Bytes ``[start, stop)`` of the file mapped read-only, as a view from ``start`` on,
    the mapping closed on leaving it; None when there are none or mmap refuses."""
    import mmap

    base = start - start % mmap.ALLOCATIONGRANULARITY
    if stop <= start:
        return None
    try:
        mapping = mmap.mmap(fd, stop - base, access=mmap.ACCESS_READ, offset=base)
    except (OSError, ValueError, OverflowError):
        return None
    return _viewed(mapping, start - base)


@contextlib.contextmanager
def _viewed(mapping: mmap.mmap, skip: int) -> Iterator[memoryview]:
    try:
        with memoryview(mapping) as whole, whole[skip:] as view:
            yield view
    finally:
        mapping.close()


def _judged_pieces(
    buf: bytearray | memoryview | mmap.mmap,
    size: int,
    base: int,
    first: int,
    name: str,
    twins: _twins.Twins,
    *,
    start: int = 0,
    mapped: bool = False,
) -> Iterator[tuple[_Piece, int]]:
    """Stage one (``judge_run``) of the sound frames in a row at the start of ``buf[:size]``,
    the file's bytes from offset ``base`` on, the first being frame ``first``: judged where
    they lie by the compiled checker's ``check_frames``, ``PIECE_FRAMES`` at a time, each
    piece with where in ``buf`` it stops. They stop at ``size`` or at the start of the first
    frame not whole and sound. Only the records with something to report become Python
    objects, a piece at a time (a hostile MiB can hold 65,536 empty frames). The first frame
    is at ``start`` in ``buf``; ``mapped``: ``buf`` is a file mapped in memory, which may be cut
    short under the run (``check_frames`` then stops at the frame it was reading)."""
    checker = checker_of(twins)
    assert checker is not None, "judging frames where they lie needs the compiled checker"
    engine, key_of = twins.engine, content_key_of(twins)
    pos, index = start, first
    while pos < size:
        stop, packed, clean, deals, dirty, payloads, keys = checker.check_frames(
            buf, pos, size, MAX_FRAME_BYTES, PIECE_FRAMES, mapped
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


def _range_starts(size: int, chunk_bytes: int, tail_ranges: int) -> list[int]:
    """Where the ranges of a ``size``-byte file start: every ``chunk_bytes`` from the file
    header on, but the end of the file in finer ranges (``_TAIL_PARTS``, ``tail_ranges``
    of each size, none under ``_TAIL_MIN_BYTES``), so that the last ranges judged are small.
    A file that fits in one range stays one range (many small files are many ranges).
    """
    if size - FILE_HEADER_SIZE <= chunk_bytes:
        return list(range(FILE_HEADER_SIZE, size, chunk_bytes))
    tail: list[int] = []
    end = size
    for part in _TAIL_PARTS:
        step = chunk_bytes // part
        if step < _TAIL_MIN_BYTES:
            continue
        for _ in range(tail_ranges):
            if end - step <= FILE_HEADER_SIZE:
                break
            end -= step
            tail.append(end)
    return [*range(FILE_HEADER_SIZE, end, chunk_bytes), *reversed(tail)]


class _Plan:
    """A file's ranges: those sent to the workers (in order, with their results to come)
    and those still to send. ``counted``: judged for ``count_clean`` (``validate_runs``).
    ``tail_ranges``: how many of each finer size end the file (``_range_starts``)."""

    def __init__(
        self,
        path: str,
        ident: tuple[int, int],
        size: int,
        chunk_bytes: int,
        counted: bool,
        tail_ranges: int = 0,
    ) -> None:
        self.path = path
        self.ident = ident
        self.size = size
        self.counted = counted
        starts = _range_starts(size, chunk_bytes, tail_ranges)
        stops = [*starts[1:], size]
        self.todo = (
            _Range(at, stop, at == FILE_HEADER_SIZE) for at, stop in zip(starts, stops, strict=True)
        )
        self.sent: deque[tuple[_Range, _Result]] = deque()


class _Judged:
    """A range judged in this process, kept in the order of the ranges sent to the workers
    (the face of a worker's result that ``JudgePool`` uses)."""

    def __init__(self, taken: _Taken | None) -> None:
        self._taken = taken

    def ready(self) -> bool:
        return True

    def get(self) -> _Taken | None:
        return self._taken


if TYPE_CHECKING:  # a range's result: a worker's to come, or judged here
    _Result = Result[_Taken | None] | _Judged


class JudgePool:
    """``jobs`` processes judging the frames of one .krec file after another: this one and
    ``jobs - 1`` workers.

    This process settles every range in file order; when the next range to settle is not
    judged yet, it judges the next range to come itself rather than wait (so on ``jobs``
    cores there are ``jobs`` busy processes, not one more that wakes to settle).

    Use it as a context manager (the workers are stopped on leaving it) and pass it to
    ``kingrec.validation.validate_records``. The workers start with the first range. Tell it
    the files to come (``expect``) and it keeps the workers busy across files.
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
        self.chunk_bytes = max(chunk_bytes, MIN_CHUNK_BYTES)
        self.twins = twins or _twins.ACTIVE
        # Ranges of each finer size at the end of a file: a window's worth (none on one job).
        self._tail_ranges = _WINDOW_PER_WORKER * (jobs - 1)
        self._pool: Workers[_Taken | None] | None = None
        self._expected: Iterator[str] = iter(())  # files to come, not planned yet
        self._plans: deque[_Plan] = deque()  # planned files, in the order they are judged
        self._unsent: deque[_Plan] = deque()  # those with ranges still to send, in order
        self._in_flight = 0  # ranges sent to the workers whose results are not taken yet
        self._ahead = 0  # ranges judged here whose results are not taken yet
        self._counted = False  # what the files to come are to be judged for

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
        self._expected = iter(())
        while self._plans:
            self._drop(self._plans.popleft())
        if self._pool is not None:
            pool, self._pool = self._pool, None
            pool.end(ended_well=ended_well)

    def _workers(self) -> Workers[_Taken | None]:
        assert self.jobs > 1, "one job has no workers"
        if self._pool is None:
            # Forked, a worker is at work at once, kingrec already imported; with other
            # threads running (a progress bar's) a forked child could inherit a lock held
            # by one of them, so then each worker is a fresh interpreter (``forked``).
            from .forked import workers

            self._pool = workers(self.jobs - 1, _judge_range)
        return self._pool

    def start(self) -> None:
        """Start the workers now rather than with the first range. Called while this process
        runs no other thread (before a progress bar's), they are forked: running in
        milliseconds, kingrec already imported. Started later, with another thread about,
        each is a fresh interpreter (spawned), which costs it some 0.3 s of CPU importing."""
        if self.jobs > 1:
            self._workers()

    def can_split(self, records: RecordFile) -> bool:
        """Whether the workers can read ``records`` themselves: a regular .krec file."""
        return can_read_by_offset(records)

    def expect(self, paths: Iterable[str], *, count_clean: bool) -> None:
        """The files the next ``validate_file`` calls are for, in order (some may never
        come: a file that cannot be opened, or is no .krec file after all): the ranges of
        the ``.krec`` ones are sent ahead of their turn, as the workers have room, judged
        for ``count_clean`` as ``validate_file`` will be asked. Replaces what was expected.
        """
        while self._plans:
            self._drop(self._plans.popleft())
        self._expected = iter(paths)
        self._counted = count_clean and checker_of(self.twins) is not None

    def validate_file(
        self, records: RecordFile, *, count_clean: bool, seen: set[int]
    ) -> Iterator[Verdict]:
        """``kingrec.fastcheck.validate_runs`` of a .krec file (``can_split``), stage one in
        the workers and here: the same items, in the same order."""
        with _reopened(records) as f:
            if f is None:
                # Gone, or the name stands for another file now: the open one, judged here.
                runs = records.raw_frame_runs()
                yield from validate_runs(
                    runs, records.name, count_clean=count_clean, twins=self.twins, seen=seen
                )
                return
            check_file_header(f, records.name)
            counted = count_clean and checker_of(self.twins) is not None
            plan = self._turn(records.name, _identity(f), os.fstat(f.fileno()).st_size, counted)
            try:
                yield from self._validate(f, plan, records, counted, seen)
            finally:
                self._drop(plan)
                if self._plans and self._plans[0] is plan:
                    self._plans.popleft()

    def _turn(self, name: str, ident: tuple[int, int], size: int, counted: bool) -> _Plan:
        """The plan of the file ``name`` open now (``ident``, ``size`` bytes), at the head of
        the plans: the one made ahead if it is still this file as it is, else a new one;
        the plans of files passed over are dropped."""
        plan: _Plan | None = None
        if any(one.path == name for one in self._plans):
            while self._plans[0].path != name:
                self._drop(self._plans.popleft())
            plan = self._plans[0]
        elif not self._plans:  # not planned yet: the files to come, up to this one
            for path in self._expected:
                if path == name:
                    self._add(self._plan(path))
                    plan = self._plans[0] if self._plans else None
                    break
        if plan is not None and (plan.ident, plan.size, plan.counted) == (ident, size, counted):
            return plan
        if plan is not None:  # changed since it was planned: planned again, as it is now
            self._drop(self._plans.popleft())
        plan = _Plan(name, ident, size, self.chunk_bytes, counted, self._tail_ranges)
        self._plans.appendleft(plan)
        self._unsent.appendleft(plan)
        return plan

    def _plan(self, path: str) -> _Plan | None:
        """A plan for a file to come, if it looks like a regular .krec file now."""
        if not path.lower().endswith(".krec"):
            return None  # JSON, or a name that says nothing: judged when it comes
        try:
            info = os.stat(path)
        except OSError:
            return None
        if not stat.S_ISREG(info.st_mode):
            return None
        ident = (info.st_dev, info.st_ino)
        return _Plan(path, ident, info.st_size, self.chunk_bytes, self._counted, self._tail_ranges)

    def _add(self, plan: _Plan | None) -> None:
        if plan is not None:
            self._plans.append(plan)
            self._unsent.append(plan)

    def _drop(self, plan: _Plan) -> None:
        """Forget a plan's results to come (the workers finish them; nobody reads them)."""
        here = sum(isinstance(result, _Judged) for _, result in plan.sent)
        self._ahead -= here
        self._in_flight -= len(plan.sent) - here
        plan.sent.clear()
        with contextlib.suppress(ValueError):
            self._unsent.remove(plan)

    def _send(self, plan: _Plan, job: _Range, *, here: bool = False) -> _Result:
        """A range to a worker, or (``here``) judged in this process now: the same call."""
        args = (plan.path, plan.ident, plan.path, job, plan.counted, self.twins.name)
        if here:
            return _Judged(_judge_range(*args))
        return self._workers().submit(args)

    def _to_come(self) -> tuple[_Plan, _Range] | None:
        """The next range to judge, in the order they are settled (None: none left)."""
        while True:
            if not self._unsent:
                for path in self._expected:
                    self._add(self._plan(path))
                    if self._unsent:
                        break
                else:
                    return None
            plan = self._unsent[0]
            job = next(plan.todo, None)
            if job is not None:
                return plan, job
            self._unsent.popleft()

    def _feed(self) -> None:
        """Send ranges to the workers, in the order they are settled, until the window is
        full."""
        window = _WINDOW_PER_WORKER * (self.jobs - 1)
        while self._in_flight < window and (got := self._to_come()) is not None:
            plan, job = got
            plan.sent.append((job, self._send(plan, job)))
            self._in_flight += 1

    def _judge_ahead(self) -> bool:
        """Judge the next range to come here, instead of waiting; False when none is left or
        enough are judged ahead."""
        if self._ahead >= _AHEAD_HERE or (got := self._to_come()) is None:
            return False
        plan, job = got
        plan.sent.append((job, self._send(plan, job, here=True)))
        self._ahead += 1
        return True

    def _next(self, plan: _Plan) -> tuple[_Range, _Taken | None] | None:
        """The next range of the file being judged with what was taken of it; None when
        every range is done."""
        if not plan.sent:  # the window is full of later files' ranges: this one's first
            job = next(plan.todo, None)
            if job is None:
                return None
            plan.sent.append((job, self._send(plan, job, here=True)))
            self._ahead += 1
        job, result = plan.sent[0]
        # Not judged yet by its worker: this process judges the ranges to come meanwhile.
        while not result.ready() and self._judge_ahead():
            pass
        plan.sent.popleft()
        if isinstance(result, _Judged):
            self._ahead -= 1
        else:
            self._in_flight -= 1
        taken = result.get()
        self._feed()  # the workers go on while this range is settled
        return job, taken

    def _validate(
        self, f: BinaryIO, plan: _Plan, records: RecordFile, counted: bool, seen: set[int]
    ) -> Iterator[Verdict]:
        fd, name, twins = f.fileno(), records.name, self.twins
        self._feed()
        at, index = FILE_HEADER_SIZE, 0  # where the frames settled so far end, and how many
        while (got := self._next(plan)) is not None:
            job, taken = got
            if at >= job.stop:
                continue  # inside the frame before: no frame starts in this range
            if taken is not None and taken.first != at:
                # Not following on (a sync on frame-shaped bytes inside a payload, or no
                # sound frame where the frames before end): judged again from there.
                again = _Range(at, job.stop, known=True)
                taken = self._send(plan, again, here=True).get()
            if taken is None:
                break  # not the file this process opened any more: the reader's
            yield from _settle_taken(taken, index, fd, name, seen, twins)
            at, index = taken.end, index + taken.frames
            records.note_read(at)
            if at < job.stop:
                break  # a frame that is not whole and sound: the reader's
        # The reader itself from the last frame start known good: damage, or nothing (or
        # frames appended since the file was opened) at the end of the file.
        f.seek(at)
        runs = located_runs(read_frame_runs_from(f, name, at, index), name)
        yield from validate_runs(runs, name, count_clean=counted, twins=twins, seen=seen)
        records.note_read(os.fstat(fd).st_size)


def _settle_taken(
    taken: _Taken, first: int, fd: int, name: str, seen: set[int], twins: _twins.Twins
) -> Iterator[Verdict]:
    """Stage two of what a worker took of a range whose first frame is frame ``first``."""
    if first:
        taken_pieces = [
            (
                at + first,
                offsets,
                replace(one, reports=_placed(one.reports, first, fd, twins))
                if isinstance(one, JudgedRun)
                else _placed(one, first, fd, twins),
            )
            for at, offsets, one in taken.pieces
        ]
    else:
        taken_pieces = taken.pieces
    yield from _settle(taken_pieces, fd, name, seen, twins)


def _placed(
    reports: list[tuple[MatchReport | Damage, int]], first: int, fd: int, twins: _twins.Twins
) -> list[tuple[MatchReport | Damage, int]]:
    """A worker's reports (with their keys) with the frame indices of the file, where the
    frame counted from the range is frame ``first`` of the file."""
    out: list[tuple[MatchReport | Damage, int]] = []
    for report, key in reports:
        where = replace(report.location, frame=(report.location.frame or 0) + first)
        if isinstance(report, MatchReport):
            report.location = where
            out.append((report, key))
        else:  # damage is worded with its frame's index: judged again here, where it lies
            payload = _FramePayloads(fd, [where.offset or 0])[0]
            out.append((judge_payload(payload, where, twins.engine), key))
    return out


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
        mapped = _MAP_BLOCKS and _can_map(twins)
        block = bytearray(0)
        buf: bytearray | mmap.mmap
        pos, index = FILE_HEADER_SIZE, 0
        while True:
            view = _mapped_block(fd, pos) if mapped else None
            if view is not None:  # the page cache itself: no copy of the file into a buffer
                buf, got, base = view
            elif mapped:
                break  # nothing past ``pos`` now: the reader's (the end, or a file cut short)
            else:
                if not block:
                    # No bigger than the file: a one-match file zeroes a few KiB, not 5 MiB
                    # (a file that grows meanwhile is taken a block of this size at a time).
                    size = os.fstat(fd).st_size - FILE_HEADER_SIZE
                    block = bytearray(max(min(_HERE_BLOCK, size), 1))
                buf, got, base = block, os.preadv(fd, [block], pos), pos
            begin = taken = pos - base
            try:
                pieces = _judged_pieces(
                    buf, got, base, index, name, twins, start=begin, mapped=view is not None
                )
                for piece, stop in pieces:
                    yield from _settle([piece], fd, name, seen, twins)  # each piece as judged
                    index += len(piece[1])
                    taken = stop
            finally:
                if view is not None:
                    view[0].close()
            if taken == begin:
                break  # the end, or a frame that is not whole and sound: the reader's
            pos = base + taken
            records.note_read(pos)
        f.seek(pos)
        runs = located_runs(read_frame_runs_from(f, name, pos, index), name)
        yield from validate_runs(runs, name, count_clean=True, twins=twins, seen=seen)
        records.note_read(os.fstat(fd).st_size)


# Judge a regular file's blocks in the page cache (mmap) rather than read into a buffer: the
# kernel's copy of the file was 6.6% of one job's time (perf). Needs the checksum in C
# (``_fastcheck_c.crc_in_c``): a mapped block is read under a SIGBUS guard, with no Python
# call. False: read() into a buffer, as where mmap is refused.
_MAP_BLOCKS = True
# The same for the ranges of ``--jobs N`` (``_maps_range``): the copy of each range into a
# buffer was most of what a process spent in the kernel beyond what one job does.
_MAP_RANGES = True


def _can_map(twins: _twins.Twins) -> bool:
    """Whether ``twins`` judge frames in a mapping: with the checksum in C (no Python call
    reads the mapping, ``check_frames`` guards its reads against a SIGBUS)."""
    return twins.fastcheck is not None and twins.fastcheck.crc_in_c()


def _mapped_block(fd: int, pos: int) -> tuple[mmap.mmap, int, int] | None:
    """The file's bytes from ``pos`` on, up to a block (``_HERE_BLOCK``), mapped read-only:
    ``(mapping, its length, the file offset it starts at)`` (a page boundary at or before
    ``pos``); None when there is nothing past ``pos`` now or mmap refuses (the caller then
    leaves the rest to the reader, which reads)."""
    import mmap  # here: only the one-job path maps

    size = os.fstat(fd).st_size
    base = pos - pos % mmap.ALLOCATIONGRANULARITY
    length = min(pos + _HERE_BLOCK, size) - base
    if length <= pos - base:
        return None
    try:
        return mmap.mmap(fd, length, access=mmap.ACCESS_READ, offset=base), length, base
    except (OSError, ValueError, OverflowError):
        return None


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
