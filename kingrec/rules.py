"""Rulesets: the options a match was played under, and the named presets.

A record's ``Ruleset`` message names a preset and may spell out any option;
``kingrec.boundary.ruleset_from_proto`` resolves it into this fully spelled-out, immutable
form (options spelled out win over the preset). ``deal_flags`` packs what one deal needs into
the int the engine reads, and ``core_params`` gives the compiled core the whole ruleset as
one named structure. A ``Ruleset`` that cannot be applied cannot be built: every
construction is checked (``RulesetError``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from ._engine_types import (
    F_EARLY_END,
    F_HEART_LEAD_BAN,
    F_MUST_OVERTRUMP,
    F_MUST_RUFF,
    F_RAISE_ON_TRUMP_LEAD,
    F_REVOKE_PENALIZE,
    F_RIFKI_HEART_AFTER_KING,
    F_TRUMP_LEAD_BREAK,
    F_VOID_DISCARD,
    F_WITHHOLDING,
)
from .cards import DIAMONDS, TWO, make_card
from .contracts import CARD_CONTRACTS, STANDARD_UNIT_SCORES, UNITS_PER_DEAL, Contract
from .errors import RulesetError
from .limits import MAX_DEALS, MAX_FIXED_ORDER

__all__ = [
    "PRESETS",
    "DealerRule",
    "FirstDeclarerRule",
    "RevokeRule",
    "Ruleset",
    "RulesetError",
    "Schedule",
    "preset",
]


# Values match kingrec.v1's ScheduleKind, FirstDeclarerRule, DealerRule and RevokeRule
# (tests/test_boundary.py holds them to the generated code).
class Schedule(IntEnum):
    QUOTA = 1
    ROTATION = 2
    FIXED = 3


class FirstDeclarerRule(IntEnum):
    ANY_SEAT = 1
    HOLDER_OF_CARD = 2


class DealerRule(IntEnum):
    UNCHECKED = 0
    DECLARER = 1
    SEAT_BEFORE_DECLARER = 2


class RevokeRule(IntEnum):
    REJECT = 1
    PENALIZE = 2


_ALL_CARD = frozenset(CARD_CONTRACTS)
_KUPA_RIFKI = frozenset({Contract.KUPA, Contract.RIFKI})
_ERKEK_KIZ_RIFKI = frozenset({Contract.ERKEK, Contract.KIZ, Contract.RIFKI})


@dataclass(frozen=True)
class Ruleset:
    """Every option of RULES.md, spelled out. Defaults are the ``classic`` preset."""

    preset: str = "classic"
    schedule: Schedule = Schedule.QUOTA
    deal_count: int = 20
    koz_quota: int = 2
    penalty_quota: int = 3
    max_per_penalty: int = 2
    penalty_only_deals: int = 0
    fixed_order: tuple[Contract, ...] = ()
    first_declarer: FirstDeclarerRule = FirstDeclarerRule.ANY_SEAT
    first_declarer_card: int = make_card(DIAMONDS, TWO)
    dealer: DealerRule = DealerRule.UNCHECKED
    must_ruff: bool = True
    must_overtrump: bool = False
    must_raise_on_trump_lead: bool = False
    trump_lead_needs_break: bool = False
    heart_lead_ban: frozenset[Contract] = _KUPA_RIFKI
    withholding: frozenset[Contract] = _ERKEK_KIZ_RIFKI
    void_discard: frozenset[Contract] = _ALL_CARD
    rifki_heart_after_king: bool = False
    early_end: frozenset[Contract] = _ALL_CARD
    revoke: RevokeRule = RevokeRule.REJECT
    play_timeout_ms: int = 16_000
    trump_timeout_ms: int = 12_000
    scores: dict[Contract, int] = field(default_factory=lambda: dict(STANDARD_UNIT_SCORES))

    def __hash__(self) -> int:
        return hash(
            tuple(getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "scores")
        )

    def replace(self, **changes: object) -> Ruleset:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    # -- what the engine needs ------------------------------------------------

    def deal_flags(self, contract: int) -> int:
        """The engine flag bits in force for one deal of ``contract``."""
        flags = F_REVOKE_PENALIZE if self.revoke is RevokeRule.PENALIZE else 0
        if contract == Contract.KOZ:
            flags |= (
                (F_MUST_RUFF if self.must_ruff else 0)
                | (F_MUST_OVERTRUMP if self.must_overtrump else 0)
                | (F_RAISE_ON_TRUMP_LEAD if self.must_raise_on_trump_lead else 0)
                | (F_TRUMP_LEAD_BREAK if self.trump_lead_needs_break else 0)
            )
            return flags
        if contract in self.heart_lead_ban:
            flags |= F_HEART_LEAD_BAN
        if contract in self.withholding:
            flags |= F_WITHHOLDING
        if contract in self.void_discard:
            flags |= F_VOID_DISCARD
            if contract == Contract.RIFKI and self.rifki_heart_after_king:
                flags |= F_RIFKI_HEART_AFTER_KING
        if contract in self.early_end and contract in CARD_CONTRACTS:
            flags |= F_EARLY_END
        return flags

    def dealer_of(self, declarer: int) -> int:
        """The seat that deals when ``declarer`` declares (the seat before it, or itself)."""
        return (declarer + 3) % 4 if self.dealer is DealerRule.SEAT_BEFORE_DECLARER else declarer

    def unit_score(self, contract: int) -> int:
        return self.scores[Contract(contract)]

    def full_total(self, contract: int) -> int:
        """What a whole deal of ``contract`` is worth (650 for koz, -390 for kupa, …)."""
        return self.scores[Contract(contract)] * UNITS_PER_DEAL[Contract(contract)]

    def declarations_per_player(self) -> int:
        return self.deal_count // 4

    def is_zero_sum(self) -> bool:
        """Whether a complete match's totals must add up to 0 under this schedule."""
        if self.schedule is Schedule.ROTATION:
            return sum(self.full_total(c) for c in Contract) == 0
        if self.schedule is Schedule.QUOTA:
            if self.deal_count != 4 * (self.koz_quota + self.penalty_quota):
                return False  # the quotas are not all used up, so nothing forces a balance
            koz = 4 * self.koz_quota * self.full_total(Contract.KOZ)
            if 4 * self.penalty_quota != 6 * self.max_per_penalty:
                return False  # penalty contracts need not be played equally often
            pen = self.max_per_penalty * sum(
                self.full_total(c) for c in Contract if c != Contract.KOZ
            )
            return koz + pen == 0
        return False

    def deal_scores(self, contract: int, units: Sequence[int], revoker: int = -1) -> list[int]:
        """Points per seat of a deal: units times the unit score, or for a penalized revoke
        the contract's whole total against the revoker and nothing else."""
        if revoker >= 0:
            scores = [0, 0, 0, 0]
            scores[revoker] = -abs(self.full_total(contract))
            return scores
        unit = self.unit_score(contract)
        return [u * unit for u in units]

    def core_params(self) -> dict[str, object]:
        """The whole ruleset for the compiled core: the fields of ``CoreRules`` in
        ``_core.pxd``, by name (per-contract lists are indexed by contract number)."""
        contracts = [0, *Contract]  # index 0 stands for no contract
        return {
            "flags": [self.deal_flags(c) if c else 0 for c in contracts],
            "unit": [self.unit_score(c) if c else 0 for c in contracts],
            "full_total": [self.full_total(c) if c else 0 for c in contracts],
            "deal_count": self.deal_count,
            "schedule": int(self.schedule),
            "koz_quota": self.koz_quota,
            "penalty_quota": self.penalty_quota,
            "max_per_penalty": self.max_per_penalty,
            "penalty_only_deals": self.penalty_only_deals,
            "first_declarer": int(self.first_declarer),
            "first_card": self.first_declarer_card,
            "dealer": int(self.dealer),
            "penalize": self.revoke is RevokeRule.PENALIZE,
            "play_timeout": self.play_timeout_ms,
            "trump_timeout": self.trump_timeout_ms,
            "zero_sum": self.is_zero_sum(),
            "nfixed": len(self.fixed_order),
            "fixed_order": [*self.fixed_order, *[0] * (MAX_FIXED_ORDER - len(self.fixed_order))],
        }

    def __post_init__(self) -> None:
        if self.deal_count <= 0:
            raise RulesetError("ruleset deal_count must be positive")
        if self.deal_count > MAX_DEALS:
            raise RulesetError(
                f"ruleset deal_count is {self.deal_count}; at most {MAX_DEALS} deals are allowed"
            )
        if self.schedule is Schedule.FIXED and not self.fixed_order:
            raise RulesetError("a fixed-order schedule needs fixed_order contracts")
        if len(self.fixed_order) > MAX_FIXED_ORDER:
            raise RulesetError(
                f"ruleset fixed_order lists {len(self.fixed_order)} contracts; "
                f"at most {MAX_FIXED_ORDER} are allowed"
            )
        if not 0 <= self.first_declarer_card < 52:
            raise RulesetError(f"first_declarer_card {self.first_declarer_card} is not a card code")
        for option in ("heart_lead_ban", "withholding", "void_discard", "early_end"):
            if Contract.KOZ in getattr(self, option):
                raise RulesetError(
                    f"ruleset option {option} lists KOZ, but it holds penalty contracts only"
                )


_CLASSIC = Ruleset()
PRESETS: dict[str, Ruleset] = {
    "classic": _CLASSIC,
    "short": _CLASSIC.replace(preset="short", deal_count=8, koz_quota=1, penalty_quota=1),
    "rotation": _CLASSIC.replace(
        preset="rotation",
        schedule=Schedule.ROTATION,
        deal_count=28,
        koz_quota=1,
        penalty_quota=6,
        max_per_penalty=4,
        rifki_heart_after_king=True,
    ),
    "plain": _CLASSIC.replace(
        preset="plain",
        heart_lead_ban=frozenset(),
        withholding=frozenset(),
        void_discard=frozenset(),
    ),
    "kahvehane": _CLASSIC.replace(
        preset="kahvehane",
        must_raise_on_trump_lead=True,
        trump_lead_needs_break=True,
        rifki_heart_after_king=True,
    ),
}


def preset(name: str) -> Ruleset:
    """A named preset (``classic``, ``short``, ``rotation``, ``plain``, ``kahvehane``)."""
    try:
        return PRESETS[name.lower()]
    except KeyError:
        raise RulesetError(f"unknown preset {name!r} (known: {', '.join(PRESETS)})") from None
