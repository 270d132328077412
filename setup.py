"""Build the compiled twins; all project metadata lives in pyproject.toml."""

import sys

from Cython.Build import cythonize
from setuptools import Extension, setup

# MSVC spells its optimisation flag differently; everywhere else -O2.
_OPT = ["/O2"] if sys.platform == "win32" else ["-O3"]
# The simulator twin must round floats exactly as Python does: no fused a*b+c.
_EXACT_FLOATS = [] if sys.platform == "win32" else ["-ffp-contract=off"]

setup(
    ext_modules=cythonize(
        [
            Extension("kingrec._engine_c", ["kingrec/_engine_c.pyx"], extra_compile_args=_OPT),
            Extension("kingrec._frames_c", ["kingrec/_frames_c.pyx"], extra_compile_args=_OPT),
            Extension(
                "kingrec._fastcheck_c", ["kingrec/_fastcheck_c.pyx"], extra_compile_args=_OPT
            ),
            Extension(
                "kingrec._sim_c", ["kingrec/_sim_c.pyx"], extra_compile_args=[*_OPT, *_EXACT_FLOATS]
            ),
        ],
        compiler_directives={"language_level": 3},
    )
)
