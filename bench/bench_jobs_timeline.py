"""When each part of ``kingrec validate --jobs N`` happens: start-up, the workers' start,
each range judged (by which process), the report, the exit; old build beside new.

    python bench/bench_jobs_timeline.py --python OLD/.venv/bin/python .venv/bin/python --runs 5

Each run starts the command line (``kingrec_cli.main.run``) under the given interpreter with
a wrapper that notes, on the wall clock all processes share, when the interpreter is up,
when the workers start (forked, ``kingrec.forked``, or a pool in an older build) and are
up, when each range is judged and where, when the report is printed and when the process
has ended (seen from here). The interpreters
take turns, run after run. Printed per build, medians: what is serial before the first
range (start-up), the tail (from the moment one process has judged its last range to the
other's last), the exit (from the summary to the process's end), and how many ranges the
command judged itself and how many its workers did. On a loaded machine
the absolute times stretch; the tail and the exit are what the split and the exit cost.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from pathlib import Path

from compiled_only import refuse_pure_twins

DEFAULT_FILE = Path("/work/bench-data/classic-100000.krec")

# Notes "T <pid> <seconds since T0> <event>" on stderr.
_WRAPPER = """
import os, sys, time
T0 = float(os.environ["KINGREC_BENCH_T0"])
def ev(what):
    sys.stderr.write(f"T {os.getpid()} {time.time() - T0:.4f} {what}\\n")
ev("up")
sys.argv = ["kingrec", *sys.argv[1:]]
import kingrec.judges as judges
real_judge = judges._judge_range
def _judge_range(*args):
    ev("judge start")
    taken = real_judge(*args)
    ev("judge done")
    return taken
_judge_range.__qualname__ = "_judge_range"
_judge_range.__module__ = "kingrec.judges"
judges._judge_range = _judge_range
try:  # forked workers (kingrec.forked), where the build has them: no multiprocessing
    import kingrec.forked as forked
except ImportError:
    forked = None
if forked is not None:
    real_forked = forked.Forked.__init__
    def forked_init(self, *args, **kwargs):
        ev("pool start")
        real_forked(self, *args, **kwargs)
    forked.Forked.__init__ = forked_init
    real_end_with = forked.end_with_parent
    def end_with_parent(parent):
        ev("worker up")
        real_end_with(parent)
    forked.end_with_parent = end_with_parent
else:  # a multiprocessing pool, imported here as the command would
    import kingrec.workers as workers
    real_pool = workers.worker_pool
    def worker_pool(*args, **kwargs):
        ev("pool start")
        return real_pool(*args, **kwargs)
    workers.worker_pool = worker_pool
    real_die = workers._die_with
    def _die_with(parent):
        ev("worker up")
        real_die(parent)
    _die_with.__qualname__ = "_die_with"
    _die_with.__module__ = "kingrec.workers"
    workers._die_with = _die_with
import kingrec_cli.validate as validate
real_summary = validate._summary
def _summary(tally):
    ev("summary")
    return real_summary(tally)
validate._summary = _summary
from kingrec_cli.main import run
run()
"""


def one_run(python: str, args: list[str]) -> dict[str, float]:
    """The moments of one run, in seconds from its start."""
    env = dict(os.environ, KINGREC_BENCH_T0=repr(time.time()))
    done = subprocess.run(
        [os.path.abspath(python), "-c", _WRAPPER, "validate", "--no-progress", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        cwd="/",  # not a checkout: ``-c`` puts the working directory first on the path
    )
    ended = time.time() - float(env["KINGREC_BENCH_T0"])
    assert done.returncode in (0, 1), done.stderr
    events: list[tuple[int, float, str]] = []
    for line in done.stderr.splitlines():
        mark, pid_s, at_s, what_s = [*line.split(maxsplit=3), "", "", "", ""][:4]
        if mark == "T" and pid_s.isdigit():
            events.append((int(pid_s), float(at_s), what_s))
    parent = next(pid for pid, _, what in events if what == "up")
    ends: dict[int, float] = {}
    here = there = 0  # ranges judged by the command, by its workers
    for pid, at, what in events:
        if what == "judge done":
            ends[pid] = at
            here, there = (here + 1, there) if pid == parent else (here, there + 1)
    starts = [at for _, at, what in events if what == "judge start"]
    pool = [at for _, at, what in events if what == "pool start"]
    workers = [at for _, at, what in events if what == "worker up"]
    worker_first = [at for pid, at, what in events if what == "judge start" and pid != parent]
    last = sorted(ends.values())
    return {
        "up": next(at for _, at, what in events if what == "up"),
        "pool start": pool[0] if pool else float("nan"),
        "worker up": workers[0] if workers else float("nan"),
        "first range": min(starts),
        "worker's first": min(worker_first) if worker_first else float("nan"),
        "tail": last[-1] - last[0] if len(last) > 1 else 0.0,
        "summary": next(at for _, at, what in events if what == "summary"),
        "exit": ended - next(at for _, at, what in events if what == "summary"),
        "end": ended,
        "ranges here": here,
        "ranges there": there,
    }


def main() -> None:
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", nargs="+", default=[".venv/bin/python"])
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    taken: dict[str, list[dict[str, float]]] = {p: [] for p in args.python}
    for i in range(args.runs):
        order = args.python if i % 2 == 0 else args.python[::-1]
        for python in order:
            taken[python].append(one_run(python, ["--jobs", str(args.jobs), str(args.file)]))
    print(f"{args.file} --jobs {args.jobs}: medians of {args.runs} runs, seconds from the start")
    print(f"  (load average {os.getloadavg()[0]:.1f})")
    for python, runs in taken.items():
        print(f"  {python}:")
        for key in runs[0]:
            values = [run[key] for run in runs]
            each = " ".join(f"{v:.3f}" for v in values)
            print(f"    {key:15} {statistics.median(values):7.3f}  ({each})")


if __name__ == "__main__":
    main()
