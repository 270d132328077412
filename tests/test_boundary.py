"""The one boundary between records and the engine (kingrec.boundary): enum numbers agree,
rulesets round-trip, and a recorded deal turns into the engine's arguments."""

from __future__ import annotations

import pytest

from kingrec._engine_types import (
    END_ALL_TRICKS,
    END_EARLY,
    END_INCOMPLETE,
    END_REVOKE,
    END_UNREADABLE,
)
from kingrec.boundary import (
    end_to_proto,
    engine_trump,
    named_trump,
    replay_args,
    replayable,
    ruleset_from_proto,
    ruleset_to_proto,
    trump_to_proto,
)
from kingrec.contracts import Contract
from kingrec.errors import RulesetError
from kingrec.rules import PRESETS, DealerRule, FirstDeclarerRule, RevokeRule, Schedule, preset
from kingrec.simulate import simulate_match
from kingrec.v1 import record_pb2 as pb


def test_the_engines_enums_have_the_schemas_numbers() -> None:
    def numbers(enum: object, prefix: str) -> dict[str, int]:
        values = enum.items()  # type: ignore[attr-defined]
        return {
            name.removeprefix(prefix): int(v) for name, v in values if "UNSPECIFIED" not in name
        }

    assert numbers(pb.Contract, "CONTRACT_") == {c.name: int(c) for c in Contract}
    assert numbers(pb.ScheduleKind, "SCHEDULE_KIND_") == {s.name: int(s) for s in Schedule}
    assert numbers(pb.FirstDeclarerRule, "FIRST_DECLARER_RULE_") == {
        f.name: int(f) for f in FirstDeclarerRule
    }
    assert numbers(pb.RevokeRule, "REVOKE_RULE_") == {r.name: int(r) for r in RevokeRule}
    dealer = {d.name: int(d) for d in DealerRule if d is not DealerRule.UNCHECKED}
    assert numbers(pb.DealerRule, "DEALER_RULE_") == {
        "DECLARER": dealer["DECLARER"],
        "SEAT_BEFORE_DECLARER": dealer["SEAT_BEFORE_DECLARER"],
    }
    assert int(pb.DEALER_RULE_UNSPECIFIED) == DealerRule.UNCHECKED


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_a_ruleset_round_trips_with_every_option_spelled_out(name: str) -> None:
    msg = ruleset_to_proto(PRESETS[name])
    assert msg.HasField("deal_count") and msg.HasField("heart_lead_ban")
    assert ruleset_from_proto(msg) == PRESETS[name]
    bare = pb.Ruleset(preset=name)
    assert ruleset_from_proto(bare) == PRESETS[name]


def test_options_without_a_known_preset_must_be_spelled_out() -> None:
    with pytest.raises(RulesetError, match="unknown preset 'cafe' and options not spelled out"):
        ruleset_from_proto(pb.Ruleset(preset="cafe"))
    msg = ruleset_to_proto(preset("plain"))
    msg.preset = "cafe"
    assert ruleset_from_proto(msg) == preset("plain").replace(preset="cafe")
    msg.schedule = 9  # type: ignore[assignment]
    with pytest.raises(RulesetError, match="schedule has unknown value 9"):
        ruleset_from_proto(msg)


def test_trumps_and_ends_convert_in_named_pairs() -> None:
    for suit in range(4):
        deal = pb.Deal(contract=pb.CONTRACT_KOZ, trump=trump_to_proto(suit))
        assert named_trump(deal) == engine_trump(deal) == suit
    assert trump_to_proto(-1) == pb.SUIT_UNSPECIFIED
    assert engine_trump(pb.Deal(contract=pb.CONTRACT_KOZ)) == -1
    assert end_to_proto(END_ALL_TRICKS) == pb.DEAL_END_ALL_TRICKS
    assert end_to_proto(END_EARLY) == pb.DEAL_END_EARLY
    assert end_to_proto(END_INCOMPLETE) == pb.DEAL_END_ABANDONED
    assert end_to_proto(END_REVOKE) == pb.DEAL_END_REVOKE
    assert end_to_proto(END_UNREADABLE) == pb.DEAL_END_UNSPECIFIED


def test_a_deal_is_replayable_only_with_a_whole_deck_a_seat_a_contract_and_its_trump() -> None:
    match = simulate_match(preset("classic"), 3)
    deal = match.deals[0]
    assert replayable(deal)
    args = replay_args(deal, preset("classic"))
    assert args.hands == deal.hands and args.declarer == deal.declarer
    assert args.flags == preset("classic").deal_flags(deal.contract) and args.revoke_play == -1

    def short_hands(d: pb.Deal) -> None:
        d.hands = d.hands[:51]

    def doubled_card(d: pb.Deal) -> None:
        d.hands = d.hands[:51] + d.hands[:1]

    def no_seat(d: pb.Deal) -> None:
        d.declarer = 4

    def no_contract(d: pb.Deal) -> None:
        d.contract = 9  # type: ignore[assignment]

    def koz_without_trumps(d: pb.Deal) -> None:
        d.contract = pb.CONTRACT_KOZ
        d.trump = pb.SUIT_UNSPECIFIED

    for edit in (short_hands, doubled_card, no_seat, no_contract, koz_without_trumps):
        broken = pb.Deal()
        broken.CopyFrom(deal)
        edit(broken)
        assert not replayable(broken), edit.__name__


def test_the_engine_and_its_constants_load_no_protobuf_code() -> None:
    """Only the boundary knows the records: the engine twins, the rules, the schedule and the
    deal state import nothing of ``kingrec.v1`` (nor protobuf)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import kingrec._engine_py, kingrec._engine_types, kingrec.engine, kingrec.game\n"
        "import kingrec.rules, kingrec.schedule, kingrec.contracts, kingrec.cards\n"
        "print(sorted(m for m in sys.modules if m.startswith(('kingrec.v1', 'google'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
