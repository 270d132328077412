"""The installed compiled checker over the first MB of a file, for cachegrind (issue 17).

    valgrind --tool=cachegrind --branch-sim=yes --cache-sim=no \\
        .venv/bin/python bench/bench_checker_instructions.py --mbytes 11
    (the same with --mbytes 1; then cg_diff the two outputs, or subtract their totals)

``check_frames`` of ``kingrec._fastcheck_c`` (or of the ``.so`` given with ``--module``,
e.g. one built from another revision) over the frames of the file's first ``--mbytes``
MB, read into memory first, as ``kingrec validate`` judges a regular file on one job. It
prints the clean matches and the deals: the instructions a deal of the checker alone are
the difference of two runs' totals over the difference of their deals (start-up, imports
and the read cancel out). Under cachegrind, one run of 11 MB takes about a minute.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
from pathlib import Path
from types import ModuleType

from compiled_only import refuse_pure_twins

from kingrec.container import FILE_HEADER_SIZE
from kingrec.fastcheck import PIECE_FRAMES, _core_params
from kingrec.limits import MAX_FRAME_BYTES

DEFAULT_FILE = Path("/work/bench-data/classic-100000.krec")


def checker_module(path: str | None) -> ModuleType:
    """``kingrec._fastcheck_c``, or the extension module at ``path``."""
    if path is None:
        return importlib.import_module("kingrec._fastcheck_c")
    name = Path(path).name.split(".")[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"error: {path}: not an extension module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE, help="a .krec file")
    parser.add_argument("--mbytes", type=float, default=11, help="MB of the file to judge")
    parser.add_argument("--module", help="a compiled checker's .so (default: the installed)")
    args = parser.parse_args()
    with open(args.file, "rb") as f:
        f.seek(FILE_HEADER_SIZE)
        buf = bytearray(f.read(int(args.mbytes * (1 << 20))))
    checker = checker_module(args.module).MatchChecker(_core_params)
    pos = clean = deals = 0
    while True:
        stop, _, c, d, _, _, _ = checker.check_frames(
            buf, pos, len(buf), MAX_FRAME_BYTES, PIECE_FRAMES
        )
        if stop == pos:
            break
        clean, deals, pos = clean + c, deals + d, stop
    print(f"{clean} clean matches, {deals} deals")


if __name__ == "__main__":
    main()
