"""Writing a ``.krec`` container: the file header, then one checksummed frame per payload."""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Sequence
from types import TracebackType
from typing import Self

from ..checksum import crc32
from ..errors import LimitError
from ..limits import MAX_FRAME_BYTES
from ..safefile import atomic_output
from .layout import (
    FILE_HEADER,
    FILE_HEADER_SIZE,
    FORMAT_VERSION,
    FRAME_HEADER_SIZE,
    FRAME_MARKER,
    MAGIC,
    FrameInfo,
    SerializableMessage,
    WritableBinary,
)

__all__ = ["KrecWriter"]


_HEAD = struct.Struct("<4sII")  # the frame header less its own checksum
_CRC = struct.Struct("<I")


def _frame_header(payload: bytes, payload_crc: int) -> bytes:
    head = _HEAD.pack(FRAME_MARKER, len(payload), payload_crc)
    return head + _CRC.pack(crc32(head))


class _Aborted(Exception):
    """What an aborted writer tells its atomic output: throw the file away."""


class KrecWriter:
    """Write frames to a ``.krec`` container; use as a context manager.

    ``KrecWriter(fileobj)`` writes to an open binary stream (which it flushes but does
    not close). ``KrecWriter.open(path)`` writes through ``kingrec.safefile.atomic_output``:
    the file appears under ``path`` only on a successful close, fsynced, so a failure never
    leaves a partial file under the final name.
    """

    def __init__(self, fileobj: WritableBinary) -> None:
        self._file = fileobj
        self._output: contextlib.ExitStack | None = None  # the atomic file of open()
        self._closed = False
        self._count = 0
        # Offsets are tracked here rather than via tell() so pipes work as sinks.
        self._offset = 0
        fileobj.write(FILE_HEADER.pack(MAGIC, FORMAT_VERSION, 0))
        self._offset = FILE_HEADER_SIZE

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Self:
        """Start an atomic write of a new container at ``path``."""
        output = contextlib.ExitStack()
        f = output.enter_context(atomic_output(os.fspath(path)))
        try:
            writer = cls(f)
        except BaseException as exc:
            output.__exit__(type(exc), exc, exc.__traceback__)
            raise
        writer._output = output
        return writer

    @property
    def frames_written(self) -> int:
        return self._count

    @property
    def closed(self) -> bool:
        return self._closed

    def _check(self, payloads: Sequence[bytes]) -> None:
        if self._closed:
            raise ValueError("write to a closed KrecWriter")
        for payload in payloads:
            if len(payload) > MAX_FRAME_BYTES:
                raise LimitError(
                    f"a frame payload of {len(payload)} bytes is over MAX_FRAME_BYTES, the "
                    f"{MAX_FRAME_BYTES}-byte limit of one frame"
                )

    def write(self, payload: bytes) -> FrameInfo:
        """Append one frame holding ``payload``; ``LimitError`` if it is over the frame bound."""
        self._check((payload,))
        payload_crc = crc32(payload)
        info = FrameInfo(self._count, self._offset, len(payload), payload_crc)
        self._file.write(_frame_header(payload, payload_crc))
        self._file.write(payload)
        self._count += 1
        self._offset += FRAME_HEADER_SIZE + len(payload)
        return info

    def write_all(self, payloads: Sequence[bytes]) -> None:
        """Append one frame per payload, in one write to the file (``write`` for each, without
        a ``FrameInfo``). ``LimitError`` before anything is written if one is over the bound."""
        self._check(payloads)
        parts: list[bytes] = []
        for payload in payloads:
            parts += (_frame_header(payload, crc32(payload)), payload)
        self._file.write(b"".join(parts))
        self._count += len(payloads)
        self._offset += FRAME_HEADER_SIZE * len(payloads) + sum(map(len, payloads))

    def write_match(self, msg: SerializableMessage) -> FrameInfo:
        """Serialize ``msg`` and append it as one frame."""
        return self.write(msg.SerializeToString())

    def close(self) -> None:
        """Finish the container (for a path: flush, fsync and rename into place)."""
        if self._closed:
            return
        self._closed = True
        if self._output is None:
            self._file.flush()
            return
        self._output.close()

    def abort(self) -> None:
        """Give up: for a path, delete the temporary file; for a stream, just stop."""
        if self._closed:
            return
        self._closed = True
        if self._output is not None:
            aborted = _Aborted()
            self._output.__exit__(_Aborted, aborted, None)

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
