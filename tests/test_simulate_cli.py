"""``kingrec simulate`` end to end: the installed console script writing real files."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kingrec import simrun
from kingrec.boundary import ruleset_from_proto
from kingrec.container import Frame, read_frames
from kingrec.jsonl import loads_match
from kingrec.rules import PRESETS
from kingrec.safefile import temporary_name
from kingrec.simulate import simulate_matches


def run(*args: str) -> subprocess.CompletedProcess[bytes]:
    """The installed console script, as a user runs it."""
    kingrec = Path(sys.executable).parent / "kingrec"
    return subprocess.run([str(kingrec), *args], capture_output=True, check=False)


def simulate(*args: str) -> subprocess.CompletedProcess[bytes]:
    result = run("simulate", "--no-progress", *args)
    assert result.returncode == 0, result.stderr
    return result


def _payloads(path: Path) -> list[bytes]:
    frames = list(read_frames(path))
    assert all(isinstance(f, Frame) for f in frames)
    return [f.payload for f in frames if isinstance(f, Frame)]


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_output_validates_clean(name: str, tmp_path: Path) -> None:
    out = tmp_path / "sim.krec"
    result = simulate("--preset", name, "--matches", "3", "--seed", "7", "-o", str(out))
    deals = 3 * PRESETS[name].deal_count
    assert f"simulated 3 matches ({deals} deals) in ".encode() in result.stderr
    assert b" deals/s" in result.stderr
    assert result.stdout == b""
    check = run("validate", "--json", str(out))
    assert check.returncode == 0, check.stdout
    summary = json.loads(check.stdout.splitlines()[-1])
    assert summary["matches"] == 3 and summary["invalid"] == 0 and summary["warnings"] == 0
    assert summary["deals"] == deals
    assert os.listdir(tmp_path) == ["sim.krec"]  # no temporary file left behind


def test_the_summary_of_one_match_names_it_in_the_singular(tmp_path: Path) -> None:
    result = simulate("--matches", "1", "-o", str(tmp_path / "one.krec"))
    assert result.stderr.startswith(b"simulated 1 match (20 deals) in ")


def test_matches_are_those_of_the_library(tmp_path: Path) -> None:
    out = tmp_path / "sim.krec"
    simulate("--preset", "short", "--matches", "4", "--seed", "11", "-o", str(out))
    written = _payloads(out)
    expected = [m.SerializeToString() for m in simulate_matches(PRESETS["short"], 4, 11)]
    assert written == expected


def test_same_seed_gives_the_same_bytes_and_another_seed_does_not(tmp_path: Path) -> None:
    a, b, c = (tmp_path / f"{n}.krec" for n in "abc")
    simulate("--matches", "3", "--seed", "5", "-o", str(a))
    simulate("--matches", "3", "--seed", "5", "-o", str(b))
    simulate("--matches", "3", "--seed", "6", "-o", str(c))
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()


# SHA-256 of `kingrec simulate --preset P --matches 30 --seed 7 -o x.krec` as main wrote it
# (713b53f) before the compiled simulator wrote whole records itself; the seed's output is a
# documented promise (README: the same preset, seed and count give byte-identical output).
_GOLDEN_30_SEED_7 = {
    "classic": "ff4741865d5b84a13cb43832a2da5e3ee498075d3a782693f5b38560e078bfbc",
    "kahvehane": "511229e99ae8d6a7b3c6803550bf173ae5ac420aa66227706f03eea2b5769b90",
    "plain": "6745dc2d8c670def32d32d23bf55769149efc65a6de4195f44a242b50a2184c6",
    "rotation": "bf33973120359fe5ee1c38a9a248e93d05104f0cb8836e23d31cf66eadf7d626",
    "short": "49a3f63729f112ce8f7332f56d0ceb2b42fac54f2cffb49c793680519e3ae19f",
}
# `kingrec simulate --matches 12 --seed 5 -o -` (JSON Lines) at the same commit.
_GOLDEN_JSONL_12_SEED_5 = "c0d38d30daf8c6fa16cba15e9da395ee112df08bf97e485390919c6ed6cdae70"


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_writes_the_file_it_wrote_before_on_one_job_or_two(
    name: str, tmp_path: Path
) -> None:
    assert sorted(_GOLDEN_30_SEED_7) == sorted(PRESETS)
    for jobs in ("1", "2"):
        out = tmp_path / f"{name}-{jobs}.krec"
        simulate("--preset", name, "--matches", "30", "--seed", "7", "--jobs", jobs, "-o", str(out))
        assert hashlib.sha256(out.read_bytes()).hexdigest() == _GOLDEN_30_SEED_7[name], jobs


def test_json_lines_on_standard_output_are_the_lines_written_before() -> None:
    piped = simulate("--matches", "12", "--seed", "5", "-o", "-")
    assert hashlib.sha256(piped.stdout).hexdigest() == _GOLDEN_JSONL_12_SEED_5


@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_the_bytes_do_not_depend_on_how_the_run_is_cut_into_chunks(
    chunk: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Chunks of one match, of a size that does not divide the run, and the largest.
    monkeypatch.setattr(simrun, "_MAX_CHUNK", chunk)
    out = tmp_path / "cut.krec"
    summary = simrun.simulate_to_file(str(out), "classic", 30, 7)
    assert (summary.matches, summary.deals) == (30, 600)
    assert hashlib.sha256(out.read_bytes()).hexdigest() == _GOLDEN_30_SEED_7["classic"]
    stream = io.BytesIO()
    simrun.simulate_to_stream(stream, "classic", 30, 7, fmt="krec")
    assert stream.getvalue() == out.read_bytes()


@pytest.mark.parametrize("suffix", [".krec", ".jsonl"])
def test_jobs_do_not_change_the_output(suffix: str, tmp_path: Path) -> None:
    one, two, three = (tmp_path / f"{n}{suffix}" for n in ("one", "two", "three"))
    common = ("--preset", "short", "--matches", "13", "--seed", "3")
    simulate(*common, "--jobs", "1", "-o", str(one))
    simulate(*common, "--jobs", "2", "-o", str(two))
    simulate(*common, "--jobs", "3", "-o", str(three))
    assert one.read_bytes() == two.read_bytes() == three.read_bytes()
    assert b"simulated 13 matches" in simulate(*common, "-j", "0", "-o", "-").stderr


def test_json_lines_output_to_a_file_and_to_standard_output(tmp_path: Path) -> None:
    out = tmp_path / "sim.jsonl"
    simulate("--matches", "2", "--seed", "9", "-o", str(out))
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2
    matches = [loads_match(line) for line in lines]
    assert [m.match_id for m in matches] == [m.match_id for m in simulate_matches(
        PRESETS["classic"], 2, 9)]  # fmt: skip
    assert ruleset_from_proto(matches[0].ruleset) == PRESETS["classic"]
    assert run("validate", str(out)).returncode == 0

    piped = simulate("--matches", "2", "--seed", "9", "-o", "-")
    assert piped.stdout == out.read_bytes()
    assert b"simulated 2 matches" in piped.stderr


def test_json_and_krec_hold_the_same_matches(tmp_path: Path) -> None:
    simulate("--preset", "plain", "--matches", "2", "-o", str(tmp_path / "a.krec"))
    simulate("--preset", "plain", "--matches", "2", "-o", str(tmp_path / "a.jsonl"))
    lines = (tmp_path / "a.jsonl").read_text(encoding="utf-8").splitlines()
    from_json = [loads_match(line).SerializeToString() for line in lines]
    from_krec = _payloads(tmp_path / "a.krec")
    assert from_json == from_krec


@pytest.mark.parametrize(
    "args",
    [
        ["--preset", "nope", "-o", "x.krec"],
        ["--matches", "0", "-o", "x.krec"],
        ["--matches", "many", "-o", "x.krec"],
        ["--jobs", "-1", "-o", "x.krec"],
        [],  # no --output
    ],
    ids=["preset", "zero-matches", "not-a-number", "negative-jobs", "no-output"],
)
def test_bad_usage_exits_2_without_a_traceback(args: list[str], tmp_path: Path) -> None:
    result = subprocess.run(
        [str(Path(sys.executable).parent / "kingrec"), "simulate", *args],
        capture_output=True,
        check=False,
        cwd=tmp_path,
    )
    assert result.returncode == 2
    assert b"Traceback" not in result.stderr
    assert b"Usage:" in result.stderr
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("name", ["out.krec", "out.jsonl"])
def test_unwritable_output_exits_2_and_leaves_no_file(name: str, tmp_path: Path) -> None:
    target = tmp_path / "missing" / name
    result = run("simulate", "--matches", "2", "-o", str(target))
    assert result.returncode == 2
    assert b"Traceback" not in result.stderr
    assert f"kingrec: error: cannot write {target}".encode() in result.stderr
    assert os.listdir(tmp_path) == []

    result = run("simulate", "-o", str(tmp_path))  # a directory
    assert result.returncode == 2
    assert b"Traceback" not in result.stderr
    assert os.listdir(tmp_path) == []


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


@pytest.mark.parametrize(("name", "jobs"), [("big.krec", 1), ("big.jsonl", 1), ("big.krec", 2)])
def test_interrupted_run_leaves_no_file(name: str, jobs: int, tmp_path: Path) -> None:
    """Ctrl-C partway (SIGINT to the whole process group, as a terminal sends it) leaves
    neither output nor temporary file, and no traceback from the command or its workers."""
    target = tmp_path / name
    args = ["simulate", "--matches", "1000000", "--jobs", str(jobs), "-o", str(target)]
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "kingrec"), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        partial = Path(temporary_name(str(target), proc.pid))
        # midway: once the partial file holds a record past the 12-byte header (a
        # condition polled, not a guess at how long a run takes to get going)
        while _size(partial) <= 12 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _size(partial) > 12, "the run never started writing"
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:  # pragma: no cover - only when the test fails
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130  # 128 + SIGINT: not 1, which means "a record is invalid"
    assert b"Traceback" not in err
    assert err.strip().endswith(b"kingrec: interrupted")
    assert os.listdir(tmp_path) == []


def test_progress_bar_can_be_forced_on_without_changing_output(tmp_path: Path) -> None:
    quiet, shown = tmp_path / "quiet.krec", tmp_path / "shown.krec"
    simulate("--matches", "2", "-o", str(quiet))
    result = run("simulate", "--progress", "--matches", "2", "-o", str(shown))
    assert result.returncode == 0
    assert b"simulated 2 matches" in result.stderr
    assert quiet.read_bytes() == shown.read_bytes()


def test_the_default_seed_gives_every_preset_its_own_match_ids(tmp_path: Path) -> None:
    ids: dict[str, set[str]] = {}
    for name in sorted(PRESETS):
        out = tmp_path / f"{name}.jsonl"
        simulate("--preset", name, "--matches", "2", "-o", str(out))
        lines = out.read_text(encoding="utf-8").splitlines()
        ids[name] = {loads_match(line).match_id for line in lines}
        assert all(i.startswith(f"sim-{name}-") for i in ids[name])
    assert len(set().union(*ids.values())) == 2 * len(PRESETS)


_SUMMARY = re.compile(
    r"simulated (\d+) matches \((\d+) deals\) in (\d+\.\d\d) s, (\d+) deals/s; "
    r"(\d+\.\d\d) s CPU in all, start-up included: (\d+) deals per CPU second\n"
)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_the_summary_counts_the_cpu_of_the_whole_command_start_up_included(
    jobs: str, tmp_path: Path
) -> None:
    # A short run's CPU is nearly all start-up (the interpreter, click, protobuf): the rate
    # a user reads by the CPU figure must not leave it out. The system's own count of the
    # command's CPU (wait4, its workers included) bounds it.
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = simulate("--matches", "4", "--jobs", jobs, "-o", str(tmp_path / "four.krec"))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    by_system = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    found = _SUMMARY.fullmatch(result.stderr.decode())
    assert found is not None, result.stderr
    matches, deals, _, _, cpu, per_cpu = found.groups()
    assert (matches, deals) == ("4", "80")
    assert 0.5 * by_system - 0.02 <= float(cpu) <= by_system + 0.02
    assert 80 / (float(cpu) + 0.005) - 1 <= int(per_cpu) <= 80 / max(float(cpu) - 0.005, 1e-3) + 1


def test_the_cpu_seconds_of_a_run_count_its_ended_child_processes() -> None:
    # What a --jobs run's workers use is theirs, not the parent's: counted once they ended.
    burn = "import time\nwhile time.process_time() < 0.3: pass"
    before = simrun.cpu_seconds()
    subprocess.run([sys.executable, "-c", burn], check=True)
    assert simrun.cpu_seconds() - before >= 0.3 - 0.02  # os.times counts in clock ticks
