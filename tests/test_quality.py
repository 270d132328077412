"""The project's own checks, run by the test command: lint, types, generated code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)


def test_ruff_finds_no_lint() -> None:
    result = _run(sys.executable, "-m", "ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_code_is_formatted() -> None:
    result = _run(sys.executable, "-m", "ruff", "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_passes() -> None:
    result = _run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout + result.stderr


def test_generated_protobuf_code_is_up_to_date(tmp_path: Path) -> None:
    """kingrec/v1 is generated from proto/; regenerate and compare, byte for byte."""
    result = _run(sys.executable, "proto/generate.py", "--out", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    generated = result.stdout.split()
    assert generated, "protoc wrote nothing"
    for rel in generated:
        committed = ROOT / rel
        assert committed.exists(), f"{rel} is not committed: run python proto/generate.py"
        assert committed.read_bytes() == (tmp_path / rel).read_bytes(), (
            f"{rel} is stale: run python proto/generate.py"
        )
