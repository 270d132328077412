"""Every command on streams that cannot hold every character (a cp1252 console, ASCII).

Nothing may fail on the stream's encoding: cards are written by the format's names where
the suit symbols cannot be (``AD``), other characters by a look-alike or ``?``, and JSON
stays JSON, with ``\\u`` escapes for what the stream cannot hold.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
KINGREC = str(Path(sys.executable).parent / "kingrec")
ENCODINGS = ["cp1252", "ascii"]
SYMBOLS = "♣♦♥♠"


def run(encoding: str, *args: str) -> tuple[int, str, str]:
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    result = subprocess.run([KINGREC, *args], capture_output=True, check=False, cwd=ROOT, env=env)
    # What was written must be text in the stream's encoding.
    return result.returncode, result.stdout.decode(encoding), result.stderr.decode(encoding)


def utf8(*args: str) -> tuple[int, str, str]:
    return run("utf-8", *args)


def _json_lines(text: str) -> list[Any]:
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_validate_names_cards_the_stream_cannot_draw(encoding: str) -> None:
    code, out, err = run(encoding, "validate", "samples/invalid/must-ruff.krec")
    assert (code, err) == (1, "")
    assert "played 6D but was void in the led suit and had to trump (legal: 2H)." in out
    assert not any(s in out for s in SYMBOLS)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_validate_json_stays_json(encoding: str) -> None:
    args = ("validate", "--json", "samples/invalid/must-ruff.krec", "samples/valid/classic.jsonl")
    code, out, err = run(encoding, *args)
    assert (code, err) == (1, "")
    assert _json_lines(out) == _json_lines(utf8(*args)[1])  # the same objects, escaped
    assert "\\u2666" in out


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_show_writes_names_and_cards_it_cannot_encode_plainly(encoding: str) -> None:
    code, out, err = run(encoding, "show", "samples/invalid/must-ruff.krec", "--deal", "4",
                         "--hands")  # fmt: skip
    assert (code, err) == (0, "")
    assert "players: Ayse (0), Mehmet (1), Zeynep (2), Emre (3)" in out
    assert "6D!1" in out and "(legal: 2H)" in out
    assert "(hearts trumps)" in out or "(spades trumps)" in out or "trumps)" in out
    assert not any(s in out for s in SYMBOLS)
    assert "?" not in out


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize(
    "args",
    [("convert", "samples/valid/classic.krec", "-"),
     ("simulate", "--matches", "2", "--seed", "3", "-o", "-")],
    ids=["convert", "simulate"],
)  # fmt: skip
def test_records_on_standard_output_are_json_the_stream_holds(
    encoding: str, args: tuple[str, ...]
) -> None:
    code, out, err = run(encoding, *args)
    assert code == 0
    assert out.isascii()
    assert _json_lines(out) == _json_lines(utf8(*args)[1])
    assert err.startswith(("converted 2", "simulated 2"))


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_damage_and_errors_on_standard_error(encoding: str, tmp_path: Path) -> None:
    code, _, err = run(encoding, "convert", "samples/damaged/flipped-byte.krec",
                         str(tmp_path / "x.jsonl"))  # fmt: skip
    assert code == 2 and "FRAME_CORRUPT" in err
    code, _, err = run(encoding, "validate", str(tmp_path / "Ayşe.krec"))
    assert code == 2
    assert err.startswith("kingrec: error: ") and "Ay" in err


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("command", [[], ["validate"], ["show"], ["convert"], ["simulate"]],
                         ids=str)  # fmt: skip
def test_help_is_readable(encoding: str, command: list[str]) -> None:
    code, out, err = run(encoding, *command, "--help")
    assert (code, err) == (0, "")
    assert "Usage: kingrec" in out and "Exit status:" in out
