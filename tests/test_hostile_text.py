"""Text from a record (names, ids) reaches the terminal seen, not obeyed: a player named
with an escape sequence cannot retitle the window, clear the screen or recolour the output."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from pty_screen import on_terminal
from rich.console import Console

from kingrec.v1 import service_pb2 as svc
from kingrec_cli.client import EventPrinter
from kingrec_cli.terminal import escape, shown

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
KINGREC = Path(sys.executable).parent / "kingrec"
TITLE = "\x1b]0;pwned\x07"  # retitles an xterm
CLEAR = "\x1b[2J"  # clears the screen
HOSTILE = ("\x1b]0;pwned", "\x1b[2J", "\x1b[31mRED", "\x9b31m", "\rX")


@pytest.fixture(scope="module")
def hostile_records(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The classic sample as JSON Lines, its first player and its match id hostile."""
    where = tmp_path_factory.mktemp("hostile")
    plain = where / "classic.jsonl"
    subprocess.run([str(KINGREC), "convert", str(SAMPLES / "valid" / "classic.krec"), str(plain)],
                   check=True, capture_output=True)  # fmt: skip
    match = json.loads(plain.read_text(encoding="utf-8").splitlines()[0])
    match["players"][0]["name"] = f"Ay{TITLE}\x1b[31mRED\x9b31m\rX"
    match["match_id"] = f"c{CLEAR}x"
    hostile = where / "hostile.jsonl"
    hostile.write_text(json.dumps(match) + "\n", encoding="utf-8")
    return hostile


def test_control_characters_are_shown_as_escapes_and_tab_and_newline_kept() -> None:
    assert shown(f"a{TITLE}b\tc\nd\x7f\x9b") == "a\\u001b]0;pwned\\u0007b\tc\nd\\u007f\\u009b"
    assert escape("[red]\x1b[1m") == "\\[red]\\u001b[1m"
    assert shown("Ayşe ♥A") == "Ayşe ♥A"


@pytest.mark.parametrize(
    "command",
    [("show", "--deal", "1"), ("validate", "--all"), ("validate", "--json", "--all")],
    ids=["show", "validate", "validate-json"],
)
def test_a_hostile_name_or_id_reaches_a_pipe_seen_not_obeyed(
    hostile_records: Path, command: tuple[str, ...]
) -> None:
    done = subprocess.run([str(KINGREC), *command[:1], str(hostile_records), *command[1:]],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    for stream in (done.stdout, done.stderr):
        assert not any(c in stream for c in "\x1b\x9b\r\x07"), stream
    assert "u001b" in done.stdout


def test_a_hostile_name_or_id_reaches_a_terminal_seen_not_obeyed(hostile_records: Path) -> None:
    run = on_terminal([str(KINGREC), "show", str(hostile_records), "--deal", "1"])
    assert run.returncode == 0, run.raw
    for sequence in HOSTILE:
        assert sequence not in run.raw
    assert any("Ay\\u001b]0;pwned" in line for line in run.lines), run.lines
    assert any("c\\u001b[2Jx" in line for line in run.lines), run.lines


def test_a_replay_prints_hostile_names_seen_not_obeyed() -> None:
    out = StringIO()
    printer = EventPrinter(Console(file=out, force_terminal=True, width=200, highlight=False))
    started = svc.MatchEvent(seq=1)
    started.match_started.match_id = f"m{CLEAR}"
    started.match_started.players.add(seat=0, name=f"Ay{TITLE}")
    printer.show(started)
    assert TITLE not in out.getvalue() and CLEAR not in out.getvalue()
    assert "Ay\\u001b]0;pwned\\u0007" in out.getvalue()
