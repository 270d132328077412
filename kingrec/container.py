"""The ``.krec`` container: many serialized ``Match`` records per file.

Layout (all integers little-endian)::

    file header  12 bytes  MAGIC (8) | format version u16 (= 1) | flags u16 (= 0)
    frame        16 bytes  b"KRF1" | payload length u32 | crc32(payload) u32
                           | crc32(first 12 bytes of this frame header) u32
                 n bytes   payload (one serialized ``kingrec.v1.Match``)

Every frame carries its own checksums, so a damaged frame is reported and skipped
and the reader resynchronises on the next intact frame header.  The reader uses only
``read()`` (never ``seek``/``tell``) and keeps a bounded buffer, so it streams files
of any size, including from pipes such as ``sys.stdin.buffer``.
"""

from __future__ import annotations

import contextlib
import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import Protocol, Self, TypeAlias

from google.protobuf.message import DecodeError

from kingrec.v1 import record_pb2

__all__ = [
    "FILE_HEADER_SIZE",
    "FORMAT_VERSION",
    "FRAME_HEADER_SIZE",
    "FRAME_MARKER",
    "MAGIC",
    "MAX_PAYLOAD_SIZE",
    "ContainerError",
    "Frame",
    "FrameDamage",
    "FrameInfo",
    "KrecWriter",
    "NotKrecError",
    "ReadableBinary",
    "SerializableMessage",
    "UnsupportedVersionError",
    "WritableBinary",
    "decode_frame",
    "is_krec",
    "iter_matches",
    "read_frames",
]

# PNG-style signature: the high-bit byte, CR LF and ^Z make text-mode transfers and
# 7-bit channels visibly corrupt the magic instead of silently corrupting frames.
MAGIC = b"\x89KREC\r\n\x1a"
FORMAT_VERSION = 1
FILE_HEADER_SIZE = 12
FRAME_MARKER = b"KRF1"
FRAME_HEADER_SIZE = 16
MAX_PAYLOAD_SIZE = 64 * 1024 * 1024

_FILE_HEADER = struct.Struct("<8sHH")
_FRAME_HEADER = struct.Struct("<4sIII")
_CHUNK = 64 * 1024
# Cap on a single read() so filling a large payload never holds a second
# payload-sized temporary next to the buffer.
_MAX_READ = 1024 * 1024


class ReadableBinary(Protocol):
    """Anything with a binary ``read(n)``: open files, ``BytesIO``, ``sys.stdin.buffer``."""

    def read(self, size: int, /) -> bytes: ...


class WritableBinary(Protocol):
    """A binary sink with ``write`` and ``flush``."""

    def write(self, data: bytes, /) -> object: ...

    def flush(self) -> object: ...


class SerializableMessage(Protocol):
    """A protobuf message (anything with ``SerializeToString``)."""

    def SerializeToString(self) -> bytes: ...


Source: TypeAlias = str | os.PathLike[str] | ReadableBinary


# --------------------------------------------------------------------------- errors


class ContainerError(Exception):
    """The file header is unusable; ``offset`` is where the problem was found."""

    def __init__(self, message: str, offset: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


class NotKrecError(ContainerError):
    """The input does not start with the ``.krec`` signature."""


class UnsupportedVersionError(ContainerError):
    """The file uses a format version or header flags this kingrec does not know."""


# --------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class FrameInfo:
    """What the writer wrote: frame index, byte offset of its header, payload size and crc."""

    index: int
    offset: int
    length: int
    crc32: int


@dataclass(frozen=True, slots=True)
class Frame:
    """An intact frame; ``offset`` is the byte offset of its frame header."""

    index: int
    offset: int
    payload: bytes = field(repr=False)


@dataclass(frozen=True, slots=True)
class FrameDamage:
    """A frame that could not be read: kind is "corrupt", "truncated" or "undecodable"."""

    index: int
    offset: int
    kind: str
    message: str


# --------------------------------------------------------------------------- writer


def _frame_header(payload: bytes) -> bytes:
    head = struct.pack("<4sII", FRAME_MARKER, len(payload), zlib.crc32(payload))
    return head + struct.pack("<I", zlib.crc32(head))


def _remove_quietly(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


class KrecWriter:
    """Write frames to a ``.krec`` container; use as a context manager.

    ``KrecWriter(fileobj)`` writes to an open binary stream (which it flushes but does
    not close).  ``KrecWriter.open(path)`` writes to ``path + ".tmp"`` and renames it
    over ``path`` only on a successful close, so a failure never leaves a partial file
    under the final name.
    """

    def __init__(self, fileobj: WritableBinary) -> None:
        self._file = fileobj
        self._tmp_path: str | None = None
        self._final_path: str | None = None
        self._closed = False
        self._count = 0
        # Offsets are tracked here rather than via tell() so pipes work as sinks.
        self._offset = 0
        fileobj.write(_FILE_HEADER.pack(MAGIC, FORMAT_VERSION, 0))
        self._offset = FILE_HEADER_SIZE

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Self:
        """Start an atomic write of a new container at ``path``."""
        final = os.fspath(path)
        tmp = final + ".tmp"
        f = open(tmp, "wb")  # noqa: SIM115 - owned by the writer, closed in close()/abort()
        try:
            writer = cls(f)
        except BaseException:
            f.close()
            _remove_quietly(tmp)
            raise
        writer._tmp_path = tmp
        writer._final_path = final
        return writer

    @property
    def frames_written(self) -> int:
        return self._count

    @property
    def closed(self) -> bool:
        return self._closed

    def write(self, payload: bytes) -> FrameInfo:
        """Append one frame holding ``payload``."""
        if self._closed:
            raise ValueError("write to a closed KrecWriter")
        if len(payload) > MAX_PAYLOAD_SIZE:
            raise ValueError(
                f"payload of {len(payload)} bytes exceeds the {MAX_PAYLOAD_SIZE}-byte frame limit"
            )
        header = _frame_header(payload)
        info = FrameInfo(self._count, self._offset, len(payload), zlib.crc32(payload))
        self._file.write(header)
        self._file.write(payload)
        self._count += 1
        self._offset += FRAME_HEADER_SIZE + len(payload)
        return info

    def write_match(self, msg: SerializableMessage) -> FrameInfo:
        """Serialize ``msg`` and append it as one frame."""
        return self.write(msg.SerializeToString())

    def close(self) -> None:
        """Finish the container (for a path: flush, fsync and rename into place)."""
        if self._closed:
            return
        if self._tmp_path is None:
            self._closed = True
            self._file.flush()
            return
        try:
            self._file.flush()
            fileno = getattr(self._file, "fileno", None)
            if fileno is not None:
                # Without fsync a crash right after the rename can leave an empty
                # file under the final name on some filesystems.
                os.fsync(fileno())
            self._close_file()
            assert self._final_path is not None
            os.replace(self._tmp_path, self._final_path)
        except BaseException:
            self.abort()
            raise
        self._closed = True

    def abort(self) -> None:
        """Give up: for a path, delete the temporary file; for a stream, just stop."""
        self._closed = True
        if self._tmp_path is not None:
            try:
                self._close_file()
            finally:
                _remove_quietly(self._tmp_path)

    def _close_file(self) -> None:
        close = getattr(self._file, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


# --------------------------------------------------------------------------- reader


class _Stream:
    """A read()-only byte stream with a bounded look-ahead buffer and an absolute offset."""

    def __init__(self, raw: ReadableBinary) -> None:
        self._raw = raw
        self._buf = bytearray()
        self._pos = 0
        self._eof = False
        self.offset = 0  # absolute offset of the first unconsumed byte

    def available(self) -> int:
        return len(self._buf) - self._pos

    def read_more(self, want: int = _CHUNK) -> bool:
        """Append up to ``want`` more bytes to the buffer; False at end of input."""
        if self._eof:
            return False
        if self._pos:
            # Drop consumed bytes first so the buffer never grows past the look-ahead.
            del self._buf[: self._pos]
            self._pos = 0
        chunk = self._raw.read(min(max(want, _CHUNK), _MAX_READ))
        if not chunk:
            self._eof = True
            return False
        self._buf += chunk
        return True

    def fill(self, n: int) -> int:
        """Buffer at least ``n`` bytes unless the input ends first; return bytes available."""
        while self.available() < n and self.read_more(n - self.available()):
            pass
        return self.available()

    def peek(self, n: int, start: int = 0) -> bytes:
        """Copy of up to ``n`` buffered bytes, ``start`` bytes past the read position."""
        begin = self._pos + start
        with memoryview(self._buf) as view:
            return view[begin : begin + n].tobytes()

    def take(self, n: int) -> bytes:
        data = self.peek(n)
        self.skip(len(data))
        return data

    def skip(self, n: int) -> None:
        n = min(n, self.available())
        self._pos += n
        self.offset += n

    def find(self, needle: bytes) -> int:
        """Position of ``needle`` relative to the read position, or -1."""
        j = self._buf.find(needle, self._pos)
        return -1 if j < 0 else j - self._pos


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


def _read_file_header(stream: _Stream, name: str) -> None:
    got = stream.fill(FILE_HEADER_SIZE)
    n = min(got, len(MAGIC))
    if got == 0 or stream.peek(n) != MAGIC[:n]:
        # Look a little further than the header so text and JSON are recognisable.
        stream.fill(64)
        sample = stream.peek(64)
        raise NotKrecError(f"{name} is not a .krec file: it {_describe_non_krec(sample)}", 0)
    if got < FILE_HEADER_SIZE:
        raise ContainerError(
            f"{name} is truncated: its file header has only {got} of {FILE_HEADER_SIZE} bytes",
            got,
        )
    _, version, flags = _FILE_HEADER.unpack(stream.take(FILE_HEADER_SIZE))
    if version > FORMAT_VERSION:
        raise UnsupportedVersionError(
            f"{name} was written by a newer kingrec (format {version}); this one reads "
            f"format {FORMAT_VERSION} — upgrade kingrec",
            8,
        )
    if version < 1:
        raise ContainerError(f"{name} has an invalid format version {version}", 8)
    if flags:
        raise UnsupportedVersionError(
            f"{name} uses header flags {flags:#06x} that this kingrec does not understand "
            "— upgrade kingrec",
            10,
        )


def _header_problem(header: bytes) -> str | None:
    """Why a 16-byte frame header is unusable, or None if it is sound."""
    marker, length, _, header_crc = _FRAME_HEADER.unpack(header)
    if marker != FRAME_MARKER:
        return "no frame marker where a frame should start"
    if zlib.crc32(header[:12]) != header_crc:
        return "frame header checksum mismatch"
    if length > MAX_PAYLOAD_SIZE:
        return f"impossible payload length of {length} bytes"
    return None


def _resync(stream: _Stream) -> bool:
    """Skip past the damaged frame at the read position to the next sound frame header.

    Returns False if the input ends first.  Scans from one byte after the damaged
    frame's start (not after its declared end) because its length may be the damage,
    or a crashed write may have been followed by appended frames.
    """
    stream.skip(1)
    keep = len(FRAME_MARKER) - 1  # a marker may straddle two chunks
    while True:
        j = stream.find(FRAME_MARKER)
        if j < 0:
            stream.skip(max(0, stream.available() - keep))
            if not stream.read_more():
                stream.skip(stream.available())
                return False
            continue
        stream.skip(j)
        if stream.fill(FRAME_HEADER_SIZE) < FRAME_HEADER_SIZE:
            # Marker bytes too close to the end to carry a header: without a header
            # checksum they are as likely payload bytes as a cut frame, so they join the
            # damaged stretch rather than count as a second, truncated frame.
            stream.skip(stream.available())
            return False
        if _header_problem(stream.peek(FRAME_HEADER_SIZE)) is None:
            return True
        stream.skip(1)


def _open_stream(source: Source) -> tuple[ReadableBinary, str, bool]:
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        return open(path, "rb"), path, True  # closed by read_frames
    return source, str(getattr(source, "name", "input")), False


def read_frames(source: Source) -> Iterator[Frame | FrameDamage]:
    """Stream the frames of a container from a path, binary file or pipe.

    Raises ``ContainerError`` (or a subclass) for an unusable file header before
    anything is yielded; damaged frames are yielded as ``FrameDamage`` and reading
    continues with the next intact frame.
    """
    raw, name, owned = _open_stream(source)
    try:
        yield from _iter_frames(raw, name)
    finally:
        if owned:
            close = getattr(raw, "close", None)
            if close is not None:
                close()


def _iter_frames(raw: ReadableBinary, name: str) -> Iterator[Frame | FrameDamage]:
    stream = _Stream(raw)
    _read_file_header(stream, name)
    index = 0
    while True:
        start = stream.offset
        got = stream.fill(FRAME_HEADER_SIZE)
        if got == 0:
            return
        where = f"frame {index} at byte {start}"
        reason: str
        if got < FRAME_HEADER_SIZE:
            partial = stream.peek(got)
            if FRAME_MARKER.startswith(partial[: len(FRAME_MARKER)]):
                yield FrameDamage(
                    index,
                    start,
                    "truncated",
                    f"the last frame ({where}) is truncated: {FRAME_HEADER_SIZE - got} bytes "
                    f"of its {FRAME_HEADER_SIZE}-byte frame header are missing",
                )
                return
            reason = "no frame marker where a frame should start"
        else:
            header = stream.peek(FRAME_HEADER_SIZE)
            problem = _header_problem(header)
            if problem is None:
                _, length, payload_crc, _ = _FRAME_HEADER.unpack(header)
                total = FRAME_HEADER_SIZE + length
                have = stream.fill(total)
                if have >= total:
                    payload = stream.peek(length, FRAME_HEADER_SIZE)
                    if zlib.crc32(payload) == payload_crc:
                        stream.skip(total)
                        yield Frame(index, start, payload)
                        index += 1
                        continue
                    reason = "payload checksum mismatch"
                else:
                    # The header is sound but the input ends inside the payload.  That
                    # is truncation unless an intact frame starts inside the missing
                    # span (a crashed write followed by appends), so resync first.
                    if not _resync(stream):
                        yield FrameDamage(
                            index,
                            start,
                            "truncated",
                            f"the last frame ({where}) is truncated: {total - have} bytes of "
                            f"its {length}-byte payload are missing",
                        )
                        return
                    skipped = stream.offset - start
                    yield FrameDamage(
                        index,
                        start,
                        "corrupt",
                        f"{where} is corrupt (the next frame starts inside its payload); "
                        f"skipped {skipped} bytes to the next frame",
                    )
                    index += 1
                    continue
            else:
                reason = problem
        found = _resync(stream)
        skipped = stream.offset - start
        tail = (
            f"skipped {skipped} bytes to the next frame"
            if found
            else f"skipped the remaining {skipped} bytes (no further frame found)"
        )
        yield FrameDamage(index, start, "corrupt", f"{where} is corrupt ({reason}); {tail}")
        index += 1
        if not found:
            return


def decode_frame(frame: Frame) -> record_pb2.Match | FrameDamage:
    """The frame's ``kingrec.v1.Match``, or "undecodable" damage when its payload is none."""
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
