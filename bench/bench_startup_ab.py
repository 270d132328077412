"""What ``kingrec validate`` of one match costs, in instructions: two installs (issue 17, 3).

    python bench/bench_startup_ab.py --old /tmp/old-tree/.venv/bin/kingrec
    python bench/bench_startup_ab.py --old OLD --layers

The start-up is serial time that ``--jobs`` cannot split, and on a machine shared with
other work its CPU seconds are noise: instructions counted by valgrind's cachegrind are
not. This runs ``kingrec validate --no-progress`` of a one-match file (``--file``, else one
simulated here) under cachegrind with the old install's command line (``--old``: another
checkout's installed ``kingrec``) and this tree's, and prints both counts and their ratio;
both must print the same report. ``--layers`` adds, for each, what the layers beneath the
command cost: the bare interpreter, its ``site``, click, ``kingrec_cli.main``, the
command's module (each counted alone, ended by ``os._exit`` as validate ends), and the run.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from compiled_only import refuse_pure_twins
from in_turn import NEW, one_match_file

_REFS = re.compile(rb"I\s+refs:\s+([\d,]+)")

# Each layer: what runs after the interpreter starts, ended as validate ends (os._exit: no
# teardown), the cycle collector off as kingrec_cli.startup loads a command (the last row,
# the whole run, is each install's own way). Counted alone, each includes those above it.
_OFF = "import gc; gc.disable(); "
LAYERS = (
    ("bare interpreter (-S)", ["-S", "-c", "import os; os._exit(0)"]),
    ("+ site", ["-c", "import os; os._exit(0)"]),
    ("+ click", ["-c", _OFF + "import click, os; os._exit(0)"]),
    ("+ kingrec_cli.main", ["-c", _OFF + "import kingrec_cli.main, os; os._exit(0)"]),
    ("+ kingrec_cli.validate", ["-c", _OFF + "import kingrec_cli.validate, os; os._exit(0)"]),
)


def instructions(command: list[str]) -> tuple[int, bytes]:
    """(instructions executed, standard output) of ``command`` under cachegrind."""
    done = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         *command], capture_output=True, check=False,
    )  # fmt: skip
    found = _REFS.search(done.stderr)
    assert found, done.stderr.decode(errors="replace")[-2000:]
    return int(found.group(1).replace(b",", b"")), done.stdout


def interpreter_of(kingrec: Path) -> str:
    """The Python that the console script ``kingrec`` runs under (its ``#!`` line)."""
    with kingrec.open("rb") as script:
        first = script.readline()
    assert first.startswith(b"#!"), f"{kingrec} is not a script"
    return first[2:].decode().strip()


def main() -> None:
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="the old install's kingrec")
    parser.add_argument("--file", type=Path, help="a one-match .krec file (default: simulated)")
    parser.add_argument("--layers", action="store_true", help="also count the layers beneath")
    args = parser.parse_args()
    if not args.old.exists():
        sys.exit(f"no such command: {args.old}")
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed: it counts the instructions")
    installs = {"old": args.old, "new": NEW}
    with tempfile.TemporaryDirectory(prefix="startup-ab-") as tmp:
        file = args.file or one_match_file(Path(tmp))
        counts, outputs = {}, {}
        for name, kingrec in installs.items():
            counts[name], outputs[name] = instructions(
                [str(kingrec), "validate", "--no-progress", str(file)]
            )
    assert outputs["old"] == outputs["new"], outputs
    print(f"kingrec validate --no-progress {file}  (load average {os.getloadavg()[0]:.1f})")
    for name, count in counts.items():
        print(f"  {name}: {count / 1e6:.1f} M instructions  ({installs[name]})")
    print(
        f"  new/old: {counts['new'] / counts['old']:.3f} "
        f"({(counts['new'] - counts['old']) / 1e6:+.1f} M instructions)"
    )
    if args.layers:
        layers(installs, counts)


def layers(installs: dict[str, Path], whole: dict[str, int]) -> None:
    """Each layer's count (alone, and what it adds to the one above) for both installs."""
    print("layers (M instructions, each counted alone; in brackets what it adds):")
    names = [name for name, _ in LAYERS] + ["+ validating one match"]
    table: dict[str, list[int]] = {}
    for install, kingrec in installs.items():
        python = interpreter_of(kingrec)
        table[install] = [instructions([python, "-I", *argv])[0] for _, argv in LAYERS]
        table[install].append(whole[install])
    width = max(map(len, names))
    print(f"  {'':{width}}  {'old':>16}  {'new':>16}")
    for i, name in enumerate(names):
        cells = []
        for install in installs:
            count = table[install][i]
            added = count - table[install][i - 1] if i else count
            cells.append(f"{count / 1e6:6.1f} ({added / 1e6:+6.1f})")
        print(f"  {name:{width}}  {cells[0]:>16}  {cells[1]:>16}")


if __name__ == "__main__":
    main()
