"""The server's heap: the pages of a freed request serve the next one (glibc only).

A ValidateStream request is megabytes (800 classic matches ≈ 3.9 MB), and gRPC and protobuf
allocate its bytes afresh for each message. glibc's defaults give such a block pages of its
own (an ``mmap`` above its threshold, unmapped when freed) or hand a freed heap top back to
the system, so each request's pages were faulted in again. With the threshold fixed at
glibc's own ceiling for it (32 MiB, above any request: ``MAX_REQUEST_BYTES`` is 4 MiB and
64 KiB) and up to 64 MiB of freed heap kept, they are reused: the server's CPU a classic
match 18.7-20.2 µs → 15.2-17.2 µs (``bench/bench_stream_ab.py --pairs 7 --count 60000``
against the same install with ``MALLOC_MMAP_THRESHOLD_``/``MALLOC_TRIM_THRESHOLD_`` set,
three runs). Either setting alone was no better, or worse. The price: up to 64 MiB the
server no longer returns to the system once it has used it.
"""

from __future__ import annotations

import ctypes
import sys

# mallopt's parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 64 << 20


def keep_freed_memory() -> bool:
    """Set this process's glibc heap to reuse freed request buffers; False (and nothing
    changed) where the C library is not glibc."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None)
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None or getattr(libc, "gnu_get_libc_version", None) is None:
        return False  # musl and others: no such knobs
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
