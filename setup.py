"""Build the compiled twins; all project metadata lives in pyproject.toml.

The C code of the twins comes from Cython in a checkout and ships in the sdist:

- ``kingrec/*.c`` is compiled as it is when it is newer than its ``.pyx``/``.pxd`` sources
  (always so in an sdist), or when Cython is not installed; otherwise Cython regenerates it
  first. ``KINGREC_NO_CYTHON=1`` acts as if Cython were not installed (packagers, tests).
- A failed compile (no C compiler, no Python headers) does not fail the install: kingrec
  is installed without its compiled twins and runs on the pure-Python ones (many times
  slower), after ONE warning that says so and how to fix it. ``KINGREC_REQUIRE_COMPILED=1``
  makes that failure fatal instead (CI sets it).
- The wheel carries the schema (``proto/**/*.proto``) as package data under
  ``kingrec/proto/``; ``kingrec.protos.PROTO_DIR`` finds it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist
from setuptools.errors import BaseError, CCompilerError, CompileError, SetupError

# MSVC spells its optimisation flag differently; everywhere else -O3 (measured: ~8% fewer
# instructions in the wire-level checker than -O2).
_OPT = ["/O2"] if sys.platform == "win32" else ["-O3"]
# The simulator twin must round floats exactly as Python does: no fused a*b+c.
_EXACT_FLOATS = [] if sys.platform == "win32" else ["-ffp-contract=off"]

# The compiled twins: module name -> extra compile arguments. Sources are kingrec/NAME.pyx
# (a dotted NAME lives in a subpackage: analysis._par_c is kingrec/analysis/_par_c.pyx) and
# the shared declarations kingrec/*.pxd; Cython turns them into kingrec/NAME.c.
_TWINS = {
    "_engine_c": _OPT,
    "_frames_c": _OPT,
    "_fastcheck_c": _OPT,
    "_columns_c": _OPT,
    "_sim_c": [*_OPT, *_EXACT_FLOATS],
    "analysis._par_c": _OPT,
}


def _flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


def _say(text: str) -> None:
    """Write a message the person installing sees, once.

    pip hides a successful build's output unless ``-v``; when our stderr is such a pipe and
    there is a terminal, the message goes straight to the terminal instead.
    """
    text = "\n" + text.strip("\n") + "\n\n"
    if not sys.stderr.isatty():
        try:
            with open("/dev/tty", "w", encoding="utf-8") as tty:
                tty.write(text)
            return
        except OSError:
            pass  # no terminal (CI, a container build, Windows): the build log it is
    sys.stderr.write(text)
    sys.stderr.flush()


def _cython_available() -> bool:
    if _flag("KINGREC_NO_CYTHON"):
        return False
    try:
        import Cython.Build  # noqa: F401
    except ImportError:
        return False
    return True


def _source(name: str, suffix: str) -> str:
    """The path of twin NAME's .pyx or .c: kingrec/NAME.pyx, dots as folders."""
    return str(Path("kingrec", *name.split("."))) + suffix


def _stale(name: str) -> bool:
    """kingrec/NAME.c is missing or older than a source it is generated from."""
    c_file, pyx = Path(_source(name, ".c")), Path(_source(name, ".pyx"))
    if not c_file.exists():
        return True
    text = pyx.read_text(encoding="utf-8")
    sources = [pyx, *(p for p in Path("kingrec").glob("*.pxd") if p.stem in text)]
    return c_file.stat().st_mtime < max(p.stat().st_mtime for p in sources)


def _extensions() -> list[Extension]:
    stale = [name for name in _TWINS if _stale(name)]
    if stale and _cython_available():
        from Cython.Build import cythonize

        pyx = [
            Extension(f"kingrec.{name}", [_source(name, ".pyx")], extra_compile_args=args)
            for name, args in _TWINS.items()
        ]
        # cythonize regenerates only the .c files that are out of date.
        return cythonize(pyx, compiler_directives={"language_level": 3})
    missing = [name for name in stale if not Path(_source(name, ".c")).exists()]
    if missing:
        raise SystemExit(
            f"error: {_source(missing[0], '.c')} is missing and Cython is not installed (or "
            "KINGREC_NO_CYTHON is set): pip install 'Cython>=3.1,<4', or build from the sdist, "
            "which ships the generated C"
        )
    if stale:
        _say(
            f"note: {', '.join(_source(n, '.c') for n in stale)}: older than the Cython "
            "sources, but Cython is not installed (or KINGREC_NO_CYTHON is set): compiling "
            "the C as it is"
        )
    return [
        Extension(f"kingrec.{name}", [_source(name, ".c")], extra_compile_args=args)
        for name, args in _TWINS.items()
    ]


_FALLBACK_WARNING = """\
WARNING: kingrec is installed WITHOUT its compiled twins: building the C extensions failed
  ({error}).
kingrec works, on the pure-Python twins, many times slower (simulate ~30x, validate ~100x).
To fix it, install a C compiler and the Python headers (Debian/Ubuntu: apt install gcc
python3-dev; Fedora: dnf install gcc python3-devel; macOS: xcode-select --install; Windows:
Microsoft C++ Build Tools), then reinstall kingrec. Set KINGREC_REQUIRE_COMPILED=1 to make
this an error instead."""


class BuildExtOrFallBack(build_ext):
    """build_ext that, when the compiled twins cannot be built, installs without them."""

    def run(self) -> None:
        inplace = self.inplace
        try:
            super().run()
        except (CCompilerError, BaseError) as exc:
            self.inplace = inplace  # setuptools clears it while building
            error = " ".join(str(exc).split()) or type(exc).__name__
            if _flag("KINGREC_REQUIRE_COMPILED"):
                raise CompileError(
                    f"building kingrec's compiled twins failed ({error}) and "
                    "KINGREC_REQUIRE_COMPILED is set"
                ) from exc
            self._drop_extensions()
            _say(_FALLBACK_WARNING.format(error=error))

    def _drop_extensions(self) -> None:
        """All twins or none: remove those that did build, install only pure Python."""
        for ext in self.extensions:
            built = os.path.join(self.build_lib, self.get_ext_filename(ext.name))
            if os.path.exists(built):
                os.remove(built)
        self.extensions = []


class BuildPyWithProtos(build_py):
    """build_py that also puts the schema into the wheel: kingrec/proto/<path>.proto."""

    def _protos(self) -> list[tuple[str, str]]:
        """(source, target) of every .proto file."""
        return [
            (str(proto), os.path.join(self.build_lib, "kingrec", "proto", *rel.parts))
            for proto in sorted(Path("proto").rglob("*.proto"))
            for rel in [proto.relative_to("proto")]
        ]

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return  # kingrec.protos finds the checkout's proto/ folder
        for source, target in self._protos():
            self.mkpath(os.path.dirname(target))
            self.copy_file(source, target)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = super().get_outputs(include_bytecode)
        if self.editable_mode:
            return outputs
        return [*outputs, *(target for _, target in self._protos())]


class SdistWithC(sdist):
    """sdist that refuses to ship generated C older than its Cython sources."""

    def run(self) -> None:
        stale = [name for name in _TWINS if _stale(name)]
        if stale:
            raise SetupError(
                f"{_source(stale[0], '.c')} is older than its Cython sources: install Cython "
                "(pip install -e '.[dev]') so that setup.py regenerates it"
            )
        super().run()


setup(
    ext_modules=_extensions(),
    cmdclass={"build_ext": BuildExtOrFallBack, "build_py": BuildPyWithProtos, "sdist": SdistWithC},
    # Compile the twins side by side (one job per CPU).
    options={"build_ext": {"parallel": os.cpu_count() or 1}},
)
