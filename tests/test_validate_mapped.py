"""One job of ``kingrec validate`` judges a regular file's blocks mapped in memory
(``kingrec.judges.validate_here``): the same items as read into a buffer, and a file cut
short while mapped is reported as cut (FRAME_TRUNCATED), never a crash (SIGBUS)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kingrec import judges
from kingrec.fastcheck import checker_of
from kingrec.validation import validate_file


def _needs_mapping() -> None:
    try:
        module = importlib.import_module("kingrec._fastcheck_c")
    except ImportError:
        pytest.skip("the compiled checker is not built")
    if checker_of() is None or not module.crc_in_c():
        pytest.skip("blocks are mapped only with the compiled checker and the checksum in C")


def _simulated(path: Path, matches: int) -> Path:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "kingrec",
            "simulate",
            "--matches",
            str(matches),
            "--seed",
            "3",
            "-o",
            str(path),
        ],
        check=True,
        capture_output=True,
    )
    return path


def _items(path: Path) -> list[str]:
    return [repr(item) for item in validate_file(str(path), count_clean=True)]


def test_mapped_blocks_give_the_items_read_blocks_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file of good records, one made wrong, a corrupt frame and a cut last frame: the
    same reports mapped or read, in the same order."""
    _needs_mapping()
    path = _simulated(tmp_path / "some.krec", 60)
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0x40  # inside a frame somewhere: a corrupt frame or a bad record
    data[2 * len(data) // 3] ^= 0x01
    path.write_bytes(bytes(data[:-100]))  # the last frame cut short
    mapped = _items(path)
    monkeypatch.setattr(judges, "_MAP_BLOCKS", False)
    assert _items(path) == mapped
    assert any("FRAME_TRUNCATED" in item for item in mapped)


_CUT_WHILE_MAPPED = """
import json, os, sys
from kingrec import judges
from kingrec.validation import validate_file

path = sys.argv[1]
mapped = judges._mapped_block
cuts = []

def cut_after_mapping(fd, pos):
    view = mapped(fd, pos)
    if view is not None and not cuts:  # the file loses its second half under the mapping,
        # cut at a page boundary: the frame across it reads a page that is gone (a SIGBUS)
        cuts.append(os.fstat(fd).st_size // 2 // 4096 * 4096)
        os.truncate(path, cuts[0])
    return view

judges._mapped_block = cut_after_mapping
cut = [repr(item) for item in validate_file(path, count_clean=True)]
judges._mapped_block = mapped
judges._MAP_BLOCKS = False
again = [repr(item) for item in validate_file(path, count_clean=True)]
print(json.dumps({"cut": cut, "again": again, "cuts": cuts}))
"""


def test_a_file_cut_short_while_mapped_is_reported_truncated_not_crashed(tmp_path: Path) -> None:
    """The file is cut to about half its size once its first block is mapped: the cut is on
    a page boundary and the pages past it are gone (a read of them is a SIGBUS), the run
    stops at the frame it was reading, and the reader reports the cut frame as
    FRAME_TRUNCATED: the very items of the cut file read afterwards. In a subprocess: a
    crash there fails this test instead of the run (unguarded, it dies of SIGBUS)."""
    _needs_mapping()
    path = _simulated(tmp_path / "cut.krec", 200)  # about 1 MB: one block
    done = subprocess.run(
        [sys.executable, "-c", _CUT_WHILE_MAPPED, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["cuts"] and path.stat().st_size == out["cuts"][0]
    assert out["cut"] == out["again"]
    assert "FRAME_TRUNCATED" in out["cut"][-1]
