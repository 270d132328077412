"""Validation throughput: the two engine twins, the fast path, and ``kingrec validate``.

    python bench/bench_validate.py --matches 100000

Simulates a classic .krec file once (cached under bench/out/, reused by later runs), then in
one run measures, over every deal of the file:

* the pure-Python twin: ``kingrec._engine_py.replay_deal`` (deals/s, replay calls only);
* the Cython twin: ``kingrec._engine_c.replay_deal`` on the same arguments;
* the fast path: ``kingrec.fastcheck.check_payloads`` on the frames' bytes, batch by batch;
* ``kingrec validate FILE`` end to end as a subprocess: wall and CPU time (user + system,
  from ``wait4``), deals/s by each and peak RSS,
  also on a file a tenth the size, to show memory does not grow with the file;
* ``kingrec validate --jobs 2`` (``--validate-jobs``) on the file: wall and CPU time of all
  its processes (``--only-jobs`` measures only this against ``--jobs 1``, runs interleaved,
  and what two cores give here: two independent one-job runs at once);
* ``KINGREC_PURE_PYTHON=1 kingrec validate`` on that tenth: the pure-Python validator's
  throughput end to end (every check, not only the replay).

Every rate is given per wall second and per CPU second (``time.process_time`` in process,
the child's user + system time for the command): on a shared machine compare the CPU rates.
Targets on a 2-core machine, one core, per CPU second: the fast path >= 1,000,000 deals/s;
``kingrec validate`` >= 500,000 deals/s and >= 10x the pure-Python twin; memory flat in file
size.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from itertools import islice
from pathlib import Path

from compiled_only import refuse_pure_twins

from kingrec import _engine_py, fastcheck
from kingrec.boundary import ruleset_from_proto
from kingrec.container import Frame, KrecWriter, read_frames
from kingrec.rules import Ruleset, preset
from kingrec.simulate import derive_seed, simulate_match
from kingrec.v1 import record_pb2 as pb

OUT = Path(__file__).resolve().parent / "out"
SEED = 2026
BATCH = 256
DealArgs = tuple[bytes, bytes, int, int, int, int, int]


# -- the file ---------------------------------------------------------------------------


def _simulate(index: int) -> bytes:
    return simulate_match(preset("classic"), derive_seed(SEED, index)).SerializeToString()


def ensure_file(path: Path, matches: int, jobs: int) -> None:
    """Simulate ``matches`` classic matches into ``path`` unless it is already there."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    print(f"simulating {matches} classic matches into {path} ({jobs} processes)…", flush=True)
    start = time.perf_counter()
    with multiprocessing.Pool(jobs) as pool, KrecWriter.open(path) as writer:
        for i, payload in enumerate(pool.imap(_simulate, range(matches), chunksize=64)):
            writer.write(payload)
            if (i + 1) % 10_000 == 0:
                print(f"  {i + 1} matches, {time.perf_counter() - start:.0f} s", flush=True)


def ensure_prefix(source: Path, path: Path, matches: int) -> None:
    """The first ``matches`` frames of ``source`` as a file of their own."""
    if path.exists():
        return
    with KrecWriter.open(path) as writer:
        for item in islice(read_frames(source), matches):
            assert isinstance(item, Frame)
            writer.write(item.payload)


def frame_batches(path: Path) -> Iterator[list[bytes]]:
    frames = (item.payload for item in read_frames(path) if isinstance(item, Frame))
    while batch := list(islice(frames, BATCH)):
        yield batch


# -- the measurements -------------------------------------------------------------------


def _deal_args(payloads: list[bytes], cache: dict[bytes, Ruleset]) -> list[DealArgs]:
    """What the validator hands ``replay_deal`` for each deal (decoding is not timed)."""
    out: list[DealArgs] = []
    for payload in payloads:
        match = pb.Match.FromString(payload)
        raw = match.ruleset.SerializeToString()
        rules = cache.get(raw) or cache.setdefault(raw, ruleset_from_proto(match.ruleset))
        for d in match.deals:
            trump = d.trump - 1 if 1 <= d.trump <= 4 else -1
            revoke = d.revoke_play if d.HasField("revoke_play") else -1
            flags = rules.deal_flags(d.contract)
            out.append((d.hands, d.plays, d.declarer, d.contract, trump, flags, revoke))
    return out


def measure_twins(path: Path, python_deals: int) -> dict[str, tuple[int, float, float]]:
    """(deals, wall s, CPU s) of each twin's replays over the file (Python maybe on fewer)."""
    twins = {"python": _engine_py}
    try:
        from kingrec import _engine_c  # type: ignore[attr-defined]
    except ImportError:
        print("  (the Cython twin is not built)")
    else:
        twins["cython"] = _engine_c
    totals = {name: (0, 0.0, 0.0) for name in twins}
    cache: dict[bytes, Ruleset] = {}
    for payloads in frame_batches(path):
        deals = _deal_args(payloads, cache)
        for name, twin in twins.items():
            count, seconds, cpu = totals[name]
            todo = deals
            if name == "python" and python_deals:
                todo = deals[: max(0, python_deals - count)]
            if not todo:
                continue
            replay = twin.replay_deal
            start, start_cpu = time.perf_counter(), time.process_time()
            for args in todo:
                replay(*args)
            wall, used = time.perf_counter() - start, time.process_time() - start_cpu
            totals[name] = (count + len(todo), seconds + wall, cpu + used)
    return totals


def measure_fast_path(path: Path) -> tuple[int, int, float, float]:
    """(matches, clean deals, wall s, CPU s) of ``check_payloads``-style batches of frames."""
    checker = fastcheck._checker
    if checker is None:
        raise SystemExit("the fast path needs the compiled module: pip install -e .")
    matches = deals = 0
    seconds = cpu = 0.0
    for payloads in frame_batches(path):
        start, start_cpu = time.perf_counter(), time.process_time()
        verdicts = checker.check_batch(payloads)
        seconds += time.perf_counter() - start
        cpu += time.process_time() - start_cpu
        matches += len(payloads)
        deals += sum(v[0] for v in verdicts if v is not None)
    return matches, deals, seconds, cpu


KINGREC = Path(sys.executable).parent / "kingrec"


def measure_cli(
    path: Path, *, pure: bool = False, jobs: int = 1, kingrec: Path = KINGREC
) -> tuple[int, float, float, int, str]:
    """(deals, wall s, CPU s, peak RSS in KiB, summary line) of ``kingrec validate``.

    ``pure`` runs it on the pure-Python reference (``KINGREC_PURE_PYTHON=1``); ``jobs`` is
    its ``--jobs`` (the CPU time then includes the workers', which it waits for);
    ``kingrec`` the console script to run (another checkout's, for ``--baseline``).
    """
    # The console script, as a user runs it: ``python -m kingrec`` from a checkout would find
    # the source folder first, without the compiled twins of an editable install built
    # elsewhere, and time the pure-Python path.
    command = [str(kingrec), "validate", "--no-progress"]
    command += ["--jobs", str(jobs), str(path)]
    env = {k: v for k, v in os.environ.items() if k != "KINGREC_PURE_PYTHON"}
    if pure:
        env["KINGREC_PURE_PYTHON"] = "1"
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    output = proc.stdout.read()
    # wait4 gives this child's own peak RSS; RUSAGE_CHILDREN would also count the
    # simulation's worker processes when this run generated the file.
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    summary = output.strip().splitlines()[-1] if output.strip() else ""
    if proc.returncode != 0:
        raise SystemExit(f"kingrec validate exited {proc.returncode}: {output[-2000:]}")
    found = re.search(r"(\d+) deal\(s\)", summary)
    deals = int(found.group(1)) if found else 0
    return deals, seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, summary


def _burn(loops: int) -> float:
    """A fixed piece of pure CPU work; the wall seconds it took."""
    start, x = time.perf_counter(), 0
    for i in range(loops):
        x += i * i
    return time.perf_counter() - start


def parallel_ceiling(jobs: int, loops: int = 5_000_000) -> float:
    """The speed-up a perfectly parallel job gets on this machine now: the same fixed work
    once alone, then in each of ``jobs`` processes at once (``jobs`` on idle, unshared
    cores; less when other work or the host takes some)."""
    alone = _burn(loops)
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        together = pool.map(_burn, [loops] * jobs)
    return jobs * alone / max(together)


def pair_ceiling(path: Path, one_job_wall: float, kingrec: Path = KINGREC) -> float:
    """What two cores give ``kingrec validate`` here now: two independent one-job runs of
    the file at once, against one alone (``one_job_wall``); 2.0 on two idle cores."""
    command = [str(kingrec), "validate", "--no-progress", "--jobs", "1", str(path)]
    start = time.perf_counter()
    procs = [subprocess.Popen(command, stdout=subprocess.DEVNULL) for _ in range(2)]
    for proc in procs:
        proc.wait()
    return 2 * one_job_wall / (time.perf_counter() - start)


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def measure_jobs(path: Path, jobs: int, repeat: int, baseline: Path | None = None) -> None:
    """``kingrec validate --jobs 1`` against ``--jobs N`` on one file, runs interleaved.

    Prints each run's wall and CPU seconds, the machine's load before and after (the wall
    ratio means something only with N cores free), and the ratios of the medians. With
    ``baseline`` (another checkout's ``kingrec`` console script) each run of this one is
    paired with the same run of that one, so the two are compared under the same load.
    """
    print(f"file: {path} ({path.stat().st_size / 1e6:.0f} MB); load: {os.getloadavg()}")
    ceiling = parallel_ceiling(jobs)
    print(f"  a perfectly parallel job's speed-up here now, before: {ceiling:.2f}x")
    scripts = {"this": KINGREC, **({"baseline": baseline} if baseline else {})}
    times: dict[tuple[str, int], list[tuple[float, float]]] = {
        (who, n): [] for who in scripts for n in (1, jobs)
    }
    summaries = set()
    for _ in range(repeat):
        for n in (1, jobs):
            for who, script in scripts.items():
                _, wall, cpu, _, summary = measure_cli(path, jobs=n, kingrec=script)
                times[who, n].append((wall, cpu))
                summaries.add(summary)
                print(f"  {who:>8} --jobs {n}: {wall:6.2f} s wall, {cpu:6.2f} s CPU", flush=True)
    assert len(summaries) == 1, summaries  # the same report whatever the number of jobs
    print(f"  load after: {os.getloadavg()}; parallel ceiling after: {parallel_ceiling(jobs):.2f}x")
    if jobs == 2:
        one_wall = _median([t[0] for t in times["this", 1]])
        print(f"  two independent --jobs 1 runs at once: {pair_ceiling(path, one_wall):.2f}x")
    for who in scripts:
        wall1, cpu1 = (_median([t[i] for t in times[who, 1]]) for i in (0, 1))
        walln, cpun = (_median([t[i] for t in times[who, jobs]]) for i in (0, 1))
        print(f"  {who}: median --jobs 1: {wall1:.2f} s wall, {cpu1:.2f} s CPU")
        print(f"  {who}: median --jobs {jobs}: {walln:.2f} s wall, {cpun:.2f} s CPU")
        print(f"  {who}: speed-up by wall time: {wall1 / walln:.2f}x (target >= 1.8x)")
        print(f"  {who}: CPU of --jobs {jobs} over --jobs 1: {cpun / cpu1:.2f}x (the split)")
    if baseline:
        for n in (1, jobs):
            this, base = (_median([t[1] for t in times[who, n]]) for who in ("this", "baseline"))
            print(f"  --jobs {n}: this over baseline by CPU time: {this / base:.2f}x")
    print(f"  {summaries.pop()}")


# -- the report -------------------------------------------------------------------------


def main() -> None:
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches", type=int, default=100_000, help="matches in the file")
    parser.add_argument(
        "--python-deals",
        type=int,
        default=0,
        help="time the pure-Python twin on only this many deals (default: all)",
    )
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="processes for the simulation"
    )
    parser.add_argument(
        "--file", type=Path, help="an existing classic .krec file of --matches matches to use"
    )
    parser.add_argument(
        "--only-jobs",
        action="store_true",
        help="measure only kingrec validate --jobs 1 against --jobs N (N: --validate-jobs)",
    )
    parser.add_argument(
        "--validate-jobs", type=int, default=2, help="the N of kingrec validate --jobs N"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs of each, for --only-jobs")
    parser.add_argument(
        "--baseline",
        type=Path,
        help="for --only-jobs: another checkout's kingrec console script, run in turn with "
        "this one (e.g. main's .venv/bin/kingrec), to compare the two under the same load",
    )
    args = parser.parse_args()

    path = args.file or OUT / f"classic-{args.matches}.krec"
    if args.only_jobs:
        measure_jobs(path, args.validate_jobs, args.repeat, args.baseline)
        return
    ensure_file(path, args.matches, args.jobs)
    small_n = max(1, args.matches // 10)
    small = OUT / f"classic-{args.matches}-first-{small_n}.krec"
    ensure_prefix(path, small, small_n)
    size = path.stat().st_size
    print(f"file: {path} ({args.matches} matches, {size / 1e6:.0f} MB)")

    print("measuring the twins (replay_deal calls only)…", flush=True)
    twins = measure_twins(path, args.python_deals)
    print("measuring the fast path (check_batch from frame bytes)…", flush=True)
    matches, fast_deals, fast_seconds, fast_cpu = measure_fast_path(path)
    print("running kingrec validate…", flush=True)
    cli_deals, cli_seconds, cli_cpu, cli_rss, summary = measure_cli(path)
    _, small_seconds, _, small_rss, _ = measure_cli(small)
    print(f"running kingrec validate --jobs {args.validate_jobs}…", flush=True)
    jobs_deals, jobs_seconds, jobs_cpu, _, _ = measure_cli(path, jobs=args.validate_jobs)
    print(f"running KINGREC_PURE_PYTHON=1 kingrec validate on {small_n} matches…", flush=True)
    pure_deals, pure_seconds, pure_cpu, pure_rss, _ = measure_cli(small, pure=True)
    children_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss

    def rate(deals: int, seconds: float) -> float:
        return deals / seconds if seconds else 0.0

    # Each row: label, deals, wall seconds, CPU seconds. The machine may be shared: the
    # CPU-time rate is the one to compare across runs, the wall rate is what a user waits.
    py_deals, py_wall, py_cpu = twins["python"]
    rows = [(f"pure-Python twin replay_deal ({py_deals} deals)", py_deals, py_wall, py_cpu)]
    if "cython" in twins:
        c_deals, c_wall, c_cpu = twins["cython"]
        rows.append((f"Cython twin replay_deal ({c_deals} deals)", c_deals, c_wall, c_cpu))
    rows.append(
        (
            f"fast path from frame bytes ({matches} matches, {fast_deals} clean deals)",
            fast_deals,
            fast_seconds,
            fast_cpu,
        )
    )
    rows.append(
        (
            f"kingrec validate end to end ({cli_seconds:.2f} s wall, {cli_cpu:.2f} s CPU)",
            cli_deals,
            cli_seconds,
            cli_cpu,
        )
    )
    rows.append(
        (
            f"kingrec validate --jobs {args.validate_jobs} ({jobs_seconds:.2f} s wall, "
            f"{jobs_cpu:.2f} s CPU, all processes)",
            jobs_deals,
            jobs_seconds,
            jobs_cpu,
        )
    )
    rows.append(
        (
            f"kingrec validate, pure Python, {small_n} matches ({pure_cpu:.1f} s CPU)",
            pure_deals,
            pure_seconds,
            pure_cpu,
        )
    )
    py_rate = rate(py_deals, py_cpu)
    print()
    print(f"  {'':<72} {'deals/wall s':>13} {'deals/CPU s':>13} {'CPU vs twin':>11}")
    for label, deals, wall, cpu in rows:
        ratio = f"{rate(deals, cpu) / py_rate:10.1f}x" if py_rate else ""
        print(f"  {label:<72} {rate(deals, wall):>13,.0f} {rate(deals, cpu):>13,.0f} {ratio}")
    print()
    print(f"  kingrec validate: {summary}")
    print(
        f"  peak RSS: {cli_rss / 1024:.1f} MiB on {args.matches} matches, "
        f"{small_rss / 1024:.1f} MiB on {small_n} ({small_seconds:.2f} s); "
        f"RUSAGE_CHILDREN max {children_rss / 1024:.1f} MiB; pure Python "
        f"{pure_rss / 1024:.1f} MiB"
    )
    cli_rate, pure_rate = rate(cli_deals, cli_cpu), rate(pure_deals, pure_cpu)
    fast_rate = rate(fast_deals, fast_cpu)
    print(
        "  kingrec validate, compiled vs pure Python end to end (CPU time): "
        f"{cli_rate / pure_rate:.1f}x"
    )
    print(
        f"  kingrec validate --jobs {args.validate_jobs} vs --jobs 1 by wall time: "
        f"{cli_seconds / jobs_seconds:.2f}x (load average {os.getloadavg()[0]:.1f})"
    )
    print()
    checks = [
        ("fast path >= 1,000,000 deals per CPU second", fast_rate >= 1_000_000),
        ("kingrec validate >= 500,000 deals per CPU second", cli_rate >= 500_000),
        ("kingrec validate >= 10x the pure-Python twin", py_rate > 0 and cli_rate >= 10 * py_rate),
        ("memory flat (big file within 1.25x the small one's RSS)", cli_rss <= 1.25 * small_rss),
    ]
    for label, ok in checks:
        print(f"  [{'ok' if ok else 'MISSED'}] {label}")


if __name__ == "__main__":
    main()
