"""Regenerate the Python code for the schema: ``python proto/generate.py``.

Writes, with the pinned grpcio-tools and mypy-protobuf of the dev extra:

- ``kingrec/v1/*_pb2.py`` and their ``.pyi`` stubs: the messages of every
  ``proto/kingrec/v1/*.proto`` (the library imports only ``record_pb2``; the service's
  messages sit beside it and are imported by the service alone);
- ``service/_pb/*_pb2_grpc.py`` and their ``.pyi`` stubs: the gRPC stubs and servicer
  bases of the protos that define services, kept out of the library, which never imports
  grpc (installed as ``kingrec_service._pb``).

``--out DIR`` writes the same tree under DIR instead (the test suite uses it to check that
the committed code is up to date); the paths written are printed, relative to DIR.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO = ROOT / "proto"
GRPC_STUBS = Path("service", "_pb")  # where the gRPC stubs go, relative to the output root


def _plugin(name: str) -> str:
    plugin = shutil.which(name, path=str(Path(sys.executable).parent))
    if plugin is None:
        raise SystemExit(f"{name} not found: pip install -e '.[dev]'")
    return plugin


def _protoc(*args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTO}", *args],
        cwd=ROOT, check=True, capture_output=True,
    )  # fmt: skip


def generate(out: Path) -> list[Path]:
    """Write the generated code under ``out``; the paths written, relative to ``out``."""
    protos = sorted(str(p.relative_to(PROTO)) for p in PROTO.rglob("*.proto"))
    services = [p for p in protos if "\nservice " in (PROTO / p).read_text(encoding="utf-8")]
    _protoc(
        f"--plugin=protoc-gen-mypy={_plugin('protoc-gen-mypy')}",
        f"--python_out={out}", f"--mypy_out={out}", *protos,
    )  # fmt: skip
    written = [Path(p).with_name(Path(p).stem + suffix) for p in protos for suffix in _MESSAGES]
    with tempfile.TemporaryDirectory() as tmp:
        _protoc(
            f"--plugin=protoc-gen-mypy_grpc={_plugin('protoc-gen-mypy_grpc')}",
            f"--grpc_python_out={tmp}", f"--mypy_grpc_out={tmp}", *services,
        )  # fmt: skip
        (out / GRPC_STUBS).mkdir(parents=True, exist_ok=True)
        for proto in services:
            for suffix in _STUBS:
                name = Path(proto).stem + suffix
                shutil.copyfile(Path(tmp, Path(proto).parent, name), out / GRPC_STUBS / name)
                written.append(GRPC_STUBS / name)
    missing = [p for p in written if not (out / p).is_file()]
    if missing:
        raise SystemExit(f"protoc did not write {', '.join(map(str, missing))}")
    return sorted(written)


_MESSAGES = ("_pb2.py", "_pb2.pyi")
_STUBS = ("_pb2_grpc.py", "_pb2_grpc.pyi")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT, help="where to write (default: repo)")
    out = parser.parse_args().out.resolve()
    for path in generate(out):
        print(path)
