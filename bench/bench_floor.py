"""Ingest as a ratio of the layer it stands on: DuckDB appending the same batches (issue 17).

    python bench/bench_floor.py                         # bench/out/classic-25000.krec
    python bench/bench_floor.py --file big.krec         # any .krec file of yours
    python bench/bench_floor.py --rounds 3              # floor and ingest alternated 3 times

The floor is what DuckDB alone takes to store a file's rows: every batch of the file is
prepared first (judged and built into the very Arrow tables ``kingrec ingest`` writes, by
``prepare_batch`` as the pipeline calls it, against a fresh store), all held in memory, and
only then written into another fresh store, with nothing else running in this process, and
only that writing is timed: each batch's transaction as ``write_prepared`` runs it (its
INSERTs, its COMMIT), then the checkpoint and close that end an ingest. Twice: one
transaction at a time, on one connection (each statement timed), and as the pipeline writes
(``WRITERS`` transactions in flight on connections of their own, each committed once the
one before it has), the floor a pipelined ingest stands on.

Before them, ``kingrec ingest`` of the same file, in a process of its own, into a fresh
store. Each round times the ingest and the floors one after the other (so all meet the same
load) and prints the ratio: ingest's wall time over the pipelined floor's (1.00: ingest runs
at the speed of DuckDB beneath it), and the same of CPU time. CPU is user + system of every
thread (DuckDB appends on threads of its own); on a shared machine the CPU figures and the
ratios are the ones to compare. Holding a file's batches takes ~20 MB per 1,000 matches.

Last, the same ingest once more in this process, through ``IngestPipeline``, to show where
its threads waited (``IngestPipeline.queues``, wall time per deal): the submitting thread
preparing batches (and, of that, waiting for the builder thread) or waiting for a writer to
be free, the writers appending, waiting on commit order, or idle for want of a batch. Idle
writers mean DuckDB waits on the preparation; a submitting thread waiting for a writer
means the preparation waits on DuckDB.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import queue
import subprocess
import sys
import tempfile
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench_breakdown import KINGREC, batches, child, timed, write_steps
from compiled_only import refuse_pure_twins

from kingrec import _twins
from kingrec.fastcheck import checker_of
from kingrec.store import Store
from kingrec.store.ingest import WRITES, Prepared, new_builder, prepare_batch, write_prepared
from kingrec.store.pipeline import WRITERS, IngestPipeline, Queues
from kingrec.store.store import BATCH_MATCHES, _collector_paused

OUT = Path(__file__).resolve().parent / "out"
STEPS = [*WRITES, "COMMIT"]


def prepared_batches(path: Path, folder: str) -> list[Prepared]:
    """Every batch of ``path``, prepared as an ingest into a fresh store prepares them."""
    out: list[Prepared] = []
    with Store.open(str(Path(folder, "prepare.duckdb"))) as store, ThreadPoolExecutor(1) as helper:
        lookups, builder, key = store.con.cursor(), new_builder(), 1
        for batch in batches(path, BATCH_MATCHES):
            prepared = prepare_batch(
                lookups, batch, key, pending=out, builder=builder, helper=helper
            )
            key += prepared.stored
            out.append(prepared)
        lookups.close()
    return out


def floor(prepared: list[Prepared], db: str) -> tuple[dict[str, tuple[float, float]], float, float]:
    """Write the prepared batches into a fresh store at ``db``: each statement's (wall, CPU)
    seconds (and the checkpoint at the end), the wall and CPU seconds of the whole."""
    steps = dict.fromkeys([*STEPS, "CHECKPOINT"], (0.0, 0.0))

    def write() -> None:
        with Store.open(db) as store:
            writer = store.con.cursor()
            for p in prepared:  # each let go of once written
                write_steps(writer, p, steps)
            writer.close()
            _, wall, used = timed(lambda: store.con.execute("CHECKPOINT"))
            steps["CHECKPOINT"] = (wall, used)

    _, wall, used = timed(write)
    return steps, wall, used


def pipelined(prepared: list[Prepared], db: str) -> tuple[float, float]:
    """Write the prepared batches into a fresh store at ``db`` as ``IngestPipeline`` does:
    ``WRITERS`` transactions at once, each committed once the one before it has; then the
    checkpoint and close. The wall and CPU seconds of the whole."""

    def write() -> None:
        with Store.open(db) as store, ThreadPoolExecutor(WRITERS) as pool:
            cursors: queue.SimpleQueue[Any] = queue.SimpleQueue()
            opened = [store.con.cursor() for _ in range(WRITERS)]
            for cursor in opened:
                cursors.put(cursor)

            def one(p: Prepared, before: Future[None] | None) -> None:
                cursor = cursors.get()
                try:
                    write_prepared(cursor, p, before=None if before is None else before.result)
                finally:
                    p.release()
                    cursors.put(cursor)

            writing: deque[Future[None]] = deque()
            for p in prepared:
                if len(writing) == WRITERS:
                    writing.popleft().result()
                writing.append(pool.submit(one, p, writing[-1] if writing else None))
            for done in writing:
                done.result()
            for cursor in opened:
                cursor.close()
            store.con.execute("CHECKPOINT")

    _, wall, used = timed(write)
    return wall, used


def queued(path: Path, db: str) -> tuple[Queues, float, float]:
    """An ingest of ``path`` into a fresh store at ``db`` through the pipeline, in this
    process (as ``Store.ingest_file`` runs it, the GC paused): where its threads waited
    (``IngestPipeline.queues``), its wall and CPU seconds."""

    def ingest() -> Queues:
        with _collector_paused(), Store.open(db) as store:
            with IngestPipeline(store) as pipeline:
                for batch in batches(path, BATCH_MATCHES):
                    pipeline.submit(batch)
                    del batch
            return pipeline.queues

    return timed(ingest)


def print_queues(queues: Queues, wall: float, used: float, deals: int) -> None:
    """Where the in-process ingest's wall time went, per deal (µs): the submitting thread
    (preparing, waiting for a writer) and the writers (busy, waiting on commit order, idle:
    waiting for a prepared batch)."""
    per = 1e6 / deals
    idle = WRITERS * wall - queues.writing - queues.commit_order
    rows = [
        ("ingest in this process: wall / CPU", wall, used),
        ("  submitting thread: preparing batches", queues.preparing, None),
        ("    of which waiting for the builder thread", queues.builder, None),
        ("  submitting thread: waiting for a free writer", queues.writer_slot, None),
        (f"  {WRITERS} writers: appending + committing (summed)", queues.writing, None),
        (f"  {WRITERS} writers: rows in, waiting on commit order", queues.commit_order, None),
        (f"  {WRITERS} writers: idle, waiting for a batch", idle, None),
    ]
    for label, seconds, cpu_s in rows:
        cpu_text = f"{cpu_s * per:>11.2f}" if cpu_s is not None else f"{'':>11}"
        print(f"  {label:<52} {cpu_text} {seconds * per:>12.2f}")


def main() -> None:
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=Path, help="a .krec file (default: simulated once)")
    parser.add_argument("--matches", type=int, default=25_000, help="matches to simulate")
    parser.add_argument("--rounds", type=int, default=1, help="floor and ingest, alternated")
    args = parser.parse_args()
    path = args.file or OUT / f"classic-{args.matches}.krec"
    if not path.exists():
        OUT.mkdir(parents=True, exist_ok=True)
        print(f"simulating {args.matches} classic matches into {path}…", flush=True)
        command = [str(KINGREC), "simulate", "--no-progress", "-q", "--seed", "2026"]
        subprocess.run([*command, "--matches", str(args.matches), "-o", str(path)], check=True)
    assert checker_of(_twins.ACTIVE) is not None, "the floor needs the compiled twins"

    for round_ in range(1, args.rounds + 1):
        with tempfile.TemporaryDirectory(dir=OUT) as folder:
            # The command first, while this process is small: a child's peak RSS counts what
            # it shares with its parent until it has started the command.
            db = str(Path(folder, "ingest.duckdb"))
            i_wall, i_cpu, rss = child(
                [str(KINGREC), "ingest", "--no-progress", "--db", db, str(path)]
            )
            prepared = prepared_batches(path, folder)
            deals = sum(p.deals for p in prepared)
            copies = [dataclasses.replace(p) for p in prepared]  # each floor lets go of its own
            steps, f_wall, f_cpu = floor(copies, str(Path(folder, "floor.duckdb")))
            p_wall, p_cpu = pipelined(prepared, str(Path(folder, "pipelined.duckdb")))
            del prepared, copies
            queues, q_wall, q_cpu = queued(path, str(Path(folder, "queued.duckdb")))
        print(f"round {round_}: {path.name}, {deals} deals; load average {os.getloadavg()[0]:.1f}")
        print(f"  {'layer':<52} {'µs/deal CPU':>11} {'µs/deal wall':>12} {'k deals/s wall':>14}")
        rows = [
            (f"floor: {'INSERT INTO ' if n in WRITES else ''}{n}", *steps[n][::-1]) for n in steps
        ]
        rows += [
            ("floor: DuckDB alone, the whole (open to close)", f_cpu, f_wall),
            (f"floor, pipelined ({WRITERS} transactions in flight)", p_cpu, p_wall),
            (f"kingrec ingest, a process ({rss / 1024:.0f} MiB peak)", i_cpu, i_wall),
        ]
        for label, used, wall in rows:
            print(
                f"  {label:<52} {used / deals * 1e6:>11.2f} {wall / deals * 1e6:>12.2f} "
                f"{deals / wall / 1e3 if wall else 0:>14.0f}"
            )
        print(
            f"  ingest / pipelined floor: {i_wall / p_wall:.2f}x the wall time, "
            f"{i_cpu / p_cpu:.2f}x the CPU (/ the floor one at a time: {i_wall / f_wall:.2f}x, "
            f"{i_cpu / f_cpu:.2f}x)"
        )
        print_queues(queues, q_wall, q_cpu, deals)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
