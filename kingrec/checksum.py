"""The format's CRC-32 (zlib's: IEEE, reflected) at the speed of the machine.

Every frame's payload is checksummed on every read, and with zlib's own loop (2.1 GB/s)
that was half the time of reading a file's frames and 6% of ``kingrec validate``'s CPU.
ISA-L's folding CRC (the ``isal`` package) gives the same numbers about 8 times faster on
the benchmark machine; where it is not installed, zlib's is used (same results, slower).
"""

from __future__ import annotations

try:
    from isal.isal_zlib import crc32
except ImportError:  # pragma: no cover - isal is a dependency; a platform may lack a wheel
    from zlib import crc32

__all__ = ["crc32"]
