"""The one boundary between records (``kingrec.v1`` messages) and the engine's plain values.

The engine, its constants and the rulesets know nothing of protobuf; everything that turns a
record's values into the engine's (and back) is here, in named pairs: the ruleset
(``ruleset_from_proto`` / ``ruleset_to_proto``), the trump suit (``engine_trump`` /
``trump_to_proto``), how a deal ended (``end_to_proto``), a played deal's record
(``deal_to_proto``), whether a recorded deal can be replayed at all (``replayable``) and the
engine's arguments for it (``replay_args``).
"""

from __future__ import annotations

from typing import NamedTuple

from google.protobuf.message import Message

from ._engine_types import (
    END_ALL_TRICKS,
    END_EARLY,
    END_INCOMPLETE,
    END_REVOKE,
    PlayedDeal,
)
from .cards import mask_of
from .contracts import Contract
from .rules import Ruleset
from .ruleset_fields import (
    ENUM_OPTIONS,
    SCALAR_OPTIONS,
    SCORING_FIELDS,
    SET_OPTIONS,
    SpelledOut,
    resolve_ruleset,
)
from .v1 import record_pb2 as pb

__all__ = [
    "ReplayArgs",
    "deal_to_proto",
    "end_to_proto",
    "engine_trump",
    "named_trump",
    "replay_args",
    "replayable",
    "ruleset_from_proto",
    "ruleset_to_proto",
    "spelled_out",
    "trump_to_proto",
]

# -- trumps and deal ends -----------------------------------------------------------------


def named_trump(deal: pb.Deal) -> int:
    """The suit (0..3) the record names as trumps, whatever the contract; -1 for none."""
    return deal.trump - 1 if pb.SUIT_CLUBS <= deal.trump <= pb.SUIT_SPADES else -1


def engine_trump(deal: pb.Deal) -> int:
    """The trump suit (0..3) the engine plays the deal with; -1 for none.

    Only koz has trumps: a suit named in a penalty deal is reported once (TRUMP_NOT_ALLOWED)
    and otherwise ignored, so the one mistake turns into no cascade of findings.
    """
    return named_trump(deal) if deal.contract == pb.CONTRACT_KOZ else -1


def trump_to_proto(suit: int) -> pb.Suit.ValueType:
    """The record's ``Suit`` for an engine suit (-1: unspecified)."""
    return pb.Suit.ValueType(suit + 1 if 0 <= suit <= 3 else pb.SUIT_UNSPECIFIED)


_END_TO_PROTO: dict[int, pb.DealEnd.ValueType] = {
    END_ALL_TRICKS: pb.DEAL_END_ALL_TRICKS,
    END_EARLY: pb.DEAL_END_EARLY,
    END_INCOMPLETE: pb.DEAL_END_ABANDONED,
    END_REVOKE: pb.DEAL_END_REVOKE,
}


def end_to_proto(end: int) -> pb.DealEnd.ValueType:
    """The record's ``DealEnd`` for an engine end (a stopped replay has none: unspecified)."""
    return _END_TO_PROTO.get(end, pb.DEAL_END_UNSPECIFIED)


def deal_to_proto(out: pb.Deal, rules: Ruleset, number: int, played: PlayedDeal) -> None:
    """Fill ``out`` (a fresh ``Deal``, say ``match.deals.add()``) with the record of a deal
    played under ``rules``: its number, the dealer the ruleset gives, the trump and the trump
    think time of a koz deal, the plays with their think times, and the scores."""
    out.number = number
    out.declarer = played.declarer
    out.contract = pb.Contract.ValueType(played.contract)
    out.hands = played.hands
    out.plays = played.plays
    out.end = end_to_proto(played.end)
    out.dealer = rules.dealer_of(played.declarer)
    if played.contract == Contract.KOZ:
        out.trump = trump_to_proto(played.trump)
        if played.trump_think_ms >= 0:
            out.trump_think_ms = played.trump_think_ms
    out.think_ms.extend(played.think_ms)
    out.auto_plays.extend(played.auto_plays)
    if played.revoke_play >= 0:
        out.revoke_play = played.revoke_play
    out.claimed_scores.extend(played.scores)


# -- replaying a recorded deal --------------------------------------------------------------


def replayable(deal: pb.Deal) -> bool:
    """Whether the engine can replay ``deal``: hands partition the deck, the contract is one
    of the seven, the declarer's seat exists and a koz deal names its trumps."""
    hands = deal.hands
    return (
        len(hands) == 52
        and max(hands) < 52
        and mask_of(hands) == (1 << 52) - 1
        and deal.contract in Contract._value2member_map_
        and deal.declarer <= 3
        and (deal.contract != pb.CONTRACT_KOZ or engine_trump(deal) >= 0)
    )


class ReplayArgs(NamedTuple):
    """The engine's ``replay_deal`` arguments for one recorded deal."""

    hands: bytes
    plays: bytes
    declarer: int
    contract: int
    trump: int
    flags: int
    revoke_play: int


def replay_args(deal: pb.Deal, rules: Ruleset) -> ReplayArgs:
    """What the engine replays ``deal`` with (only for a ``replayable`` deal)."""
    return ReplayArgs(
        deal.hands,
        deal.plays,
        deal.declarer,
        deal.contract,
        engine_trump(deal),
        rules.deal_flags(deal.contract),
        deal.revoke_play if deal.HasField("revoke_play") else -1,
    )


# -- the ruleset ------------------------------------------------------------------------------


def ruleset_from_proto(msg: pb.Ruleset) -> Ruleset:
    """Resolve a record's ruleset (``kingrec.ruleset_fields.resolve_ruleset``): the preset's
    options, overridden by those spelled out.

    Raises ``RulesetError`` naming the problem: an unknown preset with options missing, an
    enum value or contract the schema does not know, or a ruleset that cannot be applied.
    """
    return resolve_ruleset(spelled_out(msg))


def spelled_out(msg: pb.Ruleset) -> SpelledOut:
    """What a decoded ruleset spells out: the fields it has, with their values."""
    options: dict[str, int | bool] = {
        option: getattr(msg, option)
        for option in (*SCALAR_OPTIONS, *ENUM_OPTIONS)
        if _has(msg, option)
    }
    sets = {
        option: list(getattr(msg, option).contracts)
        for option in (*SET_OPTIONS, "fixed_order")
        if _has(msg, option)
    }
    scoring = (
        {
            name: getattr(msg.scoring, name)
            for name in SCORING_FIELDS.values()
            if _has(msg.scoring, name)
        }
        if msg.HasField("scoring")
        else None
    )
    return SpelledOut(msg.preset or "", options, sets, scoring)


def ruleset_to_proto(rules: Ruleset) -> pb.Ruleset:
    """Every option spelled out, so readers need no preset table."""
    msg = pb.Ruleset(preset=rules.preset)
    for option in SCALAR_OPTIONS:
        setattr(msg, option, getattr(rules, option))
    for option in ENUM_OPTIONS:
        setattr(msg, option, int(getattr(rules, option)))
    for option in SET_OPTIONS:
        getattr(msg, option).SetInParent()
        getattr(msg, option).contracts.extend(sorted(getattr(rules, option)))
    if rules.fixed_order:
        msg.fixed_order.contracts.extend(pb.Contract.ValueType(c) for c in rules.fixed_order)
    for contract, field_name in SCORING_FIELDS.items():
        setattr(msg.scoring, field_name, rules.scores[contract])
    return msg


def _has(msg: Message, name: str) -> bool:
    """Presence of a field named at run time (the typed stubs only take literal names)."""
    return msg.HasField(name)
