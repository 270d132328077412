"""Regenerate the Python code for the schema: ``python proto/generate.py``.

Writes kingrec/v1/*_pb2.py and their .pyi stubs from proto/kingrec/v1/*.proto, with the
pinned grpcio-tools and mypy-protobuf of the dev extra. ``--out DIR`` writes elsewhere
(the test suite uses it to check that the committed code is up to date).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def generate(out: Path) -> list[Path]:
    plugin = shutil.which("protoc-gen-mypy", path=str(Path(sys.executable).parent))
    if plugin is None:
        raise SystemExit("protoc-gen-mypy not found: pip install -e '.[dev]'")
    protos = sorted(str(p.relative_to(ROOT / "proto")) for p in (ROOT / "proto").rglob("*.proto"))
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", "-Iproto", f"--plugin=protoc-gen-mypy={plugin}",
         f"--python_out={out}", f"--mypy_out={out}", *protos],
        cwd=ROOT, check=True, capture_output=True,
    )  # fmt: skip
    return sorted(p.relative_to(out) for p in out.rglob("*_pb2*.py*"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT, help="where to write (default: repo)")
    for path in generate(parser.parse_args().out):
        print(path)
