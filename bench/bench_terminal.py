"""``kingrec validate`` as a person sees it: on a terminal, with its bar, beside a pipe.

    python bench/bench_terminal.py [--old /tmp/old-tree/.venv/bin/kingrec] [--repeats 20000]
        [--runs 3]

The other benches time through pipes; a person runs the command on a terminal, where each
report went through rich and, under the progress bar, lifted the bar and drew it again.
This writes a file of one sample match repeated ``--repeats`` times (every repeat a
DUPLICATE_RECORD warning: two report lines each) and times ``kingrec validate`` of it
through a pipe, on a pseudo-terminal (standard output and error on it, as in a shell: the
bar is drawn) and on one with ``--no-progress``; each run is timed until the command has
exited and the terminal has read everything it wrote. With ``--old`` (another checkout's
installed ``kingrec``) both installs run, in turn, and the new/old ratios follow.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import statistics
import struct
import subprocess
import tempfile
import termios
import time
from pathlib import Path

from compiled_only import refuse_pure_twins
from in_turn import NEW, ROOT, in_turn, timed

from kingrec.container import FILE_HEADER_SIZE

WAYS = ("pipe", "terminal", "terminal --no-progress")


def repeats_file(folder: Path, repeats: int) -> Path:
    """samples/valid/classic.krec's match ``repeats`` times in one file."""
    one = (ROOT / "samples" / "valid" / "classic.krec").read_bytes()
    path = folder / "repeats.krec"
    path.write_bytes(one[:FILE_HEADER_SIZE] + one[FILE_HEADER_SIZE:] * repeats)
    return path


def on_terminal(command: list[str]) -> tuple[float, int]:
    """The wall time of ``command`` on a 120 x 50 pseudo-terminal, till it has exited and
    everything it wrote is read, and the bytes it wrote."""
    started = time.perf_counter()
    pid, master = pty.fork()
    if pid == 0:  # the child: the terminal is its standard input, output and error
        os.execv(command[0], command)
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 120, 0, 0))
    written = 0
    while True:
        select.select([master], [], [])
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:  # EIO: the terminal's last writer has closed it
            break
        if not chunk:
            break
        written += len(chunk)
    os.waitpid(pid, 0)
    os.close(master)
    return time.perf_counter() - started, written


def run(kingrec: Path, way: str, path: Path) -> float:
    command = [str(kingrec), "validate", *way.split()[1:], str(path)]
    if way == "pipe":
        return timed(command).wall
    return on_terminal(command)[0]


def main() -> None:
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, help="the old install's kingrec, to run in turn")
    parser.add_argument("--repeats", type=int, default=20_000, help="the match's repeats")
    parser.add_argument("--runs", type=int, default=3, help="runs of each way (pairs with --old)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = repeats_file(Path(folder), args.repeats)
        lines = subprocess.run(
            [str(NEW), "validate", str(path)], capture_output=True, check=False
        ).stdout.count(b"\n")
        print(f"kingrec validate of {args.repeats:,} repeats ({lines:,} report lines), "
              f"{args.runs} run(s) each; load average {os.getloadavg()[0]:.1f}")  # fmt: skip
        for way in WAYS:
            times: dict[str, list[float]] = {"old": [], "new": []}
            if args.old is None:
                times["new"] = [run(NEW, way, path) for _ in range(args.runs)]
            else:
                for _, name, kingrec in in_turn(args.old, args.runs):
                    times[name].append(run(kingrec, way, path))
            shown = {k: statistics.median(v) for k, v in times.items() if v}
            line = f"  {way:24}" + "".join(
                f"  {name}: {seconds:6.2f} s ({lines / seconds:,.0f} lines/s)"
                for name, seconds in shown.items()
            )
            if len(shown) == 2:
                line += f"  new/old {shown['new'] / shown['old']:.2f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
