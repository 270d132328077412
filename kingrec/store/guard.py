"""What a store path may name: a DuckDB file, or nothing yet.

DuckDB opens some files that are not databases as an empty database in memory (a JSON
Lines file given as ``--db`` did: the ingest reported records stored, and none were kept).
So a path is looked at before DuckDB sees it: an existing path must be a regular file
that starts as a DuckDB file does (the magic ``DUCK`` at byte 8 of its main header).
"""

from __future__ import annotations

import os
import stat

from ..errors import StoreError

__all__ = ["refuse_what_is_not_a_store"]

_MAGIC = b"DUCK"
_MAGIC_AT = 8  # after the header's checksum


def refuse_what_is_not_a_store(path: str) -> bool:
    """Whether ``path`` exists; a ``StoreError`` naming the path when it holds something
    other than a DuckDB file (an empty file included: DuckDB refuses it too)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise StoreError(f"{path}: cannot open the store: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise StoreError(f"{path}: a directory, not a kingrec store (give a store file)")
    if not stat.S_ISREG(info.st_mode):
        raise StoreError(f"{path}: not a regular file, so not a kingrec store")
    try:
        with open(path, "rb") as file:
            head = file.read(_MAGIC_AT + len(_MAGIC))
    except OSError as exc:
        raise StoreError(f"{path}: cannot open the store: {exc.strerror or exc}") from None
    if head[_MAGIC_AT:] != _MAGIC:
        raise StoreError(
            f"{path}: not a DuckDB file, so not a kingrec store (give an existing store "
            "or a path where a new one can be made)"
        )
    return True
