"""Time and memory of ``kingrec validate`` on the worst generated hostile files (issue 10).

    python bench/hostile_files.py [--kingrec PATH] [--timeout 120] [--only NAME ...]

Writes the files once under bench/out/hostile/ (made by ``tests/corpus/hostile.py``, the
generators the tests use), then runs ``KINGREC validate FILE`` on each under
``/usr/bin/time`` (its own child's peak RSS; without it, ``os.wait4``, which may count some of
this script's memory) and prints the exit status, wall and CPU seconds, CPU seconds per MiB
of input and peak RSS. ``--kingrec`` picks another installation (say the baseline's
``.venv/bin/kingrec``) to compare; a run longer than ``--timeout`` is stopped and shown as such.

The files:

* ``empty-deals-200k``, ``empty-deals-500k``: one sound frame whose match holds 200,000 or
  500,000 empty deals (390 KiB, 976 KiB);
* ``resync-bomb-1MiB``, ``resync-bomb-2MiB``: a sound frame header every 16 bytes, each
  claiming the rest of the file; ``resync-bomb-capped-2MiB``: each claiming the rest of the
  file but at most the largest legal frame (a claim the reader cannot refuse on its face);
* ``empty-frames-1MiB``: 65,535 empty frames, each a record to report;
* ``json-line-100MiB``: one JSON line of 100 MiB, then a small record.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from corpus.hostile import (  # noqa: E402
    empty_deals,
    krec_file,
    resync_bomb,
    write_long_json_line,
)

MiB = 1 << 20


def _bytes(make: Callable[[], bytes]) -> Callable[[Path], object]:
    return lambda path: path.write_bytes(make())


FILES: dict[str, tuple[str, Callable[[Path], object]]] = {
    "empty-deals-200k": (".krec", _bytes(lambda: empty_deals(200_000))),
    "empty-deals-500k": (".krec", _bytes(lambda: empty_deals(500_000))),
    "resync-bomb-1MiB": (".krec", _bytes(lambda: resync_bomb(MiB, cap=None))),
    "resync-bomb-2MiB": (".krec", _bytes(lambda: resync_bomb(2 * MiB, cap=None))),
    "resync-bomb-capped-2MiB": (".krec", _bytes(lambda: resync_bomb(2 * MiB))),
    "empty-frames-1MiB": (".krec", _bytes(lambda: krec_file([b""] * ((MiB - 12) // 16)))),
    "json-line-100MiB": (".jsonl", lambda path: write_long_json_line(str(path), 100 * MiB)),
}


def make_files(folder: Path, names: list[str]) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name in names:
        suffix, write = FILES[name]
        paths[name] = folder / f"{name}{suffix}"
        if not paths[name].exists():
            write(paths[name])
    return paths


def measure(kingrec: str, path: Path, timeout: float, *options: str) -> dict[str, object]:
    """Exit status, wall and CPU seconds and peak RSS (MiB) of ``kingrec validate path``."""
    gnu_time = shutil.which("time", path="/usr/bin:/bin")
    report = path.parent / "time.out"
    command = [kingrec, "validate", *options, str(path)]
    if gnu_time:
        command = [gnu_time, "-o", str(report), "-f", "%M %U %S", *command]
    start = time.perf_counter()
    child = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    status: int | str
    try:
        _, wait_status, usage = _wait(child, timeout)
        status = os.waitstatus_to_exitcode(wait_status)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)  # /usr/bin/time and the kingrec it runs
        _, _, usage = os.wait4(child.pid, 0)
        status = f"killed after {timeout:.0f} s"
    wall = time.perf_counter() - start
    peak_mib, cpu = usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime
    if not isinstance(status, int):  # stopped: what /proc showed last (at least this much)
        peak_mib, cpu = _LAST_SEEN.get("peak_mib", 0.0), _LAST_SEEN.get("cpu", 0.0)
    if gnu_time and isinstance(status, int) and report.exists():
        fields = report.read_text().split()[-3:]
        if len(fields) == 3:
            peak_mib, cpu = int(fields[0]) / 1024, float(fields[1]) + float(fields[2])
    size_mib = path.stat().st_size / MiB
    return {
        "status": status,
        "wall": wall,
        "cpu": cpu,
        "cpu_per_mib": cpu / size_mib,
        "peak_mib": peak_mib,
        "size_mib": size_mib,
    }


_LAST_SEEN: dict[str, float] = {}  # the run's process as last seen in /proc, if it is stopped


def _look(pid: int) -> None:
    """Note the peak RSS (MiB) and CPU seconds of ``pid``'s youngest descendant (kingrec
    under /usr/bin/time), so a run stopped at the timeout still has figures."""
    try:
        while True:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            if not children:
                break
            pid = int(children[-1])
        status = Path(f"/proc/{pid}/status").read_text()
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, ValueError):
        return
    peak = next((int(line.split()[1]) for line in status.splitlines() if "VmHWM" in line), None)
    if peak is None:  # a zombie: gone already
        return
    ticks = os.sysconf("SC_CLK_TCK")
    _LAST_SEEN.update(peak_mib=peak / 1024, cpu=(int(stat[11]) + int(stat[12])) / ticks)


def _wait(
    child: subprocess.Popen[bytes], timeout: float
) -> tuple[int, int, resource.struct_rusage]:
    _LAST_SEEN.clear()
    deadline = time.monotonic() + timeout
    while True:
        pid, wait_status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            child.returncode = os.waitstatus_to_exitcode(wait_status)
            return pid, wait_status, usage
        if time.monotonic() > deadline:
            raise subprocess.TimeoutExpired(child.args, timeout)
        _look(child.pid)
        time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = str(Path(sys.executable).parent / "kingrec")
    parser.add_argument("--kingrec", default=default, help="the kingrec script to run")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per run")
    parser.add_argument("--only", nargs="*", choices=sorted(FILES), default=list(FILES))
    parser.add_argument("--out", type=Path, default=HERE / "out" / "hostile")
    parser.add_argument("--json", action="store_true", help="run validate --json")
    args = parser.parse_args()
    paths = make_files(args.out, args.only)
    options = ["--json"] if args.json else []
    print(f"{args.kingrec} validate {' '.join(options)} FILE")
    print(f"{'file':<24} {'size':>9} {'exit':>18} {'wall s':>8} {'CPU s':>8} "
          f"{'CPU s/MiB':>9} {'peak RSS':>10}")  # fmt: skip
    for name, path in paths.items():
        r = measure(args.kingrec, path, args.timeout, *options)
        print(
            f"{name:<24} {r['size_mib']:>5.2f} MiB {r['status']!s:>18} {r['wall']:>8.2f} "
            f"{r['cpu']:>8.2f} {r['cpu_per_mib']:>9.3f} {r['peak_mib']:>6.0f} MiB",
            flush=True,
        )


if __name__ == "__main__":
    main()
