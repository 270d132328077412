"""The bytes of a ``.krec`` file (see ``kingrec.container``) and the types of what is read.

Shared by the writer and the reader: the signature, the header structs and their sizes,
the frame records, and the stream protocols both sides accept.
"""

from __future__ import annotations

import os
import struct
from typing import NamedTuple, Protocol, TypeAlias

__all__ = [
    "FILE_HEADER",
    "FILE_HEADER_SIZE",
    "FORMAT_VERSION",
    "FRAME_HEADER",
    "FRAME_HEADER_SIZE",
    "FRAME_MARKER",
    "MAGIC",
    "Frame",
    "FrameDamage",
    "FrameInfo",
    "FrameRun",
    "ReadableBinary",
    "SerializableMessage",
    "Source",
    "WritableBinary",
]

# PNG-style signature: the high-bit byte, CR LF and ^Z make text-mode transfers and
# 7-bit channels visibly corrupt the magic instead of silently corrupting frames.
MAGIC = b"\x89KREC\r\n\x1a"
FORMAT_VERSION = 1
FILE_HEADER_SIZE = 12
FRAME_MARKER = b"KRF1"
FRAME_HEADER_SIZE = 16

# MAGIC | format version | flags
FILE_HEADER = struct.Struct("<8sHH")
# FRAME_MARKER | payload length | crc32(payload) | crc32(the 12 bytes before)
FRAME_HEADER = struct.Struct("<4sIII")


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


# --------------------------------------------------------------------------- records

# NamedTuples, not frozen slotted dataclasses: equal, hashed, shown and read-only alike, and
# loaded for some 0.5 M instructions each instead of 4 M (every command that reads or writes
# a file loads the four). A field named ``index`` hides tuple.index, which mypy flags.


class FrameInfo(NamedTuple):
    """What the writer wrote: frame index, byte offset of its header, payload size and crc."""

    index: int  # type: ignore[assignment]
    offset: int
    length: int
    crc32: int


class Frame(NamedTuple):
    """An intact frame; ``offset`` is the byte offset of its frame header."""

    index: int  # type: ignore[assignment]
    offset: int
    payload: bytes

    def __repr__(self) -> str:  # without the payload
        return f"Frame(index={self.index!r}, offset={self.offset!r})"


class FrameRun(NamedTuple):
    """Intact frames in a row: frame ``first + i`` has its header at ``offsets[i]``."""

    first: int
    offsets: list[int]
    payloads: list[bytes]

    def __repr__(self) -> str:  # without the offsets and payloads
        return f"FrameRun(first={self.first!r})"


class FrameDamage(NamedTuple):
    """A frame that could not be read: kind is "corrupt", "truncated" or "undecodable"."""

    index: int  # type: ignore[assignment]
    offset: int
    kind: str
    message: str
