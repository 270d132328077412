"""Reports written to a pipe or a file: the plain text rich would print, without rich's
per-line machinery (a file of 20,000 repeats spent ~12 s of its 14 s printing them)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pty_screen import on_terminal
from rich.console import Console

from kingrec.container import FILE_HEADER_SIZE
from kingrec_cli.terminal import Terminal, escape

ROOT = Path(__file__).resolve().parent.parent
KINGREC = str(Path(sys.executable).parent / "kingrec")

MARKUPS = [
    "",
    "[bold green]valid[/] samples/x.krec, frame 3, byte 120: match m-1",
    "  [yellow]warning[/] DUPLICATE_RECORD The same match appeared earlier in this run.",
    "[bold red]REJECTED[/] " + escape("a [bold]name[/] from a record \\[x]"),
    "trailing spaces   ",
    "  ♠A ♥10 ♦Q ♣2 · şğıİöç · 王 Ｗｉｄｅ",
    "[link=https://example.org]a link[/link] and [reverse]reversed[/]",
    escape("\x1b[2J a hostile \r name \x07"),
    "a\ttab",  # rich expands it: written through rich
    "two\nlines",  # not one printable line: written through rich
]


def written(markup: str, *, env: dict[str, str] | None = None) -> tuple[str, str]:
    """What a ``Terminal`` on a pipe writes for ``markup``, and what rich's console writes."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update({k: v for k, v in saved.items() if k not in ("FORCE_COLOR", "NO_COLOR")})
    os.environ.update(env or {})
    try:
        ours, theirs = io.BytesIO(), io.BytesIO()
        term = Terminal()
        term.stdout = io.TextIOWrapper(ours, encoding="utf-8", write_through=True)
        term.report(markup)
        stream = io.TextIOWrapper(theirs, encoding="utf-8", write_through=True)
        Console(file=stream, highlight=False, emoji=False, soft_wrap=True).print(markup)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return ours.getvalue().decode(), theirs.getvalue().decode()


@pytest.mark.parametrize("markup", MARKUPS)
def test_a_report_through_a_pipe_is_the_text_rich_prints(markup: str) -> None:
    ours, theirs = written(markup)
    assert ours == theirs
    assert "\x1b" not in ours


@pytest.mark.parametrize("markup", MARKUPS[1:4])
def test_a_report_through_a_pipe_keeps_its_styles_when_force_color_asks(markup: str) -> None:
    ours, theirs = written(markup, env={"FORCE_COLOR": "1"})
    assert ours == theirs
    assert "\x1b[" in ours


def test_a_file_of_repeats_reads_the_same_through_a_pipe_and_on_a_terminal(
    tmp_path: Path,
) -> None:
    one = (ROOT / "samples/valid/classic.krec").read_bytes()
    frames = one[FILE_HEADER_SIZE:]
    path = tmp_path / "repeats.krec"
    path.write_bytes(one[:FILE_HEADER_SIZE] + frames * 40)
    args = ["validate", "--no-progress", str(path)]
    piped = subprocess.run([KINGREC, *args], capture_output=True, check=False)
    out = piped.stdout.decode("utf-8").splitlines()
    assert sum("DUPLICATE_RECORD" in line for line in out) >= 39
    shown = on_terminal([KINGREC, *args], cwd=str(ROOT))
    assert shown.returncode == piped.returncode
    assert shown.lines == out + piped.stderr.decode("utf-8").splitlines()
    assert "\x1b[" in shown.raw  # the terminal's reports kept their colours
