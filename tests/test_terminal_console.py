"""The consoles of a command ask once whether their stream is a terminal: rich asked on
each print (three isatty calls and the environment, a third of a report's cost there)."""

from __future__ import annotations

import os

import pytest

from kingrec_cli.terminal import Terminal


class CountedTty:
    """A pseudo-terminal's end as a text stream, counting the isatty calls made on it."""

    def __init__(self) -> None:
        self.master, slave = os.openpty()
        os.set_blocking(self.master, False)
        self.stream = open(slave, "w", encoding="utf-8")  # noqa: SIM115 - closed by close()
        self.asked = 0

    def isatty(self) -> bool:
        self.asked += 1
        return self.stream.isatty()

    def __getattr__(self, name: str) -> object:
        return getattr(self.stream, name)

    def shown(self) -> str:
        seen = b""
        while True:
            try:
                seen += os.read(self.master, 1 << 16)
            except BlockingIOError:
                return seen.decode()

    def close(self) -> None:
        self.stream.close()
        os.close(self.master)


def test_a_console_on_a_terminal_asks_once_and_still_writes_in_colour(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("FORCE_COLOR", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    tty = CountedTty()
    try:
        term = Terminal()
        term.stdout = tty
        term.report("[bold]first[/]")
        asked = tty.asked
        for n in range(50):
            term.report(f"[red]report {n}[/]")
        assert tty.asked == asked  # none more for the fifty
        shown = tty.shown()
        assert "\x1b[1mfirst" in shown and "\x1b[31mreport 49" in shown
    finally:
        tty.close()
