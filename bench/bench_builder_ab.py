"""The compiled column builder of two builds side by side in one process (issue 17).

    python bench/bench_builder_ab.py                         # main against this tree
    python bench/bench_builder_ab.py --old HEAD~3 --rounds 9 --matches 20000

The builder's sibling of ``bench_checker_ab.py``: ``kingrec/_columns_c.pyx`` (with the
``.pxd`` files it cimports) is compiled twice, from a git revision (``--old``) and from the
working tree, into modules of their own names, with the same compiler and flags; each
builds the same records (the first ``--matches`` of the file, in batches of the ingest's
size) with ``add_many`` and hands them over with ``take``, old and new taking turns batch by
batch, round after round. Prints each build's CPU nanoseconds per deal (process time: the
builder runs in this thread), the median and the fastest, and new / old. Both must hand over
the very same bytes in every column.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_breakdown import batches
from bench_checker_ab import build, print_ab
from compiled_only import refuse_pure_twins

from kingrec.fastcheck import _core_params
from kingrec.store.store import BATCH_MATCHES

DEFAULT_FILE = Path("/work/bench-data/classic-100000.krec")


def payloads(path: Path, matches: int) -> list[list[bytes]]:
    """The file's first ``matches`` records, in batches of the ingest's size."""
    out: list[list[bytes]] = []
    for batch in batches(path, BATCH_MATCHES):
        out.append(batch.payloads[: matches - sum(map(len, out))])
        if sum(map(len, out)) >= matches:
            break
    return out


def _columns(taken: dict[str, Any]) -> dict[str, Any]:
    """A ``take()`` as plain bytes, to compare builds."""
    out: dict[str, Any] = {}
    for table, cols in taken.items():
        for name, value in cols.items():
            if isinstance(value, tuple):
                out[f"{table}.{name}"] = tuple(bytes(v) for v in value)
            else:
                out[f"{table}.{name}"] = value if isinstance(value, int) else bytes(value)
    return out


def build_batch(builder: Any, batch: list[bytes], key: int) -> tuple[int, float, Any]:
    """(deals, CPU seconds, the taken columns) of one batch through ``builder``."""
    keys = list(range(key, key + len(batch)))
    started = time.process_time()
    left = builder.add_many(batch, keys)
    taken = builder.take()
    used = time.process_time() - started
    builder.take_rulesets()
    assert not left, "the bench wants records the compiled reader understands"
    return len(bytes(taken["deals"]["deal"])) // 2, used, taken


def main() -> None:
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--old", default="main", help="the old build: a git revision, or a folder with a kingrec/"
    )
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE, help="a .krec file")
    parser.add_argument("--matches", type=int, default=13_000, help="matches to build")
    parser.add_argument("--rounds", type=int, default=7, help="rounds of old then new")
    parser.add_argument(
        "--only", choices=["old", "new"], help="one pass of one build (to run under valgrind)"
    )
    args = parser.parse_args()
    data = payloads(args.file, args.matches)
    with tempfile.TemporaryDirectory(prefix="builder-ab-") as tmp:
        modules = {
            "old": build(args.old, "columns_old", Path(tmp), "_columns_c.pyx"),
            "new": build(None, "columns_new", Path(tmp), "_columns_c.pyx"),
        }
        builders = {name: mod.ColumnBuilder(_core_params) for name, mod in modules.items()}
        if args.only:
            deals = sum(build_batch(builders[args.only], b, 1)[0] for b in data)
            print(f"{args.only}: {deals} deals")
            return
        times: dict[str, list[float]] = {"old": [], "new": []}
        deals = 0
        for r in range(args.rounds):
            used = {"old": 0.0, "new": 0.0}
            deals = 0
            for i, batch in enumerate(data):
                got = {}
                for name in ("old", "new") if (r + i) % 2 == 0 else ("new", "old"):
                    n, seconds, taken = build_batch(builders[name], batch, 1)
                    used[name] += seconds
                    got[name] = _columns(taken)
                    del taken
                assert got["old"] == got["new"], "the builds hand over different columns"
                deals += n
            for name in used:
                times[name].append(used[name] / deals * 1e9)
        print(
            f"{args.file}: first {args.matches} matches, {deals} deals; old = {args.old}, "
            f"new = working tree; load average {os.getloadavg()[0]:.1f}"
        )
        print_ab(times)


if __name__ == "__main__":
    main()
