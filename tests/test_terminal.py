"""The commands on a real terminal: reports and the progress bar never garble each other.

Each command runs on a pseudo-terminal (standard output and error on one terminal, as in a
shell with no redirection) and what the terminal shows at the end is compared with what
the same command writes through pipes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pty_screen import Screen, on_terminal

ROOT = Path(__file__).resolve().parent.parent
KINGREC = str(Path(sys.executable).parent / "kingrec")
BAR_PIECES = ("━", "kB", "-:--:--", "simulating")


def piped(*args: str) -> tuple[int, list[str], list[str]]:
    result = subprocess.run([KINGREC, *args], capture_output=True, check=False, cwd=ROOT)
    out = result.stdout.decode("utf-8").splitlines()
    return result.returncode, out, result.stderr.decode("utf-8").splitlines()


def test_the_screen_follows_what_rich_writes() -> None:
    screen = Screen(20).feed("bar ━━━\r\x1b[2Kreport\r\n\x1b[1mbar\x1b[0m 1/2")
    assert screen.lines() == ["report", "bar 1/2"]
    assert Screen(4).feed("abcdefg\r\n").lines() == ["abcdefg"]  # a wrapped line, whole
    assert Screen(20).feed("one\r\ntwo\r\n\x1b[1A\x1b[2K\x1b[1A\x1b[2Kx").lines() == ["x"]


def test_validate_reports_are_whole_under_a_live_bar() -> None:
    args = ["validate", "samples/invalid/must-give-penalty-card.krec",
            "samples/damaged/flipped-byte.krec"]  # fmt: skip
    code, out, err = piped(*args)
    shown = on_terminal([KINGREC, *args], cwd=str(ROOT))
    assert "kB" in shown.raw  # the bar was drawn...
    assert shown.lines == out + err  # ...and nothing of it is left, every report whole
    assert shown.returncode == code == 2
    assert not any(piece in line for line in shown.lines for piece in BAR_PIECES)


def test_validate_json_lines_stay_json_on_a_terminal() -> None:
    args = ["validate", "--json", "--all", "samples/valid/classic.krec",
            "samples/invalid/must-ruff.krec", "samples/valid/short.krec"]  # fmt: skip
    shown = on_terminal([KINGREC, *args], cwd=str(ROOT))
    assert "kB" in shown.raw
    assert [json.loads(line)["type"] for line in shown.lines] == ["match"] * 5 + ["summary"]
    assert shown.lines == piped(*args)[1]


def test_an_unreadable_file_is_named_above_the_bar() -> None:
    args = ["validate", "samples/valid/classic.krec", "nowhere.krec", "samples/valid/short.krec"]
    code, out, err = piped(*args)
    shown = on_terminal([KINGREC, *args], cwd=str(ROOT))
    assert code == shown.returncode == 2
    assert sorted(shown.lines) == sorted(out + err)
    assert "kingrec: error: nowhere.krec: cannot open: No such file or directory" in shown.lines


def test_simulate_leaves_only_its_summary(tmp_path: Path) -> None:
    shown = on_terminal([KINGREC, "simulate", "--matches", "40", "-o", str(tmp_path / "s.krec")])
    assert shown.returncode == 0
    assert "simulating" in shown.raw
    (line,) = shown.lines
    assert line.startswith("simulated 40 matches (800 deals) in ")


def test_simulate_to_the_terminal_draws_no_bar_over_the_records() -> None:
    shown = on_terminal([KINGREC, "simulate", "--matches", "3", "-o", "-"])
    assert shown.returncode == 0
    assert not any(piece in shown.raw for piece in BAR_PIECES[:3])
    *records, summary = shown.lines
    assert [json.loads(r)["match_id"][:12] for r in records] == ["sim-classic-"] * 3
    assert summary.startswith("simulated 3 matches")


def test_convert_to_the_terminal() -> None:
    shown = on_terminal([KINGREC, "convert", "samples/valid/classic.krec", "-"], cwd=str(ROOT))
    assert shown.returncode == 0
    *records, summary = shown.lines
    assert [json.loads(r)["match_id"] for r in records] == ["classic-0", "classic-1"]
    assert summary == "converted 2 match(es) to jsonl"


@pytest.mark.parametrize(
    "args",
    [["show", "samples/invalid/must-give-penalty-card.krec", "--deal", "2", "--hands"],
     ["show", "samples/damaged/flipped-byte.krec", "--index", "3", "--deal", "1"]],
    ids=["invalid", "damaged"],
)  # fmt: skip
def test_show_looks_the_same_on_a_terminal_and_through_a_pipe(args: list[str]) -> None:
    code, out, err = piped(*args)
    shown = on_terminal([KINGREC, *args], cwd=str(ROOT))
    assert shown.returncode == code == 0
    assert shown.lines == err + out  # the damage passed over is named first
