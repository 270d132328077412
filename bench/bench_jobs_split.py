"""Where the CPU of ``kingrec validate --jobs N`` goes: this process's and each worker's,
beside one job's in the same run.

    python bench/bench_jobs_split.py --runs 3
    python bench/bench_jobs_split.py --python OLD/.venv/bin/python .venv/bin/python --runs 5

A loaded machine says little by wall time; CPU accounting says what two free cores would
do. Each run starts the command line (``kingrec_cli.main.run``) under the given interpreter
with a wrapper that, just before the pool is ended, reads each worker's CPU time, minor
page faults and context switches from /proc (their work is done by then), and at exit
this process's own (``RUSAGE_SELF``: its start-up, the pool's threads, the settling and
printing, and since the pool judges ranges in this process too, its share of them). A run
on a one-match file gives the fixed part: start-up, forking the workers, ending them. What
two free cores predict: the fixed part, then the rest of all the CPU shared by two cores.
Beside it, in turn with it, one job (``--jobs 1``) on the same file and on the one-match
file: the split work (this process's rest and the workers' CPU) against one job's less its
start-up says whether splitting the work costs more CPU than doing it in one process
(issue 17: it should not, within 5%). ``wall`` and ``overlap`` (all the CPU over the wall
time) say how much the processes really ran at once: on a loaded machine they take turns.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from compiled_only import refuse_pure_twins

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FILE = Path("/work/bench-data/classic-100000.krec")

# Runs ``kingrec ARGS``; prints "SPLIT <wall s> <parent CPU s> <parent minor faults> then
# <CPU s> <minor faults> <voluntary> <involuntary context switches> per worker" on stderr.
_WRAPPER = """
import os, resource, sys, time
started = time.perf_counter()
sys.argv = ["kingrec", *sys.argv[1:]]
import kingrec.workers as workers
me, tick, shares = os.getpid(), os.sysconf("SC_CLK_TCK"), []
real_end = workers.end_pool
def switches(pid):
    with open(f"/proc/{pid}/status") as f:
        rows = dict(line.split(":", 1) for line in f if "ctxt_switches" in line)
    return [int(rows[k]) for k in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")]
def end_pool(pool, *, ended_well):
    for worker in list(pool._pool):
        with open(f"/proc/{worker.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / tick
        shares.append((cpu, int(fields[7]), *switches(worker.pid)))
    real_end(pool, ended_well=ended_well)
workers.end_pool = end_pool
def report():
    if os.getpid() == me:
        used = resource.getrusage(resource.RUSAGE_SELF)
        wall = time.perf_counter() - started
        each = [x for share in shares for x in share]
        print("SPLIT", wall, used.ru_utime + used.ru_stime, used.ru_minflt, *each,
              file=sys.stderr, flush=True)
real_exit = os._exit
def exit_now(code):
    report()
    real_exit(code)
os._exit = exit_now
import atexit
atexit.register(report)
from kingrec_cli.main import run
run()
"""


@dataclass(frozen=True)
class Worker:
    cpu: float
    faults: int  # minor page faults
    waits: int  # voluntary context switches (waiting for a task, a lock, a read)
    preempted: int  # involuntary ones (another process took the core)


@dataclass(frozen=True)
class Split:
    """One run of ``kingrec validate``: wall and CPU seconds, minor faults, its workers."""

    wall: float
    cpu: float
    faults: int
    workers: list[Worker]


def split(python: str, args: list[str], where: Path) -> Split:
    """What one ``kingrec validate ARGS`` cost, process by process. Run in the folder
    ``where``: ``python -c`` puts its working directory first on the import path, and run
    in a checkout it would import that checkout's kingrec whichever interpreter runs it."""
    done = subprocess.run(  # not resolved: a venv's python is a link out of the venv
        [os.path.abspath(python), "-c", _WRAPPER, "validate", "--no-progress", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=where,
    )
    assert done.returncode in (0, 1), done.stderr
    line = next(x for x in done.stderr.splitlines() if x.startswith("SPLIT "))
    wall, cpu, faults, *rest = (float(x) for x in line.split()[1:])
    each = [Worker(rest[i], int(rest[i + 1]), int(rest[i + 2]), int(rest[i + 3]))
            for i in range(0, len(rest), 4)]  # fmt: skip
    return Split(wall, cpu, int(faults), each)


@dataclass(frozen=True)
class Round:
    """One round of a build: one job and N jobs, each on the one-match file and the file."""

    fixed_one: Split
    one: Split
    fixed: Split
    jobs: Split


def median(values: list[float]) -> float:
    return statistics.median(values)


def show(python: str, file: Path, jobs: int, taken: list[Round]) -> None:
    runs = len(taken)
    s = median([r.fixed.cpu for r in taken])
    p = median([r.jobs.cpu for r in taken])
    count = len(taken[0].jobs.workers)
    w = [median([r.jobs.workers[i].cpu for r in taken]) for i in range(count)]
    faults = [median([r.jobs.workers[i].faults for r in taken]) for i in range(count)]
    waits = [median([r.jobs.workers[i].waits for r in taken]) for i in range(count)]
    preempted = [median([r.jobs.workers[i].preempted for r in taken]) for i in range(count)]
    summed = median([sum(x.cpu for x in r.jobs.workers) for r in taken])
    wall = median([r.jobs.wall for r in taken])
    overlap = median([(r.jobs.cpu + sum(x.cpu for x in r.jobs.workers)) / r.jobs.wall
                      for r in taken])  # fmt: skip
    one_fixed = median([r.fixed_one.cpu for r in taken])
    one = median([r.one.cpu for r in taken])
    one_work = median([r.one.cpu - r.fixed_one.cpu for r in taken])
    ratios = [
        (r.jobs.cpu - r.fixed.cpu + sum(x.cpu for x in r.jobs.workers))
        / (r.one.cpu - r.fixed_one.cpu)
        for r in taken
    ]
    print(f"{file} --jobs {jobs}, {python}: medians of {runs} runs")
    print(f"  this process: {p:.3f} s CPU ({' '.join(f'{r.jobs.cpu:.3f}' for r in taken)});")
    print(f"    of it fixed (a one-match file) {s:.3f} s, the rest {p - s:.3f} s")
    print(f"  workers: {' '.join(f'{x:.3f}' for x in w)} s CPU, summed {summed:.3f} s "
          f"({' '.join(f'{sum(x.cpu for x in r.jobs.workers):.3f}' for r in taken)})")  # fmt: skip
    print(f"    minor faults {' '.join(f'{x:.0f}' for x in faults)}; context switches "
          f"waiting {' '.join(f'{x:.0f}' for x in waits)}, preempted "
          f"{' '.join(f'{x:.0f}' for x in preempted)}")  # fmt: skip
    print(f"  wall {wall:.3f} s, overlap {overlap:.2f} (all the CPU over the wall: 2.00 is two "
          "cores busy throughout)")  # fmt: skip
    print(f"  one job: {one:.3f} s CPU ({' '.join(f'{r.one.cpu:.3f}' for r in taken)}), of it "
          f"start-up {one_fixed:.3f} s, the rest {one_work:.3f} s; minor faults "
          f"{median([r.one.faults for r in taken]):.0f}")  # fmt: skip
    print(f"  the split work (this process's rest + the workers) / one job's rest: "
          f"{median(ratios):.3f} (per run "
          f"{' '.join(f'{x:.3f}' for x in ratios)})")  # fmt: skip
    predicted = s + (p - s + sum(w)) / 2
    print(f"  two free cores: {s:.3f} + ({p - s:.3f} + {sum(w):.3f}) / 2 = {predicted:.3f} s, "
          f"{one / predicted:.2f}x one job's CPU")  # fmt: skip


def main() -> None:
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--python",
        nargs="+",
        default=[str(ROOT / ".venv" / "bin" / "python")],
        help="interpreters of the builds to compare (run in turn)",
    )
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE, help="a .krec file")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    args.file = args.file.absolute()
    runs: dict[str, list[Round]] = {p: [] for p in args.python}
    jobs = ["--jobs", str(args.jobs)]
    with tempfile.TemporaryDirectory(prefix="jobs-split-") as tmp:
        one = Path(tmp) / "one.krec"
        kingrec = Path(args.python[0]).parent / "kingrec"
        subprocess.run([str(kingrec), "simulate", "-o", str(one)], check=True, capture_output=True)
        for _ in range(args.runs):  # the builds in turn, so that they see the same load
            for python in args.python:
                fixed_one = split(python, ["--jobs", "1", str(one)], Path(tmp))
                single = split(python, ["--jobs", "1", str(args.file)], Path(tmp))
                fixed = split(python, [*jobs, str(one)], Path(tmp))
                several = split(python, [*jobs, str(args.file)], Path(tmp))
                runs[python].append(Round(fixed_one, single, fixed, several))
    for python, taken in runs.items():
        show(python, args.file, args.jobs, taken)


if __name__ == "__main__":
    main()
