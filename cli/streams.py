"""The standard streams as they are: what their encoding holds, whether they are terminals.

Light on purpose (no rich, no records): the command line imports it before it knows which
command runs. ``prepare_streams`` makes standard output and error write what their encoding
cannot hold as a plain look-alike (``ş`` as ``s``, ``—`` as ``-``) or ``?`` instead of
failing; ``fit`` does the same to a text written by click itself.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import os
import sys
import unicodedata
from typing import IO, Any

from kingrec.cards import SUIT_LETTERS, SUIT_SYMBOLS

__all__ = [
    "FALLBACK",
    "can_encode",
    "fit",
    "is_terminal",
    "prepare_streams",
    "same_terminal",
    "write_error",
]

FALLBACK = "kingrec-fallback"

# Look-alikes for characters that have no plain decomposition.
_LOOK_ALIKES = {
    "—": "-",
    "–": "-",
    "·": "-",
    "…": "...",
    "‘": "'",
    "’": "'",
    "“": '"',
    "”": '"',
    "×": "x",
    "→": "->",
    "ı": "i",
    "İ": "I",
    "ß": "ss",
    "æ": "ae",
    "Æ": "AE",
    "ø": "o",
    "Ø": "O",
    "ł": "l",
    "Ł": "L",
    "đ": "d",
    "Đ": "D",
    "━": "-",
    **dict(zip(SUIT_SYMBOLS, SUIT_LETTERS, strict=True)),
}


def _plain(char: str) -> str:
    """An ASCII stand-in for one character: a look-alike, its letter without accents, or ?."""
    if char in _LOOK_ALIKES:
        return _LOOK_ALIKES[char]
    base = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c))
    return base if base.isascii() and base.isprintable() and base else "?"


def _fallback(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    return "".join(_plain(c) for c in error.object[error.start : error.end]), error.end


codecs.register_error(FALLBACK, _fallback)


def prepare_streams() -> None:
    """Standard output and error write what their encoding cannot hold as look-alikes or ?,
    instead of failing (``PYTHONIOENCODING=ascii``, a cp1252 console)."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors in ("strict", None):
            stream.reconfigure(errors=FALLBACK)


def fit(text: str, stream: IO[Any] | None) -> str:
    """``text`` with what ``stream`` cannot encode replaced as ``prepare_streams`` does it (for
    text that click writes itself, and re-encodes as UTF-8 where a stream says ASCII)."""
    if can_encode(stream, text):
        return text
    encoding = getattr(stream, "encoding", None) or "ascii"
    try:
        return text.encode(encoding, FALLBACK).decode(encoding)
    except LookupError:
        return text.encode("ascii", FALLBACK).decode("ascii")


def write_error(line: str) -> None:
    """One line on standard error, as the stream can hold it (``kingrec: error: ...``)."""
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
    sys.stderr.write(fit(line, sys.stderr) + "\n")
    sys.stderr.flush()


def can_encode(stream: IO[Any] | None, text: str) -> bool:
    """Whether ``stream``'s encoding holds every character of ``text``."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def _fd(stream: IO[Any] | None) -> int | None:
    try:
        return stream.fileno() if stream is not None else None
    except (AttributeError, OSError, ValueError):
        return None


def is_terminal(stream: IO[Any] | None) -> bool:
    fd = _fd(stream)
    return fd is not None and os.isatty(fd)


def same_terminal(a: IO[Any] | None, b: IO[Any] | None) -> bool:
    """Whether both streams write to one terminal (as a shell's ``cmd`` with no redirection)."""
    fa, fb = _fd(a), _fd(b)
    if fa is None or fb is None or not (os.isatty(fa) and os.isatty(fb)):
        return False
    return os.path.samestat(os.fstat(fa), os.fstat(fb))
