"""Which twin runs: the one place that picks compiled or pure-Python code.

kingrec's hot paths come in twins with the same API and results: the pure-Python reference
(the readable spec) and a Cython module (the speed). ``ACTIVE`` is the compiled set when it
is built and ``KINGREC_PURE_PYTHON`` is not set, else the pure-Python set.
``KINGREC_REQUIRE_COMPILED=1`` turns a missing compiled twin into an ImportError, so a CI
whose build silently failed cannot pass on the slow path.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from types import ModuleType
from typing import NamedTuple

__all__ = ["ACTIVE", "COMPILED", "PYTHON", "Twins", "compiled_required", "pure_forced"]

# The compiled twins, in the order of Twins' fields: engine, simulator, wire-level checker,
# frame loop, the store's column builder, the par search.
_COMPILED_MODULES = (
    "kingrec._engine_c",
    "kingrec._sim_c",
    "kingrec._fastcheck_c",
    "kingrec._frames_c",
    "kingrec._columns_c",
    "kingrec.analysis._par_c",
)


def _flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


def pure_forced() -> bool:
    """``KINGREC_PURE_PYTHON`` is set: run the pure-Python reference everywhere."""
    return _flag("KINGREC_PURE_PYTHON")


def compiled_required() -> bool:
    """``KINGREC_REQUIRE_COMPILED`` is set: a missing compiled twin is an error."""
    return _flag("KINGREC_REQUIRE_COMPILED")


class Twins(NamedTuple):  # not a frozen dataclass: that cost 3 M instructions to load
    """One set of twins: the engine, the simulator, the wire-level checker, the frame loop,
    the store's column builder, the par search.

    Modules are named, and imported on first use: the simulator twins import the bots,
    which use the engine, so nothing here may import them while kingrec is loading.
    """

    name: str  # "python" or "cython"
    engine_module: str
    sim_module: str
    fastcheck_module: str | None  # None: every record takes the reference validator
    frames_module: str
    columns_module: str
    par_module: str

    @property
    def engine(self) -> ModuleType:
        return importlib.import_module(self.engine_module)

    @property
    def sim(self) -> ModuleType:
        return importlib.import_module(self.sim_module)

    @property
    def fastcheck(self) -> ModuleType | None:
        if self.fastcheck_module is None:
            return None
        return importlib.import_module(self.fastcheck_module)

    @property
    def frames(self) -> ModuleType:
        return importlib.import_module(self.frames_module)

    @property
    def columns(self) -> ModuleType:
        return importlib.import_module(self.columns_module)

    @property
    def par(self) -> ModuleType:
        return importlib.import_module(self.par_module)


PYTHON = Twins(
    "python",
    "kingrec._engine_py",
    "kingrec._sim_py",
    None,
    "kingrec._frames_py",
    "kingrec.store.rows",
    "kingrec.analysis._par_py",
)


def _compiled() -> Twins | None:
    names = _COMPILED_MODULES
    try:
        importlib.import_module(names[0])  # loading the engine checks the core's constants
        missing = [n for n in names[1:] if importlib.util.find_spec(n) is None]
        if missing:
            raise ImportError(f"{', '.join(missing)} not built")
    except (ImportError, ValueError) as exc:  # ValueError: find_spec of a blocked module
        if compiled_required():
            raise ImportError(
                f"KINGREC_REQUIRE_COMPILED is set but the compiled twins do not load ({exc}); "
                "reinstall kingrec with a C compiler"
            ) from exc
        return None
    return Twins("cython", *names)


COMPILED = _compiled()  # None when not built
ACTIVE = PYTHON if pure_forced() or COMPILED is None else COMPILED
