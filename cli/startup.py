"""The console script's first module: the command line loaded with the cycle collector off.

Loading a command creates some 100,000 objects that live as long as the process (modules,
classes, functions) and next to no garbage; the collector, left on, walks them again and
again while they are created (some 9 M instructions of the 300 M a one-match ``kingrec
validate`` costs, serial time no ``--jobs`` can split). So ``run`` turns it off before
anything is imported, and ``command_loaded`` turns it back on once the command is loaded,
with everything loaded so far frozen (``gc.freeze``): later collections, and the pages of
forked workers, leave it alone.
"""

from __future__ import annotations

import gc

__all__ = ["command_loaded", "run"]

_held = False  # whether ``run`` turned the collector off (not so when main.run is called)


def run() -> None:
    """The ``kingrec`` console script."""
    global _held
    gc.disable()
    _held = True
    from .main import run as main_run

    main_run()


def command_loaded() -> None:
    """The command that runs is loaded: the collector back on, what is loaded frozen."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.enable()
