"""Ingest as a ratio of the layer it stands on: DuckDB appending the same batches (issue 17).

    python bench/bench_floor.py                         # bench/out/classic-25000.krec
    python bench/bench_floor.py --file big.krec         # any .krec file of yours
    python bench/bench_floor.py --rounds 3              # floor and ingest alternated 3 times
    python bench/bench_floor.py --file big.krec --batches 8   # the floor of its first 8 batches
    python bench/bench_floor.py --setting threads=1     # the floor beside one with DuckDB's
                                                        # setting changed, alternated
    python bench/bench_floor.py --profile               # DuckDB's profiler: each statement's
                                                        # operators, µs a deal

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

With ``--setting NAME=VALUE`` (as many as wanted) each round also writes the same batches
into stores opened with those DuckDB settings besides the store's own (``kingrec.store.db``),
and runs a second ``kingrec ingest`` with them (``with_settings.py``), the two of each
alternated (which goes first changes each round), and prints their ratios: the way to
measure a knob (``allocator_flush_threshold``, ``threads``, ...) side by side.
With ``--batches N`` only the file's first N batches are prepared (and ``kingrec ingest``
is given a file of their records only): the 2 M-deal file's 16 batches held at once take
~2 GB. ``--profile`` writes the batches once more with DuckDB's profiler on and prints, per
statement, the time of each operator (its threads' times summed, waits and the profiler's
own cost included: read it as shares, not CPU): which part of an INSERT is the Arrow scan,
the projection (casts to the store's enums) and the insert itself (appending, compressing,
writing row groups). The floors run with Python's garbage collector paused, as ``kingrec
ingest`` does (else a collection's walk over the held batches' objects would count as
DuckDB's).

The CPU budget line: on the cores this process may use, ``kingrec ingest`` cannot take less
wall time than its CPU time over the cores; the target of 250,000 deals/s wall is 4 µs a
deal, so it needs at most 4 µs times the cores of CPU a deal, with every core busy.

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
import json
import os
import queue
import subprocess
import sys
import tempfile
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import islice
from pathlib import Path
from typing import Any

import duckdb
from bench_breakdown import KINGREC, batches, timed, write_steps
from compiled_only import refuse_pure_twins
from with_settings import HERE as WITH_SETTINGS
from with_settings import duckdb_settings, setting

from kingrec import _twins
from kingrec.container import KrecWriter
from kingrec.fastcheck import checker_of
from kingrec.store import Store
from kingrec.store import db as store_db
from kingrec.store.ingest import WRITES, Prepared, new_builder, prepare_batch, write_prepared
from kingrec.store.pipeline import WRITERS, IngestPipeline, Queues
from kingrec.store.schema import STORAGE_VERSION
from kingrec.store.store import BATCH_MATCHES, _collector_paused

OUT = Path(__file__).resolve().parent / "out"
STEPS = [*WRITES, "COMMIT"]


TARGET = 250_000  # deals a second, wall (issue 17, target 4)

# The launcher's loop: a command line (JSON) in, its wall, CPU, peak RSS and exit code out.
_LAUNCHER = """
import json, os, subprocess, sys, time
for line in sys.stdin:
    command = json.loads(line)
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    print(json.dumps([time.perf_counter() - started, usage.ru_utime + usage.ru_stime,
                      usage.ru_maxrss, os.waitstatus_to_exitcode(status)]), flush=True)
"""


class Launcher:
    """Commands run by a small process started while this one is small. A child's peak RSS
    counts what it shares with its parent until it has started the command, and this
    process grows once it has held a file's batches (a second round's ``kingrec ingest``
    was said to peak at 1,489 MiB where the first's did at 872)."""

    def __init__(self) -> None:
        command = [sys.executable, "-I", "-S", "-c", _LAUNCHER]
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def run(self, command: list[str]) -> tuple[float, float, int]:
        """``command`` in a process of its own: wall, CPU seconds, peak RSS (KiB)."""
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps(command) + "\n")
        self._process.stdin.flush()
        wall, used, rss, code = json.loads(self._process.stdout.readline())
        assert code in (0, 1), command
        return float(wall), float(used), int(rss)

    def close(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._process.wait()


def prepared_batches(path: Path, folder: str, limit: int | None = None) -> list[Prepared]:
    """Every batch of ``path`` (the first ``limit``), prepared as an ingest into a fresh
    store prepares them."""
    out: list[Prepared] = []
    with Store.open(str(Path(folder, "prepare.duckdb"))) as store, ThreadPoolExecutor(1) as helper:
        lookups, builder, key = store.con.cursor(), new_builder(), 1
        for batch in islice(batches(path, BATCH_MATCHES), limit):
            prepared = prepare_batch(
                lookups, batch, key, pending=out, builder=builder, helper=helper
            )
            key += prepared.stored
            out.append(prepared)
        lookups.close()
    return out


def first_batches(path: Path, limit: int, folder: str) -> Path:
    """A .krec file of the records of ``path``'s first ``limit`` batches (for the ingest
    beside a floor of those batches)."""
    out = Path(folder, f"first-{limit}-batches.krec")
    payloads = [p for batch in islice(batches(path, BATCH_MATCHES), limit) for p in batch.payloads]
    with KrecWriter.open(out) as writer:
        writer.write_all(payloads)
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

    with _collector_paused():
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

    with _collector_paused():
        _, wall, used = timed(write)
    return wall, used


def profiled(prepared: list[Prepared], path: str) -> dict[str, dict[str, float]]:
    """Write the prepared batches into a fresh store at ``path`` with DuckDB's profiler on
    (the store's settings, its configuration left unlocked to allow it): each statement's
    seconds by operator, summed over the batches (an operator's own time, summed over
    DuckDB's threads)."""
    config = store_db._config(False, False)
    config["storage_compatibility_version"] = STORAGE_VERSION
    times: dict[str, dict[str, float]] = {name: {} for name in STEPS}
    con = duckdb.connect(path, config=config)
    try:
        store_db._create(con)
        writer = con.cursor()
        writer.execute("PRAGMA enable_profiling = 'no_output'")

        def operators_of(name: str) -> None:
            profile = json.loads(writer.get_profiling_information(format="json"))
            for operator in profile.get("operator", []):
                _operator_times(operator, times[name])

        steps = dict.fromkeys(STEPS, (0.0, 0.0))
        for p in prepared:
            write_steps(writer, p, steps, operators_of)
        writer.close()
    finally:
        con.close()
    return times


def _operator_times(operator: dict[str, Any], into: dict[str, float]) -> None:
    name = str(operator.get("name", "?"))
    into[name] = into.get(name, 0.0) + float(operator.get("timing", 0.0))
    for child_ in operator.get("children", []):
        _operator_times(child_, into)


def print_profile(times: dict[str, dict[str, float]], deals: int) -> None:
    """The profiler's times, µs a deal: each statement's operators, the biggest first."""
    print(f"  DuckDB's profiler, µs a deal by operator (its threads summed), {deals} deals:")
    for statement, operators in times.items():
        shown = [(n, t) for n, t in sorted(operators.items(), key=lambda x: -x[1]) if t > 0]
        text = ", ".join(f"{n} {t / deals * 1e6:.2f}" for n, t in shown) or "-"
        print(f"    {statement:<13} {text}")


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


def as_setting(text: str) -> tuple[str, str]:
    try:
        return setting(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def floors(
    prepared: list[Prepared], folder: str, tag: str, settings: dict[str, str]
) -> tuple[dict[str, tuple[float, float]], float, float, float, float]:
    """Both floors (one transaction at a time, pipelined) on copies of the batches, with
    ``settings`` besides the store's own: the steps, then wall and CPU of each."""
    with duckdb_settings(settings):
        steps, f_wall, f_cpu = floor(
            [dataclasses.replace(p) for p in prepared], str(Path(folder, f"floor{tag}.duckdb"))
        )
        p_wall, p_cpu = pipelined(
            [dataclasses.replace(p) for p in prepared], str(Path(folder, f"pipelined{tag}.duckdb"))
        )
    for name in ("floor", "pipelined"):
        for leftover in Path(folder).glob(f"{name}{tag}.duckdb*"):
            leftover.unlink()  # the next floors' disk writes meet the same free space
    return steps, f_wall, f_cpu, p_wall, p_cpu


def print_row(label: str, used: float, wall: float, deals: int) -> None:
    print(
        f"  {label:<52} {used / deals * 1e6:>11.2f} {wall / deals * 1e6:>12.2f} "
        f"{deals / wall / 1e3 if wall else 0:>14.0f}"
    )


def main() -> None:
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=Path, help="a .krec file (default: simulated once)")
    parser.add_argument("--matches", type=int, default=25_000, help="matches to simulate")
    parser.add_argument("--rounds", type=int, default=1, help="floor and ingest, alternated")
    parser.add_argument(
        "--batches", type=int, help=f"only the file's first N batches ({BATCH_MATCHES} matches)"
    )
    parser.add_argument(
        "--setting",
        type=as_setting,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a DuckDB setting for a second floor beside the first, alternated (repeatable)",
    )
    parser.add_argument(
        "--profile", action="store_true", help="DuckDB's profiler: each statement's operators"
    )
    parser.add_argument(
        "--no-ingest", action="store_true", help="the floors only (no kingrec ingest beside)"
    )
    args = parser.parse_args()
    if args.batches is not None and args.batches < 1:
        parser.error("--batches: at least 1")
    path = args.file or OUT / f"classic-{args.matches}.krec"
    if not path.exists():
        OUT.mkdir(parents=True, exist_ok=True)
        print(f"simulating {args.matches} classic matches into {path}…", flush=True)
        command = [str(KINGREC), "simulate", "--no-progress", "-q", "--seed", "2026"]
        subprocess.run([*command, "--matches", str(args.matches), "-o", str(path)], check=True)
    assert checker_of(_twins.ACTIVE) is not None, "the floor needs the compiled twins"
    settings = dict(args.setting)
    cores = len(os.sched_getaffinity(0))
    launcher = Launcher()
    try:
        for round_ in range(1, args.rounds + 1):
            one_round(args, round_, path, settings, cores, launcher)
    finally:
        launcher.close()


def one_round(
    args: argparse.Namespace,
    round_: int,
    path: Path,
    settings: dict[str, str],
    cores: int,
    launcher: Launcher,
) -> None:
    """Round ``round_``: the ingests, the floors, the in-process ingest, printed."""
    OUT.mkdir(parents=True, exist_ok=True)  # a fresh clone has no bench/out
    with tempfile.TemporaryDirectory(dir=OUT) as folder:
        source = path if args.batches is None else first_batches(path, args.batches, folder)
        # Alternated: the store's own settings first in odd rounds, second in even ones.
        order = ["", "B"] if round_ % 2 or not settings else ["B", ""]
        tags = order if settings else [""]
        # The commands first, before this process holds the round's batches.
        ingests = {}
        for tag in [] if args.no_ingest else tags:
            db = str(Path(folder, f"ingest{tag}.duckdb"))
            given = [f"{k}={v}" for k, v in settings.items()]
            command = [sys.executable, WITH_SETTINGS, *given, "--"] if tag else [str(KINGREC)]
            ingests[tag] = launcher.run(
                [*command, "ingest", "--no-progress", "--db", db, str(source)]
            )
            for leftover in Path(folder).glob(f"ingest{tag}.duckdb*"):
                leftover.unlink()
        prepared = prepared_batches(source, folder)
        deals = sum(p.deals for p in prepared)
        results = {tag: floors(prepared, folder, tag, settings if tag else {}) for tag in tags}
        times = profiled(prepared, str(Path(folder, "profiled.duckdb"))) if args.profile else {}
        del prepared
        queues = None
        if not args.no_ingest:
            queues = queued(source, str(Path(folder, "queued.duckdb")))
    print(f"round {round_}: {path.name}, {deals} deals; load average {os.getloadavg()[0]:.1f}")
    print(f"  {'layer':<52} {'µs/deal CPU':>11} {'µs/deal wall':>12} {'k deals/s wall':>14}")
    for tag in tags:
        steps, f_wall, f_cpu, p_wall, p_cpu = results[tag]
        named = f" [{', '.join(f'{k}={v}' for k, v in settings.items())}]" if tag else ""
        if tag or settings:
            print(f"  floor{named or ' [the store as it is]'}:")
        for n in steps:
            step = f"floor: {'INSERT INTO ' if n in WRITES else ''}{n}"
            print_row(step, steps[n][1], steps[n][0], deals)
        print_row("floor: DuckDB alone, the whole (open to close)", f_cpu, f_wall, deals)
        print_row(f"floor, pipelined ({WRITERS} transactions in flight)", p_cpu, p_wall, deals)
    if settings:
        _, a_wall, a_cpu, ap_wall, ap_cpu = results[""]
        _, b_wall, b_cpu, bp_wall, bp_cpu = results["B"]
        print(
            f"  with the settings / without: one at a time {b_cpu / a_cpu:.3f}x the CPU, "
            f"{b_wall / a_wall:.3f}x the wall; pipelined {bp_cpu / ap_cpu:.3f}x the CPU, "
            f"{bp_wall / ap_wall:.3f}x the wall"
        )
    _, f_wall, f_cpu, p_wall, p_cpu = results[""]
    for tag in [t for t in tags if t in ingests]:
        i_wall, i_cpu, rss = ingests[tag]
        named = " with the settings" if tag else ""
        print_row(f"kingrec ingest{named} ({rss / 1024:.0f} MiB peak)", i_cpu, i_wall, deals)
    if settings and ingests:
        (a_wall, a_cpu, a_rss), (b_wall, b_cpu, b_rss) = ingests[""], ingests["B"]
        print(
            f"  kingrec ingest with the settings / without: {b_cpu / a_cpu:.3f}x the CPU, "
            f"{b_wall / a_wall:.3f}x the wall; peak RSS {b_rss} against {a_rss} KiB"
        )
    if ingests:
        i_wall, i_cpu, _ = ingests[""]
        print(
            f"  ingest / pipelined floor: {i_wall / p_wall:.2f}x the wall time, "
            f"{i_cpu / p_cpu:.2f}x the CPU (/ the floor one at a time: {i_wall / f_wall:.2f}x, "
            f"{i_cpu / f_cpu:.2f}x)"
        )
        per = i_cpu / deals * 1e6
        print(
            f"  CPU budget: kingrec ingest {per:.2f} µs of CPU a deal on {cores} core(s): "
            f"at best {cores / per * 1e3:.0f} k deals/s wall; {TARGET // 1000} k deals/s "
            f"needs at most {cores * 1e6 / TARGET:.2f} µs a deal, every core busy (the "
            f"pipelined floor alone {p_cpu / deals * 1e6:.2f})"
        )
    if queues is not None:
        print_queues(*queues, deals)
    if times:
        print_profile(times, deals)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
