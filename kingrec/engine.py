"""The rules engine: picks the Cython twin when it is built, else the pure-Python one.

``KINGREC_PURE_PYTHON=1`` forces the pure-Python reference. Both twins expose the same
functions with the same results; ``TWIN`` says which one runs.
"""

from __future__ import annotations

import os
from types import ModuleType

from . import _engine_py
from ._engine_types import VERDICT_NAMES, DealReplay, Violation

__all__ = [
    "TWIN",
    "VERDICT_NAMES",
    "DealReplay",
    "Violation",
    "judge_play",
    "legal_plays",
    "load_twin",
    "replay_deal",
    "trick_units",
    "trick_winner",
]


def load_twin(pure: bool) -> ModuleType:
    """The twin to use: the compiled one unless ``pure`` or it is not built."""
    if pure:
        return _engine_py
    try:
        from . import _engine_c  # type: ignore[attr-defined]
    except ImportError:
        return _engine_py
    return _engine_c  # type: ignore[no-any-return]


_twin = load_twin(os.environ.get("KINGREC_PURE_PYTHON", "") not in ("", "0"))
TWIN = "cython" if _twin is not _engine_py else "python"

judge_play = _twin.judge_play
legal_plays = _twin.legal_plays
trick_winner = _twin.trick_winner
replay_deal = _twin.replay_deal
trick_units = _twin.trick_units
