"""Reports under a live progress bar are held and printed together: rich lifts the bar and
draws it again for each print (~350 µs a report: 40,000 lines took 19 s on a terminal where
a pipe took 1.5 s). Held reports keep their order with everything else written, and
nothing held is lost: the timer, a count, any other output and the bar's end print them.

The timer is the test's own (``Terminal._Timer``), fired by hand: no test waits on a clock.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from pty_screen import on_terminal
from rich.console import Console
from test_terminal_plain import MARKUPS

from kingrec.container import FILE_HEADER_SIZE
from kingrec_cli.terminal import HOLD_LINES, HOLD_SECONDS, Terminal

ROOT = Path(__file__).resolve().parent.parent
KINGREC = str(Path(sys.executable).parent / "kingrec")


class FakeTimer:
    """A ``threading.Timer`` that goes off only when the test says so."""

    made: ClassVar[list[FakeTimer]] = []

    def __init__(self, interval: float, function: Callable[[], None]) -> None:
        self.interval, self.function = interval, function
        self.daemon = False
        self.started = self.cancelled = False
        FakeTimer.made.append(self)

    def start(self) -> None:
        self.started = True

    def cancel(self) -> None:
        self.cancelled = True

    def go_off(self) -> None:
        assert self.started and not self.cancelled
        self.function()


class OnePty:
    """A pseudo-terminal whose one end is a command's standard output and error."""

    def __init__(self) -> None:
        self.master, slave = os.openpty()
        os.set_blocking(self.master, False)
        self.stream = open(slave, "w", encoding="utf-8")  # noqa: SIM115 - closed by close()
        self.seen = ""

    def read(self) -> str:
        """Everything written so far."""
        while True:
            try:
                chunk = os.read(self.master, 1 << 16)
            except BlockingIOError:
                return self.seen
            self.seen += chunk.decode("utf-8", "replace")

    def close(self) -> None:
        self.stream.close()
        os.close(self.master)


@pytest.fixture
def pty_terminal(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Terminal, OnePty]]:
    FakeTimer.made.clear()
    monkeypatch.setattr(Terminal, "_Timer", FakeTimer)
    for name in ("FORCE_COLOR", "NO_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    pty = OnePty()
    term = Terminal()
    term.stdout = term.stderr = pty.stream
    yield term, pty
    pty.close()


def _columns() -> list[str]:
    return ["{task.description}"]


def test_reports_under_a_live_bar_are_held_till_the_timer_goes_off(
    pty_terminal: tuple[Terminal, OnePty],
) -> None:
    term, pty = pty_terminal
    with term.progress(_columns, show=True) as bar:
        bar.add_task("judging")
        for n in range(3):
            term.report(f"[bold]report {n}[/]")
        assert "report" not in pty.read()
        (timer,) = FakeTimer.made  # one timer for the three
        assert timer.interval == HOLD_SECONDS <= 0.1 and timer.daemon  # none can tell 0.1 s
        timer.go_off()
        seen = pty.read()
        assert seen.index("report 0") < seen.index("report 1") < seen.index("report 2")
        term.report("report 3")  # held anew, on a timer of its own
        assert len(FakeTimer.made) == 2 and "report 3" not in pty.read()
    assert "report 3" in pty.read()  # the bar's end printed it
    assert FakeTimer.made[1].cancelled
    assert pty.read().count("report 0") == 1


def test_a_message_comes_after_the_reports_held_before_it(
    pty_terminal: tuple[Terminal, OnePty],
) -> None:
    term, pty = pty_terminal
    with term.progress(_columns, show=True):
        term.report("first report")
        term.note("a note")
        term.line("a plain line")
        term.json({"a": 1})
        term.report("last report")
        seen = pty.read()
        assert seen.index("first report") < seen.index("kingrec: a note")
        assert seen.index("a plain line") < seen.index('{"a":1}')  # the line was held first
        assert "last report" not in seen
    assert "last report" in pty.read()


def test_as_many_reports_as_hold_lines_are_printed_without_waiting(
    pty_terminal: tuple[Terminal, OnePty],
) -> None:
    term, pty = pty_terminal
    with term.progress(_columns, show=True):
        for n in range(HOLD_LINES):
            term.report(f"line {n}")
            if n == HOLD_LINES - 2:
                assert "line 0" not in pty.read()
        seen = pty.read()
        assert f"line {HOLD_LINES - 1}" in seen and FakeTimer.made[0].cancelled


def test_a_renderable_comes_after_the_reports_held_before_it(
    pty_terminal: tuple[Terminal, OnePty],
) -> None:
    from rich.text import Text

    term, pty = pty_terminal
    with term.progress(_columns, show=True):
        term.report("held report")
        term.report(Text("a renderable"))
        seen = pty.read()
        assert seen.index("held report") < seen.index("a renderable")


def test_a_failure_on_the_timer_is_raised_on_the_commands_thread(
    pty_terminal: tuple[Terminal, OnePty], monkeypatch: pytest.MonkeyPatch
) -> None:
    term, _ = pty_terminal
    with pytest.raises(BrokenPipeError), term.progress(_columns, show=True):
        term.report("held")

        def closed(*_: object) -> None:
            raise BrokenPipeError("the terminal went away")

        monkeypatch.setattr(term.out, "print", closed)
        FakeTimer.made[0].go_off()  # on the timer: kept, not raised there
        term.report("the next report")  # raised here


def test_reports_held_print_the_bytes_each_printed_alone_prints() -> None:
    """``print(*held, sep="\\n")`` is what one print a report wrote, on a terminal's console."""

    def console(stream: io.StringIO) -> Console:
        return Console(file=stream, force_terminal=True, color_system="256", width=80,
                       highlight=False, emoji=False, soft_wrap=True)  # fmt: skip

    alone, together = io.StringIO(), io.StringIO()
    each = console(alone)
    for markup in MARKUPS:
        each.print(markup)
    console(together).print(*MARKUPS, sep="\n")
    link_ids = re.compile(r"\x1b]8;id=\d+;")  # a link's id is rich's random number
    assert link_ids.sub("", together.getvalue()) == link_ids.sub("", alone.getvalue())
    assert "\x1b[" in alone.getvalue()


def test_a_file_of_repeats_shows_every_report_in_order_under_the_bar(tmp_path: Path) -> None:
    """More reports than ``HOLD_LINES`` on a real terminal with the bar drawn: the screen at
    the end is what the pipes read."""
    one = (ROOT / "samples/valid/classic.krec").read_bytes()
    path = tmp_path / "repeats.krec"
    path.write_bytes(one[:FILE_HEADER_SIZE] + one[FILE_HEADER_SIZE:] * (HOLD_LINES // 2 + 40))
    args = ["validate", str(path)]  # the bar drawn on the terminal, not through the pipes
    piped = subprocess.run([KINGREC, *args], capture_output=True, check=False)
    out = piped.stdout.decode("utf-8").splitlines()
    assert len(out) > HOLD_LINES
    shown = on_terminal([KINGREC, *args], cwd=str(ROOT))
    assert shown.returncode == piped.returncode
    assert shown.lines == out + piped.stderr.decode("utf-8").splitlines()
    assert "\x1b[" in shown.raw and "━" in shown.raw  # in colour, and the bar was drawn
