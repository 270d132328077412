"""Interrupted runs leave a clean disk: real ``kingrec`` processes stopped midway.

``simulate --jobs 2`` and ``convert`` (both ways) are stopped by SIGTERM, by Ctrl-C (SIGINT
to the process group, as a terminal sends it) and by SIGKILL. After SIGTERM and Ctrl-C there
is neither output nor temporary file; after SIGKILL nothing can run, so the temporary file
``.NAME.kingrec-PID.tmp`` stays until the next run to the same target removes it. No worker
process outlives its run by more than a second, whatever stopped it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kingrec.container import KrecWriter
from kingrec.jsonl import dumps_match
from kingrec.rules import preset
from kingrec.safefile import temporary_name
from kingrec.simulate import simulate_matches

KINGREC = str(Path(sys.executable).parent / "kingrec")
REPEAT = 20  # 2000 matches: enough for convert to run for seconds on the test machine

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/task").is_dir(), reason="finds worker processes through /proc"
)


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    result = subprocess.run([KINGREC, *args], capture_output=True, cwd=cwd, check=False)
    assert result.returncode == 0, result.stderr
    return result


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A few thousand classic matches as .krec and as JSON Lines: a hundred simulated ones,
    repeated (converting costs the same per match either way)."""
    folder = tmp_path_factory.mktemp("inputs")
    matches = list(simulate_matches(preset("classic"), 100, seed=1))
    paths = {"krec": folder / "big.krec", "jsonl": folder / "big.jsonl"}
    with KrecWriter.open(paths["krec"]) as writer:
        for _ in range(REPEAT):
            for match in matches:
                writer.write_match(match)
    lines = "".join(dumps_match(match) + "\n" for match in matches)
    paths["jsonl"].write_text(lines * REPEAT, encoding="utf-8")
    paths["small"] = folder / "small.krec"
    with KrecWriter.open(paths["small"]) as writer:
        writer.write_match(matches[0])
    return paths


# -- processes ----------------------------------------------------------------------------------


def _state(pid: int) -> str | None:
    """The process state letter of ``pid`` (R, S, Z, ...), None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return None


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie, dead and waiting to be reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return _state(pid) not in (None, "Z", "X")


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):  # the task ended meanwhile
            found.update(int(c) for c in (task / "children").read_text().split())
    return found


def _wait_for(what: str, ready: Callable[[], bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


class Run:
    """A ``kingrec`` command in its own session (process group), to interrupt."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        self.process = subprocess.Popen(
            [KINGREC, *args],
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.pid = self.process.pid

    def temporary(self, target: Path) -> Path:
        return Path(temporary_name(str(target), self.pid))

    def wait_until_writing(self, target: Path, size: int = 1) -> None:
        """Until the temporary file of ``target`` holds ``size`` bytes: midway through."""
        partial = self.temporary(target)

        def writing() -> bool:
            assert self.process.poll() is None, "the run ended before it could be interrupted"
            return partial.exists() and partial.stat().st_size >= size

        _wait_for(f"{partial.name} to grow", writing)

    def stop(self, how: signal.Signals) -> tuple[int, str]:
        """Send ``how`` (SIGINT to the whole group, as a terminal does); exit status, stderr."""
        assert self.process.poll() is None, "the run ended before it could be interrupted"
        if how is signal.SIGINT:
            os.killpg(self.pid, how)
        else:
            os.kill(self.pid, how)
        _, err = self.process.communicate(timeout=60)
        return self.process.returncode, err.decode("utf-8", "replace")

    def close(self) -> None:
        if self.process.poll() is None:  # pragma: no cover - only when a test fails
            os.killpg(self.pid, signal.SIGKILL)
            self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()


@pytest.fixture
def runs() -> Iterator[list[Run]]:
    started: list[Run] = []
    yield started
    for run in started:
        run.close()


def _start(runs: list[Run], args: list[str], cwd: Path) -> Run:
    run = Run(args, cwd)
    runs.append(run)
    return run


def _expected_status(how: signal.Signals) -> int:
    # SIGTERM unwinds like Ctrl-C; both exit as the signal's number says (128 + n).
    return {signal.SIGTERM: 128 + signal.SIGTERM, signal.SIGINT: 130, signal.SIGKILL: -9}[how]


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# -- simulate --jobs 2 -------------------------------------------------------------------------

STOPS = [signal.SIGTERM, signal.SIGINT, signal.SIGKILL]


@pytest.mark.parametrize("how", STOPS, ids=lambda s: s.name)
def test_simulate_with_workers_stopped_midway(
    how: signal.Signals, tmp_path: Path, runs: list[Run]
) -> None:
    target = tmp_path / "x.krec"
    args = ["simulate", "--no-progress", "--matches", "1000000", "--jobs", "2", "-o", "x.krec"]
    run = _start(runs, args, tmp_path)
    _wait_for("two workers", lambda: len(_children(run.pid)) == 2)
    workers = _children(run.pid)
    run.wait_until_writing(target)

    status, err = run.stop(how)
    assert status == _expected_status(how), err
    assert "Traceback" not in err
    _wait_for("the workers to end", lambda: not any(_alive(pid) for pid in workers))

    if how is signal.SIGKILL:
        # Nothing can run: the temporary file stays, under a name that says whose it was.
        assert _files(tmp_path) == [run.temporary(target).name]
        _run("simulate", "--no-progress", "--matches", "2", "--jobs", "2", "-o", "x.krec",
             cwd=tmp_path)  # fmt: skip
        assert _files(tmp_path) == ["x.krec"]  # the next run to the target removed it
    else:
        assert _files(tmp_path) == []


# -- convert, both ways ------------------------------------------------------------------------


@pytest.mark.parametrize("how", STOPS, ids=lambda s: s.name)
@pytest.mark.parametrize(("source", "name"), [("krec", "out.jsonl"), ("jsonl", "out.krec")])
def test_convert_stopped_midway(
    source: str,
    name: str,
    how: signal.Signals,
    inputs: dict[str, Path],
    tmp_path: Path,
    runs: list[Run],
) -> None:
    target = tmp_path / name
    run = _start(runs, ["convert", str(inputs[source]), name], tmp_path)
    run.wait_until_writing(target, 64 << 10)

    status, err = run.stop(how)
    assert status == _expected_status(how), err
    assert "Traceback" not in err

    if how is signal.SIGKILL:
        assert _files(tmp_path) == [run.temporary(target).name]
        _run("convert", str(inputs["small"]), name, cwd=tmp_path)
        assert _files(tmp_path) == [name]
    else:
        assert _files(tmp_path) == []


def test_a_live_runs_temporary_file_is_left_alone(
    inputs: dict[str, Path], tmp_path: Path, runs: list[Run]
) -> None:
    """Two runs to one target: the second removes only temporary files whose process is gone."""
    target = tmp_path / "out.jsonl"
    first = _start(runs, ["convert", str(inputs["krec"]), target.name], tmp_path)
    first.wait_until_writing(target)
    _run("convert", str(inputs["small"]), target.name, cwd=tmp_path)
    assert first.temporary(target).exists()
    assert first.stop(signal.SIGTERM)[0] == _expected_status(signal.SIGTERM)
    assert _files(tmp_path) == [target.name]  # the second run's output, untouched


# -- the signal is never lost -------------------------------------------------------------------

# Compiles a module while a timer signal goes to the handler (kingrec's, or a plain SystemExit):
# parsing the source checks no signal, the constant folding of 2**63 at its end does, and
# CPython clears any error raised there but a KeyboardInterrupt. A command imports (and, with
# no .pyc at hand, compiles) its modules after the handler is installed.
_COMPILING = """
import signal, sys
from kingrec_cli import main

def plain(signum, frame):
    raise SystemExit(128 + signum)

signal.signal(signal.SIGALRM, main._terminated if sys.argv[1] == "kingrec" else plain)
signal.setitimer(signal.ITIMER_REAL, 0.02)
compile("a = 1\\n" * 100_000 + "b = 2**63\\n", "slow", "exec")
print("the signal was lost")
"""


@pytest.mark.parametrize("handler", ["kingrec", "plain"])
def test_a_signal_while_a_module_is_compiled_still_stops_the_run(handler: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", _COMPILING, handler], capture_output=True, timeout=120, check=False
    )
    assert result.stderr == b""
    if handler == "plain":  # why the CLI's handler raises more than a SystemExit
        assert (result.returncode, result.stdout) == (0, b"the signal was lost\n")
    else:
        assert (result.returncode, result.stdout) == (128 + signal.SIGALRM, b"")


# -- durability: every output is synced before its name appears ---------------------------------

# Runs ``kingrec ARGS`` with os.fsync, os.replace and os.rename logged (JSON lines to the file
# named by KINGREC_SYNC_LOG): each fsync with the inode it synced and whether it is a
# directory, each rename with the inode it moved and where to.
_SYNC_LOGGER = """
import json, os, stat, sys

log = open(os.environ["KINGREC_SYNC_LOG"], "a")

def note(**event):
    log.write(json.dumps(event) + "\\n")
    log.flush()

def wrap(name):
    real = getattr(os, name)
    def logged(*args, **kwargs):
        if name == "fsync":
            info = os.fstat(args[0])
            note(call=name, inode=info.st_ino, directory=stat.S_ISDIR(info.st_mode))
        else:
            note(call=name, inode=os.stat(args[0]).st_ino, to=os.path.abspath(args[1]))
        return real(*args, **kwargs)
    setattr(os, name, logged)

for name in ("fsync", "replace", "rename"):
    wrap(name)
sys.argv = ["kingrec", *sys.argv[1:]]
from kingrec_cli.main import run
run()
"""

WRITES = {
    "convert-to-jsonl": ["convert", "{small}", "out.jsonl"],
    "convert-to-krec": ["convert", "{small_jsonl}", "out.krec"],
    "simulate-krec": ["simulate", "--matches", "3", "--jobs", "2", "-o", "out.krec"],
    "simulate-jsonl": ["simulate", "--matches", "3", "-o", "out.jsonl"],
}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_every_output_is_synced_before_it_gets_its_name(
    write: str, inputs: dict[str, Path], tmp_path: Path
) -> None:
    """After a power loss the target is the old file or the whole new one: the new file's
    data reach the disk before the rename, and the rename before the command ends."""
    small_jsonl = tmp_path / "small.jsonl"
    _run("convert", str(inputs["small"]), str(small_jsonl))
    work = tmp_path / "work"
    work.mkdir()
    log = tmp_path / "sync.log"
    args = [a.format(small=inputs["small"], small_jsonl=small_jsonl) for a in WRITES[write]]
    result = subprocess.run(
        [sys.executable, "-c", _SYNC_LOGGER, *args],
        cwd=work,
        env={**os.environ, "KINGREC_SYNC_LOG": str(log)},
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    target = work / args[-1]
    inode = target.stat().st_ino
    events = [json.loads(line) for line in log.read_text().splitlines()]
    moves = [i for i, e in enumerate(events) if e["call"] != "fsync" and e["to"] == str(target)]
    assert len(moves) == 1 and events[moves[0]]["inode"] == inode, events
    before, after = events[: moves[0]], events[moves[0] + 1 :]
    assert {"call": "fsync", "inode": inode, "directory": False} in before, events
    folder = work.stat().st_ino
    assert {"call": "fsync", "inode": folder, "directory": True} in after, events


def test_the_readme_names_the_file_a_killed_run_may_leave() -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    documented = ".OUT.kingrec-PID.tmp"
    assert f"`{documented}`" in readme
    assert Path(temporary_name("OUT", pid=4242)).name == documented.replace("PID", "4242")
