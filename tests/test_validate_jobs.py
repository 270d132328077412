"""``kingrec validate --jobs N``: the report and the exit status are those of ``--jobs 1``.

Every case runs the real command as a subprocess, with ``--chunk-bytes`` (hidden, for tests)
small enough to put split points all through the files: between repeated records, next to
damage, inside a truncated tail. Each is compared byte for byte (standard output and
standard error) with the serial run, on the compiled twins and on the pure-Python ones.
"""

from __future__ import annotations

import multiprocessing.pool
import os
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from kingrec import _twins, forked, judges
from kingrec.container import MAGIC, Frame, KrecWriter, read_frames
from kingrec.fastcheck import validate_runs
from kingrec.findings import CleanMatches
from kingrec.judges import JudgePool
from kingrec.records import open_records
from kingrec.simrun import simulate_to_file
from kingrec.validation import validate_records
from kingrec.workers import Pooled

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
KINGREC = str(Path(sys.executable).parent / "kingrec")
HEADER = 12  # the .krec file header
DEFAULT_CHUNK = judges.DEFAULT_CHUNK_BYTES


def run(*args: str, pure: bool = False) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "KINGREC_PURE_PYTHON"}
    if pure:
        env["KINGREC_PURE_PYTHON"] = "1"
    return subprocess.run(
        [KINGREC, "validate", *args], capture_output=True, env=env, timeout=300, check=False
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The record files of the cases, made once."""
    root = tmp_path_factory.mktemp("jobs")
    big, small = root / "big.krec", root / "small.krec"
    simulate_to_file(str(big), "classic", 60, 17)
    simulate_to_file(str(small), "short", 8, 18)
    simulate_to_file(str(root / "small.jsonl"), "short", 8, 18)
    a, b = big.read_bytes(), small.read_bytes()
    # Repeats within the file (across many split points) and, with small.krec, across files.
    (root / "repeats.krec").write_bytes(a + b[HEADER:] + a[HEADER:])
    # Two damaged payloads in the middle, then a frame cut short at the end.
    damaged = bytearray(a + b[HEADER:-100])
    damaged[len(a) // 3] ^= 0xFF
    damaged[len(a) // 2 + 7] ^= 0x01
    (root / "damaged.krec").write_bytes(bytes(damaged))
    (root / "truncated.krec").write_bytes(a[:-37])
    # Invalid records among valid ones: the samples' invalid frames spliced into big.krec.
    invalid = b"".join(
        p.read_bytes()[HEADER:] for p in sorted((SAMPLES / "invalid").glob("*.krec"))
    )
    (root / "mixed.krec").write_bytes(a[: len(a) // 2] + invalid + a[HEADER:])
    mix = root / "mix"
    shutil.copytree(SAMPLES, mix / "samples")
    for name in ("small.krec", "small.jsonl", "repeats.krec", "damaged.krec", "mixed.krec"):
        shutil.copy(root / name, mix / name)
    return {
        "valid": SAMPLES / "valid",
        "invalid": SAMPLES / "invalid",
        "damaged samples": SAMPLES / "damaged",
        "big": big,
        "repeats across files": root / "repeats.krec",
        "damage and a truncated tail": root / "damaged.krec",
        "truncated": root / "truncated.krec",
        "invalid among valid": root / "mixed.krec",
        "json lines": root / "small.jsonl",
        "directory mix": mix,
    }


CASES = [
    "valid",
    "invalid",
    "damaged samples",
    "big",
    "repeats across files",
    "damage and a truncated tail",
    "truncated",
    "invalid among valid",
    "json lines",
    "directory mix",
]
OPTIONS = [(), ("--all",), ("--json",), ("--quiet",), ("--json", "--all"), ("--json", "--quiet")]


def _paths(files: dict[str, Path], case: str) -> list[str]:
    paths = [str(files[case])]
    if case == "repeats across files":
        paths.append(str(files["big"]))  # every record of big.krec was seen in repeats.krec
    return paths


def _same_as_one_job(paths: list[str], options: tuple[str, ...], pure: bool) -> None:
    one = run("--jobs", "1", *options, *paths, pure=pure)
    assert b"Traceback" not in one.stderr
    for jobs, chunk in (("2", "3000"), ("3", "1")):
        many = run("--jobs", jobs, "--chunk-bytes", chunk, *options, *paths, pure=pure)
        assert many.stdout == one.stdout, (jobs, chunk)
        assert many.stderr == one.stderr, (jobs, chunk)
        assert many.returncode == one.returncode, (jobs, chunk)


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: " ".join(o) or "plain")
@pytest.mark.parametrize("case", CASES)
def test_several_jobs_give_the_report_and_status_of_one_on_the_compiled_twins(
    files: dict[str, Path], case: str, options: tuple[str, ...]
) -> None:
    if _twins.COMPILED is None:
        pytest.skip("the compiled twins are not built")
    _same_as_one_job(_paths(files, case), options, pure=False)


@pytest.mark.parametrize("options", [(), ("--json", "--all")], ids=["plain", "json all"])
@pytest.mark.parametrize("case", CASES)
def test_several_jobs_give_the_report_and_status_of_one_on_the_pure_python_twins(
    files: dict[str, Path], case: str, options: tuple[str, ...]
) -> None:
    _same_as_one_job(_paths(files, case), options, pure=True)


@pytest.mark.parametrize("options", [(), ("--json", "--all")], ids=["plain", "json all"])
def test_thousands_of_empty_frames_give_the_report_of_one_job(
    tmp_path: Path, options: tuple[str, ...]
) -> None:
    """More frames in a span than are judged at once (fastcheck.PIECE_FRAMES), each an
    empty Match with findings, the repeats flagged from the second on."""
    path = tmp_path / "empty.krec"
    with KrecWriter.open(path) as writer:
        for i in range(2500):
            writer.write(b"" if i % 3 else b"\x0a\x01x")  # an empty Match, or id "x"
    _same_as_one_job([str(path)], options, pure=False)


def test_the_reports_name_repeats_across_a_split_point_and_across_files(
    files: dict[str, Path],
) -> None:
    """Not only the same as one job: right. big.krec's 60 records come again after
    small.krec inside repeats.krec, then all of big.krec again: 60 + 60 repeats."""
    got = run("--jobs", "2", "--chunk-bytes", "3000", *_paths(files, "repeats across files"))
    assert got.returncode == 0
    assert got.stdout.count(b"DUPLICATE_RECORD") == 120
    assert b"188 match(es)" in got.stdout.splitlines()[-1]  # 60 + 8 + 60 in one file, then 60


def test_damage_is_reported_where_one_job_finds_it(files: dict[str, Path]) -> None:
    got = run("--jobs", "2", "--chunk-bytes", "3000", str(files["damage and a truncated tail"]))
    assert got.returncode == 2
    lines = [line for line in got.stdout.splitlines() if line.startswith(b"DAMAGED")]
    assert len(lines) == 3
    assert b"payload checksum mismatch" in lines[0] and b"payload checksum mismatch" in lines[1]
    assert b"FRAME_TRUNCATED" in lines[2]


@pytest.mark.parametrize("thread", [False, True], ids=["forked", "spawned"])
def test_the_workers_judge_the_spans_of_a_sound_file(files: dict[str, Path], thread: bool) -> None:
    """The library path: a pool's items are the serial items, and the workers did start:
    forks of this process on pipes, or, with another thread running (a progress bar's, or
    gRPC's left by an earlier test), a ``multiprocessing`` pool of spawned interpreters (a
    fork could inherit a lock that thread holds)."""
    serial, parallel = [], []
    with open_records(str(files["big"])) as records:
        serial = list(validate_records(records, count_clean=True, seen=set()))
    running = threading.Event()
    other = threading.Thread(target=running.wait, daemon=True)
    if thread:
        other.start()
    forks = forked.can_fork()
    assert not (thread and forks)
    with JudgePool(2, chunk_bytes=5000) as pool, open_records(str(files["big"])) as records:
        assert pool.can_split(records)
        parallel = list(validate_records(records, count_clean=True, seen=set(), pool=pool))
        assert pool._pool is not None  # the spans went to worker processes
        assert isinstance(pool._pool, forked.Forked if forks else Pooled)
        assert records.bytes_read == records.size  # the progress bar ends full
    running.set()
    assert sum(getattr(item, "count", 0) for item in parallel) == 60
    assert sum(getattr(item, "count", 0) for item in serial) == 60
    assert [i for i in parallel if not hasattr(i, "count")] == [
        i for i in serial if not hasattr(i, "count")
    ]


def _judged_where(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, bool]]:
    """Each range the pool judges, in the order they are handed out: (path, start, judged
    in this process)."""
    judged: list[tuple[str, int, bool]] = []
    send = JudgePool._send

    def noted(self: JudgePool, plan: Any, job: Any, *, here: bool = False) -> Any:
        judged.append((plan.path, job.start, here))
        return send(self, plan, job, here=here)

    monkeypatch.setattr(JudgePool, "_send", noted)
    return judged


@pytest.mark.parametrize("case", ["big", "repeats across files"])
def test_two_jobs_are_this_process_and_one_worker_judging_each_range_once(
    files: dict[str, Path], case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--jobs 2`` is one worker beside this process (two busy processes for two cores):
    every range of these sound files is judged once, by one or the other, in file order,
    and the items are one job's."""
    judged = _judged_where(monkeypatch)
    paths = _paths(files, case)
    workers = []
    parallel: list[object] = []
    with JudgePool(2, chunk_bytes=3000) as pool:
        pool.expect(paths, count_clean=True)
        pool.start()
        assert pool._pool is not None
        workers = pool._pool.pids
        seen: set[int] = set()
        for path in paths:
            with open_records(path) as records:
                parallel.append(
                    _items(validate_records(records, count_clean=True, seen=seen, pool=pool))
                )
    assert len(workers) == 1
    seen = set()
    serial = []
    for path in paths:
        with open_records(path) as records:
            serial.append(_items(validate_records(records, count_clean=True, seen=seen)))
    assert parallel == serial
    handed = [(path, start) for path, start, _ in judged]
    assert len(set(handed)) == len(handed)  # none judged twice (no range follows on badly)
    sizes = [os.path.getsize(path) for path in paths]
    ranges = [(p, at) for p, n in zip(paths, sizes, strict=True) for at in range(HEADER, n, 3000)]
    assert handed == ranges


def test_while_a_worker_is_not_done_this_process_judges_the_ranges_to_come(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held as if its worker never had a result ready, this process judges the ranges to
    come itself, never more than ``_AHEAD_HERE`` ahead of the one it settles (then it
    waits), and the items are still one job's."""
    judged = _judged_where(monkeypatch)
    ahead: list[int] = []
    pool = JudgePool(2, chunk_bytes=1000)

    def not_yet(result: object) -> bool:
        ahead.append(pool._ahead)
        return False

    def get(result: Any, timeout: float | None = None) -> Any:  # as CPython's, but for ready()
        result.wait(timeout)
        if result._success:
            return result._value
        raise result._value

    monkeypatch.setattr(forked._Pending, "ready", not_yet)  # get() still waits for it
    # The same for a pool's result, where this process cannot fork (another thread runs).
    monkeypatch.setattr(multiprocessing.pool.ApplyResult, "ready", not_yet)
    monkeypatch.setattr(multiprocessing.pool.ApplyResult, "get", get)
    path = str(files["invalid among valid"])
    with pool, open_records(path) as records:
        parallel = _items(validate_records(records, count_clean=True, seen=set(), pool=pool))
    with open_records(path) as records:
        assert parallel == _items(validate_records(records, count_clean=True, seen=set()))
    here = [start for _, start, by_here in judged if by_here]
    there = [start for _, start, by_here in judged if not by_here]
    assert here and there
    assert max(ahead) == judges._AHEAD_HERE  # as far ahead as allowed, and no further


def test_one_job_in_a_pool_judges_every_range_here_and_starts_no_worker(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    judged = _judged_where(monkeypatch)
    path = str(files["damage and a truncated tail"])
    with JudgePool(1, chunk_bytes=3000) as pool, open_records(path) as records:
        pool.start()
        parallel = _items(validate_records(records, count_clean=True, seen=set(), pool=pool))
        assert pool._pool is None
    with open_records(path) as records:
        assert parallel == _items(validate_records(records, count_clean=True, seen=set()))
    assert judged and all(here for _, _, here in judged)


@pytest.mark.parametrize("change", ["replaced", "removed"])
def test_a_file_replaced_or_removed_after_it_was_opened_is_judged_as_opened(
    files: dict[str, Path], tmp_path: Path, change: str
) -> None:
    """The workers read the file by its name: when the name has come to stand for another
    file (or none) since it was opened, the open file is judged here, as by one job."""
    path = tmp_path / "swapped.krec"
    shutil.copy(files["invalid among valid"], path)
    with open_records(str(path)) as records:
        serial = list(validate_records(records, seen=set()))
    with JudgePool(2, chunk_bytes=3000) as pool, open_records(str(path)) as records:
        if change == "replaced":
            shutil.copy(files["big"], tmp_path / "other.krec")
            os.replace(tmp_path / "other.krec", path)
        else:
            path.unlink()
        parallel = list(validate_records(records, seen=set(), pool=pool))
    assert parallel == serial
    assert any(not getattr(item, "valid", True) for item in serial)


def test_standard_input_is_judged_in_the_main_process_with_the_same_report(
    files: dict[str, Path],
) -> None:
    data = files["repeats across files"].read_bytes()
    args = [KINGREC, "validate", "--all", "-"]
    one = subprocess.run([*args, "--jobs", "1"], input=data, capture_output=True, check=False)
    two = subprocess.run([*args, "--jobs", "2"], input=data, capture_output=True, check=False)
    assert (two.stdout, two.stderr, two.returncode) == (one.stdout, one.stderr, one.returncode)


def test_jobs_zero_means_every_cpu_and_a_negative_count_is_refused(
    files: dict[str, Path],
) -> None:
    assert run("--jobs", "0", str(files["big"])).returncode == 0
    refused = run("--jobs", "-1", str(files["big"]))
    assert refused.returncode == 2
    assert b"Traceback" not in refused.stderr
    assert b"--jobs" in refused.stderr


# -- Ctrl-C -------------------------------------------------------------------------------


def _session(sid: int) -> dict[int, str]:
    """The live processes of session ``sid``: pid -> /proc status text."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":  # fields: state, ppid, pgrp, session
            out[int(entry)] = status
    return out


def _ignores_sigint(status: str) -> bool:
    mask = next(line for line in status.splitlines() if line.startswith("SigIgn:"))
    return bool(int(mask.split()[1], 16) & (1 << (signal.SIGINT - 1)))


# The command under a parent that adopts its orphans (PR_SET_CHILD_SUBREAPER), standing in
# for a shell: once the command has ended, it reaps every process the command left behind
# (a worker still running, or ended and never reaped) and says how many there were.
_ADOPTING = """
import ctypes, os, signal, subprocess, sys
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
signal.signal(signal.SIGINT, lambda *_: None)  # Ctrl-C is the command's to handle
code = subprocess.call(sys.argv[1:])
left = 0
while True:
    try:
        os.waitpid(-1, 0)
    except ChildProcessError:
        break
    left += 1
sys.stderr.write(f"left behind: {left}\\n")
sys.exit(code)
"""


def _adopted(args: list[str]) -> subprocess.Popen[bytes]:
    """``kingrec ARGS`` under ``_ADOPTING``, in a session of its own, its output unread."""
    return subprocess.Popen(
        [sys.executable, "-c", _ADOPTING, KINGREC, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def _workers_of(session: int, count: int) -> dict[int, str]:
    """The command's workers (the processes of ``session`` but the adopting parent and the
    command), once ``count`` of them ignore SIGINT: their start is done."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        live = _session(session)
        command = [p for p, s in live.items() if f"\nPPid:\t{session}\n" in s]
        workers = {p: s for p, s in live.items() if p != session and p not in command}
        if len(workers) >= count and all(_ignores_sigint(s) for s in workers.values()):
            return workers
        time.sleep(0.01)
    raise AssertionError(f"no {count} workers started: {sorted(workers)}")


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie, or reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_during_several_jobs_exits_130_and_leaves_no_worker(
    files: dict[str, Path], tmp_path: Path
) -> None:
    """SIGINT to the process group, as a terminal sends it, while the workers are busy: the
    command is held mid-run by not reading its output (its report is far bigger than a
    pipe), and the signal is sent once both workers ignore SIGINT (their start is done).
    Three jobs: the command and two workers, each ended and reaped by the command (none
    left running, none left to its parent to reap)."""
    big = files["big"].read_bytes()
    held = tmp_path / "held.krec"
    held.write_bytes(big + big[HEADER:] * 20)  # 1260 records, each reported with --all
    proc = _adopted(
        ["validate", "--json", "--all", "--jobs", "3", "--chunk-bytes", "3000", str(held)]
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith(b"{")  # the workers have judged a span
        assert len(_workers_of(proc.pid, 2)) == 2
        assert proc.poll() is None  # held by its unread output
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:  # pragma: no cover - only when the test fails
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130
    assert b"Traceback" not in err
    assert err.endswith(b"kingrec: interrupted\nleft behind: 0\n")
    assert _session(proc.pid) == {}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_worker_killed_mid_run_leaves_the_report_and_status_of_one_job(
    files: dict[str, Path], tmp_path: Path
) -> None:
    """One of the two workers of ``--jobs 3`` is killed (SIGKILL) while the command is held
    mid-run by its unread output: its ranges are judged by the others, and the report, the
    standard error and the exit status (2: invalid records and a damaged one) are those of one
    job; the dead worker is reaped by the command."""
    mixed, big = files["invalid among valid"].read_bytes(), files["big"].read_bytes()
    held = tmp_path / "held.krec"
    held.write_bytes(mixed + big[HEADER:] * 20)
    args = ["--json", "--all", "--chunk-bytes", "3000", str(held)]
    with _adopted(["validate", "--jobs", "3", *args]) as proc:
        try:
            assert proc.stdout is not None and proc.stderr is not None
            first = proc.stdout.readline()
            assert first.startswith(b"{")
            killed = min(_workers_of(proc.pid, 2))
            os.kill(killed, signal.SIGKILL)
            deadline = time.monotonic() + 60
            while not _gone(killed) and time.monotonic() < deadline:
                time.sleep(0.01)
            assert _gone(killed)
            out, err = proc.stdout.read(), proc.stderr.read()
            proc.wait(timeout=300)
        finally:
            if proc.poll() is None:  # pragma: no cover - only when the test fails
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    one = run("--jobs", "1", *args)
    assert one.returncode == 2
    assert (first + out, err, proc.returncode) == (one.stdout, one.stderr + b"left behind: 0\n", 2)


# ``kingrec`` with ``judges._mapped_range`` wrapped by the ``cut_once_mapped`` a test
# defines in ``{cut}`` (``path``: the file validated; ``real``: the wrapped function).
_CUTTING_KINGREC = """
import os, sys
from kingrec import judges
path = sys.argv[-1]
real = judges._mapped_range
{cut}
judges._mapped_range = cut_once_mapped
sys.argv = ["kingrec", *sys.argv[1:]]
from kingrec_cli.main import run
run()
"""


def _cut_while_mapped(big: Path, tmp_path: Path, cut: str) -> None:
    """``validate --jobs 2`` of a copy of ``big`` whose ``cut`` (``_CUTTING_KINGREC``) cuts
    the file short under a mapping: its report, standard error and exit status are one job's
    on the file as it is cut (its last frame FRAME_TRUNCATED)."""
    script = _CUTTING_KINGREC.format(cut=cut)
    if _twins.COMPILED is None or not judges._can_map(_twins.COMPILED):
        pytest.skip("a range is mapped only with the checksum in C")
    path = tmp_path / "cut.krec"
    shutil.copy(big, path)
    size = path.stat().st_size
    args = ["validate", "--json", "--jobs", "2", "--chunk-bytes", "65536", str(path)]
    got = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, timeout=300, check=False
    )
    assert path.stat().st_size < size  # cut, under a mapping
    one = run("--json", "--jobs", "1", str(path))
    assert (got.stdout, got.stderr, got.returncode) == (one.stdout, one.stderr, one.returncode)
    assert one.returncode == 2 and b"FRAME_TRUNCATED" in one.stdout


# A worker maps its range (``judges._maps_range``) and the file is cut short under the first
# range mapped (a worker's or the command's), a page boundary inside it: the walk over its
# headers reads a page that is gone.
_CUT_UNDER_A_WORKER = """
def cut_once_mapped(fd, start, stop):
    room = real(fd, start, stop)
    if room is not None and not os.environ.get("CUT"):  # the first range mapped in a process
        os.environ["CUT"] = "1"
        os.truncate(path, (start + (32 << 10)) // 4096 * 4096)
    return room
"""


def test_a_file_cut_short_under_a_workers_mapping_is_reported_as_one_job_reads_it_cut(
    files: dict[str, Path], tmp_path: Path
) -> None:
    """The worker dies of the SIGBUS (or its guarded check stops at the cut): its range is
    judged here, by reading, and the report, standard error and exit status are those of
    one job on the file as it is cut (its last frame FRAME_TRUNCATED); no traceback."""
    _cut_while_mapped(files["big"], tmp_path, _CUT_UNDER_A_WORKER)


# The command maps the ranges it judges itself too (``judges._maps_range``): the file cut
# short under the first it maps, a page boundary inside the range, so that its guarded walk
# over the headers reads a page that is gone.
_CUT_UNDER_THE_COMMAND = """
command = os.getpid()  # the workers are forks: the same code, another pid
cut = []
def cut_once_mapped(fd, start, stop):
    room = real(fd, start, stop)
    at = start // 4096 * 4096 + 8192  # the range's second page boundary or its third
    if room is not None and os.getpid() == command and not cut and at < os.fstat(fd).st_size:
        cut.append(start)
        os.truncate(path, at)
    return room
"""


def test_a_file_cut_short_under_the_commands_own_mapping_is_reported_as_one_job_reads_it_cut(
    files: dict[str, Path], tmp_path: Path
) -> None:
    """The command's guarded walk meets the cut (an OSError, not a SIGBUS that would end it):
    the range is left to the reader, and the report, standard error and exit status are
    those of one job on the file as it is cut (its last frame FRAME_TRUNCATED)."""
    _cut_while_mapped(files["big"], tmp_path, _CUT_UNDER_THE_COMMAND)


def test_an_interrupted_pool_kills_and_reaps_its_workers(files: dict[str, Path]) -> None:
    """Ctrl-C (a real SIGINT to this process) mid-file: KeyboardInterrupt comes out of the
    pool, and by then its workers (forked, or a pool's where another thread runs) are ended
    and reaped (no zombie left to this process)."""
    path = str(files["big"])
    with pytest.raises(KeyboardInterrupt):  # noqa: SIM117 - the pool ends inside the raises
        with JudgePool(3, chunk_bytes=3000) as pool, open_records(path) as records:
            pool.start()
            assert pool._pool is not None
            pids = pool._pool.pids
            items = validate_records(records, count_clean=True, seen=set(), pool=pool)
            next(items)
            signal.raise_signal(signal.SIGINT)
    assert len(pids) == 2
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_with_a_progress_bar_the_workers_are_still_forked_not_spawned(
    files: dict[str, Path], tmp_path: Path
) -> None:
    """The bar runs a thread; the workers are started before it, so they are forks of the
    command (each spawned interpreter would spend some 0.3 s of CPU importing kingrec).
    Three jobs: the command and two workers."""
    big = files["big"].read_bytes()
    held = tmp_path / "held.krec"
    held.write_bytes(big + big[HEADER:] * 20)
    command = [KINGREC, "validate", "--progress", "--json", "--all", "--jobs", "3", str(held)]
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith(b"{")  # held by its unread output from here
        workers = {p for p in _session(proc.pid) if p != proc.pid}
        lines = [Path(f"/proc/{p}/cmdline").read_bytes() for p in workers]
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    assert len(lines) >= 2
    assert all(b"spawn_main" not in line and b"validate" in line for line in lines), lines


# -- one job: the frames of a regular .krec file judged where they lie ----------------------


def _items(items: Iterable[object]) -> tuple[list[object], int, int]:
    """Verdicts as a report shows them: every report and damage in order, the clean
    matches counted (how they are grouped into CleanMatches items shows nowhere)."""
    out: list[object] = []
    clean = deals = 0
    for item in items:
        if isinstance(item, CleanMatches):
            clean, deals = clean + item.count, deals + item.deals
        else:
            out.append(item)
    return out, clean, deals


@pytest.mark.parametrize("block", [100, 9_000, 60_000], ids=lambda b: f"block {b}")
@pytest.mark.parametrize(
    "case",
    [
        "big",
        "repeats across files",
        "damage and a truncated tail",
        "truncated",
        "invalid among valid",
    ],
)
def test_judging_in_place_gives_the_items_of_the_reader_whatever_the_blocks(
    files: dict[str, Path], case: str, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Blocks smaller than a frame (the reader takes the file from its start), of about one
    frame, of a dozen, and pieces of three frames: block and piece ends fall everywhere, next
    to damage and repeats, and the items are the reader's."""
    if _twins.COMPILED is None:
        pytest.skip("the compiled twins are not built")
    monkeypatch.setattr(judges, "_HERE_BLOCK", block)
    monkeypatch.setattr(judges, "PIECE_FRAMES", 3)
    judged_in_place: list[int] = []
    pieces_of = judges._judged_pieces

    def counted(*args: Any, **kwargs: Any) -> Any:
        for piece, stop in pieces_of(*args, **kwargs):
            judged_in_place.append(len(piece[1]))
            yield piece, stop

    monkeypatch.setattr(judges, "_judged_pieces", counted)
    here_seen: set[int] = set()
    reader_seen: set[int] = set()
    for path in _paths(files, case):
        with open_records(path) as records:
            assert judges.can_read_by_offset(records)
            here = _items(validate_records(records, count_clean=True, seen=here_seen))
        with open_records(path) as records:
            runs = records.raw_frame_runs()
            reader = _items(validate_runs(runs, path, count_clean=True, seen=reader_seen))
        assert here == reader
    # Blocks that hold a frame were judged in place (a smaller one never is).
    assert (sum(judged_in_place) > 0) == (block > 5_000)


@pytest.mark.parametrize("options", [(), ("--json",), ("--quiet",)], ids=["plain", "json", "quiet"])
@pytest.mark.parametrize("case", CASES)
def test_one_job_judging_in_place_reports_as_the_reader_and_the_reference_do(
    files: dict[str, Path], case: str, options: tuple[str, ...]
) -> None:
    """The compiled twins (frames judged where they lie) against the pure-Python ones (every
    record decoded from the reader's frames and judged by the reference): the same bytes."""
    if _twins.COMPILED is None:
        pytest.skip("the compiled twins are not built")
    paths = _paths(files, case)
    compiled, pure = run(*options, *paths), run(*options, *paths, pure=True)
    assert b"Traceback" not in compiled.stderr
    assert (compiled.stdout, compiled.stderr, compiled.returncode) == (
        pure.stdout,
        pure.stderr,
        pure.returncode,
    )


# -- the byte-range split: workers find their own frames ----------------------------------


def _frame(payload: bytes) -> bytes:
    head = struct.pack("<4sII", b"KRF1", len(payload), zlib.crc32(payload))
    return head + struct.pack("<I", zlib.crc32(head)) + payload


def _payloads(path: Path) -> list[bytes]:
    return [item.payload for item in read_frames(path) if isinstance(item, Frame)]


def _krec(path: Path, frames: Iterable[bytes]) -> list[int]:
    """A .krec file of these frames (whole frames, header and payload); their offsets."""
    offsets, at, data = [], HEADER, bytearray(MAGIC + struct.pack("<HH", 1, 0))
    for frame in frames:
        offsets.append(at)
        data += frame
        at += len(frame)
    path.write_bytes(bytes(data))
    return offsets


def _same_with_chunks(paths: list[str], chunks: Iterable[int], *options: str) -> bytes:
    """The CLI's report with --jobs 2 and each range size, byte for byte that of one job;
    the one job's standard output."""
    one = run("--jobs", "1", *options, *paths)
    assert b"Traceback" not in one.stderr
    for chunk in chunks:
        many = run("--jobs", "2", "--chunk-bytes", str(chunk), *options, *paths)
        assert (many.stdout, many.stderr, many.returncode) == (
            one.stdout,
            one.stderr,
            one.returncode,
        ), chunk
    return one.stdout


def _cut_at(at: int) -> int:
    """The range size that puts the second range's start at byte ``at``."""
    return max(at - HEADER, judges.MIN_CHUNK_BYTES)


@pytest.mark.parametrize("into", [1, 4, 15, 16, 17, 200], ids=lambda d: f"{d} bytes in")
def test_a_range_that_starts_inside_a_frame_gives_the_report_of_one_job(
    files: dict[str, Path], tmp_path: Path, into: int
) -> None:
    """The second range starts inside a frame's header, at its payload's first byte, or in
    its payload: its worker syncs to the next frame, which follows on."""
    payloads = _payloads(files["invalid among valid"])
    path = tmp_path / "cut.krec"
    offsets = _krec(path, map(_frame, payloads))
    chunks = [_cut_at(at + into) for at in offsets[1:6]]
    out = _same_with_chunks([str(path)], chunks, "--json", "--all")
    assert out.count(b'"match_id"') == len(payloads)


def _unknown_field(inner: bytes) -> bytes:
    """Field 1000 of a Match holding ``inner``: unknown to the schema, so appended to a
    record's bytes it leaves the same match, with whatever bytes we like in its payload."""
    size, length = len(inner), bytearray()
    while size >= 0x80:
        length.append(size & 0x7F | 0x80)
        size >>= 7
    length.append(size)
    return bytes([0xC2, 0x3E]) + bytes(length) + inner  # field 1000, length-delimited


@pytest.mark.parametrize(
    "shape", ["a frame mid-payload", "a chain to the payload's end", "a header claiming more"]
)
def test_frames_hidden_in_a_payload_do_not_fool_the_sync(
    files: dict[str, Path], tmp_path: Path, shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Payloads holding sound frames (headers, checksums and all): a worker whose range
    starts just before one syncs to it; what it takes does not follow on from the range
    before, so that range is judged again from where the real frames are."""
    payloads = _payloads(files["big"])
    fake = _frame(payloads[5])
    hidden = {
        "a frame mid-payload": _unknown_field(fake) + _unknown_field(b"tail" * 20),
        "a chain to the payload's end": _unknown_field(fake + _frame(payloads[6])),
        # A sound header whose payload runs into the next real frame.
        "a header claiming more": _unknown_field(fake + _frame(bytes(300))[:26]),
    }[shape]
    frames = [_frame(p + hidden if i % 3 == 1 else p) for i, p in enumerate(payloads[:30])]
    path = tmp_path / "hidden.krec"
    offsets = _krec(path, frames)
    fakes = [at + frames[i].index(b"KRF1", 16) for i, at in enumerate(offsets) if i % 3 == 1]
    chunks = [_cut_at(at - d) for at in fakes[:3] for d in (0, 3)]
    _same_with_chunks([str(path)], chunks, "--json", "--all")

    # In the library, with a range that starts just before the hidden frame and ends past
    # the frame hiding it (the first frame is padded to make it so): that range's worker
    # syncs to the hidden frame, and the range is judged again from the next real frame.
    padded = _frame(payloads[0] + _unknown_field(bytes(40_000)))
    offsets = _krec(path, [padded, _frame(payloads[1] + hidden), *map(_frame, payloads[2:9])])
    chunk = _cut_at(offsets[1] + _frame(payloads[1] + hidden).index(b"KRF1", 16) - 3)
    sent: list[tuple[int, bool]] = []
    send = JudgePool._send

    def noted(self: JudgePool, plan: Any, job: Any, *, here: bool = False) -> Any:
        sent.append((job.start, job.known))
        return send(self, plan, job, here=here)

    monkeypatch.setattr(JudgePool, "_send", noted)
    with open_records(str(path)) as records:
        serial = _items(validate_records(records, count_clean=True, seen=set()))
    with JudgePool(2, chunk_bytes=chunk) as pool, open_records(str(path)) as records:
        parallel = _items(validate_records(records, count_clean=True, seen=set(), pool=pool))
    assert parallel == serial
    assert (offsets[2], True) in sent  # the second range, again from the frame after the fake


@pytest.mark.parametrize("where", ["header", "payload", "next header"])
def test_damage_just_after_a_range_start_gives_the_report_of_one_job(
    files: dict[str, Path], tmp_path: Path, where: str
) -> None:
    frames = [bytearray(_frame(p)) for p in _payloads(files["big"])[:20]]
    frame, at = {"header": (7, 5), "payload": (7, 40), "next header": (8, 2)}[where]
    frames[frame][at] ^= 0x40
    path = tmp_path / "damaged.krec"
    offsets = _krec(path, map(bytes, frames))
    chunks = [_cut_at(offsets[7] + d) for d in (-1, 0, 1, 3, 30)]
    out = _same_with_chunks([str(path)], chunks, "--json", "--all")
    assert b'"FRAME_CORRUPT"' in out


def test_a_repeat_whose_copies_lie_in_different_ranges_is_reported_as_by_one_job(
    files: dict[str, Path], tmp_path: Path
) -> None:
    payloads = _payloads(files["big"])
    path = tmp_path / "twice.krec"
    offsets = _krec(path, map(_frame, payloads + payloads[:10]))
    half = (offsets[-1] - HEADER) // 2
    out = _same_with_chunks([str(path)], [half, half // 3, 5000], "--json")
    assert out.count(b"DUPLICATE_RECORD") == 10


def test_many_small_files_are_spread_over_the_workers_with_the_report_of_one_job(
    files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forty small files (some repeating others, some JSON, one damaged): the report of one
    job, and the workers get the ranges of the next files before this one is settled."""
    payloads = _payloads(files["big"])
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(40):
        if i % 10 == 9:
            shutil.copy(files["json lines"], folder / f"{i:02}.jsonl")
            continue
        chosen = [_frame(payloads[(i * 3 + k) % 45]) for k in range(3)]
        if i == 13:
            chosen[1] = chosen[1][:30] + b"\xff" + chosen[1][31:]
        _krec(folder / f"{i:02}.krec", chosen)
    _same_with_chunks([str(folder)], [DEFAULT_CHUNK, 600])
    _same_with_chunks([str(folder)], [DEFAULT_CHUNK], "--json", "--all")

    sent = _noting_sends(monkeypatch)
    paths = sorted(str(p) for p in folder.glob("*.krec"))
    ahead = []
    with JudgePool(2) as pool:
        pool.expect(paths, count_clean=True)
        seen: set[int] = set()
        for path in paths:
            with open_records(path) as records:
                items = validate_records(records, count_clean=True, seen=seen, pool=pool)
                next(items)
                ahead.append(len(set(sent)))
                list(items)
    assert sent == paths  # each file's one range sent once, in order
    # At its first item, the ranges of the next files had gone to the workers too.
    assert all(n >= min(i + 4, len(paths)) for i, n in enumerate(ahead)), ahead


@pytest.mark.parametrize("change", ["replaced", "grown", "cut short"])
def test_a_file_that_changes_after_its_ranges_went_ahead_is_judged_as_it_is_opened(
    files: dict[str, Path], tmp_path: Path, change: str
) -> None:
    """The next file's ranges go to the workers while the first is settled; when it has been
    replaced, has grown or shrunk by its turn, it is judged as it is when opened."""
    first, second = tmp_path / "first.krec", tmp_path / "second.krec"
    shutil.copy(files["big"], first)
    shutil.copy(files["invalid among valid"], second)
    with JudgePool(2) as pool:
        pool.expect([str(first), str(second)], count_clean=True)
        seen: set[int] = set()
        with open_records(str(first)) as records:
            items = validate_records(records, count_clean=True, seen=seen, pool=pool)
            next(items)
            assert pool._plans[-1].path == str(second) and pool._plans[-1].sent  # sent ahead
            data = files["repeats across files"].read_bytes()
            if change == "replaced":
                (tmp_path / "other.krec").write_bytes(data)
                os.replace(tmp_path / "other.krec", second)
            elif change == "grown":
                with second.open("ab") as f:
                    f.write(data[HEADER:])
            else:
                os.truncate(second, second.stat().st_size // 2)
            list(items)
        with open_records(str(second)) as records:
            parallel = _items(validate_records(records, count_clean=True, seen=seen, pool=pool))
    seen = set()
    for path in (first, second):
        with open_records(str(path)) as records:
            serial = _items(validate_records(records, count_clean=True, seen=seen))
    assert parallel == serial


def test_a_krec_file_by_another_name_among_the_files_to_come_costs_no_range_twice(
    files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only .krec names are sent ahead; one by another name is planned at its turn, and the
    ranges already sent for the files after it are still used, not sent again."""
    names = ["a.krec", "b.records", "c.krec", "d.krec"]
    for name in names:
        shutil.copy(files["invalid among valid"], tmp_path / name)
    paths = [str(tmp_path / name) for name in names]
    sent = _noting_sends(monkeypatch)
    seen: set[int] = set()
    parallel = []
    with JudgePool(3) as pool:
        pool.expect(paths, count_clean=True)
        for path in paths:
            with open_records(path) as records:
                parallel.append(
                    _items(validate_records(records, count_clean=True, seen=seen, pool=pool))
                )
    assert sorted(sent) == sorted(paths)  # one range each, sent once
    seen = set()
    for path, got in zip(paths, parallel, strict=True):
        with open_records(path) as records:
            assert got == _items(validate_records(records, count_clean=True, seen=seen))


@pytest.mark.parametrize("change", ["replaced", "grown"])
def test_a_file_changed_while_the_command_runs_is_reported_as_one_job_reports_it_now(
    files: dict[str, Path], tmp_path: Path, change: str
) -> None:
    """Through the real CLI: the second file's ranges go to the workers while the first is
    settled; the command is held mid-first-file by its unread output (far bigger than a
    pipe) while the second is replaced or appended to; its report is that of one job run
    on the files as they are afterwards."""
    big = files["big"].read_bytes()
    held, second = tmp_path / "held.krec", tmp_path / "second.krec"
    held.write_bytes(big + big[HEADER:] * 20)
    shutil.copy(files["invalid among valid"], second)
    args = ["validate", "--json", "--all", "--jobs", "2", str(held), str(second)]
    with subprocess.Popen([KINGREC, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.readline()
        assert first.startswith(b"{")  # held from here, long before the second file's turn
        data = files["repeats across files"].read_bytes()
        if change == "replaced":
            (tmp_path / "other.krec").write_bytes(data)
            os.replace(tmp_path / "other.krec", second)
        else:
            with second.open("ab") as f:
                f.write(data[HEADER:])
        # Read through the buffer that holds the rest of the first read (communicate would
        # read the pipe itself, past it); standard error is a line or none.
        out, err = proc.stdout.read(), proc.stderr.read()
        proc.wait(timeout=300)
    one = run("--json", "--all", "--jobs", "1", str(held), str(second))
    assert (first + out, err, proc.returncode) == (one.stdout, one.stderr, one.returncode)


def _noting_sends(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The path of each range the pool judges (in a worker or here), in the order sent."""
    sent: list[str] = []
    send = JudgePool._send

    def noted(self: JudgePool, plan: Any, job: Any, *, here: bool = False) -> Any:
        sent.append(plan.path)
        return send(self, plan, job, here=here)

    monkeypatch.setattr(JudgePool, "_send", noted)
    return sent


# -- the end of a file in finer ranges, so that the processes finish together --------------


def _sizes(starts: list[int], size: int) -> list[int]:
    return [stop - at for at, stop in zip(starts, [*starts[1:], size], strict=True)]


def test_the_end_of_a_big_file_is_cut_into_ever_finer_ranges_covering_it_once() -> None:
    """``--jobs 2`` on 4 MiB ranges: 4 ranges of 2 MiB, 4 of 1 MiB, 4 of 512 KiB end the
    file; before them every range is whole but the one that meets them."""
    size, chunk = 485_000_000, 4 << 20
    starts = judges._range_starts(size, chunk, 4)
    sizes = _sizes(starts, size)
    assert starts[0] == HEADER
    assert sum(sizes) == size - HEADER  # every byte in one range, none twice
    assert sizes[-12:] == [2 << 20] * 4 + [1 << 20] * 4 + [512 << 10] * 4
    assert set(sizes[:-13]) == {chunk}
    assert 0 < sizes[-13] <= chunk


def test_small_ranges_and_files_of_one_range_are_cut_as_before() -> None:
    """Ranges too small to cut finer (the tests' ``--chunk-bytes``), a file that fits in
    one range, and one job's plan (no tail) are cut every ``chunk_bytes``."""
    assert judges._range_starts(100_000, 3000, 4) == list(range(HEADER, 100_000, 3000))
    assert judges._range_starts(610_000, DEFAULT_CHUNK, 4) == [HEADER]
    assert judges._range_starts(50 << 20, DEFAULT_CHUNK, 0) == list(
        range(HEADER, 50 << 20, DEFAULT_CHUNK)
    )
    assert judges._range_starts(HEADER, DEFAULT_CHUNK, 4) == []  # no frame: no range


def test_a_file_ending_in_finer_ranges_gives_the_items_of_one_job(
    files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file of 2.4 MB on 512 KiB ranges with two workers: its last ranges are of 64, 128
    and 256 KiB, judged by the workers and here, and the items (repeats across them
    included) are one job's."""
    path = tmp_path / "tail.krec"
    _krec(path, [_frame(p) for p in _payloads(files["invalid among valid"])] * 4)
    size, chunk = path.stat().st_size, 512 << 10
    judged = _judged_where(monkeypatch)
    with open_records(str(path)) as records:
        serial = _items(validate_records(records, count_clean=True, seen=set()))
    with JudgePool(3, chunk_bytes=chunk) as pool, open_records(str(path)) as records:
        parallel = _items(validate_records(records, count_clean=True, seen=set(), pool=pool))
    assert parallel == serial
    starts = [start for _, start, _ in judged]
    assert starts == judges._range_starts(size, chunk, 8)
    assert {64 << 10, 128 << 10, 256 << 10} <= set(_sizes(starts, size))


# -- the exit: once the report is out, no interpreter teardown ---------------------------

_NOTE_TEARDOWN = """
import atexit, sys
atexit.register(lambda: sys.stderr.write("TEARDOWN\\n"))
sys.argv = ["kingrec", *sys.argv[1:]]
from kingrec_cli.main import run
run()
"""


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("case", ["valid", "invalid", "damage and a truncated tail"])
def test_validate_ends_without_the_teardown_once_its_report_is_out(
    files: dict[str, Path], tmp_path: Path, jobs: str, case: str
) -> None:
    """Whatever the verdict (exit 0, 1 or 2), the report is whole and the status is the
    command's, and the interpreter's exit handlers never run (the process ends at once);
    a run that fails before its summary (an unknown option) still takes the usual way."""
    paths = _paths(files, case)
    one = run("--jobs", "1", *paths)
    got = subprocess.run(
        [sys.executable, "-c", _NOTE_TEARDOWN, "validate", "--jobs", jobs, *paths],
        capture_output=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
    )
    assert (got.stdout, got.returncode) == (one.stdout, one.returncode)
    assert got.stderr == one.stderr  # no "TEARDOWN": the exit handlers were skipped
    assert one.returncode == {"valid": 0, "invalid": 1}.get(case, 2)
    usage = subprocess.run(
        [sys.executable, "-c", _NOTE_TEARDOWN, "validate", "--no-such-option", *paths],
        capture_output=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
    )
    assert usage.returncode == 2
    assert usage.stderr.endswith(b"TEARDOWN\n")
