"""The server's heap keeps freed request buffers for the next request (glibc only)."""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys

import pytest

GLIBC = sys.platform.startswith("linux") and hasattr(ctypes.CDLL(None), "mallinfo2")

# A block the size of a large request allocated and freed with the C library's malloc, and
# what glibc's mallinfo2 says of it: mapped on its own (hblks) and, once freed, still held.
PROBE = r"""
import ctypes, json, sys
class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = (ctypes.c_void_p,)
if sys.argv[1] == "server":
    from kingrec_service.heap import keep_freed_memory
    assert keep_freed_memory()
size = 6 << 20
before = libc.mallinfo2()
block = libc.malloc(size)
ctypes.memset(block, 1, size)
mapped = libc.mallinfo2().hblks - before.hblks
libc.free(block)
kept = libc.mallinfo2().fordblks - before.fordblks >= size
print(json.dumps({"mapped": mapped, "kept": kept}))
"""


def probe(kind: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, kind], capture_output=True, text=True, check=True
    ).stdout
    return dict(json.loads(out))


@pytest.mark.skipif(not GLIBC, reason="glibc's mallopt and mallinfo2")
def test_the_server_heap_reuses_a_freed_request_buffer_where_the_default_unmaps_it() -> None:
    assert probe("default") == {"mapped": 1, "kept": False}  # pages of its own, given back
    assert probe("server") == {"mapped": 0, "kept": True}  # from the heap, kept for reuse
