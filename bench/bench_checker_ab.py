"""The wire-level checker of two builds side by side in one process (issue 17).

    python bench/bench_checker_ab.py                         # main against this tree
    python bench/bench_checker_ab.py --old HEAD~3 --rounds 9 --mbytes 200

On a loaded machine of varying speed only a ratio measured in one run means anything. This
compiles ``kingrec/_fastcheck_c.pyx`` with the ``_core.pxd`` and the other ``.pxd`` files it
cimports twice, from a git revision (``--old``) and from the working tree, into modules of
their own names under a temporary folder, with the same compiler and flags (the
interpreter's, plus ``-O3`` as setup.py gives); then it judges the same frames with both,
``check_frames`` over in-memory blocks of the file, alternating old and new round after
round, and prints each build's CPU nanoseconds per deal (process time: one thread), the
median and the fastest, and new / old. Both must find the same clean matches and deals.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from compiled_only import refuse_pure_twins

from kingrec.container import FILE_HEADER_SIZE
from kingrec.fastcheck import PIECE_FRAMES, _core_params
from kingrec.limits import MAX_FRAME_BYTES

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FILE = Path("/work/bench-data/classic-100000.krec")
BLOCK = 4 << 20


def _sources(rev: str | None, pyx: str = "_fastcheck_c.pyx") -> dict[str, str]:
    """The source ``pyx`` (the checker's by default) and every ``kingrec/*.pxd`` at ``rev``:
    a git revision, or a folder holding a ``kingrec/`` of them (None: the working tree)."""
    names = [pyx, *(p.name for p in (ROOT / "kingrec").glob("*.pxd"))]
    out: dict[str, str] = {}
    for name in names:
        folder = ROOT if rev is None else Path(rev)
        if rev is None or folder.is_dir():
            if (folder / "kingrec" / name).exists():
                out[name] = (folder / "kingrec" / name).read_text(encoding="utf-8")
        else:
            shown = subprocess.run(
                ["git", "-C", str(ROOT), "show", f"{rev}:kingrec/{name}"],
                capture_output=True,
                text=True,
            )
            if shown.returncode == 0:
                out[name] = shown.stdout
    return out


def build(rev: str | None, module: str, folder: Path, pyx: str = "_fastcheck_c.pyx") -> ModuleType:
    """``pyx`` (``_fastcheck_c``'s by default) of ``rev`` compiled as the top-level module
    ``module``."""
    home = folder / module
    (home / "kingrec").mkdir(parents=True)
    (home / "kingrec" / "__init__.pxd").write_text("")
    for name, text in _sources(rev, pyx).items():
        if name == pyx:
            (home / f"{module}.pyx").write_text(text)
        else:
            (home / "kingrec" / name).write_text(text)
    c_file = home / f"{module}.c"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "cython",
            "-3",
            "-I",
            str(home),
            "-o",
            str(c_file),
            str(home / f"{module}.pyx"),
        ],
        check=True,
    )
    target = home / f"{module}{sysconfig.get_config_var('EXT_SUFFIX')}"
    cflags = (sysconfig.get_config_var("CFLAGS") or "").split()
    ccshared = (sysconfig.get_config_var("CCSHARED") or "").split()
    include = sysconfig.get_paths()["include"]
    subprocess.run(
        [
            "gcc",
            *cflags,
            *ccshared,
            "-O3",
            "-w",
            f"-I{include}",
            "-shared",
            str(c_file),
            "-o",
            str(target),
        ],
        check=True,
    )
    spec = importlib.util.spec_from_file_location(module, target)
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


def blocks(path: Path, limit: int) -> list[tuple[bytearray, int]]:
    """Whole frames of the file's first ``limit`` bytes, as (block, length) pairs in the
    layout ``judges.validate_here`` reads them (a block's tail frame carries over)."""
    out: list[tuple[bytearray, int]] = []
    pos, read = FILE_HEADER_SIZE, 0
    probe = None
    with open(path, "rb") as f:
        while read < limit:
            block = bytearray(BLOCK + MAX_FRAME_BYTES)
            got = os.preadv(f.fileno(), [block], pos)
            if not got:
                break
            if probe is None:
                probe = _probe_checker()
            stop = probe.check_frames(block, 0, got, MAX_FRAME_BYTES, 1 << 30)[0]
            if stop == 0:
                break
            out.append((block, stop))
            pos, read = pos + stop, read + stop
    return out


def _probe_checker() -> Any:
    from kingrec import _twins
    from kingrec.fastcheck import checker_of

    return checker_of(_twins.ACTIVE)


def judge_block(checker: Any, block: bytearray, length: int) -> tuple[int, int, float]:
    """(clean matches, deals, CPU seconds) of ``check_frames`` over one block."""
    clean = deals = pos = 0
    started = time.process_time()
    while pos < length:
        stop, _, c, d, _, _, _ = checker.check_frames(
            block, pos, length, MAX_FRAME_BYTES, PIECE_FRAMES
        )
        clean, deals, pos = clean + c, deals + d, stop
    return clean, deals, time.process_time() - started


def main() -> None:
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--old", default="main", help="the old build: a git revision, or a folder with a kingrec/"
    )
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE, help="a .krec file")
    parser.add_argument("--mbytes", type=int, default=120, help="MB of the file to judge")
    parser.add_argument("--rounds", type=int, default=7, help="rounds of old then new")
    parser.add_argument(
        "--only", choices=["old", "new"], help="one pass of one build (to run under valgrind)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="checker-ab-") as tmp:
        old_mod = build(args.old, "fastcheck_old", Path(tmp))
        new_mod = build(None, "fastcheck_new", Path(tmp))
        checkers = {
            "old": old_mod.MatchChecker(_core_params),
            "new": new_mod.MatchChecker(_core_params),
        }
        data = blocks(args.file, args.mbytes << 20)
        if args.only:
            c = d = 0
            for block, length in data:
                got = judge_block(checkers[args.only], block, length)
                c, d = c + got[0], d + got[1]
            print(f"{args.only}: {c} clean matches, {d} deals")
            return
        times: dict[str, list[float]] = {"old": [], "new": []}
        found: dict[str, tuple[int, int]] = {}
        for r in range(args.rounds):
            # Old and new take turns block by block (4 MB, some 20 ms each), so both see the
            # same moments of a machine whose speed drifts.
            totals: dict[str, list[float]] = {"old": [0, 0, 0.0], "new": [0, 0, 0.0]}
            for i, (block, length) in enumerate(data):
                for name in ("old", "new") if (r + i) % 2 == 0 else ("new", "old"):
                    c, d, used = judge_block(checkers[name], block, length)
                    tally = totals[name]
                    tally[0], tally[1], tally[2] = tally[0] + c, tally[1] + d, tally[2] + used
            for name, (matches, deals, used) in totals.items():
                found.setdefault(name, (int(matches), int(deals)))
                assert found[name] == (matches, deals)
                times[name].append(used / deals * 1e9)
        assert found["old"] == found["new"], found
        clean, deals = found["new"]
        print(
            f"{args.file}: first {args.mbytes} MB, {clean} clean matches, {deals} deals; "
            f"old = {args.old}, new = working tree; load average {os.getloadavg()[0]:.1f}"
        )
        print_ab(times)


def print_ab(times: dict[str, list[float]]) -> None:
    """Each build's CPU ns a deal per round, and new over old."""
    for name in ("old", "new"):
        t = times[name]
        print(
            f"  {name}: CPU ns/deal median {statistics.median(t):7.1f}  fastest "
            f"{min(t):7.1f}  ({' '.join(f'{x:.0f}' for x in t)})"
        )
    ratio = [n / o for n, o in zip(times["new"], times["old"], strict=True)]
    print(
        f"  new/old per round: median {statistics.median(ratio):.3f}  fastest-to-fastest "
        f"{min(times['new']) / min(times['old']):.3f}"
    )


if __name__ == "__main__":
    main()
