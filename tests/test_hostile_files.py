"""The worst generated hostile files, judged by ``kingrec validate`` in a child process.

Issue 10's files and their kin (made by ``corpus.hostile``): a frame whose match claims
200,000 or 500,000 empty deals (716 MB and 1.7 GB of peak RSS before the record bounds), resync
bombs (a sound frame header every 16 bytes, each claiming the rest of the file: 10 s for one
MiB and 41 s for two before the reader's recovery became linear), a MiB of empty frames (each
one a record to report) and a JSON line of 100 MiB (557 MB before lines were capped).

Each run is the real CLI's entry point in a fresh interpreter that reports, as it exits, its
own CPU seconds and peak RSS (``VmHWM``: a child's ``ru_maxrss`` can count its parent's
memory). Targets: CPU time at most 2 s per MiB of input (plus a second to start, and 100 us per
report written: a MiB of 16-byte frames is 65,536 reports), peak RSS under 100 MiB plus a few
of the largest legal records; the pure-Python twin on some.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from corpus.hostile import empty_deals, krec_file, resync_bomb, write_long_json_line

from kingrec.limits import MAX_DEALS, MAX_JSON_LINE_BYTES

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/status").exists(), reason="reads the peak RSS from /proc"
)

KINGREC = str(Path(sys.executable).parent / "kingrec")
MiB = 1 << 20
SECONDS_PER_MIB = 2.0
START_SECONDS = 1.0  # an interpreter and kingrec's imports, on a loaded machine
# A file can hold a record or a damaged frame every 16 bytes, 65,536 a MiB, each reported
# (about 40 us to judge and 50 to write as JSON here): such a file costs more than 2 s a MiB.
SECONDS_PER_REPORT = 100e-6
PEAK_BOUND = 100 * MiB + 4 * MAX_JSON_LINE_BYTES  # the largest legal record: a 4 MiB JSON line

# Runs ``kingrec ARGS`` as the console script does; as it exits, writes its CPU seconds and
# peak RSS (KiB) as JSON to the file named by KINGREC_PROBE. ``validate`` skips the
# interpreter's teardown once its report is out (os._exit): the probe is written then too.
_PROBE = """
import atexit, json, os, sys, time

def report():
    with open("/proc/self/status") as status:
        peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM"))
    with open(os.environ["KINGREC_PROBE"], "w") as out:
        json.dump({"cpu": time.process_time(), "peak_kib": peak}, out)

def exit_at_once(code, _exit=os._exit):
    report()
    _exit(code)

os._exit = exit_at_once
atexit.register(report)
sys.argv = ["kingrec", *sys.argv[1:]]
from kingrec_cli.main import run
run()
"""


def _empty_frames(size: int) -> bytes:
    return krec_file([b""] * ((size - 12) // 16))


# The file, the exit status, words of the JSON summary and how many items it reports.
KREC: dict[str, tuple[Callable[[], bytes], int, str, int]] = {
    "200000-empty-deals": (lambda: empty_deals(200_000), 1, '"invalid":1,', 1),
    "500000-empty-deals": (lambda: empty_deals(500_000), 1, '"invalid":1,', 1),
    "resync-bomb-1MiB": (lambda: resync_bomb(MiB, cap=None), 2, '"damaged":65535,', 65535),
    "capped-resync-bomb-2MiB": (lambda: resync_bomb(2 * MiB), 2, '"damaged":131071,', 131071),
    "empty-frames-1MiB": (lambda: _empty_frames(MiB), 1, '"invalid":65535,', 65535),
}
PYTHON_TOO = ("500000-empty-deals", "resync-bomb-1MiB")  # the pure-Python frame loop too
RUNS = [
    *(pytest.param(name, False, id=f"{name}-compiled") for name in KREC),
    *(pytest.param(name, True, id=f"{name}-python") for name in PYTHON_TOO),
]


def _validate(path: Path, tmp: Path, *args: str, pure: bool = False) -> tuple[int, str, dict]:  # type: ignore[type-arg]
    probe = tmp / "probe.json"
    probe.unlink(missing_ok=True)
    env = {**os.environ, "KINGREC_PROBE": str(probe), "KINGREC_PURE_PYTHON": "1" if pure else ""}
    with open(tmp / "out.txt", "wb") as out:
        result = subprocess.run(
            [sys.executable, "-c", _PROBE, "validate", *args, str(path)],
            stdout=out,
            stderr=subprocess.PIPE,
            env=env,
            timeout=300,
            check=False,
        )
    assert b"Traceback" not in result.stderr and b"internal error" not in result.stderr
    last = (tmp / "out.txt").read_bytes().splitlines()[-1].decode()
    return result.returncode, last, json.loads(probe.read_text())


def _assert_bounded(path: Path, measured: dict, items: int = 1) -> None:  # type: ignore[type-arg]
    """Within the targets; ``items``: the reports written, each a line of JSON to make."""
    size = path.stat().st_size / MiB
    cpu, peak = measured["cpu"], measured["peak_kib"] * 1024
    bound = START_SECONDS + SECONDS_PER_MIB * size + SECONDS_PER_REPORT * items
    assert cpu <= bound, f"{cpu:.2f} s of CPU for {size:.2f} MiB and {items} reports"
    assert peak < PEAK_BOUND, f"peak RSS {peak / MiB:.0f} MiB"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hostile-files")


@pytest.mark.parametrize(("name", "pure"), RUNS)
def test_a_hostile_krec_is_judged_in_linear_time_and_bounded_memory(
    name: str, pure: bool, folder: Path, tmp_path: Path
) -> None:
    make, expected, summary, items = KREC[name]
    path = folder / f"{name}.krec"
    if not path.exists():
        path.write_bytes(make())
    status, last, measured = _validate(path, tmp_path, "--json", pure=pure)
    assert status == expected
    assert last.startswith('{"type":"summary"') and summary in last, last
    _assert_bounded(path, measured, items)


def test_a_match_of_empty_deals_is_one_limit_finding_in_every_view(
    folder: Path, tmp_path: Path
) -> None:
    path = folder / "500000-empty-deals.krec"
    if not path.exists():
        path.write_bytes(empty_deals(500_000))
    status, _, measured = _validate(path, tmp_path)
    text = (tmp_path / "out.txt").read_text()
    assert status == 1
    assert f"the match holds 500000 deals; at most {MAX_DEALS} are allowed" in text
    assert "LIMIT_EXCEEDED" in text and len(text.splitlines()) == 3, text
    _assert_bounded(path, measured)
    show = subprocess.run(
        [KINGREC, "show", str(path), "--hands"], capture_output=True, timeout=120, check=False
    )
    assert show.returncode == 0, show.stderr[-500:]
    assert b"500000 deals" in show.stdout and b"LIMIT_EXCEEDED" in show.stdout


@pytest.mark.parametrize("args", [[], ["--json"]], ids=["text", "json"])
def test_a_json_line_of_100_mib_is_reported_without_reading_it_whole(
    args: list[str], folder: Path, tmp_path: Path
) -> None:
    path = folder / "line-100MiB.jsonl"
    if not path.exists():
        write_long_json_line(str(path), 100 * MiB)
    status, last, measured = _validate(path, tmp_path, *args)
    out = (tmp_path / "out.txt").read_text()
    assert status == 2
    assert ("LIMIT_EXCEEDED" in out and "line 1" in out) or '"line":1' in out, out[:500]
    assert "1 match(es)" in last or '"matches":1,' in last, last  # the record after it is read
    _assert_bounded(path, measured)
    assert measured["peak_kib"] * 1024 < 100 * MiB  # not a tenth of the line held at once
