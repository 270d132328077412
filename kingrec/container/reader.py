"""Reading a ``.krec`` container: linear time on any input, resync past damaged frames.

Intact frames are taken in bulk by the frame loop of the active twins (``kingrec._twins``);
the frames around damage are judged one by one here. The reader only reads (``read()`` is
enough; never ``seek``/``tell``) through one buffer of a few MiB (``_Window``).
"""

from __future__ import annotations

import os
import stat
import zlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TypeAlias, cast

from .. import _twins
from ..errors import NotRecordFileError, UnreadableFileError, UnsupportedVersionError
from ..limits import MAX_FRAME_BYTES
from ._spans import run_zeros
from .layout import (
    FILE_HEADER,
    FILE_HEADER_SIZE,
    FORMAT_VERSION,
    FRAME_HEADER,
    FRAME_HEADER_SIZE,
    FRAME_MARKER,
    MAGIC,
    Frame,
    FrameDamage,
    FrameRun,
    ReadableBinary,
    Source,
)

if TYPE_CHECKING:
    from ..v1 import record_pb2

__all__ = [
    "ScanFrames",
    "check_file_header",
    "decode_frame",
    "is_krec",
    "iter_matches",
    "read_frame_runs",
    "read_frame_runs_from",
    "read_frames",
]

# Bytes read at a time (at least): the frame loop then runs over many frames per call.
_CHUNK = 1 << 20
_SMALL_CHUNK = 64 << 10  # the least chunk read of a regular file (see _chunk_for)
# What the file header's check reads at most: a file that is no .krec is described by it.
_HEADER_SAMPLE = 64

ScanFrames: TypeAlias = Callable[
    [bytes | bytearray | memoryview, int, int, int], tuple[list[bytes], list[int], int]
]


def _load_scan_frames() -> ScanFrames:
    """The frame loop of the active twins (``kingrec._twins``)."""
    return cast(ScanFrames, _twins.ACTIVE.frames.scan_frames)


_scan_frames = _load_scan_frames()


# A damaged stretch may hold many sound frame headers whose payloads overlap (a file built
# to hurt: a header every 16 bytes, each claiming the rest of the file). Checksumming each
# payload anew would read the same bytes over and over, so while recovering the reader
# keeps S(x), the crc32 of the input from an origin up to x, at every _SUM_STEP-th byte, and
# gets any span's crc32 from two prefixes (``_spans``).
_SUM_STEP = 1024


class _Window:
    """The input through one reused buffer, at absolute offsets; only reads, never seeks.

    ``buf[:end - base]`` holds the input from offset ``base`` on; the bytes after are stale.
    The buffer is filled in place (``readinto``) and slid down over bytes the reader has
    released, so reading allocates nothing per chunk.
    """

    def __init__(self, raw: ReadableBinary, chunk: int | None = None) -> None:
        # readinto1/read1 return what a pipe has (frames come out as they arrive) and
        # fill a chunk from a file; plain read() is the fallback.
        self._into: Callable[[memoryview], int | None] | None = getattr(
            raw, "readinto1", None
        ) or getattr(raw, "readinto", None)
        self._read: Callable[[int], bytes] = getattr(raw, "read1", None) or raw.read
        self.chunk = _CHUNK if chunk is None else chunk  # bytes read at a time (at least)
        self.buf = bytearray(2 * self.chunk)
        self.base = 0  # absolute offset of buf[0]
        self.end = 0  # absolute offset just past the buffered input
        self.eof = False
        self._keep = 0  # bytes before this absolute offset may be dropped
        self._origin = 0  # absolute offset where the prefix sums start
        self._sums = [0]  # _sums[i]: crc32 of the input from _origin to _origin + i*_SUM_STEP

    def read_more(self, want: int = 1) -> bool:
        """One read into the free room (made at least ``want`` bytes); False at the end."""
        if self.eof:
            return False
        self._make_room(want)
        at = self.end - self.base
        if self._into is not None:
            with memoryview(self.buf) as view, view[at:] as room:
                got = self._into(room) or 0
        else:
            chunk = self._read(len(self.buf) - at)
            got = len(chunk)
            self.buf[at : at + got] = chunk
        if not got:
            self.eof = True
            return False
        self.end += got
        return True

    def fill(self, stop: int) -> int:
        """Buffer the input up to absolute offset ``stop`` unless it ends first; the end."""
        while self.end < stop and self.read_more(stop - self.end):
            pass
        return self.end

    def release(self, before: int) -> None:
        """The bytes before ``before`` are no longer needed (the prefix sums keep theirs)."""
        self._keep = before

    def _make_room(self, need: int) -> None:
        """Free a chunk (or ``need`` bytes if more) after the buffered input.

        The kept bytes slide to the front; the buffer grows only if ``need`` bytes do not
        fit after them, which a frame of at most MAX_FRAME_BYTES never asks for.
        """
        room = max(need, self.chunk)
        if len(self.buf) - (self.end - self.base) >= room:
            return
        cut = self._keep
        if cut >= self._origin:  # else the sums start after the cut: they stay as they are
            kept = (cut - self._origin) // _SUM_STEP
            if kept < len(self._sums):
                # Keep the last prefix sum at or before the cut, and the bytes from it on.
                self._origin += kept * _SUM_STEP
                self._sums = self._sums[kept:]
                cut = self._origin
            else:
                self.restart_sums(cut)
        live = self.end - cut
        start = cut - self.base
        if live + need > len(self.buf):
            self.buf = self.buf[start : start + live] + bytearray(need + self.chunk)
        else:
            with memoryview(self.buf) as view:
                view[:live] = view[start : start + live]
        self.base = cut

    def take(self, start: int, stop: int) -> bytes:
        return bytes(self.buf[start - self.base : stop - self.base])

    def restart_sums(self, origin: int) -> None:
        """Count the prefix sums from ``origin`` (which no later ``crc`` span may precede)."""
        self._origin = origin
        self._sums = [0]

    def crc(self, start: int, stop: int) -> int:
        """crc32 of the buffered input ``[start, stop)`` from the prefix sums.

        The sums are extended as far as ``stop`` (once: later spans reuse them), so a span
        costs two lookups, at most 2 * _SUM_STEP bytes checksummed and a shift.
        """
        return self._prefix(stop) ^ run_zeros(self._prefix(start), stop - start)

    def _prefix(self, x: int) -> int:
        buf, sums = self.buf, self._sums
        step, rest = divmod(x - self._origin, _SUM_STEP)
        at = self._origin - self.base  # the origin in buffer coordinates
        while len(sums) <= step:
            a = at + (len(sums) - 1) * _SUM_STEP
            sums.append(zlib.crc32(buf[a : a + _SUM_STEP], sums[-1]))
        a = at + step * _SUM_STEP
        return zlib.crc32(buf[a : a + rest], sums[step])


def _describe_non_krec(head: bytes) -> str:
    """Say what a file lacking the signature looks like, when that is obvious."""
    if not head:
        return "is empty"
    if head.startswith(FRAME_MARKER):
        return "starts with a frame but its 12-byte file header is missing"
    if b"KREC" in head[:8]:
        return (
            "looks like a .krec file damaged by a text-mode transfer (its signature bytes "
            "were altered, e.g. line endings converted); copy it again in binary mode"
        )
    if head.startswith(b"\x1f\x8b"):
        return "is gzip-compressed; decompress it first"
    if head.startswith(b"PK\x03\x04"):
        return "is a zip archive"
    stripped = head.lstrip(b" \t\r\n")
    if stripped.startswith(b"\xef\xbb\xbf"):  # UTF-8 byte order mark
        stripped = stripped[3:].lstrip(b" \t\r\n")
    if stripped.startswith(b"{"):
        return "looks like JSON text (starts with '{'), e.g. a JSON Lines record file"
    if stripped.startswith(b"["):
        return "looks like JSON text (starts with '[')"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # The sample may end in the middle of a multi-byte character.
        text = head[: exc.start].decode("utf-8") if exc.start >= len(head) - 3 else ""
    if text.strip() and all(c.isprintable() or c in "\t\r\n" for c in text):
        return f"looks like text (starts with {text.strip().splitlines()[0][:24]!r})"
    return f"does not start with the .krec signature (first bytes: {head[:8].hex(' ')})"


def _read_file_header(win: _Window, name: str) -> None:
    got = min(win.fill(FILE_HEADER_SIZE), FILE_HEADER_SIZE)
    head = win.take(0, got)
    n = min(got, len(MAGIC))
    if got == 0 or head[:n] != MAGIC[:n]:
        # Look a little further than the header so text and JSON are recognisable.
        sample = win.take(0, min(win.fill(_HEADER_SAMPLE), _HEADER_SAMPLE))
        raise NotRecordFileError(f"{name} is not a .krec file: it {_describe_non_krec(sample)}", 0)
    if got < FILE_HEADER_SIZE:
        raise UnreadableFileError(
            f"{name} is truncated: its file header has only {got} of {FILE_HEADER_SIZE} bytes",
            got,
        )
    _, version, flags = FILE_HEADER.unpack(head)
    if version > FORMAT_VERSION:
        raise UnsupportedVersionError(
            f"{name} was written by a newer kingrec (format {version}); this one reads "
            f"format {FORMAT_VERSION} — upgrade kingrec",
            8,
        )
    if version < 1:
        raise UnreadableFileError(f"{name} has an invalid format version {version}", 8)
    if flags:
        raise UnsupportedVersionError(
            f"{name} uses header flags {flags:#06x} that this kingrec does not understand "
            "— upgrade kingrec",
            10,
        )


def _header_problem(buf: bytearray, at: int) -> str | None:
    """Why the 16-byte frame header at ``buf[at]`` is unusable, or None if it is sound."""
    marker, length, _, header_crc = FRAME_HEADER.unpack_from(buf, at)
    if marker != FRAME_MARKER:
        return "no frame marker where a frame should start"
    if zlib.crc32(buf[at : at + 12]) != header_crc:
        return "frame header checksum mismatch"
    if length > MAX_FRAME_BYTES:
        return f"impossible payload length of {length} bytes"
    return None


def _resync(win: _Window, start: int) -> int:
    """The offset of the first sound frame header at or after ``start``; -1 if the input ends.

    A damaged frame is searched from one byte after its start (not after its declared end)
    because its length may be the damage, or a crashed write may have been followed by
    appended frames. Every byte is looked at once as a frame start, and the bytes before
    the search are released as it goes.
    """
    pos = start
    while True:
        buf, base = win.buf, win.base
        size = win.end - base
        at = buf.find(FRAME_MARKER, pos - base, size)
        while 0 <= at <= size - FRAME_HEADER_SIZE:
            _, length, _, header_crc = FRAME_HEADER.unpack_from(buf, at)
            if length <= MAX_FRAME_BYTES and zlib.crc32(buf[at : at + 12]) == header_crc:
                return base + at
            at = buf.find(FRAME_MARKER, at + 1, size)
        # Go on from a marker whose header is not all buffered yet, or from the last bytes
        # (a marker may straddle two reads).
        pos = base + at if at >= 0 else max(pos, base + size - (len(FRAME_MARKER) - 1))
        win.release(pos)
        if not win.read_more():
            # Marker bytes too close to the end to carry a header: without a header
            # checksum they are as likely payload bytes as a cut frame, so they join the
            # damaged stretch rather than count as a second, truncated frame.
            return -1


def _open_stream(source: Source) -> tuple[ReadableBinary, str, bool]:
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        return open(path, "rb"), path, True  # closed by read_frame_runs
    return source, str(getattr(source, "name", "input")), False


def read_frames(source: Source) -> Iterator[Frame | FrameDamage]:
    """Stream the frames of a container from a path, binary file or pipe.

    Raises a ``kingrec.errors.RecordFileError`` (``NotRecordFileError``,
    ``UnsupportedVersionError``, ``UnreadableFileError``) for an unusable file header before
    anything is yielded; damaged frames are yielded as ``FrameDamage`` and reading
    continues with the next intact frame.
    """
    for item in read_frame_runs(source):
        if isinstance(item, FrameDamage):
            yield item
        else:
            pairs = zip(item.offsets, item.payloads, strict=True)
            for index, (offset, payload) in enumerate(pairs, item.first):
                yield Frame(index, offset, payload)
        del item  # let the run go before the next is read


def read_frame_runs(source: Source) -> Iterator[FrameRun | FrameDamage]:
    """``read_frames`` with the intact frames in runs: no Python object per frame.

    For callers that take frames in bulk (``kingrec.records.RecordFile.raw_frame_batches``).
    """
    raw, name, owned = _open_stream(source)
    try:
        yield from _iter_runs(raw, name)
    finally:
        if owned:
            close = getattr(raw, "close", None)
            if close is not None:
                close()


def check_file_header(raw: ReadableBinary, name: str) -> None:
    """Raise what ``read_frame_runs`` raises for the file header of ``raw`` (read from its
    start), if anything."""
    # A window of the 64 bytes the header's check may look at, not the frames' 2 MiB: the
    # judges read the frames their own way, and the buffer cost more than the check.
    _read_file_header(_Window(raw, chunk=_HEADER_SAMPLE), name)


def read_frame_runs_from(
    raw: ReadableBinary, name: str, offset: int, index: int
) -> Iterator[FrameRun | FrameDamage]:
    """``read_frame_runs`` from the frame that starts at ``offset`` (frame ``index``), with
    ``raw`` positioned there and its file header already checked (``check_file_header``).

    ``offset`` must be where ``read_frame_runs`` finds a frame start with no damage before
    it that is still being judged (the file header's end, or just after an intact frame):
    from there the reader yields exactly what it yields reading the file from the start.
    """
    return _iter_runs(raw, name, (offset, index))


def _chunk_for(raw: ReadableBinary, start: int) -> int | None:
    """The chunk for reading a regular file from ``start``: no bigger than what is left of it
    (at least 64 KiB), or None (``_CHUNK``) when that is unknown. The judges read the end of
    a file from where its frames stop being whole, often nothing: two chunks of buffer
    for it were 2 MiB to allocate and fault in. The window still grows if the file does."""
    try:
        info = os.fstat(raw.fileno())  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):  # no file descriptor (a stream, a buffer)
        return None
    if not stat.S_ISREG(info.st_mode):  # a pipe's size says nothing of what is to come
        return None
    return min(_CHUNK, max(info.st_size - start, _SMALL_CHUNK))


def _iter_runs(
    raw: ReadableBinary, name: str, resume: tuple[int, int] | None = None
) -> Iterator[FrameRun | FrameDamage]:
    win = _Window(raw, _chunk_for(raw, 0 if resume is None else resume[0]))
    if resume is None:
        _read_file_header(win, name)
        pos = FILE_HEADER_SIZE  # where the next frame should start
        index = 0
    else:
        pos, index = resume
        win.base = win.end = win._keep = win._origin = pos  # the input is read from pos on
    # The end of the farthest payload checksummed by prefix sums. Before it the frame
    # loop would checksum those bytes again, so frames there are taken one by one here.
    summed_to = pos
    sound = -1  # where _resync last found a sound frame header
    while True:
        win.release(pos)
        if pos >= summed_to:
            # The happy path, in bulk; it stops at the first frame it cannot take whole.
            if win.end - pos < win.chunk // 2:
                win.read_more()
            base = win.base
            payloads, offsets, stop = _scan_frames(
                win.buf, pos - base, win.end - base, MAX_FRAME_BYTES
            )
            if payloads:
                yield FrameRun(index, [base + at for at in offsets], payloads)
                index += len(payloads)
                pos = base + stop
                win.release(pos)
            del payloads, offsets  # the consumer holds the run; the next read need not
            win.restart_sums(pos + FRAME_HEADER_SIZE)  # no span before a payload is summed
        # One frame, judged here: where the loop stopped, or inside summed payloads.
        head_end = pos + FRAME_HEADER_SIZE
        end = win.end if win.end >= head_end else win.fill(head_end)
        if end == pos:
            return
        reason: str | None
        if end < head_end:
            if FRAME_MARKER.startswith(win.take(pos, min(end, pos + len(FRAME_MARKER)))):
                yield FrameDamage(
                    index,
                    pos,
                    "truncated",
                    f"the last frame (frame {index} at byte {pos}) is truncated: "
                    f"{head_end - end} bytes of its {FRAME_HEADER_SIZE}-byte frame header are "
                    "missing",
                )
                return
            reason = "no frame marker where a frame should start"
        else:
            reason = None if pos == sound else _header_problem(win.buf, pos - win.base)
            if reason is None:
                _, length, payload_crc, _ = FRAME_HEADER.unpack_from(win.buf, pos - win.base)
                stop = head_end + length
                end = win.end if win.end >= stop else win.fill(stop)
                if end < stop:
                    # The header is sound but the input ends inside the payload. That is
                    # truncation unless a sound frame header starts inside the missing span
                    # (a crashed write followed by appends), so resync first.
                    found = _resync(win, pos + 1)
                    if found < 0:
                        yield FrameDamage(
                            index,
                            pos,
                            "truncated",
                            f"the last frame (frame {index} at byte {pos}) is truncated: "
                            f"{stop - end} bytes of its {length}-byte payload are missing",
                        )
                        return
                    yield FrameDamage(
                        index,
                        pos,
                        "corrupt",
                        f"frame {index} at byte {pos} is corrupt (the next frame starts inside "
                        f"its payload); skipped {found - pos} bytes to the next frame",
                    )
                    index += 1
                    pos = sound = found
                    continue
                summed_to = max(summed_to, stop)
                if win.crc(head_end, stop) == payload_crc:
                    yield FrameRun(index, [pos], [win.take(head_end, stop)])
                    index += 1
                    pos = stop
                    continue
                reason = "payload checksum mismatch"
        found = _resync(win, pos + 1)
        if found < 0:
            tail = f"skipped the remaining {win.end - pos} bytes (no further frame found)"
        else:
            tail = f"skipped {found - pos} bytes to the next frame"
        yield FrameDamage(
            index, pos, "corrupt", f"frame {index} at byte {pos} is corrupt ({reason}); {tail}"
        )
        if found < 0:
            return
        index += 1
        pos = sound = found


def decode_frame(frame: Frame) -> record_pb2.Match | FrameDamage:
    """The frame's ``kingrec.v1.Match``, or "undecodable" damage when its payload is none."""
    # Here, not at the top: reading frames needs no protobuf (a validation of clean records
    # loads none; see kingrec.fastcheck._spelled_out).
    from google.protobuf.message import DecodeError

    from ..v1 import record_pb2

    try:
        return record_pb2.Match.FromString(frame.payload)
    except DecodeError:
        return FrameDamage(
            frame.index,
            frame.offset,
            "undecodable",
            f"frame {frame.index} at byte {frame.offset} passed its checksums but is not a "
            "valid Match record (written by an incompatible program?)",
        )


def iter_matches(
    source: Source,
) -> Iterator[tuple[Frame, record_pb2.Match] | FrameDamage]:
    """Like ``read_frames`` but decode each payload as a ``kingrec.v1.Match``.

    A frame whose checksums pass but whose payload does not parse is yielded as
    ``FrameDamage`` of kind "undecodable".
    """
    for item in read_frames(source):
        if isinstance(item, FrameDamage):
            yield item
            continue
        match = decode_frame(item)
        yield match if isinstance(match, FrameDamage) else (item, match)


def is_krec(first_bytes: bytes) -> bool:
    """True if ``first_bytes`` (the start of a file) carry the ``.krec`` signature."""
    return first_bytes.startswith(MAGIC)
