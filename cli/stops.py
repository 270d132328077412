"""Stopping a command that works in DuckDB: Ctrl-C and SIGTERM, exit 130 and 143."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import NoReturn

from .main import Terminated

__all__ = ["Stops"]

_NOW = (
    b"kingrec: stopped at once: the store keeps the batches committed so far; run the same "
    b"command again to finish\n"
)


class Stops:
    """Ctrl-C and SIGTERM around DuckDB, which turns an exception raised inside a statement
    into its own error (SIGTERM's came back as "RuntimeError: Query interrupted").

    By default (ingest) the first signal asks to stop at the next ``check``, between batches,
    and a second one stops at once (a producer that never ends): the process ends there, as
    ``kill -9`` would end it, but with the signal's status and a line that says so. Raising
    instead (as once) unwound through DuckDB while writer threads were in a transaction:
    "connection is busy", "Query interrupted" (exit 3) or a C++ abort (134). The store is
    whatever DuckDB committed: whole batches (the log of the last is replayed on the next
    open), as after a crash. ``at_once`` (a query)
    interrupts the statement with the plain KeyboardInterrupt DuckDB knows, and
    ``stopped`` then turns whatever came out of DuckDB back into the signal's own exit.
    """

    def __init__(self, *, at_once: bool = False) -> None:
        self.signum: int | None = None
        self.at_once = at_once

    def _asked(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is not None and not self.at_once:
            _end_now(128 + signum)
        if self.signum is not None:
            self._raise(signum)
        self.signum = signum
        if self.at_once:
            raise KeyboardInterrupt  # what DuckDB understands: it interrupts the statement

    def check(self) -> None:
        """Stop here if asked to: between batches, where the store holds whole ones."""
        if self.signum is not None:
            self._raise(self.signum)

    @staticmethod
    def _raise(signum: int) -> NoReturn:
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(128 + signum)

    @contextmanager
    def stopped(self) -> Iterator[None]:
        """Whatever leaves this block after a signal leaves as that signal's exit."""
        try:
            yield
        except BaseException:
            if self.signum is not None:
                self._raise(self.signum)
            raise

    @contextmanager
    def installed(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        before = {s: signal.signal(s, self._asked) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for number, handler in before.items():
                signal.signal(number, handler)


def _end_now(status: int) -> NoReturn:
    """End the process in the signal handler: nothing unwinds through DuckDB's calls or its
    writer threads. ``os.write``: the handler may have interrupted a write to stderr, whose
    buffer is then locked."""
    if os.isatty(2):
        os.write(2, b"\x1b[?25h\n")  # the progress bar hid the cursor
    os.write(2, _NOW)
    os._exit(status)
