"""The record builder (kingrec.builder): a client's game in, a checked, scored record out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kingrec import (
    IllegalPlayError,
    LimitError,
    MatchBuilder,
    RecordBuildError,
    RulesetError,
    build_match,
    card_name,
    parse_card,
)
from kingrec._twins import Twins
from kingrec.builder import DealBuilder, DealInput, PlayerInfo
from kingrec.contracts import Contract
from kingrec.rules import PRESETS, DealerRule, RevokeRule, Ruleset, Schedule, preset
from kingrec.simulate import simulate_match
from kingrec.v1 import record_pb2 as pb
from kingrec.validator import validate_match

from rulesets import HOUSE

NAMES = ["Ayşe", "Mehmet", "Zeynep", "Emre"]


def _hand(*specs: str) -> list[str]:
    """Cards by suit letter and ranks: ``_hand("C2345678", "D234567")``."""
    return [rank + spec[0] for spec in specs for rank in spec[1:]]


# Seat 0 holds low clubs and diamonds, seat 1 the high ones, seat 2 the hearts, seat 3 the
# spades: seat 1 can always follow seat 0's lead, seats 2 and 3 never can.
HANDS = [
    _hand("C2345678", "D234567"),
    _hand("C9TJQKA", "D89TJQKA"),
    _hand("H23456789TJQKA"),
    _hand("S23456789TJQKA"),
]
# The same, but seat 2's ♥A and seat 3's ♠2 swapped: seat 2 holds one spade.
SWAPPED = [HANDS[0], HANDS[1], [*HANDS[2][:12], "2S"], ["AH", *HANDS[3][1:]]]


def _assert_clean(match: pb.Match) -> None:
    report = validate_match(match)
    assert report.findings == [], [f.message for f in report.findings]


def _play_out(deal: DealBuilder) -> None:
    """Play the deal to its end, each seat its lowest legal card."""
    while not deal.over:
        deal.play(deal.legal_cards()[0])


def _next_hands(seed: int) -> list[list[int]]:
    """Some shuffled hands (the bots' deal of a simulated match)."""
    hands = simulate_match(preset("short"), seed).deals[0].hands
    return [list(hands[13 * s : 13 * s + 13]) for s in range(4)]


SHORT_CONTRACTS = ["koz", "koz", "koz", "koz", "el_almaz", "kupa", "erkek", "kiz"]


def _short_with_deals(n: int, first: int = 0) -> MatchBuilder:
    """A short match with its first ``n`` deals played out: each seat declares koz, then
    a penalty contract, the lowest legal card played every time."""
    b = MatchBuilder(NAMES, "short", match_id="m")
    for number in range(1, n + 1):
        seat = (first + number - 1) % 4
        contract = SHORT_CONTRACTS[number - 1]
        trump = "S" if contract == "koz" else None
        _play_out(b.deal(_next_hands(number), seat, contract, trump))
    return b


# -- the property: simulated games rebuilt give the simulated records -----------------------


def _players_of(match: pb.Match) -> list[str | PlayerInfo]:
    return [PlayerInfo(id=p.id, name=p.name, seat=p.seat) for p in match.players]


def _deal_inputs(match: pb.Match, *, names: bool) -> list[DealInput]:
    """What a client knew of each deal of ``match``: the builder's input."""
    out: list[DealInput] = []
    for deal in match.deals:
        cards = [card_name(c) if names else c for c in deal.hands]
        spec = DealInput(
            hands=[cards[13 * s : 13 * s + 13] for s in range(4)],
            declarer=deal.declarer,
            contract=Contract(deal.contract).name if names else deal.contract,
            plays=[card_name(c) if names else c for c in deal.plays],
            auto_plays=list(deal.auto_plays),
        )
        if deal.trump:
            spec["trump"] = "CDHS"[deal.trump - 1] if names else deal.trump - 1
        if deal.HasField("trump_think_ms"):
            spec["trump_think_ms"] = deal.trump_think_ms
        if deal.think_ms:
            spec["think_ms"] = list(deal.think_ms)
        if deal.HasField("revoke_play"):
            spec["revoke_play"] = deal.revoke_play
        out.append(spec)
    return out


def _rebuild(
    match: pb.Match, rules: Ruleset, *, names: bool = True, twins: Twins | None = None
) -> pb.Match:
    """``match`` built again by ``build_match`` from what its client knew."""
    meta = match.metadata
    return build_match(
        players=_players_of(match),
        rules=rules,
        deals=_deal_inputs(match, names=names),
        abandoned=match.status_reason if match.status == pb.MATCH_STATUS_ABANDONED else None,
        match_id=match.match_id,
        event=meta.event,
        site=meta.site,
        start_time=meta.start_time.ToDatetime(tzinfo=UTC),
        client_name=meta.client_name,
        client_version=meta.client_version,
        tags=dict(meta.tags),
        direction="anticlockwise",
        twins=twins,
    )


_RULESETS = {**PRESETS, **HOUSE}


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(sorted(_RULESETS)),
    seed=st.integers(0, 2**32),
    variant=st.sampled_from(["whole", "abandoned", "revoke"]),
    names=st.booleans(),
)
def test_simulated_games_rebuilt_give_the_simulated_records(
    twins: Twins, name: str, seed: int, variant: str, names: bool
) -> None:
    """Whatever bots play (any preset or house ruleset, whole, abandoned or with a penalized
    revoke), feeding their hands, declarers, contracts, trumps, plays and clocks to the
    builder gives back the simulated record exactly, and it validates without a finding."""
    rules = _RULESETS[name]
    if variant == "whole":
        sim = simulate_match(rules, seed)
    elif variant == "abandoned":
        sim = simulate_match(rules, seed, abandon_after=1 + seed % rules.deal_count)
    else:
        rules = rules.replace(revoke=RevokeRule.PENALIZE)
        sim = simulate_match(rules, seed, revoke_in_deal=1 + seed % rules.deal_count)
    _assert_clean(sim)
    built = _rebuild(sim, rules, names=names, twins=twins)
    assert built == sim  # the same deals, plays, ends, scores, totals, status and metadata
    _assert_clean(built)


def test_incremental_and_one_shot_forms_give_the_same_record() -> None:
    sim = simulate_match(preset("short"), 11)
    b = MatchBuilder(_players_of(sim), "short", match_id=sim.match_id)
    for spec in _deal_inputs(sim, names=True):
        d = b.deal(spec["hands"], spec["declarer"], spec["contract"], spec.get("trump"))
        for card in spec.get("plays", ()):
            d.play(card)
    incremental = b.finish()
    one_shot = build_match(
        players=_players_of(sim),
        rules="short",
        deals=[
            DealInput(
                hands=s["hands"],
                declarer=s["declarer"],
                contract=s["contract"],
                trump=s.get("trump"),
                plays=s.get("plays", []),
            )
            for s in _deal_inputs(sim, names=False)
        ],
        match_id=sim.match_id,
    )
    assert incremental == one_shot
    assert [d.claimed_scores for d in incremental.deals] == [d.claimed_scores for d in sim.deals]
    assert incremental.claimed_totals == sim.claimed_totals
    assert incremental.status == pb.MATCH_STATUS_COMPLETE
    _assert_clean(incremental)


# -- what the builder fills in --------------------------------------------------------------


def test_builder_numbers_deals_scores_them_and_spells_out_the_ruleset() -> None:
    b = _short_with_deals(8, first=2)
    assert b.next_declarer == 2  # deal 9 would come back to seat 2
    match = b.finish()
    _assert_clean(match)
    assert match.format_version == 1
    assert [d.number for d in match.deals] == list(range(1, 9))
    assert [d.declarer for d in match.deals] == [2, 3, 0, 1, 2, 3, 0, 1]
    assert [d.dealer for d in match.deals] == [d.declarer for d in match.deals]
    ends = [d.end for d in match.deals]  # card contracts may stop once their cards have fallen
    assert ends[:5] == [pb.DEAL_END_ALL_TRICKS] * 5
    assert pb.DEAL_END_EARLY in ends[5:] and set(ends[5:]) <= {
        pb.DEAL_END_ALL_TRICKS,
        pb.DEAL_END_EARLY,
    }
    rules = preset("short")
    for deal in match.deals:  # every trick or penalty card scored, each deal played out
        assert sum(deal.claimed_scores) == rules.full_total(deal.contract)
    assert [Contract(d.contract).name for d in match.deals] == [c.upper() for c in SHORT_CONTRACTS]
    assert list(match.claimed_totals) == b.totals
    assert list(match.claimed_totals) == [
        sum(s) for s in zip(*(d.claimed_scores for d in match.deals), strict=True)
    ]
    assert match.ruleset.preset == "short"
    assert match.ruleset.HasField("deal_count") and match.ruleset.deal_count == 8
    assert match.ruleset.HasField("must_ruff") and match.ruleset.scoring.HasField("kiz_queen")
    assert [(p.name, p.seat) for p in match.players] == list(zip(NAMES, range(4), strict=True))
    assert match.match_id == "m"


def test_builder_sets_the_dealer_by_the_ruleset() -> None:
    rules = preset("short").replace(dealer=DealerRule.SEAT_BEFORE_DECLARER)
    b = MatchBuilder(NAMES, rules)
    d = b.deal(HANDS, 1, "koz", "spades")
    _play_out(d)
    match = b.abandon("test")
    assert match.deals[0].dealer == 0
    _assert_clean(match)


def test_deal_builder_tells_the_client_who_plays_what() -> None:
    b = MatchBuilder(NAMES, "classic")
    d = b.deal(HANDS, 0, "el almaz")
    assert (d.number, d.declarer, d.contract, d.trump) == (1, 0, Contract.EL_ALMAZ, -1)
    assert d.to_play == 0 and not d.over and d.plays == () and d.trick == []
    assert [card_name(c) for c in d.legal_cards()] == HANDS[0]
    assert d.play("2C") is None
    assert d.to_play == 1
    assert [card_name(c) for c in d.legal_cards()] == _hand("C9TJQKA")
    assert d.play(parse_card("9C")) is None  # codes or names
    assert d.play("2H") is None
    assert d.trick == [parse_card(c) for c in ("2C", "9C", "2H")]
    assert d.play("2S") == 1  # the trick is complete: seat 1's ♣9 wins it
    assert d.to_play == 1 and d.trick == [] and d.scores == [0, -50, 0, 0]
    assert d.plays == tuple(parse_card(c) for c in ("2C", "9C", "2H", "2S"))


def test_a_deal_ends_early_when_the_last_penalty_card_falls() -> None:
    b = MatchBuilder(NAMES, "classic")
    d = b.deal(HANDS, 0, "rifki")
    # ♥K is the one penalty card; seat 2 must discard it on the first trick it cannot follow.
    d.play("2C")
    d.play("9C")
    d.play("KH")
    d.play("2S")
    assert d.over and d.legal_cards() == []
    match = b.abandon("test")
    deal = match.deals[0]
    assert deal.end == pb.DEAL_END_EARLY and len(deal.plays) == 4
    assert list(deal.claimed_scores) == [0, -320, 0, 0]
    _assert_clean(match)


# -- unfinished matches ---------------------------------------------------------------------


def test_abandon_mid_deal_keeps_the_plays_and_scores_complete_tricks() -> None:
    b = _short_with_deals(2)
    d = b.deal(_next_hands(3), 2, "koz", "H")
    for _ in range(6):  # one trick and a half
        d.play(d.legal_cards()[0])
    scores = d.scores
    assert sorted(scores) == [0, 0, 0, 50]  # the one complete trick
    match = b.abandon("Emre left the table")
    assert match.status == pb.MATCH_STATUS_ABANDONED
    assert match.status_reason == "Emre left the table"
    assert len(match.deals) == 3
    last = match.deals[2]
    assert last.end == pb.DEAL_END_ABANDONED and len(last.plays) == 6
    assert list(last.claimed_scores) == scores
    assert sum(match.claimed_totals) == 650 * 2 + 50
    _assert_clean(match)


def test_abandon_between_deals_and_before_any() -> None:
    match = _short_with_deals(3).abandon("rain")
    assert len(match.deals) == 3 and match.deals[-1].end == pb.DEAL_END_ALL_TRICKS
    _assert_clean(match)
    empty = MatchBuilder(NAMES, "short").abandon("nobody came")
    assert len(empty.deals) == 0 and list(empty.claimed_totals) == [0, 0, 0, 0]
    _assert_clean(empty)


def test_one_shot_abandoned_match_may_stop_its_last_deal_partway() -> None:
    match = build_match(
        players=NAMES,
        rules="classic",
        deals=[{"hands": HANDS, "declarer": 3, "contract": "kupa", "plays": ["2S", "2C"]}],
        abandoned="the server went down",
    )
    assert match.status == pb.MATCH_STATUS_ABANDONED
    assert match.deals[0].end == pb.DEAL_END_ABANDONED
    _assert_clean(match)


def test_abandoning_a_match_whose_deals_are_all_played_is_refused() -> None:
    b = _short_with_deals(8)
    with pytest.raises(RecordBuildError, match=r"all 8 deals are played; finish\(\)"):
        b.abandon("late")
    assert b.finish().status == pb.MATCH_STATUS_COMPLETE


# -- penalized revokes ----------------------------------------------------------------------


def test_a_penalized_revoke_ends_the_deal_with_the_full_penalty() -> None:
    rules = preset("classic").replace(revoke=RevokeRule.PENALIZE)
    b = MatchBuilder(NAMES, rules)
    d = b.deal(HANDS, 0, "kiz")
    d.play("2C")
    d.revoke("8D")  # seat 1 holds clubs
    assert d.over
    match = b.abandon("test")
    deal = match.deals[0]
    assert deal.end == pb.DEAL_END_REVOKE and deal.revoke_play == 1
    assert list(deal.claimed_scores) == [0, -400, 0, 0]
    _assert_clean(match)


def test_revoke_is_refused_when_the_ruleset_rejects_them_or_the_card_was_legal() -> None:
    d = MatchBuilder(NAMES, "classic").deal(HANDS, 0, "kiz")
    d.play("2C")
    with pytest.raises(RecordBuildError, match=r"deal 1 \(Kız almaz\), play 1 .*revoke=REJECT"):
        d.revoke("8D")
    penalize = preset("classic").replace(revoke=RevokeRule.PENALIZE)
    d = MatchBuilder(NAMES, penalize).deal(HANDS, 0, "kiz")
    d.play("2C")
    with pytest.raises(RecordBuildError, match=r"play 1 .*♣9 is a legal play, so no revoke"):
        d.revoke("9C")
    with pytest.raises(RecordBuildError, match=r"play 1 .*♠A is not in their hand"):
        d.revoke("AS")
    assert d.plays == (parse_card("2C"),)


# -- the errors, each naming the deal and play ------------------------------------------------


def test_illegal_card_raises_illegal_play_error_with_the_rule_and_the_legal_cards() -> None:
    d = MatchBuilder(NAMES, "classic").deal(HANDS, 0, "el_almaz")
    d.play("2C")
    with pytest.raises(IllegalPlayError) as caught:
        d.play("8D")
    err = caught.value
    assert err.verdict == "MUST_FOLLOW_SUIT"
    assert [card_name(c) for c in err.legal] == _hand("C9TJQKA")
    assert str(err) == (
        "deal 1 (El almaz), play 1 (trick 1): seat 1 may not play ♦8 (MUST_FOLLOW_SUIT: "
        "did not follow the led suit); legal: ♣9 ♣10 ♣J ♣Q ♣K ♣A"
    )
    with pytest.raises(
        IllegalPlayError, match=r"play 1 \(trick 1\): seat 1 may not play ♠A \(NOT_IN_HAND"
    ):
        d.play("AS")
    assert d.plays == (parse_card("2C"),) and d.to_play == 1  # nothing changed
    d.play("9C")


@pytest.mark.parametrize(
    ("declarer", "contract", "trump", "before", "card", "verdict", "legal"),
    [
        (0, "koz", "S", ["2C", "9C"], "2H", "MUST_RUFF", ["2S"]),
        (2, "kupa", None, [], "2H", "HEART_LEAD_BANNED", ["2S"]),
        (0, "rifki", None, ["2C", "9C"], "2H", "MUST_DISCARD_PENALTY_CARD", ["KH"]),
    ],
)
def test_illegal_card_under_a_ruleset_option_names_that_rule(
    declarer: int,
    contract: str,
    trump: str | None,
    before: list[str],
    card: str,
    verdict: str,
    legal: list[str],
) -> None:
    d = MatchBuilder(NAMES, "classic").deal(SWAPPED, declarer, contract, trump)
    for played in before:
        d.play(played)
    with pytest.raises(IllegalPlayError, match=rf"play {len(before)} .*\({verdict}: ") as caught:
        d.play(card)
    assert caught.value.verdict == verdict
    assert [card_name(c) for c in caught.value.legal] == legal


def test_card_after_the_deal_ended_is_refused() -> None:
    b = MatchBuilder(NAMES, "classic")
    d = b.deal(HANDS, 0, "rifki")
    for card in ("2C", "9C", "KH", "2S"):
        d.play(card)
    with pytest.raises(
        RecordBuildError,
        match=r"deal 1 \(Rıfkı\), play 4 \(trick 2\): the deal ended when the last penalty "
        r"card fell \(4 plays\); 'QS' comes after its end",
    ):
        d.play("QS")
    with pytest.raises(RecordBuildError, match=r"play 4 .*comes after its end"):
        build_match(
            players=NAMES,
            rules="classic",
            deals=[
                {
                    "hands": HANDS,
                    "declarer": 0,
                    "contract": "rifki",
                    "plays": ["2C", "9C", "KH", "2S", "3C"],
                }
            ],
            abandoned="x",
        )


def test_deal_after_thirteen_tricks_refuses_more_cards() -> None:
    d = MatchBuilder(NAMES, "classic").deal(HANDS, 0, "el almaz")
    _play_out(d)
    with pytest.raises(
        RecordBuildError, match=r"play 52 \(trick 14\): the deal ended after thirteen tricks"
    ):
        d.play("2C")


def test_not_a_card_names_the_deal_and_play() -> None:
    d = MatchBuilder(NAMES, "classic").deal(HANDS, 0, "el almaz")
    with pytest.raises(
        RecordBuildError, match=r"deal 1 \(El almaz\), play 0 \(trick 1\): 'ZZ' is not a card"
    ):
        d.play("ZZ")
    with pytest.raises(RecordBuildError, match=r"play 0 \(trick 1\): 52 is not a card code"):
        d.play(52)


@pytest.mark.parametrize(
    ("hands", "message"),
    [
        (HANDS[:3], r"deal 1: hands must be four hands of 13 cards"),
        ("AS KS", r"deal 1: hands must be four hands of 13 cards"),
        ([*HANDS[:2], HANDS[2][:12], HANDS[3]], r"deal 1: seat 2's hand holds 12 cards, not 13"),
        (
            [HANDS[0], HANDS[1], [*HANDS[2][:12], "XX"], HANDS[3]],
            r"deal 1, seat 2's hand: 'XX' is not a card",
        ),
        (
            [HANDS[0], HANDS[1], [*HANDS[2][:12], "AS"], HANDS[3]],
            r"deal 1: the four hands do not partition the deck: ♠A dealt twice and ♥A missing",
        ),
    ],
)
def test_hands_that_do_not_partition_the_deck_are_refused(hands: object, message: str) -> None:
    b = MatchBuilder(NAMES, "classic")
    with pytest.raises(RecordBuildError, match=message):
        b.deal(hands, 0, "koz", "S")  # type: ignore[arg-type]
    b.deal(HANDS, 0, "koz", "S")  # the failed call changed nothing


def test_hands_may_be_codes_names_or_text() -> None:
    as_text = [" ".join(h) for h in HANDS]
    as_codes = [[parse_card(c) for c in h] for h in HANDS]
    records = []
    for hands in (HANDS, as_text, as_codes):
        b = MatchBuilder(NAMES, "classic", match_id="same")
        b.deal(hands, 0, "koz", "S")
        records.append(b.abandon("x"))
    assert records[0] == records[1] == records[2]
    assert records[0].deals[0].hands == bytes(c for h in as_codes for c in h)


def test_declarer_the_rotation_does_not_allow_is_refused() -> None:
    b = _short_with_deals(1, first=2)
    with pytest.raises(
        RecordBuildError,
        match=r"deal 2: seat 2 may not declare; seat 3 does "
        r"\(the declarer moves one seat on each deal\)",
    ):
        b.deal(HANDS, 2, "koz", "S")
    with pytest.raises(RecordBuildError, match=r"deal 2: declarer seat 4 does not exist"):
        b.deal(HANDS, 4, "koz", "S")
    assert b.next_declarer == 3
    b.deal(HANDS, 3, "koz", "S")


def test_first_declarer_by_card_must_hold_it() -> None:
    rules = HOUSE["holder"]  # the holder of ♦2 declares first
    b = MatchBuilder(NAMES, rules)
    assert b.next_declarer is None
    with pytest.raises(
        RecordBuildError,
        match=r"deal 1: seat 1 may not declare; seat 0 does \(the holder of ♦2 declares first\)",
    ):
        b.deal(HANDS, 1, "koz", "S")
    b.deal(HANDS, 0, "koz", "S")


def test_contract_the_schedule_does_not_allow_is_refused() -> None:
    b = _short_with_deals(4)  # each seat declared its one koz
    with pytest.raises(
        RecordBuildError,
        match=r"deal 5 \(Koz\): seat 0 may not declare Koz \(CONTRACT_QUOTA\): seat 0 already "
        r"declared koz 1 time\(s\), the quota is 1",
    ):
        b.deal(HANDS, 0, "koz", "S")
    classic = MatchBuilder(NAMES, "classic")
    for seat in (0, 1):
        _play_out(classic.deal(HANDS, seat, "kiz"))
    with pytest.raises(
        RecordBuildError,
        match=r"deal 3 \(Kız almaz\): seat 2 may not declare Kız almaz \(PENALTY_CONTRACT_LIMIT\)",
    ):
        classic.deal(HANDS, 2, "kiz")
    fixed = MatchBuilder(NAMES, HOUSE["fixed"])
    with pytest.raises(
        RecordBuildError,
        match=r"\(CONTRACT_NOT_SCHEDULED\): the fixed order plays El almaz in deal 1",
    ):
        fixed.deal(HANDS, 0, "koz", "S")
    rotation = MatchBuilder(NAMES, "rotation")
    assert rotation.rules.schedule is Schedule.ROTATION
    for seat in (0, 1, 2, 3):
        _play_out(rotation.deal(HANDS, seat, "el almaz"))
    with pytest.raises(
        RecordBuildError, match=r"deal 5 \(El almaz\): .*in rotation every player declares"
    ):
        rotation.deal(HANDS, 0, "el almaz")
    late_koz = MatchBuilder(NAMES, HOUSE["penalty_only_4"])
    with pytest.raises(RecordBuildError, match=r"koz may not be chosen in the first 4 deals"):
        late_koz.deal(HANDS, 0, "koz", "S")


def test_contract_and_trumps_are_checked() -> None:
    b = MatchBuilder(NAMES, "classic")
    with pytest.raises(RecordBuildError, match=r"deal 1: 'kozz' is not a contract"):
        b.deal(HANDS, 0, "kozz")
    with pytest.raises(RecordBuildError, match=r"deal 1: 9 is not a contract"):
        b.deal(HANDS, 0, 9)
    with pytest.raises(RecordBuildError, match=r"deal 1 \(Koz\): koz needs a trump suit"):
        b.deal(HANDS, 0, "koz")
    with pytest.raises(RecordBuildError, match=r"deal 1 \(Koz\), trump: 'X' is not a suit"):
        b.deal(HANDS, 0, "koz", "X")
    with pytest.raises(RecordBuildError, match=r"deal 1 \(Kupa almaz\): only koz has trumps"):
        b.deal(HANDS, 0, "kupa", "H")
    with pytest.raises(
        RecordBuildError, match=r"deal 1 \(Kupa almaz\): trump_think_ms without trumps"
    ):
        b.deal(HANDS, 0, "kupa", trump_think_ms=100)
    for trump in ("S", "spades", "Spade", "♠", 3):
        assert MatchBuilder(NAMES, "classic").deal(HANDS, 0, Contract.KOZ, trump).trump == 3


def test_think_times_for_some_plays_but_not_others_are_refused() -> None:
    d = MatchBuilder(NAMES, "classic").deal(HANDS, 0, "el almaz")
    d.play("2C", think_ms=1200)
    with pytest.raises(
        RecordBuildError,
        match=r"play 1 \(trick 1\): give a think time for every play .* have a think time",
    ):
        d.play("9C")
    with pytest.raises(RecordBuildError, match=r"play 1 \(trick 1\), think_ms: -5 is not a time"):
        d.play("9C", think_ms=-5)
    d.play("9C", think_ms=900, auto=True)
    e = MatchBuilder(NAMES, "classic").deal(HANDS, 0, "el almaz")
    e.play("2C")
    with pytest.raises(RecordBuildError, match=r"play 1 .* have no think time"):
        e.play("9C", think_ms=5)


def test_one_shot_deal_shape_errors_name_the_deal() -> None:
    good: DealInput = {"hands": HANDS, "declarer": 0, "contract": "el almaz", "plays": ["2C", "9C"]}
    cases: list[tuple[object, str]] = [
        ({**good, "play": []}, r"deal 1: unknown key\(s\) \['play'\]"),
        ({"hands": HANDS, "declarer": 0}, r"deal 1: missing key\(s\) \['contract'\]"),
        ({**good, "think_ms": [1]}, r"deal 1: 1 think times for 2 plays"),
        ({**good, "auto_plays": [2]}, r"deal 1: auto_plays \[2\] point past the plays"),
        ({**good, "revoke_play": 0}, r"deal 1: revoke_play 0 is not the last play \(1\)"),
        ("deal", r"deal 1: str is no deal"),
    ]
    for deal, message in cases:
        with pytest.raises(RecordBuildError, match=message):
            build_match(players=NAMES, rules="classic", deals=[deal], abandoned="x")  # type: ignore[list-item]


def test_a_new_deal_before_the_last_is_over_is_refused() -> None:
    b = MatchBuilder(NAMES, "classic")
    d = b.deal(HANDS, 0, "el almaz")
    d.play("2C")
    with pytest.raises(RecordBuildError, match=r"deal 2: deal 1 is not over \(1 plays\)"):
        b.deal(HANDS, 1, "el almaz")
    with pytest.raises(
        RecordBuildError, match=r"deal 1 is not over \(1 plays\); play it out, or abandon"
    ):
        b.finish()


def test_more_deals_than_the_ruleset_has_are_refused() -> None:
    b = _short_with_deals(8)
    with pytest.raises(
        RecordBuildError, match=r"deal 9: the ruleset \(short\) has 8 deals, all played"
    ):
        b.deal(HANDS, 0, "kiz")


def test_finish_with_deals_missing_is_refused() -> None:
    b = _short_with_deals(1)
    with pytest.raises(
        RecordBuildError, match=r"the match has 1 of the ruleset's 8 deals; .*abandon\(reason\)"
    ):
        b.finish()
    with pytest.raises(RecordBuildError, match=r"the match has 0 of the ruleset's 8 deals"):
        build_match(players=NAMES, rules="short", deals=[])


def test_a_finished_match_takes_nothing_more() -> None:
    b = MatchBuilder(NAMES, "classic")
    d = b.deal(HANDS, 0, "el almaz")
    d.play("2C")
    b.abandon("x")
    for call in (
        lambda: b.deal(HANDS, 1, "kiz"),
        lambda: d.play("9C"),
        b.finish,
        lambda: b.abandon("y"),
    ):
        with pytest.raises(RecordBuildError, match=r"the match is abandoned"):
            call()


@pytest.mark.parametrize(
    ("players", "message"),
    [
        (NAMES[:3], r"players must be a list of four players"),
        (
            [*NAMES[:3], {"name": "Emre", "seat": 0}],
            r"the players must fill seats 0, 1, 2 and 3 once each, not \[0, 0, 1, 2\]",
        ),
        ([*NAMES[:3], {"nick": "Emre"}], r"player #3 has unknown key\(s\) 'nick'"),
        ([*NAMES[:3], {"name": "Emre", "seat": 7}], r"player #3: seat 7 does not exist"),
        ([*NAMES[:3], 42], r"player #3 is 42"),
    ],
)
def test_players_must_fill_the_four_seats(players: object, message: str) -> None:
    with pytest.raises(RecordBuildError, match=message):
        MatchBuilder(players, "classic")  # type: ignore[arg-type]


def test_players_with_ids_and_seats_in_any_order() -> None:
    players: list[str | PlayerInfo] = [
        {"id": "u-9", "name": "Emre", "seat": 3, "seat_name": "West"},
        {"id": "u-1", "name": "Ayşe", "seat": 0},
        "Mehmet",  # a plain name sits at its position in the list: seat 2
        {"name": "Zeynep", "seat": 1},
    ]
    match = MatchBuilder(players, "classic").abandon("x")
    assert [(p.id, p.name, p.seat, p.seat_name) for p in match.players] == [
        ("u-9", "Emre", 3, "West"),
        ("u-1", "Ayşe", 0, ""),
        ("", "Mehmet", 2, ""),
        ("", "Zeynep", 1, ""),
    ]
    _assert_clean(match)


def test_metadata_is_recorded_and_checked() -> None:
    start = datetime(2025, 3, 1, 20, 30, tzinfo=timezone(timedelta(hours=3)))
    match = MatchBuilder(
        NAMES,
        "short",
        match_id="club-42",
        event="Friday league",
        site="Kadıköy",
        start_time=start,
        client_name="kingclient",
        client_version="2.1",
        tags={"table": "7"},
        direction="clockwise",
    ).abandon("x")
    meta = match.metadata
    assert (meta.event, meta.site, meta.client_name, meta.client_version) == (
        "Friday league",
        "Kadıköy",
        "kingclient",
        "2.1",
    )
    assert meta.start_time.ToDatetime(tzinfo=UTC) == start
    assert dict(meta.tags) == {"table": "7"} and meta.direction == pb.DIRECTION_CLOCKWISE
    assert MatchBuilder(NAMES, "short").match_id != MatchBuilder(NAMES, "short").match_id
    with pytest.raises(RecordBuildError, match=r"start_time must be a datetime with its time zone"):
        MatchBuilder(NAMES, "short", start_time=datetime(2025, 3, 1))
    with pytest.raises(RecordBuildError, match=r"direction 'north' is not"):
        MatchBuilder(NAMES, "short", direction="north")
    with pytest.raises(
        LimitError, match=r"over one of kingrec's bounds: the metadata's event is 2000 bytes"
    ):
        MatchBuilder(NAMES, "short", event="x" * 2000)
    with pytest.raises(LimitError, match=r"status_reason is 2000 bytes"):
        MatchBuilder(NAMES, "short").abandon("x" * 2000)


def test_rules_are_a_preset_name_or_a_ruleset() -> None:
    with pytest.raises(RulesetError, match=r"unknown preset 'klassik'"):
        MatchBuilder(NAMES, "klassik")
    with pytest.raises(RecordBuildError, match=r"rules must be a preset name or a Ruleset"):
        MatchBuilder(NAMES, 20)  # type: ignore[arg-type]
    assert MatchBuilder(NAMES, preset("rotation")).rules is preset("rotation")
