"""Rulesets: the options a match was played under, and the named presets.

A record's ``Ruleset`` message names a preset and may spell out any option;
``Ruleset.from_proto`` resolves it into this fully spelled-out, immutable form
(options spelled out win over the preset). ``deal_flags`` packs what one deal
needs into the int the engine reads.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import IntEnum

from google.protobuf.message import Message

from .cards import DIAMONDS, TWO, make_card
from .contracts import CARD_CONTRACTS, STANDARD_UNIT_SCORES, UNITS_PER_DEAL, Contract
from .v1 import record_pb2 as pb

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

# Engine flag bits (shared with the Cython twin: keep in step with _engine_c.pyx).
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


class RulesetError(ValueError):
    """A ruleset that cannot be resolved (unknown preset with options missing, bad values)."""


class Schedule(IntEnum):
    QUOTA = pb.SCHEDULE_KIND_QUOTA
    ROTATION = pb.SCHEDULE_KIND_ROTATION
    FIXED = pb.SCHEDULE_KIND_FIXED


class FirstDeclarerRule(IntEnum):
    ANY_SEAT = pb.FIRST_DECLARER_RULE_ANY_SEAT
    HOLDER_OF_CARD = pb.FIRST_DECLARER_RULE_HOLDER_OF_CARD


class DealerRule(IntEnum):
    UNCHECKED = pb.DEALER_RULE_UNSPECIFIED
    DECLARER = pb.DEALER_RULE_DECLARER
    SEAT_BEFORE_DECLARER = pb.DEALER_RULE_SEAT_BEFORE_DECLARER


class RevokeRule(IntEnum):
    REJECT = pb.REVOKE_RULE_REJECT
    PENALIZE = pb.REVOKE_RULE_PENALIZE


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

    # -- proto boundary -------------------------------------------------------

    @classmethod
    def from_proto(cls, msg: pb.Ruleset) -> Ruleset:
        """Resolve a record's ruleset: the preset's options, overridden by those spelled out."""
        name = msg.preset or ""
        base = PRESETS.get(name.lower())
        if base is None:
            missing = [f for f in _REQUIRED_WITHOUT_PRESET if not _has(msg, f)]
            if missing:
                what = f"unknown preset {name!r}" if name else "no preset"
                raise RulesetError(
                    f"{what} and options not spelled out: {', '.join(missing)} "
                    f"(known presets: {', '.join(PRESETS)})"
                )
            base = PRESETS["classic"].replace(preset=name)
        changes: dict[str, object] = {}
        for name_ in _SCALAR_OPTIONS:
            if _has(msg, name_):
                changes[name_] = getattr(msg, name_)
        for name_, kind in _ENUM_OPTIONS.items():
            if _has(msg, name_):
                value = getattr(msg, name_)
                try:
                    changes[name_] = kind(value)
                except ValueError:
                    raise RulesetError(
                        f"ruleset option {name_} has unknown value {value}"
                    ) from None
        for name_ in _SET_OPTIONS:
            if _has(msg, name_):
                changes[name_] = frozenset(_contracts(getattr(msg, name_).contracts, name_))
        if msg.HasField("fixed_order"):
            changes["fixed_order"] = tuple(_contracts(msg.fixed_order.contracts, "fixed_order"))
        if msg.HasField("scoring"):
            scores = dict(base.scores)
            for contract, field_name in _SCORING_FIELDS.items():
                if _has(msg.scoring, field_name):
                    scores[contract] = getattr(msg.scoring, field_name)
            changes["scores"] = scores
        rules = base.replace(**changes) if changes else base
        rules._check()
        return rules

    def to_proto(self) -> pb.Ruleset:
        """Every option spelled out, so readers need no preset table."""
        msg = pb.Ruleset(preset=self.preset)
        for name_ in _SCALAR_OPTIONS:
            setattr(msg, name_, getattr(self, name_))
        for name_ in _ENUM_OPTIONS:
            setattr(msg, name_, int(getattr(self, name_)))
        for name_ in _SET_OPTIONS:
            getattr(msg, name_).SetInParent()
            getattr(msg, name_).contracts.extend(sorted(getattr(self, name_)))
        if self.fixed_order:
            msg.fixed_order.contracts.extend(pb.Contract.ValueType(c) for c in self.fixed_order)
        for contract, field_name in _SCORING_FIELDS.items():
            setattr(msg.scoring, field_name, self.scores[contract])
        return msg

    def _check(self) -> None:
        if self.deal_count <= 0:
            raise RulesetError("ruleset deal_count must be positive")
        if self.schedule is Schedule.FIXED and not self.fixed_order:
            raise RulesetError("a fixed-order schedule needs fixed_order contracts")
        if not 0 <= self.first_declarer_card < 52:
            raise RulesetError(f"first_declarer_card {self.first_declarer_card} is not a card code")


_SCALAR_OPTIONS = (
    "deal_count",
    "koz_quota",
    "penalty_quota",
    "max_per_penalty",
    "penalty_only_deals",
    "first_declarer_card",
    "must_ruff",
    "must_overtrump",
    "must_raise_on_trump_lead",
    "trump_lead_needs_break",
    "rifki_heart_after_king",
    "play_timeout_ms",
    "trump_timeout_ms",
)
_ENUM_OPTIONS: dict[str, type[IntEnum]] = {
    "schedule": Schedule,
    "first_declarer": FirstDeclarerRule,
    "dealer": DealerRule,
    "revoke": RevokeRule,
}
_SET_OPTIONS = ("heart_lead_ban", "withholding", "void_discard", "early_end")
_SCORING_FIELDS = {
    Contract.KOZ: "koz_trick",
    Contract.EL_ALMAZ: "el_almaz_trick",
    Contract.KUPA: "kupa_heart",
    Contract.ERKEK: "erkek_card",
    Contract.KIZ: "kiz_queen",
    Contract.RIFKI: "rifki_king",
    Contract.SON_IKI: "son_iki_trick",
}
# Without a known preset these must be spelled out; the rest default as in classic.
_REQUIRED_WITHOUT_PRESET = (
    "schedule",
    "deal_count",
    "must_ruff",
    "heart_lead_ban",
    "withholding",
    "void_discard",
    "early_end",
)


def _has(msg: Message, name: str) -> bool:
    """Presence of a field named at run time (the typed stubs only take literal names)."""
    return msg.HasField(name)


def _contracts(values: object, option: str) -> list[Contract]:
    out = []
    for v in values:  # type: ignore[attr-defined]
        try:
            out.append(Contract(v))
        except ValueError:
            raise RulesetError(f"ruleset option {option} names unknown contract {v}") from None
    return out


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
