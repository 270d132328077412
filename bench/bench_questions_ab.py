"""bench_store.py's questions on two stores of the same file, asked in turn (issue 17, target 4).

    python bench/bench_questions_ab.py --old /tmp/old-tree/.venv/bin/kingrec
    python bench/bench_questions_ab.py --old OLD --file big.krec --rounds 9

A change to the store's settings (its checkpoints, its memory) changes the stores it builds
(how many row groups, where they lie), and so maybe the speed of the questions asked of
them. This builds one store with the old install's ``kingrec ingest`` (``--old``) and one
with this tree's, of the same file (``--file``, the 2 M-deal bench file by default), in a
temporary folder (``--tmp``) deleted after the run; prints each store's size and row groups
per table; then asks each question of ``bench_store.QUESTIONS`` of both stores through a
plain read-only connection, as bench_store does: once cold (the first run on each
connection), then ``--rounds`` times warm, the two stores alternating who goes first. The
medians of wall and CPU time (every thread) per store follow, and the new/old ratios.
Both stores must give the same answers.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import duckdb
from bench_store import QUESTIONS
from compiled_only import refuse_pure_twins
from in_turn import NEW, timed

DEFAULT_FILE = Path("/work/bench-data/classic-100000.krec")


def build(kingrec: Path, records: Path, db: Path) -> None:
    """The store ``db`` of ``records``, made by that install's ``kingrec ingest``."""
    done = timed([str(kingrec), "ingest", "--no-progress", "--db", str(db), str(records)])
    if done.code not in (0, 1):
        raise SystemExit(f"{kingrec} ingest {records} failed (exit {done.code})")
    rss = done.peak_rss_kib / 1024
    print(f"  built with {kingrec}: {done.wall:.1f} s wall, peak RSS {rss:.0f} MiB")


def describe(con: duckdb.DuckDBPyConnection, db: Path) -> str:
    """The store's size and its row groups per table."""
    groups = []
    for (table,) in con.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall():
        (n,) = con.execute(
            f"SELECT count(DISTINCT row_group_id) FROM pragma_storage_info('{table}')"
        ).fetchall()[0]
        if n:
            groups.append(f"{table} {n}")
    return f"{db.stat().st_size / 1e6:,.0f} MB; row groups: {', '.join(groups)}"


def ask(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[float, float, list[tuple[object, ...]]]:
    """One run of ``sql``: wall and CPU seconds (every thread of this process) and its rows."""
    start, cpu = time.perf_counter(), time.process_time()
    rows = con.execute(sql).fetchall()
    return time.perf_counter() - start, time.process_time() - cpu, rows


def main() -> None:
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="the old install's kingrec")
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE, help="the .krec file")
    parser.add_argument("--rounds", type=int, default=7, help="warm runs of each question")
    parser.add_argument("--tmp", help="the folder for the stores (default: the system's)")
    args = parser.parse_args()
    if not args.old.exists():
        sys.exit(f"no such command: {args.old}")
    folder = Path(tempfile.mkdtemp(prefix="questions-ab-", dir=args.tmp))
    try:
        dbs = {"old": folder / "old.duckdb", "new": folder / "new.duckdb"}
        print(f"{args.file}: one store by each install")
        build(args.old, args.file, dbs["old"])
        build(NEW, args.file, dbs["new"])
        os.sync()  # the stores just written, on disk: their write-back would slow a cold run
        cons = {name: duckdb.connect(str(db), read_only=True) for name, db in dbs.items()}
        for name, con in cons.items():
            print(f"  {name}: {describe(con, dbs[name])}")
        print(f"  questions: cold, then median of {args.rounds} warm runs in turn, wall / CPU")
        for label, sql in QUESTIONS.items():
            cold = {name: ask(cons[name], sql) for name in ("old", "new")}
            assert cold["old"][2] == cold["new"][2], (label, cold)
            warm: dict[str, list[tuple[float, float]]] = {"old": [], "new": []}
            for i in range(args.rounds):
                for name in ("old", "new") if i % 2 == 0 else ("new", "old"):
                    wall, cpu, _ = ask(cons[name], sql)
                    warm[name].append((wall, cpu))
            print(f"    {label}")
            med = {}
            for name in ("old", "new"):
                med[name] = tuple(statistics.median(r[k] for r in warm[name]) for k in (0, 1))
                print(
                    f"      {name}: cold {cold[name][0] * 1000:7.1f} ms   warm "
                    f"{med[name][0] * 1000:7.1f} ms wall {med[name][1] * 1000:7.1f} ms CPU"
                )
            print(
                f"      new/old: cold {cold['new'][0] / cold['old'][0]:.3f}, warm wall "
                f"{med['new'][0] / med['old'][0]:.3f}, warm CPU {med['new'][1] / med['old'][1]:.3f}"
            )
        for con in cons.values():
            con.close()
        print(f"  (load average now {os.getloadavg()[0]:.1f})")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
