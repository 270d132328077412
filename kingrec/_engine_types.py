"""Plain types and int codes shared by both engine twins (pure Python and Cython).

The compiled core (``_core.pxd``) holds the same numbers as C enums; ``kingrec._engine_c``
checks them against these when it is imported, so the two can never drift apart.
"""

from __future__ import annotations

from typing import NamedTuple

# The think-time rng of the match played from seed s is seeded with CLOCK_SEED + str(s), by
# both simulator twins (here so that the compiled one need not load the reference to read it).
CLOCK_SEED = "kingrec-simulate-think/"

# Engine flag bits: the options of a ruleset in force for one deal (``Ruleset.deal_flags``).
F_MUST_RUFF = 1
F_MUST_OVERTRUMP = 2
F_RAISE_ON_TRUMP_LEAD = 4
F_TRUMP_LEAD_BREAK = 8
F_HEART_LEAD_BAN = 16
F_WITHHOLDING = 32
F_VOID_DISCARD = 64
F_RIFKI_HEART_AFTER_KING = 128
F_EARLY_END = 256
F_REVOKE_PENALIZE = 512

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

# How a deal stands or ended. The proto's DealEnd differs (see ``kingrec.boundary``).
END_PLAYING = 0  # still being played
END_ALL_TRICKS = 1  # thirteen tricks
END_EARLY = 2  # the last penalty card fell (F_EARLY_END)
END_INCOMPLETE = 3  # the recorded plays ran out first
END_REVOKE = 4  # a play marked as a penalized revoke stopped it
END_UNREADABLE = 5  # a play byte that is no card stopped the replay

# What a declaration breaks in the schedule (``kingrec.schedule``).
SCHEDULE_OK = 0
SCHEDULE_QUOTA = 1  # CONTRACT_QUOTA
SCHEDULE_LIMIT = 2  # PENALTY_CONTRACT_LIMIT
SCHEDULE_NOT_SCHEDULED = 3  # CONTRACT_NOT_SCHEDULED


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


class PlayedDeal(NamedTuple):
    """One deal as played: what the record of a deal is made from (``boundary.deal_to_proto``).

    The simulator twins' ``play_match`` return these (the same tuples from both); the
    record builder makes one per deal a client played.
    """

    declarer: int
    contract: int
    trump: int  # -1 outside koz
    hands: bytes
    plays: bytes
    think_ms: list[int]
    auto_plays: list[int]
    end: int  # engine END_* code
    scores: list[int]
    trump_think_ms: int  # -1: none
    revoke_play: int = -1  # index of the play marked as a penalized revoke, or -1
