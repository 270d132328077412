"""``kingrec ingest`` of two installs side by side, run after run (issue 17, target 4).

    python bench/bench_ingest_ab.py --old /tmp/old-tree/.venv/bin/kingrec --pairs 3
    python bench/bench_ingest_ab.py --old OLD --file big.krec --file small.krec --pairs 5

On a loaded machine whose speed drifts only runs taken in turn mean anything: this runs the
old command line (``--old``: another checkout's installed ``kingrec``) and this tree's,
alternating which goes first, ``--pairs`` times on each file (``--file``, repeatable; the
2 M-deal bench file by default), each into a fresh store in a temporary folder (``--tmp``,
default the system's) that is deleted after the run. Each run prints its wall time, user
and system time and peak RSS from ``wait4`` (DuckDB's threads are the command's own), and
the medians and the new/old ratios per pair follow. Both must report the same counts
(``--json``, its ``seconds`` left out).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from compiled_only import refuse_pure_twins
from in_turn import in_turn, timed

DEFAULT_FILE = Path("/work/bench-data/classic-100000.krec")

Run = tuple[float, float, float, int]  # wall, user, system seconds, peak RSS KiB


def run(kingrec: Path, path: Path, tmp: str | None) -> tuple[Run, dict[str, object]]:
    """One ``kingrec ingest`` of ``path`` into a fresh store: its figures and summary."""
    folder = tempfile.mkdtemp(prefix="ingest-ab-", dir=tmp)
    try:
        command = [str(kingrec), "ingest", "--no-progress", "--json"]
        done = timed([*command, "--db", str(Path(folder, "s.duckdb")), str(path)])
        assert done.code in (0, 1), (kingrec, path, done.code)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    summary = json.loads(done.out)
    for varies in ("seconds", "db"):  # the time taken, the fresh store's path
        summary.pop(varies, None)
    return (done.wall, done.user, done.system, done.peak_rss_kib), summary


def pairs(old: Path, path: Path, count: int, tmp: str | None) -> tuple[dict[str, list[Run]], int]:
    """``count`` runs of each, in turn (``in_turn``), and the deals each stored."""
    times: dict[str, list[Run]] = {"old": [], "new": []}
    said: dict[str, dict[str, object]] = {}
    for i, name, kingrec in in_turn(old, count):
        figures, summary = run(kingrec, path, tmp)
        assert said.setdefault(name, summary) == summary, (name, summary)
        times[name].append(figures)
        wall, user, system, rss = figures
        print(
            f"    pair {i + 1} {name}: wall {wall:6.2f} s  user {user:6.2f} s  "
            f"sys {system:5.2f} s  peak RSS {rss / 1024:6.0f} MiB",
            flush=True,
        )
    assert said["old"] == said["new"], said
    deals = said["new"]["deals"]
    assert isinstance(deals, int)
    return times, deals


def report(path: Path, deals: int, times: dict[str, list[Run]]) -> None:
    print(f"  {path.name}: medians  (load average now {os.getloadavg()[0]:.1f})")
    for name, runs in times.items():
        wall, user, system = (statistics.median(r[k] for r in runs) for k in range(3))
        rss = statistics.median(r[3] for r in runs) / 1024
        print(
            f"    {name}: wall {wall:.2f} s ({deals / wall / 1000:.0f} k deals/s), user "
            f"{user:.2f} s, sys {system:.2f} s, CPU {(user + system) / deals * 1e6:.2f} µs a "
            f"deal, peak RSS {rss:.0f} MiB"
        )
    walls = [n[0] / o[0] for n, o in zip(times["new"], times["old"], strict=True)]
    cpus = [(n[1] + n[2]) / (o[1] + o[2]) for n, o in zip(times["new"], times["old"], strict=True)]
    print(
        f"    new/old per pair: wall median {statistics.median(walls):.3f} "
        f"({' '.join(f'{w:.3f}' for w in walls)}), CPU median {statistics.median(cpus):.3f}"
    )


def main() -> None:
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="the old install's kingrec")
    parser.add_argument("--file", type=Path, action="append", help=".krec files (repeatable)")
    parser.add_argument("--pairs", type=int, default=3, help="runs of each on each file")
    parser.add_argument("--tmp", help="the folder for the stores (default: the system's)")
    args = parser.parse_args()
    if not args.old.exists():
        sys.exit(f"no such command: {args.old}")
    for path in args.file or [DEFAULT_FILE]:
        print(f"{path}: {args.pairs} pair(s), old and new in turn")
        times, deals = pairs(args.old, path, args.pairs, args.tmp)
        report(path, deals, times)


if __name__ == "__main__":
    main()
