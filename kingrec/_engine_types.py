"""Plain types and int codes shared by both engine twins (pure Python and Cython)."""

from __future__ import annotations

from typing import NamedTuple

# Play verdicts, in the order the filters of RULES.md "Which rule a bad card breaks" run.
LEGAL = 0
NOT_IN_HAND = 1
TRUMP_LEAD_BANNED = 2
HEART_LEAD_BANNED = 3
MUST_FOLLOW_SUIT = 4
MUST_RAISE_TRUMP = 5
MUST_GIVE_PENALTY_CARD = 6
MUST_RUFF = 7
MUST_OVERTRUMP = 8
MUST_DISCARD_PENALTY_CARD = 9
NOT_A_CARD = 10  # a play byte >= 52: the rest of the deal cannot be replayed
REVOKE_MARK_ON_LEGAL_PLAY = 11

VERDICT_NAMES = (
    "LEGAL",
    "NOT_IN_HAND",
    "TRUMP_LEAD_BANNED",
    "HEART_LEAD_BANNED",
    "MUST_FOLLOW_SUIT",
    "MUST_RAISE_TRUMP",
    "MUST_GIVE_PENALTY_CARD",
    "MUST_RUFF",
    "MUST_OVERTRUMP",
    "MUST_DISCARD_PENALTY_CARD",
    "NOT_A_CARD",
    "REVOKE_MARK_ON_LEGAL_PLAY",
)

# How a replayed deal ended (values match kingrec.v1.DealEnd; 0 = replay had to stop).
END_UNREADABLE = 0
END_ALL_TRICKS = 1
END_EARLY = 2
END_INCOMPLETE = 3
END_REVOKE = 4


class Violation(NamedTuple):
    """An illegal play found while replaying a deal."""

    play: int  # index into the deal's plays
    seat: int
    card: int
    code: int  # one of the verdict codes above
    legal: int  # mask of the cards that were legal


class DealReplay(NamedTuple):
    """What replaying one deal's plays gives."""

    end: int  # END_* code
    consumed: int  # plays that belong to the deal; any after these came after its end
    winners: bytes  # winning seat of each completed trick
    units: tuple[int, int, int, int]  # scoring units per seat (tricks, penalty cards, …)
    revoker: int  # seat of a penalized revoke, or -1
    violations: list[Violation]
