"""Two installs' commands run in turn (the A/B benches): each run timed from outside.

``timed`` runs one command with its standard output captured: wall time from the clock, user
and system time and peak RSS from ``wait4`` (its own children, such as ``--jobs`` workers,
included: it waits for them). ``in_turn`` is the order of ``count`` pairs, the old install
first in even pairs and the new one first in odd ones, so a drift of the machine's speed
falls on both alike.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NEW = ROOT / ".venv" / "bin" / "kingrec"  # this tree's install


def one_match_file(folder: Path) -> Path:
    """A simulated one-match file in ``folder``, for the start-up runs."""
    path = folder / "one.krec"
    subprocess.run(
        [str(NEW), "simulate", "--matches", "1", "--seed", "1", "-o", str(path)],
        check=True,
        capture_output=True,
    )
    return path


@dataclass(frozen=True)
class Timed:
    wall: float
    user: float
    system: float
    peak_rss_kib: int
    code: int
    out: bytes

    @property
    def cpu(self) -> float:
        return self.user + self.system


def timed(command: list[str]) -> Timed:
    """Run ``command`` (standard error dropped) and time it."""
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert child.stdout is not None
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    return Timed(wall, usage.ru_utime, usage.ru_stime, usage.ru_maxrss, code, out)


def in_turn(old: Path, count: int) -> Iterator[tuple[int, str, Path]]:
    """(pair, "old" or "new", its ``kingrec``) for ``count`` pairs, alternating who goes first."""
    for i in range(count):
        order = [("old", old), ("new", NEW)] if i % 2 == 0 else [("new", NEW), ("old", old)]
        for name, kingrec in order:
            yield i, name, kingrec
