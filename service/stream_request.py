"""A ValidateStream request read from its bytes, where its records are frames' bytes.

The usual request is hundreds of records given as ``krec`` bytes (a serialized Match), each
with a name or none. protobuf would copy each record's bytes into the message, and again
when ``record.krec`` is read; here they are ``memoryview`` slices of the request's own
bytes, which the compiled checker reads where they lie. Any other request (a record given
as a message, as JSON or as a whole .krec file, one over a frame's bound, a field given
twice or not ours, a name that is no UTF-8, bytes that are no message) is decoded by
protobuf as before: ``Frames`` are only what protobuf would read the same way.

The scan is the compiled checker's (``kingrec._fastcheck_c.request_frames``) when it is
built: the Python loop over a request's bytes cost ~10,000 instructions a match, a tenth of
the server's time. ``read_frames_py`` is its pure-Python twin, the reference the two are
tested against (tests/test_stream_request.py).
"""

from __future__ import annotations

from typing import NamedTuple

from kingrec import _twins
from kingrec.container import MAGIC
from kingrec.limits import MAX_FRAME_BYTES
from kingrec.v1 import service_pb2 as svc

__all__ = ["Frames", "read_frames", "read_frames_py", "stream_request"]

_RECORDS = 0x0A  # ValidateStreamRequest.records = 1, length-delimited
_KREC = 0x12  # Record.krec = 2
_NAME = 0x22  # Record.name = 4
_LENGTH_BYTES = 4  # the varint of any length a request can hold (under 2**28)


class Frames(NamedTuple):
    """A ValidateStreamRequest whose records are all frames' bytes: each record's bytes and
    its name (protobuf's ``record.krec`` and ``record.name``), in order."""

    payloads: list[memoryview]
    names: list[str]


class _Unusual(Exception):
    """The request is not the plain kind ``read_frames`` reads: protobuf decodes it."""


def _length(data: bytes, pos: int) -> tuple[int, int]:
    """The length varint at ``pos`` (at most ``_LENGTH_BYTES`` bytes) and the position past it."""
    value = shift = 0
    for at in range(pos, min(pos + _LENGTH_BYTES, len(data))):
        byte = data[at]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at + 1
        shift += 7
    raise _Unusual  # longer, or past the end


def _value_end(data: bytes, pos: int, limit: int) -> tuple[int, int]:
    """The start and end of the length-delimited value whose length is at ``pos``; one that
    runs past ``limit`` (its message's end) is unusual."""
    size, pos = _length(data, pos)
    if pos + size > limit:
        raise _Unusual
    return pos, pos + size


def read_frames(data: bytes) -> Frames | None:
    """The records of a ValidateStreamRequest's bytes when each is a frame's bytes (``krec``
    not starting with the .krec magic, at most ``MAX_FRAME_BYTES``) with at most a name and
    nothing else; None for any other request, or bytes that are no message."""
    compiled = _twins.ACTIVE.fastcheck
    if compiled is None:
        return read_frames_py(data)
    found = compiled.request_frames(data, MAX_FRAME_BYTES, MAGIC)
    return None if found is None else Frames(*found)


def read_frames_py(data: bytes) -> Frames | None:
    """``read_frames`` in Python: the twin of the compiled scan, which must agree with it."""
    try:
        return _read(data)
    except (_Unusual, IndexError, UnicodeDecodeError):
        return None


def _read(data: bytes) -> Frames | None:
    view = memoryview(data)
    payloads: list[memoryview] = []
    names: list[str] = []
    pos, end = 0, len(data)
    while pos < end:
        if data[pos] != _RECORDS:
            return None
        pos, stop = _value_end(data, pos + 1, end)
        payload: memoryview | None = None
        name: str | None = None
        while pos < stop:
            key = data[pos]
            if key != _KREC and key != _NAME:
                return None
            pos, field_end = _value_end(data, pos + 1, stop)
            if key == _KREC and payload is None:
                if field_end - pos > MAX_FRAME_BYTES or data.startswith(MAGIC, pos, field_end):
                    return None  # a damage verdict or a whole file: stream_verdicts says
                payload = view[pos:field_end]
            elif key == _NAME and name is None:
                name = str(view[pos:field_end], "utf-8")
            else:
                return None  # a field given twice: protobuf keeps the last
            pos = field_end
        if payload is None:
            return None  # an empty record: damage, from stream_verdicts
        payloads.append(payload)
        names.append(name or "")
    return Frames(payloads, names)


def stream_request(data: bytes) -> Frames | svc.ValidateStreamRequest:
    """ValidateStream's request deserializer: ``Frames`` when ``read_frames`` reads them,
    else the message protobuf decodes (``DecodeError`` for bytes that are none)."""
    frames = read_frames(data)
    return svc.ValidateStreamRequest.FromString(data) if frames is None else frames
