"""Writing a file safely: it appears under its name only when complete, and survives a crash.

``atomic_output(path)`` writes to a temporary file beside ``path``, then flushes it, fsyncs
it, renames it over ``path`` and fsyncs the directory, so after a power loss the target is
either the old file or the whole new one, never empty or short. On any error — an exception,
Ctrl-C, SIGTERM turned into SystemExit by the CLI — the temporary file is removed.

Against ``kill -9`` nothing can run, so the temporary name says whose it is:
``.NAME.kingrec-PID.tmp`` in the target's directory. The next write to the same target
removes such files whose process is gone. That is the one thing a user may find after a
killed run: a hidden ``.NAME.kingrec-PID.tmp`` file, safe to delete.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from typing import IO

__all__ = [
    "atomic_output",
    "atomic_text_output",
    "remove_stale_temporaries",
    "temporary_name",
]

_SUFFIX = ".tmp"


def temporary_name(path: str, pid: int | None = None) -> str:
    """The temporary file a write to ``path`` uses (by this process, or by ``pid``)."""
    head, name = os.path.split(os.path.abspath(path))
    return os.path.join(head, f".{name}.kingrec-{os.getpid() if pid is None else pid}{_SUFFIX}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def remove_stale_temporaries(path: str) -> list[str]:
    """Remove the temporary files of writes to ``path`` whose process is gone; their names."""
    head, name = os.path.split(os.path.abspath(path))
    pattern = re.compile(rf"^\.{re.escape(name)}\.kingrec-(\d+){re.escape(_SUFFIX)}$")
    removed: list[str] = []
    try:
        entries = os.listdir(head)
    except OSError:
        return removed
    for entry in entries:
        match = pattern.match(entry)
        if match and int(match.group(1)) != os.getpid() and not _alive(int(match.group(1))):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(head, entry))
                removed.append(entry)
    return removed


def _fsync_directory(path: str) -> None:
    if not hasattr(os, "O_DIRECTORY"):  # Windows: directories cannot be opened for fsync
        return
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    except OSError:  # some filesystems do not sync directories; the rename still stands
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_output(path: str) -> Iterator[IO[bytes]]:
    """A binary file to write that appears under ``path`` only when the block succeeds."""
    with _atomic(path, "wb") as f:
        yield f  # type: ignore[misc]


@contextlib.contextmanager
def atomic_text_output(path: str, encoding: str = "utf-8") -> Iterator[IO[str]]:
    """A text file to write (no newline translation) that appears only when complete."""
    with _atomic(path, "w", encoding) as f:
        yield f  # type: ignore[misc]


def _named(exc: OSError, path: str) -> OSError:
    """The failure to make the temporary file, told of the file asked for: its hidden name
    means nothing to the user."""
    folder = os.path.dirname(os.path.abspath(path))
    if isinstance(exc, FileNotFoundError) and not os.path.isdir(folder):
        why = f"the directory {folder} does not exist"
    elif isinstance(exc, NotADirectoryError):
        why = f"{folder} is not a directory"
    else:
        why = exc.strerror or str(exc)
    return type(exc)(exc.errno, why, path)


@contextlib.contextmanager
def _atomic(path: str, mode: str, encoding: str | None = None) -> Iterator[IO[bytes] | IO[str]]:
    remove_stale_temporaries(path)
    tmp = temporary_name(path)
    try:
        if mode == "w":
            f: IO[bytes] | IO[str] = open(tmp, "w", encoding=encoding, newline="")  # noqa: SIM115
        else:
            f = open(tmp, "wb")  # noqa: SIM115
    except OSError as exc:
        raise _named(exc, path) from None
    try:
        with f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    _fsync_directory(path)
