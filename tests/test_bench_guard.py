"""bench/: every bench refuses to time the pure-Python twins unless told ``--allow-pure``.

bench_store, run from the repository root of a non-editable install, once imported the
source folder (no compiled modules) and reported the pure twins' 2,166 deals/s as its figure.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHES = sorted(p.name for p in (ROOT / "bench").glob("bench_*.py"))


def _bench(name: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("KINGREC_")}
    return subprocess.run(
        [sys.executable, str(ROOT / "bench" / name), *args], capture_output=True, text=True,
        env={**clean, **env}, cwd=ROOT, check=False, timeout=120,
    )  # fmt: skip


def test_there_are_benches_to_guard() -> None:
    assert {"bench_store.py", "bench_validate.py", "bench_service.py"} <= set(BENCHES)


@pytest.mark.parametrize("name", BENCHES)
def test_a_bench_on_the_pure_twins_is_refused_with_the_reason(name: str) -> None:
    result = _bench(name, "--help", env={"KINGREC_PURE_PYTHON": "1"})
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (
        f"{name}: refusing to measure the pure-Python twins: KINGREC_PURE_PYTHON is set; "
        "--allow-pure measures them on purpose\n"
    )
    allowed = _bench(name, "--allow-pure", "--help", env={"KINGREC_PURE_PYTHON": "1"})
    assert allowed.returncode == 0 and allowed.stdout.startswith("usage: "), allowed.stderr
    assert "--allow-pure" not in allowed.stdout  # taken out before the bench's own options


def test_a_bench_that_imports_a_kingrec_without_compiled_twins_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What a source folder without built modules gives (an editable install's finder comes
    before any path, so this process stands in for one)."""
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    from compiled_only import refuse_pure_twins

    import kingrec
    from kingrec import _twins

    monkeypatch.setattr(_twins, "COMPILED", None)
    monkeypatch.delenv("KINGREC_PURE_PYTHON", raising=False)
    monkeypatch.setattr(sys, "argv", ["bench_store.py", "--matches", "10"])
    with pytest.raises(SystemExit) as stopped:
        refuse_pure_twins()
    assert str(stopped.value) == (
        "bench_store.py: refusing to measure the pure-Python twins: the kingrec imported from "
        f"{os.path.dirname(kingrec.__file__)} has no compiled twins (from a repository root, a "
        "non-editable install's source folder comes first: build it with pip install -e ., or "
        "run from elsewhere); --allow-pure measures them on purpose"
    )
    monkeypatch.setattr(sys, "argv", ["bench_store.py", "--allow-pure", "--matches", "10"])
    refuse_pure_twins()
    assert sys.argv == ["bench_store.py", "--matches", "10"]


def test_the_processes_a_bench_starts_must_load_the_compiled_twins_too() -> None:
    code = (
        "import os, sys; sys.path.insert(0, 'bench'); sys.argv = ['bench_x.py'];"
        "from compiled_only import refuse_pure_twins; refuse_pure_twins();"
        "print(os.environ['KINGREC_REQUIRE_COMPILED'])"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("KINGREC_")}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=clean, cwd=ROOT, check=False, timeout=60)  # fmt: skip
    assert (result.returncode, result.stdout) == (0, "1\n"), result.stderr


def test_bench_store_ingests_with_its_own_kingrec_whatever_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its ingest runs in a child process (``python -c``); from a folder holding another
    kingrec, the child once imported that one and measured the wrong code."""
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    import bench_store

    import kingrec
    from kingrec.simrun import simulate_to_file

    records = tmp_path / "two.krec"
    simulate_to_file(str(records), "classic", 2, 7, fmt="krec", jobs=1)
    decoy = tmp_path / "elsewhere" / "kingrec"
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text("raise SystemExit('the decoy kingrec was imported')\n")
    monkeypatch.chdir(decoy.parent)
    monkeypatch.setenv("PYTHONPATH", str(decoy.parent))  # nor does PYTHONPATH lead it astray
    result = bench_store.ingest(records, tmp_path / "two.duckdb", 64)
    assert result["stored"] == 2 and result["deals"] == 40
    assert 0 < result["plays"] <= 40 * 52  # a deal may end before its last trick
    assert os.path.dirname(kingrec.__file__) == str(ROOT / "kingrec")
