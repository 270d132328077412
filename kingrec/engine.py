"""The rules engine: the compiled twin when it is built, else the pure-Python reference.

Both twins expose the same functions and ``Deal`` with the same results (``kingrec._twins``
picks; ``KINGREC_PURE_PYTHON=1`` forces the reference). ``TWIN`` says which one runs.
"""

from __future__ import annotations

from . import _twins
from ._engine_types import VERDICT_NAMES, DealReplay, Violation

__all__ = [
    "TWIN",
    "VERDICT_NAMES",
    "Deal",
    "DealReplay",
    "Violation",
    "judge_play",
    "legal_plays",
    "replay_deal",
    "trick_units",
    "trick_winner",
]

_engine = _twins.ACTIVE.engine
TWIN = _twins.ACTIVE.name

Deal = _engine.Deal
judge_play = _engine.judge_play
legal_plays = _engine.legal_plays
trick_winner = _engine.trick_winner
replay_deal = _engine.replay_deal
trick_units = _engine.trick_units
