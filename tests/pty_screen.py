"""Run a command on a pseudo-terminal and read what the terminal would show.

``on_terminal(args)`` starts the command with standard input, output and error all on one
pseudo-terminal (as a shell does with no redirection) and feeds everything it wrote through
``Screen``, a small terminal: printable characters, carriage return, line feed, backspace,
tab, and the CSI sequences rich uses (cursor up/down/forward/back/column, erase in line,
erase in display); colours and other modes are read and dropped. The result is the lines a
person would see at the end, each logical line whole (a line the terminal wrapped is
joined back), trailing spaces removed.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Screen", "TerminalRun", "on_terminal"]

_CSI = re.compile(r"\x1b\[([?0-9;]*)([@-~])")
_OSC = re.compile(r"\x1b\][^\x07\x1b]*(\x07|\x1b\\)")


class Screen:
    """A terminal ``columns`` wide with unbounded scrollback."""

    def __init__(self, columns: int) -> None:
        self.columns = columns
        self.rows: list[list[str]] = [[]]
        self.wrapped: list[bool] = [False]  # row i continues row i - 1
        self.row = self.col = 0

    def _at(self, row: int) -> list[str]:
        while len(self.rows) <= row:
            self.rows.append([])
            self.wrapped.append(False)
        return self.rows[row]

    def _put(self, char: str) -> None:
        if self.col >= self.columns:  # deferred wrap, as terminals do
            self.row += 1
            self.col = 0
            self._at(self.row)
            self.wrapped[self.row] = True
        line = self._at(self.row)
        while len(line) <= self.col:
            line.append(" ")
        line[self.col] = char
        self.col += 1

    def _csi(self, params: str, final: str) -> None:
        if params.startswith("?"):
            return  # modes (cursor shown or hidden)
        numbers = [int(p) if p else 0 for p in params.split(";")] if params else []
        n = numbers[0] if numbers else 0
        line = self._at(self.row)
        if final == "A":
            self.row = max(0, self.row - max(n, 1))
        elif final == "B":
            self.row += max(n, 1)
        elif final == "C":
            self.col = min(self.columns, self.col + max(n, 1))
        elif final == "D":
            self.col = max(0, self.col - max(n, 1))
        elif final == "G":
            self.col = max(0, max(n, 1) - 1)
        elif final == "K":
            if n == 0:
                del line[self.col :]
            elif n == 1:
                line[: self.col + 1] = [" "] * min(len(line), self.col + 1)
            else:
                line.clear()
        elif final == "J":
            if n == 0:
                del line[self.col :]
                del self.rows[self.row + 1 :]
                del self.wrapped[self.row + 1 :]
            else:
                self.rows, self.wrapped, self.row, self.col = [[]], [False], 0, 0
        # "m" (colours) and anything else: nothing to show

    def feed(self, text: str) -> Screen:
        text = _OSC.sub("", text)
        i = 0
        while i < len(text):
            char = text[i]
            if char == "\x1b":
                found = _CSI.match(text, i)
                if found:
                    self._csi(found.group(1), found.group(2))
                    i = found.end()
                    continue
                i += 2  # a two-character escape
                continue
            if char == "\r":
                self.col = 0
            elif char == "\n":
                self.row += 1
                self._at(self.row)
            elif char == "\b":
                self.col = max(0, self.col - 1)
            elif char == "\t":
                self.col = min(self.columns, (self.col // 8 + 1) * 8)
            elif char >= " ":
                self._put(char)
            i += 1
        return self

    def lines(self) -> list[str]:
        """The logical lines shown, wrapped rows joined, trailing blank lines dropped."""
        out: list[str] = []
        for row, wrapped in zip(self.rows, self.wrapped, strict=True):
            text = "".join(row)
            if wrapped and out:
                out[-1] += text
            else:
                out.append(text)
        out = [line.rstrip() for line in out]
        while out and not out[-1]:
            out.pop()
        return out


@dataclass(frozen=True)
class TerminalRun:
    returncode: int
    raw: str  # everything the command wrote, escape sequences included
    lines: list[str]  # what the terminal shows at the end


def on_terminal(
    args: Sequence[str],
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    columns: int = 200,
    timeout: float = 120,
) -> TerminalRun:
    """Run ``args`` with stdin, stdout and stderr on one pseudo-terminal ``columns`` wide."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    environ = {k: v for k, v in (env or os.environ).items() if k not in ("COLUMNS", "LINES")}
    environ.setdefault("TERM", "xterm-256color")
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        environ.pop(name, None)
    proc = subprocess.Popen(
        list(args),
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=cwd,
        env=environ,
        start_new_session=True,
    )
    os.close(slave)
    chunks: list[bytes] = []
    try:
        while True:
            ready, _, _ = select.select([master], [], [], timeout)
            if not ready:
                raise TimeoutError(f"{args} wrote nothing for {timeout} s")
            try:
                data = os.read(master, 1 << 16)
            except OSError:  # EIO: the last writer closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:  # pragma: no cover - only when the test fails
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        os.close(master)
    raw = b"".join(chunks).decode("utf-8", errors="replace")
    return TerminalRun(proc.returncode, raw, Screen(columns).feed(raw).lines())
