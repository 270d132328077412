"""Stopping a command that works in DuckDB: Ctrl-C and SIGTERM, exit 130 and 143."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import NoReturn

from .main import Terminated

__all__ = ["Stops"]


class Stops:
    """Ctrl-C and SIGTERM around DuckDB, which turns an exception raised inside a statement
    into its own error (SIGTERM's came back as "RuntimeError: Query interrupted").

    By default (ingest) the first signal asks to stop at the next ``check``, between batches,
    and a second one stops at once (a producer that never ends). ``at_once`` (a query)
    interrupts the statement with the plain KeyboardInterrupt DuckDB knows, and
    ``stopped`` then turns whatever came out of DuckDB back into the signal's own exit.
    """

    def __init__(self, *, at_once: bool = False) -> None:
        self.signum: int | None = None
        self.at_once = at_once

    def _asked(self, signum: int, frame: FrameType | None) -> None:
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
