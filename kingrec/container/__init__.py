"""The ``.krec`` container: many serialized ``Match`` records per file.

Layout (all integers little-endian)::

    file header  12 bytes  MAGIC (8) | format version u16 (= 1) | flags u16 (= 0)
    frame        16 bytes  b"KRF1" | payload length u32 | crc32(payload) u32
                           | crc32(first 12 bytes of this frame header) u32
                 n bytes   payload (one serialized ``kingrec.v1.Match``),
                           n <= ``kingrec.limits.MAX_FRAME_BYTES``

Every frame carries its own checksums, so a damaged frame is reported and skipped
and the reader resynchronises on the next intact frame header.  The reader only reads
(``read()`` is enough; never ``seek``/``tell``) and keeps a buffer of a few MiB, so it
streams files of any size, including from pipes such as ``sys.stdin.buffer``.  Any input
of N bytes, however it is damaged or built to hurt, is read in time linear in N.
"""

# The layout and its types (layout), the writer (writer) and the reader (reader) live in
# modules of their own; the public names are all here. The layout is small and loaded at
# once; the reader and the writer are loaded on first use (PEP 562), so a command that only
# writes (``kingrec simulate``) never loads the reader, its twins and protobuf.
from typing import TYPE_CHECKING

from .. import _lazy_names
from .layout import (
    FILE_HEADER_SIZE,
    FORMAT_VERSION,
    FRAME_HEADER_SIZE,
    FRAME_MARKER,
    MAGIC,
    Frame,
    FrameDamage,
    FrameInfo,
    FrameRun,
    ReadableBinary,
    SerializableMessage,
    WritableBinary,
)
from .layout import Source as Source

if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ loads these
    from .reader import ScanFrames as ScanFrames
    from .reader import (
        check_file_header,
        decode_frame,
        is_krec,
        iter_matches,
        read_frame_runs,
        read_frame_runs_from,
        read_frames,
    )
    from .writer import KrecWriter

# Each lazily loaded name and the module it comes from.
_ORIGINS = {
    "ScanFrames": ".reader",
    "check_file_header": ".reader",
    "decode_frame": ".reader",
    "is_krec": ".reader",
    "iter_matches": ".reader",
    "read_frame_runs": ".reader",
    "read_frame_runs_from": ".reader",
    "read_frames": ".reader",
    "KrecWriter": ".writer",
}

__all__ = [
    "FILE_HEADER_SIZE",
    "FORMAT_VERSION",
    "FRAME_HEADER_SIZE",
    "FRAME_MARKER",
    "MAGIC",
    "Frame",
    "FrameDamage",
    "FrameInfo",
    "FrameRun",
    "KrecWriter",
    "ReadableBinary",
    "SerializableMessage",
    "WritableBinary",
    "check_file_header",
    "decode_frame",
    "is_krec",
    "iter_matches",
    "read_frame_runs",
    "read_frame_runs_from",
    "read_frames",
]


if not TYPE_CHECKING:  # hidden from type checkers, which would take any name as Any
    __getattr__, __dir__ = _lazy_names(__name__, globals(), _ORIGINS)
