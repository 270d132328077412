"""The frame loop of the ``.krec`` reader, in pure Python: the readable twin of ``_frames_c``.

``scan_frames`` takes the happy path in bulk: consecutive intact frames from one position of
a buffer. It judges nothing else; when a frame is incomplete or bad it stops there and the
reader (``kingrec.container``) works out what happened, in Python, once for both twins.
``walk_headers`` only walks the frame headers and ``find_frame`` finds the first one at or
after an offset (a ``kingrec.judges`` worker syncs to its byte range of a file with them).
"""

from __future__ import annotations

import struct

from .checksum import crc32

__all__ = ["find_frame", "scan_frames", "walk_headers"]

_HEADER = struct.Struct("<4sIII")  # marker, payload length, crc32(payload), crc32(header[:12])
_MARKER = b"KRF1"
_HEADER_SIZE = 16


def scan_frames(
    buf: bytes | bytearray | memoryview, start: int, end: int, max_payload: int
) -> tuple[list[bytes], list[int], int]:
    """The intact frames of ``buf[start:end]`` in a row, from ``start`` on.

    A frame is taken when its 16-byte header is sound (marker, header checksum, length at
    most ``max_payload``), its payload lies wholly before ``end`` and the payload checksum
    matches. Returns the payloads, each frame's header offset in ``buf`` and the position
    where the run stopped: ``end``, or the start of the first frame that is incomplete or bad.
    """
    with memoryview(buf) as raw, raw.cast("B") as view:
        _refuse_outside("scan_frames", start, end, len(view), max_payload)
        payloads: list[bytes] = []
        offsets: list[int] = []
        pos = start
        while end - pos >= _HEADER_SIZE:
            marker, length, payload_crc, header_crc = _HEADER.unpack_from(view, pos)
            if (
                marker != _MARKER
                or length > max_payload
                or crc32(view[pos : pos + 12]) != header_crc
                or length > end - pos - _HEADER_SIZE
            ):
                break
            stop = pos + _HEADER_SIZE + length
            payload = view[pos + _HEADER_SIZE : stop]
            if crc32(payload) != payload_crc:
                break
            payloads.append(payload.tobytes())
            offsets.append(pos)
            pos = stop
        return payloads, offsets, pos


def walk_headers(
    buf: bytes | bytearray | memoryview,
    start: int,
    end: int,
    bound: int,
    max_payload: int,
    limit: int,
) -> tuple[int, int, bool]:
    """The sound frame headers in a row in ``buf`` from ``start``, payloads not read.

    A header is taken when it lies wholly before ``end``, is sound (marker, header checksum,
    length at most ``max_payload``) and its payload ends at or before ``bound`` (which may
    lie past the buffer: the end of the file, in the buffer's coordinates). The walk stops
    at the first frame boundary ``limit`` or more bytes after ``start``, or when the next
    header is not wholly in the buffer. Returns how many frames were taken, where the walk
    stopped, and whether it stopped there only for want of bytes or because of the limit
    (False: the frame starting there is unsound or runs past ``bound``).
    """
    with memoryview(buf) as raw, raw.cast("B") as view:
        _refuse_outside("walk_headers", start, end, len(view), max_payload)
        pos, frames = start, 0
        while pos - start < limit and end - pos >= _HEADER_SIZE:
            marker, length, _, header_crc = _HEADER.unpack_from(view, pos)
            if (
                marker != _MARKER
                or length > max_payload
                or crc32(view[pos : pos + 12]) != header_crc
                or pos + _HEADER_SIZE + length > bound
            ):
                return frames, pos, False
            pos += _HEADER_SIZE + length
            frames += 1
        return frames, pos, True


def find_frame(
    buf: bytes | bytearray | memoryview,
    start: int,
    end: int,
    bound: int,
    max_payload: int,
    limit: int,
) -> int:
    """The first offset ``at``, ``start <= at < start + limit``, where a sound frame header
    lies wholly before ``end`` (marker, header checksum, length at most ``max_payload``) whose
    payload ends at or before ``bound`` (as for ``walk_headers``: the end of the file, in the
    buffer's coordinates); -1 if there is none.

    The payload's checksum is not read, and header-shaped bytes inside a payload are found
    like a frame: a ``kingrec.judges`` worker syncs to its byte range with this, checks the
    payloads as it takes the frames, and its parent checks that they follow on from the
    frames before.
    """
    with memoryview(buf) as raw, raw.cast("B") as view:
        _refuse_outside("find_frame", start, end, len(view), max_payload)
        data = buf if isinstance(buf, (bytes, bytearray)) else view.tobytes()
        # Markers that start before ``start + limit`` with a whole header before ``end``.
        last = min(start + limit, end - _HEADER_SIZE + 1)  # the candidates are < last
        stop = max(start, last + len(_MARKER) - 1)
        at = data.find(_MARKER, start, stop)
        while at >= 0:
            _, length, _, header_crc = _HEADER.unpack_from(view, at)
            if (
                length <= max_payload
                and crc32(view[at : at + 12]) == header_crc
                and at + _HEADER_SIZE + length <= bound
            ):
                return at
            at = data.find(_MARKER, at + 1, stop)
        return -1


def _refuse_outside(name: str, start: int, end: int, size: int, max_payload: int) -> None:
    """A walk's span must lie in its buffer of ``size`` bytes, its payload limit be >= 0."""
    if not 0 <= start <= end <= size or max_payload < 0:
        raise ValueError(
            f"{name}: need 0 <= start <= end <= {size} and max_payload >= 0, "
            f"got start={start}, end={end}, max_payload={max_payload}"
        )
