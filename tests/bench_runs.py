"""The bench scripts run as a user runs them, for the tests of bench/ (tests/test_bench_*.py):
a command in the checkout with no ``KINGREC_`` setting of the test run, and a small
simulated file to run them on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
KINGREC = Path(sys.executable).parent / "kingrec"


def run(*command: str, timeout: int = 240) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("KINGREC_")}
    return subprocess.run(
        list(command), capture_output=True, text=True, env=clean, cwd=ROOT, check=False,
        timeout=timeout,
    )  # fmt: skip


def simulated(path: Path, matches: int) -> Path:
    """``matches`` classic matches (seed 7) simulated into ``path``."""
    made = run(str(KINGREC), "simulate", "--no-progress", "-q", "--seed", "7",
               "--matches", str(matches), "-o", str(path))  # fmt: skip
    assert made.returncode == 0, made.stderr
    return path
