"""Do two builds store the very same rows? Every table compared both ways (issue 17).

    python bench/same_rows.py --old /tmp/old-tree                 # samples/ and 25,000 matches
    python bench/same_rows.py --old /tmp/old-tree --batch 7 --batch 6500 --file big.krec

A speed change to ingest must not change what is stored. This ingests the same files, in
the same order, with the ``kingrec`` of this tree and with that of another tree (``--old``,
a checkout with its own ``.venv``, as ``git worktree add`` and a copied venv give), each
into a fresh store per batch size (``--batch``, repeatable; the samples alone also in
batches of 3), then attaches the two stores
to one DuckDB and, for every table of the store, counts the rows of each that the other
lacks (``EXCEPT ALL`` both ways: a multiset difference, so a row stored twice differs from
one stored once). ``ingested_at`` (the time of the run) is left out. Exits 1 if any table
differs. The files: every record file under samples/ and a simulated classic file.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
SKIP = {"ingested_at", "analysed_at"}


def ingest(kingrec: Path, db: Path, files: list[Path], batch: int) -> None:
    for path in files:
        done = subprocess.run(
            [str(kingrec), "ingest", "--no-progress", "--batch", str(batch), "--db", str(db),
             str(path)],
            capture_output=True, text=True,
        )  # fmt: skip
        # 0: all stored; 1: invalid records stored; 2: damaged or rejected (samples/damaged)
        if done.returncode not in (0, 1, 2) or "Traceback" in done.stderr:
            sys.exit(f"{kingrec} ingest {path}: exit {done.returncode}\n{done.stderr}")


def differences(old: Path, new: Path) -> dict[str, tuple[int, int, int]]:
    """Per table: (rows, rows of new not in old, rows of old not in new)."""
    con = duckdb.connect()
    con.execute(f"ATTACH '{old}' AS old (READ_ONLY)")
    con.execute(f"ATTACH '{new}' AS new (READ_ONLY)")
    tables = [
        row[0]
        for row in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = 'new' ORDER BY 1"
        ).fetchall()
    ]
    out = {}
    for table in tables:
        names = [r[0] for r in con.execute(f"DESCRIBE new.{table}").fetchall()]
        cols = ", ".join(f'"{n}"' for n in names if n not in SKIP)
        (rows,) = con.execute(f"SELECT count(*) FROM new.{table}").fetchone() or (0,)
        counts = [
            con.execute(
                f"SELECT count(*) FROM (SELECT {cols} FROM {a}.{table} EXCEPT ALL "
                f"SELECT {cols} FROM {b}.{table})"
            ).fetchone()
            for a, b in (("new", "old"), ("old", "new"))
        ]
        out[table] = (rows, *(c[0] if c else 0 for c in counts))
    con.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="the other tree (with .venv)")
    parser.add_argument("--file", type=Path, action="append", help="record files (repeatable)")
    parser.add_argument("--batch", type=int, action="append", help="batch sizes (repeatable)")
    args = parser.parse_args()
    samples = sorted(p for p in (ROOT / "samples").glob("*/*") if p.suffix in (".krec", ".jsonl"))
    files = [*samples, *(args.file or [OUT / "classic-25000.krec"])]
    builds = {"old": args.old / ".venv/bin/kingrec", "new": Path(sys.executable).parent / "kingrec"}
    differ = False
    # tiny batches on the samples alone (a big file in batches of 3 takes an hour)
    runs = [(3, samples), *((batch, files) for batch in args.batch or [997, 6500])]
    for batch, chosen in runs:
        with tempfile.TemporaryDirectory(dir=OUT) as folder:
            dbs = {name: Path(folder, f"{name}.duckdb") for name in builds}
            for name, kingrec in builds.items():
                ingest(kingrec, dbs[name], chosen, batch)
            found = differences(dbs["old"], dbs["new"])
        print(f"batch {batch}: {len(chosen)} files")
        for table, (rows, extra, missing) in found.items():
            print(f"  {table:<14} {rows:>10} rows  new EXCEPT ALL old {extra:>6}  "
                  f"old EXCEPT ALL new {missing:>6}")  # fmt: skip
            differ = differ or bool(extra or missing)
    print("identical" if not differ else "DIFFERENT")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
