"""Validator behaviour beyond the samples: ruleset resolution, odd values, both paths agree."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from kingrec import fastcheck
from kingrec.findings import Location, MatchReport, Severity
from kingrec.records import Damage, read_records
from kingrec.v1 import record_pb2 as pb
from kingrec.validator import validate_match

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def _first(name: str) -> pb.Match:
    item = next(iter(read_records(str(SAMPLES / name))))
    assert not isinstance(item, Damage)
    return item.match


def _codes(match: pb.Match, twin: ModuleType) -> list[str]:
    codes = sorted({f.code for f in validate_match(match, engine=twin).findings})
    fast = fastcheck.validate_payload(match.SerializeToString(), Location())
    assert isinstance(fast, MatchReport)
    assert sorted({f.code for f in fast.findings}) == codes  # the fast path agrees
    return codes


def test_a_dealer_seat_that_does_not_exist_is_a_warning(twin: ModuleType) -> None:
    match = _first("valid/classic.krec")
    match.deals[4].dealer = 7
    assert _codes(match, twin) == ["WRONG_DEALER"]
    (finding,) = validate_match(match, engine=twin).findings
    assert finding.severity is Severity.WARNING and "does not exist" in finding.message


def test_options_spelled_out_override_the_preset(twin: ModuleType) -> None:
    """An underruff is legal in classic; spelled-out must_overtrump makes it illegal."""
    match = _first("invalid/must-overtrump.krec")
    assert _codes(match, twin) == ["MUST_OVERTRUMP"]
    match.ruleset.must_overtrump = False
    assert _codes(match, twin) == []
    match.ruleset.ClearField("must_overtrump")  # a house name: unset options are classic's
    assert _codes(match, twin) == []


def test_a_house_ruleset_spelled_out_in_full_needs_no_preset(twin: ModuleType) -> None:
    match = _first("valid/kahvehane.krec")
    match.ruleset.preset = "our café"
    assert _codes(match, twin) == []


def test_an_unknown_preset_without_options_is_reported_not_guessed(twin: ModuleType) -> None:
    match = _first("valid/classic.krec")
    match.ruleset.CopyFrom(pb.Ruleset(preset="our café"))
    (finding,) = validate_match(match, engine=twin).findings
    assert finding.code == "RULESET_INVALID" and "our café" in finding.message


def test_a_preset_name_alone_means_the_preset(twin: ModuleType) -> None:
    match = _first("valid/rotation.krec")
    match.ruleset.CopyFrom(pb.Ruleset(preset="rotation"))
    assert _codes(match, twin) == []


def test_an_in_progress_match_may_stop_mid_deal(twin: ModuleType) -> None:
    match = _first("valid/abandoned.krec")
    match.status = pb.MATCH_STATUS_IN_PROGRESS
    assert _codes(match, twin) == []
    match.status = pb.MATCH_STATUS_COMPLETE
    assert "DEAL_INCOMPLETE" in _codes(match, twin)


def test_totals_need_not_balance_when_the_quotas_cannot_be_used_up(twin: ModuleType) -> None:
    """Quota 2+3 over 16 deals: a seat declares 4 times, so koz and penalties need not cancel."""
    from kingrec.rules import preset
    from kingrec.simulate import simulate_match

    rules = preset("classic").replace(preset="sixteen", deal_count=16)
    assert not rules.is_zero_sum()
    match = simulate_match(rules, 3)
    assert sum(match.claimed_totals) != 0
    assert _codes(match, twin) == []


def _name_a_trump_that_would_win_a_trick(match: pb.Match) -> int:
    """Name as trumps, in a penalty deal, a suit someone discarded on another suit's lead:
    with it as trumps the discard would have won that trick. Returns the deal's number."""
    from kingrec.boundary import trump_to_proto

    for number, deal in enumerate(match.deals, 1):
        if deal.contract == pb.CONTRACT_KOZ:
            continue
        for t in range(0, len(deal.plays) - 3, 4):
            trick = deal.plays[t : t + 4]
            off = [c // 13 for c in trick[1:] if c // 13 != trick[0] // 13]
            if off:
                deal.trump = trump_to_proto(off[0])
                return number
    raise AssertionError("no penalty deal with a discard")


def test_a_trump_named_in_a_penalty_deal_is_reported_once_and_ignored(twin: ModuleType) -> None:
    """RULES.md: replayed and scored with no trump, so no cascade and the right scores."""
    from kingrec.replay import replay_match
    from kingrec.rules import preset
    from kingrec.simulate import simulate_match

    match = simulate_match(preset("classic"), 6)
    number = _name_a_trump_that_would_win_a_trick(match)
    report = validate_match(match, engine=twin)
    assert [(f.code, f.deal) for f in report.findings] == [("TRUMP_NOT_ALLOWED", number)]
    assert _codes(match, twin) == ["TRUMP_NOT_ALLOWED"]
    views = list(replay_match(match))
    assert views[number - 1].trump == -1
    assert views[number - 1].scores == list(match.deals[number - 1].claimed_scores)


def test_koz_in_a_penalty_option_makes_the_ruleset_invalid(twin: ModuleType) -> None:
    from kingrec.boundary import ruleset_to_proto
    from kingrec.rules import preset
    from kingrec.simulate import simulate_match

    match = simulate_match(preset("classic"), 6)
    ruleset = ruleset_to_proto(preset("classic"))
    ruleset.early_end.contracts.append(pb.CONTRACT_KOZ)
    match.ruleset.CopyFrom(ruleset)
    report = validate_match(match, engine=twin)
    assert [f.code for f in report.findings] == ["RULESET_INVALID"]
    assert "early_end lists KOZ" in report.findings[0].message
    assert _codes(match, twin) == ["RULESET_INVALID"]


def test_findings_that_follow_from_an_illegal_play_say_so(twin: ModuleType) -> None:
    """Two cards of trick 1 swapped: one real mistake, then a cascade that names it."""
    from kingrec.rules import preset
    from kingrec.simulate import simulate_match

    original = simulate_match(preset("classic"), 9)
    # The swap within trick 1 that changes its winner cascades the most: every later card
    # is then judged for the wrong seat.
    variants = []
    for i, j in [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]:
        match = pb.Match()
        match.CopyFrom(original)
        plays = bytearray(match.deals[0].plays)
        plays[i], plays[j] = plays[j], plays[i]
        match.deals[0].plays = bytes(plays)
        variants.append((len(validate_match(match, engine=twin).findings), i, match))
    _, swapped, match = max(variants, key=lambda v: v[0])
    report = validate_match(match, engine=twin)
    first = report.findings[0]
    assert first.code == "NOT_IN_HAND" and first.play == swapped and first.caused_by is None
    followers = report.findings[1:]
    assert len(followers) > 5
    assert all(f.caused_by == 0 for f in followers)
    assert {"SCORE_MISMATCH", "TOTALS_MISMATCH"} <= {f.code for f in followers}
    in_deal = [f for f in followers if f.deal == 1]
    assert first.message.endswith(
        f"The {len(in_deal)} findings after it in this deal follow from it."
    )
    assert report.to_dict()["findings"][1]["caused_by"] == 0
    assert _codes(match, twin)[0] == "NOT_IN_HAND"


def test_one_finding_that_follows_is_named_in_the_singular(twin: ModuleType) -> None:
    """An illegal card in the last trick whose only consequence in the deal is the score."""
    from kingrec.rules import preset
    from kingrec.simulate import simulate_match

    original = simulate_match(preset("classic"), 9)
    for play in range(len(original.deals[0].plays) - 4, len(original.deals[0].plays)):
        for card in range(52):
            match = pb.Match()
            match.CopyFrom(original)
            plays = bytearray(match.deals[0].plays)
            plays[play] = card
            match.deals[0].plays = bytes(plays)
            findings = validate_match(match, engine=twin).findings
            in_deal = [f for f in findings if f.deal == 1]
            if len(in_deal) == 2 and in_deal[1].caused_by == 0:
                assert in_deal[0].message.endswith(
                    "The finding after it in this deal follows from it."
                )
                return
    raise AssertionError("no edit of the last trick with exactly one consequence")
