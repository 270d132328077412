"""The benches measure the compiled twins: they refuse the pure-Python ones unless asked.

A bench run from the repository root of a non-editable install imported the source folder,
which has no compiled modules, and timed the pure twins without a word (bench_store
reported 2,166 deals/s). ``refuse_pure_twins()``, first thing in each bench's main, stops
such a run with the reason, and sets ``KINGREC_REQUIRE_COMPILED`` for the processes the
bench starts, which would otherwise fall back the same way. ``--allow-pure`` measures the
pure twins on purpose.
"""

from __future__ import annotations

import os
import sys

__all__ = ["ALLOW_PURE", "refuse_pure_twins"]

ALLOW_PURE = "--allow-pure"


def refuse_pure_twins() -> None:
    """Exit with the reason when the compiled twins are not the ones that run, unless
    ``--allow-pure`` is among the arguments (taken out of them here)."""
    if ALLOW_PURE in sys.argv[1:]:
        sys.argv.remove(ALLOW_PURE)
        return
    import kingrec
    from kingrec import _twins

    if _twins.pure_forced():
        why = "KINGREC_PURE_PYTHON is set"
    elif _twins.COMPILED is None:
        why = (
            f"the kingrec imported from {os.path.dirname(kingrec.__file__)} has no compiled "
            "twins (from a repository root, a non-editable install's source folder comes "
            "first: build it with pip install -e ., or run from elsewhere)"
        )
    else:
        os.environ["KINGREC_REQUIRE_COMPILED"] = "1"  # the bench's own processes too
        return
    script = os.path.basename(sys.argv[0])
    raise SystemExit(
        f"{script}: refusing to measure the pure-Python twins: {why}; "
        f"{ALLOW_PURE} measures them on purpose"
    )
