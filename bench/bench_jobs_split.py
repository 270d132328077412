"""Where the CPU of ``kingrec validate --jobs N`` goes: this process's and each worker's.

    python bench/bench_jobs_split.py --runs 3
    python bench/bench_jobs_split.py --python OLD/.venv/bin/python .venv/bin/python --runs 5

A loaded machine says little by wall time; CPU accounting says what two free cores would
do. Each run starts the command line (``kingrec_cli.main.run``) under the given interpreter
with a wrapper that, just before the pool is ended, reads each worker's CPU time from
/proc (their work is done by then), and at exit this process's own (``RUSAGE_SELF``: its
start-up, the pool's threads, the settling and printing). A run on a one-match file gives
the fixed part: start-up, forking the workers, ending them. What two free cores predict:
the fixed part, then the rest of all the CPU shared by two cores.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
from pathlib import Path

from compiled_only import refuse_pure_twins

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FILE = Path("/work/bench-data/classic-100000.krec")

# Runs ``kingrec ARGS``; prints "SPLIT <parent CPU s> <worker CPU s>..." on standard error.
_WRAPPER = """
import os, resource, sys
sys.argv = ["kingrec", *sys.argv[1:]]
import kingrec.workers as workers
me, tick, shares = os.getpid(), os.sysconf("SC_CLK_TCK"), []
real_end = workers.end_pool
def end_pool(pool, *, ended_well):
    for worker in list(pool._pool):
        with open(f"/proc/{worker.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        shares.append((int(fields[11]) + int(fields[12])) / tick)
    real_end(pool, ended_well=ended_well)
workers.end_pool = end_pool
def report():
    if os.getpid() == me:
        used = resource.getrusage(resource.RUSAGE_SELF)
        print("SPLIT", used.ru_utime + used.ru_stime, *shares, file=sys.stderr, flush=True)
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


def split(python: str, args: list[str]) -> tuple[float, list[float]]:
    """(this process's CPU s, each worker's CPU s) of one ``kingrec validate ARGS``."""
    done = subprocess.run(
        [python, "-c", _WRAPPER, "validate", "--no-progress", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    line = next(x for x in done.stderr.splitlines() if x.startswith("SPLIT "))
    parent, *shares = (float(x) for x in line.split()[1:])
    return parent, shares


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
    runs: dict[str, list[tuple[float, float, list[float]]]] = {p: [] for p in args.python}
    with tempfile.TemporaryDirectory(prefix="jobs-split-") as tmp:
        one = Path(tmp) / "one.krec"
        kingrec = Path(args.python[0]).parent / "kingrec"
        subprocess.run([str(kingrec), "simulate", "-o", str(one)], check=True, capture_output=True)
        for _ in range(args.runs):  # the builds in turn, so that they see the same load
            for python in args.python:
                fixed = split(python, ["--jobs", str(args.jobs), str(one)])[0]
                parent, shares = split(python, ["--jobs", str(args.jobs), str(args.file)])
                runs[python].append((fixed, parent, shares))
    for python, taken in runs.items():
        s = statistics.median(r[0] for r in taken)
        p = statistics.median(r[1] for r in taken)
        w = [statistics.median(r[2][i] for r in taken) for i in range(len(taken[0][2]))]
        print(f"{args.file} --jobs {args.jobs}, {python}: medians of {args.runs} runs")
        print(f"  this process: {p:.3f} s CPU ({' '.join(f'{r[1]:.3f}' for r in taken)});")
        print(f"    of it fixed (a one-match file) {s:.3f} s, the rest {p - s:.3f} s")
        print(f"  workers: {' '.join(f'{x:.3f}' for x in w)} s CPU")
        print(f"  two free cores: {s:.3f} + ({p - s:.3f} + {sum(w):.3f}) / 2 = "
              f"{s + (p - s + sum(w)) / 2:.3f} s")  # fmt: skip


if __name__ == "__main__":
    main()
