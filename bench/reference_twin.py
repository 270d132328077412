"""The pure par twin a census counts: this tree's, or another build's ``_par_py.py`` named by
``--reference`` (say main's, from ``git show``). Shared by the census benches, whose classes
subclass it, so it is read from the command line before the arguments are parsed."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

from kingrec.analysis import _par_py


def reference_from_argv(name: str) -> types.ModuleType:
    """The twin ``--reference PATH`` names, loaded inside the package as
    ``kingrec.analysis.NAME`` (for its relative imports); this tree's without the flag."""
    if "--reference" not in sys.argv:
        return _par_py
    path = Path(sys.argv[sys.argv.index("--reference") + 1])
    spec = importlib.util.spec_from_file_location(f"kingrec.analysis.{name}", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"{path}: not a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
