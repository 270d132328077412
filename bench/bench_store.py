"""The DuckDB store at scale: ingest speed, the common questions, file size, memory.

    python bench/bench_store.py                       # 10,000 classic matches, a few minutes
    python bench/bench_store.py --matches 100000      # the issue's target size (2 M deals)
    python bench/bench_store.py --file big.krec       # any record file you have

Simulates a classic .krec file once (``kingrec.simrun``, cached under bench/out/, reused by
later runs) and its first tenth, then measures:

* ingest end to end (``Store.ingest_file``: read, validate, build, append, commit) in a child
  process of its own, into a new store: wall time, CPU time (user + system, both cores) and
  deals/s by each, and the child's peak RSS; the same on the tenth, so memory that grows
  with the input shows (flat: the big run within 1.25x of the small one's);
* on the big store: the rıfkı-before-trick-5 question, a per-card count over every play and
  the most-led card in each contract (best of three warm runs, and the first);
* the store's file size per play, and how much of it each table takes;
* with ``--export DIR``: ``export_parquet`` of the big store (time, size of the Parquet).

Targets (issue 8, this 2-core machine, 100,000 matches): ingest >= 100,000 deals/s; the rıfkı
question <= 50 ms; the per-card count and the most-led card <= 1 s each; ~3.5 bytes/play.
Issue 17 adds: ingest >= 250,000 deals/s wall, peak RSS <= 1 GB (10^9 bytes) and flat.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from itertools import islice
from pathlib import Path

import duckdb
from compiled_only import refuse_pure_twins

import kingrec
from kingrec.container import Frame, KrecWriter, read_frames
from kingrec.simrun import simulate_to_file
from kingrec.store.store import BATCH_MATCHES, WRITERS

OUT = Path(__file__).resolve().parent / "out"
SEED = 2026

QUESTIONS = {
    "rıfkı deals ending before trick 5 (share)": (
        "SELECT count(*) FILTER (WHERE ended = 'EARLY' AND end_trick < 5) / count(*) "
        "FROM deals WHERE contract = 'RIFKI'"
    ),
    "per-card count over every play": (
        "SELECT card_name(c) AS card, n FROM "
        "(SELECT card AS c, count(*) AS n FROM plays GROUP BY c) ORDER BY c"
    ),
    # Ties go to the lower card, as in `kingrec stats most-led`: arg_max alone picks any of
    # them, so two stores of the same file could answer differently (bench_questions_ab
    # compares their answers). A card code is under 64: n * 64 - card orders by n, then card.
    "most-led card in each contract": (
        "SELECT contract, card_name(arg_max(card, n * 64 - card)) AS card, max(n) AS n FROM "
        "(SELECT contract, card, count(*) AS n FROM plays WHERE position = 0 GROUP BY ALL) "
        "GROUP BY contract ORDER BY contract"
    ),
}
LIMITS = {  # seconds, the targets
    "rıfkı deals ending before trick 5 (share)": 0.05,
    "per-card count over every play": 1.0,
    "most-led card in each contract": 1.0,
}

# The ingest, in a process of its own so that its CPU time and peak RSS are its own. It runs
# isolated (-I: ``python -c`` would put the working directory first on sys.path, and a
# kingrec there would be measured instead) with the folder of this bench's own kingrec first.
_INGEST = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
import kingrec
from kingrec.store import Store
start = time.perf_counter()
with Store.open(sys.argv[2]) as store:
    summary = store.ingest_file(sys.argv[3], batch_matches=int(sys.argv[4]))
    plays = store.count("plays_base")
wall = time.perf_counter() - start
print(json.dumps({**summary.to_dict(), "plays": plays, "wall": wall, "kingrec": kingrec.__file__}))
"""


def ensure_file(path: Path, matches: int, jobs: int) -> None:
    """Simulate ``matches`` classic matches into ``path`` unless it is already there."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    print(f"simulating {matches} classic matches into {path} ({jobs} processes)…", flush=True)
    start = time.perf_counter()
    simulate_to_file(str(path), "classic", matches, SEED, fmt="krec", jobs=jobs)
    print(f"  done in {time.perf_counter() - start:.0f} s", flush=True)


def ensure_prefix(source: Path, path: Path, matches: int) -> None:
    """The first ``matches`` frames of ``source`` as a file of their own."""
    if path.exists():
        return
    with KrecWriter.open(path) as writer:
        for item in islice(read_frames(source), matches):
            assert isinstance(item, Frame)
            writer.write(item.payload)


def ingest(records: Path, db: Path, batch: int) -> dict[str, float]:
    """Ingest ``records`` into a new store ``db`` in a child process: its summary, wall and
    CPU seconds, and peak RSS (KiB)."""
    for stale in (db, Path(f"{db}.wal")):
        stale.unlink(missing_ok=True)
    ours = os.path.dirname(os.path.dirname(kingrec.__file__))  # the folder holding kingrec/
    command = [sys.executable, "-I", "-c", _INGEST, ours, str(db), str(records), str(batch)]
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    output = proc.stdout.read()
    proc.stdout.close()
    _, status, usage = os.wait4(proc.pid, 0)  # reaped here, for its rusage: tell Popen
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"the ingest failed: {output[-2000:]}")
    result: dict[str, float] = json.loads(output.strip().splitlines()[-1])
    measured = str(result.pop("kingrec"))  # a path, not a figure
    if measured != kingrec.__file__:
        raise SystemExit(f"the ingest measured {measured}, not this bench's {kingrec.__file__}")
    result["process_wall"] = wall
    result["cpu"] = usage.ru_utime + usage.ru_stime
    result["rss_kib"] = usage.ru_maxrss
    return result


def time_questions(db: Path) -> dict[str, tuple[float, float, float, str]]:
    """(first run, best of three after it, the CPU time of that best run (every thread),
    a glimpse of the answer) of each question."""
    # A plain read-only connection with the store's macro (card_name) and view: what a
    # `kingrec query` or the stock CLI runs on.
    con = duckdb.connect(str(db), read_only=True)
    out = {}
    for name, sql in QUESTIONS.items():
        times = []
        rows: list[tuple[object, ...]] = []
        for _ in range(4):
            start, cpu = time.perf_counter(), time.process_time()
            rows = con.execute(sql).fetchall()
            times.append((time.perf_counter() - start, time.process_time() - cpu))
        glimpse = ", ".join(" ".join(str(v) for v in row) for row in rows[:3])
        best = min(times[1:])
        more = " …" if len(rows) > 3 else ""
        out[name] = (times[0][0], best[0], best[1], glimpse + more)
    con.close()
    return out


def sizes(db: Path) -> tuple[int, dict[str, int]]:
    """Plays stored, and each table's share of the file (its blocks, 256 KiB each, counting
    the blocks that long values such as a record's bytes overflow into), and the free ones."""
    con = duckdb.connect(str(db), read_only=True)
    plays = int(con.execute("SELECT count(*) FROM plays_base").fetchall()[0][0])
    block = int(con.execute("SELECT block_size FROM pragma_database_size()").fetchall()[0][0])
    tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
    out = {}
    for table in tables:
        used = con.execute(
            "SELECT count(DISTINCT b) FROM (SELECT unnest(list_append(additional_block_ids, "
            f"block_id)) AS b FROM pragma_storage_info('{table}') WHERE persistent) WHERE b >= 0"
        ).fetchall()[0][0]
        out[table] = int(used) * block
    free = con.execute("SELECT free_blocks FROM pragma_database_size()").fetchall()[0][0]
    out["(free blocks)"] = int(free) * block
    con.close()
    return plays, out


def main() -> None:
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches", type=int, default=10_000, help="matches in the file")
    parser.add_argument("--file", type=Path, help="ingest this .krec file instead")
    parser.add_argument("--batch", type=int, default=0, help="records per transaction")
    parser.add_argument("--export", type=Path, help="also export the store as Parquet here")
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="processes for the simulation"
    )
    args = parser.parse_args()

    path = args.file or OUT / f"classic-{args.matches}.krec"
    if args.file is None:
        ensure_file(path, args.matches, args.jobs)
    matches = sum(1 for item in read_frames(path) if isinstance(item, Frame))
    args.batch = args.batch or BATCH_MATCHES
    # The smaller run fills the pipeline (a batch prepared while WRITERS are written) at least
    # once, else it would hold less in flight than any long ingest and flatter nothing.
    small_n = min(matches, max(matches // 10, (WRITERS + 2) * args.batch))
    small = OUT / f"{path.stem}-first-{small_n}.krec"
    OUT.mkdir(parents=True, exist_ok=True)
    ensure_prefix(path, small, small_n)
    print(f"file: {path} ({matches} matches, {path.stat().st_size / 1e6:.0f} MB)", flush=True)

    db = OUT / f"{path.stem}.duckdb"
    print(f"ingesting into {db} (batches of {args.batch})…", flush=True)
    big = ingest(path, db, args.batch)
    print(f"ingesting the first {small_n} matches…", flush=True)
    tenth = ingest(small, OUT / f"{small.stem}.duckdb", args.batch)
    print("asking the questions…", flush=True)
    answers = time_questions(db)
    plays, by_table = sizes(db)
    file_size = db.stat().st_size

    deals = big["deals"]
    print()
    print(f"  ingest of {matches} matches: {deals:,.0f} deals, {plays:,} plays")
    print(
        f"    wall {big['process_wall']:.1f} s: {deals / big['process_wall']:,.0f} deals/s; "
        f"CPU {big['cpu']:.1f} s: {deals / big['cpu']:,.0f} deals per CPU-second "
        f"({big['cpu'] / big['process_wall']:.2f} cores busy)"
    )
    print(
        f"    stored {big['stored']:,.0f}, invalid {big['stored_invalid']:,.0f}, "
        f"duplicates {big['duplicates']:,.0f}, rejected {big['rejected']:,.0f}"
    )
    print(
        f"  peak RSS of ingest: {big['rss_kib'] / 1024:.0f} MiB for {matches} matches, "
        f"{tenth['rss_kib'] / 1024:.0f} MiB for {small_n} "
        f"({tenth['deals'] / tenth['process_wall']:,.0f} deals/s wall, "
        f"{tenth['deals'] / tenth['cpu']:,.0f} per CPU-second)"
    )
    print(
        f"  store: {file_size / 1e6:,.0f} MB, {file_size / plays:.2f} bytes/play "
        f"({file_size / deals:,.0f} bytes/deal)"
    )
    for table, size in sorted(by_table.items(), key=lambda kv: -kv[1]):
        if size:
            print(f"    {table:<12} {size / 1e6:9,.1f} MB  {size / plays:6.2f} bytes/play")
    print("  questions (first run, best warm run, its CPU time over all threads):")
    for name, (first, best, cpu, glimpse) in answers.items():
        print(
            f"    {name:<44} {first * 1000:8.1f} ms {best * 1000:8.1f} ms {cpu * 1000:8.1f} ms"
            f"   {glimpse[:56]}"
        )
    if args.export is not None:
        from kingrec.store.export import export_parquet

        start, cpu = time.perf_counter(), time.process_time()
        summary = export_parquet(str(db), args.export, overwrite=True)
        wall = time.perf_counter() - start
        print(
            f"  export to Parquet: {wall:.1f} s wall, {time.process_time() - cpu:.1f} s CPU, "
            f"{summary.files} files, {summary.bytes / 1e6:,.0f} MB "
            f"({summary.bytes / plays:.2f} bytes/play)"
        )
    print()
    flat = big["rss_kib"] <= 1.25 * tenth["rss_kib"]
    checks = [
        ("ingest >= 100,000 deals/s (wall)", deals / big["process_wall"] >= 100_000),
        ("ingest >= 250,000 deals/s (wall, issue 17)", deals / big["process_wall"] >= 250_000),
        ("peak RSS of ingest <= 1 GB (issue 17)", big["rss_kib"] * 1024 <= 1e9),
        *((f"{n} <= {LIMITS[n] * 1000:g} ms", answers[n][1] <= LIMITS[n]) for n in QUESTIONS),
        ("<= 3.5 bytes/play", file_size / plays <= 3.5),
        ("memory flat (within 1.25x of the tenth's peak RSS)", flat),
    ]
    for label, ok in checks:
        print(f"  [{'ok' if ok else 'MISSED'}] {label}")


if __name__ == "__main__":
    main()
