"""Packaging, end to end: the sdist, the wheel, and an install without a C compiler.

The slow tests build one sdist, one fresh virtualenv (setuptools, no Cython) and one wheel
per run, shared through module fixtures, and install kingrec into that virtualenv: a minute
or two in all. They run with the rest of the suite (CI runs them); ``-m "not slow"`` leaves
them out while you work on something else.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from kingrec import _twins
from kingrec.protos import PROTO_DIR, RECORD_PROTO
from kingrec.v1 import record_pb2 as pb

ROOT = Path(__file__).resolve().parent.parent
BIN = "Scripts" if os.name == "nt" else "bin"
TWINS = ("_engine_c", "_frames_c", "_fastcheck_c", "_sim_c")
# The one warning setup.py gives when the twins do not compile.
FALLBACK_WARNING = "kingrec is installed WITHOUT its compiled twins"
# This machine builds the compiled twins (CI requires it): the sdist must build them too.
COMPILES = _twins.COMPILED is not None or _twins.compiled_required()

slow = pytest.mark.slow


def _env(**extra: str) -> dict[str, str]:
    """The environment, less kingrec's switches and compiler choices, plus ``extra``."""
    drop = {"CC", "CFLAGS", "CPPFLAGS", "LDSHARED", "PIP_REQUIRE_VIRTUALENV", "PYTHONPATH"}
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("KINGREC_")}
    return {**env, "PIP_DISABLE_PIP_VERSION_CHECK": "1", **extra}


def _run(
    *args: str | Path, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    # A new session: no controlling terminal, so setup.py writes its warning to the build
    # output (which pip -v shows) rather than to a developer's terminal.
    return subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=_env() if env is None else env,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
        start_new_session=True,
    )


def _ok(result: subprocess.CompletedProcess[str]) -> str:
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{' '.join(result.args)} failed:\n{output[-6000:]}"
    return output


# -- what pyproject.toml says the package is ---------------------------------------------------

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_every_package_of_the_tree_is_in_the_distribution() -> None:
    """setuptools lists its packages by hand: a new folder must be listed or the wheel lacks it."""
    listed = set(PROJECT["tool"]["setuptools"]["packages"])
    found = {
        ".".join((name, *init.parent.relative_to(ROOT / folder).parts))
        for folder, name in (
            ("kingrec", "kingrec"),
            ("cli", "kingrec_cli"),
            ("service", "kingrec_service"),
        )
        for init in (ROOT / folder).glob("**/__init__.py")
    }
    assert listed == found


def test_the_summary_promises_what_the_package_holds() -> None:
    summary = PROJECT["project"]["description"]
    parts = {
        "validator": "kingrec.validator",
        "replay": "kingrec.replay",
        "simulator": "kingrec.simulate",
        "analysis store": "kingrec.store",
    }
    for words, module in parts.items():
        place = ROOT / Path(*module.split("."))
        assert words in summary
        assert place.with_suffix(".py").exists() or (place / "__init__.py").exists()


# -- the schema's path, here ------------------------------------------------------------------


def test_protos_point_at_the_schema_the_code_was_generated_from() -> None:
    assert (PROTO_DIR / pb.DESCRIPTOR.name) == RECORD_PROTO
    assert RECORD_PROTO.is_file()
    checkout = ROOT / "proto" / pb.DESCRIPTOR.name
    if checkout.is_file():
        assert RECORD_PROTO.read_bytes() == checkout.read_bytes()


# -- the sdist ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sdist")
    setup = (sys.executable, "setup.py", "-q", "egg_info", "--egg-base", out, "sdist", "-d", out)
    _ok(_run(*setup, cwd=ROOT))
    (tarball,) = out.glob("kingrec-*.tar.gz")
    return tarball


@pytest.fixture(scope="module")
def sdist_names(sdist: Path) -> set[str]:
    with tarfile.open(sdist) as tar:
        names = tar.getnames()
    prefix = f"{sdist.name.removesuffix('.tar.gz')}/"
    assert all(n.startswith(prefix) or n == prefix[:-1] for n in names)
    return {n.removeprefix(prefix) for n in names}


def _source_files(folder: str) -> Iterator[str]:
    """The files under ROOT/folder, less caches, benchmark output and built modules."""
    for path in sorted((ROOT / folder).rglob("*")):
        rel = path.relative_to(ROOT)
        if not path.is_file() or any(p.startswith(".") or p == "__pycache__" for p in rel.parts):
            continue
        if rel.suffix in (".pyc", ".so", ".pyd") or rel.parts[:2] == ("bench", "out"):
            continue
        yield rel.as_posix()


@slow
def test_sdist_carries_what_the_tests_need(sdist_names: set[str]) -> None:
    wanted = {"README.md", "CHANGELOG.md", "LICENSE", "pyproject.toml", "setup.py", "MANIFEST.in"}
    for folder in ("proto", "samples", "tests", "bench", "docs"):
        wanted.update(_source_files(folder))
    manifest = json.loads((ROOT / "samples" / "manifest.json").read_text())["samples"]
    wanted.update(f"samples/{sample['file']}" for sample in manifest)
    for twin in TWINS:
        wanted.update(f"kingrec/{twin}.{ext}" for ext in ("pyx", "c"))
    wanted.update(f"kingrec/{p.name}" for p in (ROOT / "kingrec").glob("*.pxd"))
    assert "tests/test_packaging.py" in wanted and "samples/manifest.json" in wanted
    assert not wanted - sdist_names, f"missing from the sdist: {sorted(wanted - sdist_names)}"
    built = [n for n in sdist_names if n.endswith((".so", ".pyd", ".pyc")) or "/out/" in n]
    assert not built, f"built files in the sdist: {built}"


# -- a fresh virtualenv, and the wheel built there from the sdist --------------------------------


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with setuptools but no Cython (the builds skip build isolation)."""
    path = tmp_path_factory.mktemp("venv") / "venv"
    _ok(_run(sys.executable, "-m", "venv", path, cwd=path.parent))
    _ok(_in(path, "python", "-m", "pip", "install", "-q", "setuptools>=77"))
    assert _in(path, "python", "-c", "import Cython").returncode != 0, "the venv has Cython"
    return path


def _in(
    venv: Path, command: str, *args: str | Path, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run the virtualenv's ``command`` there (away from the checkout's kingrec)."""
    return _run(venv / BIN / command, *args, cwd=venv, env=_env(**env))


def _pip(venv: Path, *args: str | Path, **env: str) -> subprocess.CompletedProcess[str]:
    # --no-cache-dir: never reuse a wheel that pip cached from an earlier build.
    return _in(venv, "python", "-m", "pip", *args, "--no-cache-dir", **env)


@pytest.fixture(scope="module")
def wheel(venv: Path, sdist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel that the sdist builds where there is no Cython (with the C compiler)."""
    out = tmp_path_factory.mktemp("wheel")
    required = {"KINGREC_REQUIRE_COMPILED": "1"} if COMPILES else {}
    build = _pip(venv, "wheel", "--no-deps", "--no-build-isolation", "-w", out, sdist, **required)
    _ok(build)
    (built,) = out.glob("kingrec-*.whl")
    return built


@slow
def test_the_sdist_compiles_its_c_without_cython(wheel: Path) -> None:
    if not COMPILES:
        pytest.skip("this machine does not build the compiled twins")
    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
    for twin in TWINS:
        assert any(n.startswith(f"kingrec/{twin}.") and n.endswith((".so", ".pyd")) for n in names)


@slow
def test_wheel_carries_the_schema_and_not_the_c(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
        proto = whl.read("kingrec/proto/kingrec/v1/record.proto")
        dist_info = "-".join(wheel.name.split("-")[:2]) + ".dist-info"
        metadata = whl.read(f"{dist_info}/METADATA").decode()
    assert proto == (ROOT / "proto" / "kingrec" / "v1" / "record.proto").read_bytes()
    assert not [n for n in names if n.endswith(".c")], "generated C in the wheel"
    assert not [n for n in names if n.startswith(("tests/", "samples/", "bench/", "proto/"))]
    assert {"kingrec/py.typed", "kingrec/protos.py", "kingrec/_core.pxd"} <= names
    assert f"{dist_info}/licenses/LICENSE" in names
    assert "License-Expression: MIT" in metadata
    for version in ("3.11", "3.12", "3.13"):
        assert f"Classifier: Programming Language :: Python :: {version}" in metadata
    # The summary names the store, and the store is in the wheel.
    assert "analysis store" in metadata.split("\n\n", 1)[0]
    assert {"kingrec/store/__init__.py", "kingrec/builder/__init__.py"} <= names
    # The web viewer's static files, served by `kingrec serve --http`, come with the wheel.
    service = ROOT / "service"
    web = {
        f"kingrec_service/{path.relative_to(service).as_posix()}"
        for path in (service / "web").rglob("*")
        if path.is_file()
    }
    assert "kingrec_service/web/index.html" in web
    assert web | {"kingrec_service/http/__init__.py"} <= names


# -- installing without a C compiler --------------------------------------------------------------


@slow
def test_without_a_compiler_kingrec_installs_on_the_pure_twins(venv: Path, sdist: Path) -> None:
    install = _pip(venv, "install", "-v", "--no-build-isolation", sdist, CC="/nonexistent/cc")
    output = _ok(install)
    assert output.count(FALLBACK_WARNING) == 1, output[-6000:]
    assert "times slower" in output and "install a C compiler" in output

    sample = ROOT / "samples" / "valid" / "classic.krec"
    assert "2 valid, 0 invalid" in _ok(_in(venv, "kingrec", "validate", sample))
    probe = "import kingrec.engine as e, kingrec.protos as p; print(e.TWIN, p.RECORD_PROTO)"
    twin, proto = _ok(_in(venv, "python", "-c", probe)).split()
    assert twin == "python"
    assert Path(proto).is_relative_to(venv.resolve()) and Path(proto).is_file()
    # At run time the switch still turns the missing compiled twins into an error.
    required = _in(venv, "kingrec", "validate", sample, KINGREC_REQUIRE_COMPILED="1")
    assert required.returncode != 0
    assert "KINGREC_REQUIRE_COMPILED is set" in required.stderr


@slow
def test_without_a_compiler_a_required_build_fails(venv: Path, sdist: Path) -> None:
    install = _pip(
        venv,
        *("install", "--force-reinstall", "--no-deps", "--no-build-isolation", sdist),
        CC="/nonexistent/cc",
        KINGREC_REQUIRE_COMPILED="1",
    )
    output = install.stdout + install.stderr
    assert install.returncode != 0, output[-6000:]
    assert "building kingrec's compiled twins failed" in output
    assert "KINGREC_REQUIRE_COMPILED is set" in output
    assert FALLBACK_WARNING not in output
