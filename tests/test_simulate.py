"""The match simulator (kingrec.simulate) over both simulator twins, which give the same bytes."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kingrec import bots, cards
from kingrec._twins import COMPILED, PYTHON, Twins
from kingrec.boundary import ruleset_from_proto
from kingrec.cards import SUIT_MASKS
from kingrec.contracts import CARD_CONTRACTS, Contract
from kingrec.game import DealPlay
from kingrec.rules import PRESETS, FirstDeclarerRule, RevokeRule, Ruleset, Schedule, preset
from kingrec.simulate import derive_seed, simulate_match, simulate_matches
from kingrec.v1 import record_pb2 as pb
from kingrec.validator import validate_match

from rulesets import HOUSE

needs_compiled = pytest.mark.skipif(COMPILED is None, reason="the compiled twins are not built")


def _assert_clean(match: pb.Match) -> None:
    report = validate_match(match)
    assert report.findings == [], [f.message for f in report.findings]


# -- whole matches validate ------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PRESETS))
@pytest.mark.parametrize("seed", [0, 1, 2, 3, 1234567])
def test_presets_simulate_clean(twins: Twins, name: str, seed: int) -> None:
    rules = PRESETS[name]
    match = simulate_match(rules, seed, twins=twins)
    _assert_clean(match)
    assert match.format_version == 1
    assert match.status == pb.MATCH_STATUS_COMPLETE
    assert match.match_id == f"sim-{rules.preset}-{seed}"
    assert match.metadata.client_name == "kingrec-simulate"
    assert match.metadata.tags["seed"] == str(seed)
    assert [p.id for p in match.players] == ["bot-0", "bot-1", "bot-2", "bot-3"]
    assert [p.seat for p in match.players] == [0, 1, 2, 3]
    assert ruleset_from_proto(match.ruleset) == rules
    assert len(match.deals) == rules.deal_count
    for i, deal in enumerate(match.deals):
        assert deal.number == i + 1
        assert len(deal.hands) == 52
        for s in range(4):
            hand = list(deal.hands[13 * s : 13 * s + 13])
            assert hand == sorted(hand)
        assert len(deal.think_ms) == len(deal.plays)
        assert all(ms <= rules.play_timeout_ms for ms in deal.think_ms)
        assert deal.end in (pb.DEAL_END_ALL_TRICKS, pb.DEAL_END_EARLY)
        assert (deal.trump != pb.SUIT_UNSPECIFIED) == (deal.contract == pb.CONTRACT_KOZ)
        assert deal.dealer == deal.declarer  # classic etc. leave the dealer unchecked
    totals = [sum(d.claimed_scores[s] for d in match.deals) for s in range(4)]
    assert list(match.claimed_totals) == totals


@pytest.mark.parametrize("name", ["classic", "kahvehane", "plain"])
def test_zero_sum_presets(twins: Twins, name: str) -> None:
    for match in simulate_matches(PRESETS[name], 4, seed=7, twins=twins):
        assert sum(match.claimed_totals) == 0
        _assert_clean(match)


def test_rotation_declares_every_contract_once(twins: Twins) -> None:
    match = simulate_match(preset("rotation"), 5, twins=twins)
    chosen = sorted((d.declarer, d.contract) for d in match.deals)
    assert chosen == sorted((s, int(c)) for s in range(4) for c in Contract)


_VARIANTS = HOUSE


@pytest.mark.parametrize("name", sorted(_VARIANTS))
def test_house_variants_simulate_clean(twins: Twins, name: str) -> None:
    rules = _VARIANTS[name]
    for match in simulate_matches(rules, 3, seed=11, twins=twins):
        _assert_clean(match)
        assert len(match.deals) == rules.deal_count


def test_fixed_order_is_followed(twins: Twins) -> None:
    rules = _VARIANTS["fixed"]
    match = simulate_match(rules, 3, twins=twins)
    assert [d.contract for d in match.deals] == [int(c) for c in rules.fixed_order * 2]


def test_holder_of_card_declares_first_and_dealer_rule(twins: Twins) -> None:
    rules = _VARIANTS["holder"]
    for seed in range(5):
        match = simulate_match(rules, seed, twins=twins)
        first = match.deals[0]
        assert first.hands.index(rules.first_declarer_card) // 13 == first.declarer
        for deal in match.deals:
            assert deal.declarer == (first.declarer + deal.number - 1) % 4
            assert deal.dealer == (deal.declarer + 3) % 4


# -- abandon and revoke ----------------------------------------------------------------


@pytest.mark.parametrize("deal", [1, 9, 20])
def test_abandoned_match_validates(deal: int) -> None:
    rules = preset("classic")
    for seed in range(4):
        match = simulate_match(rules, seed, abandon_after=deal)
        _assert_clean(match)
        assert match.status == pb.MATCH_STATUS_ABANDONED
        assert match.status_reason
        assert len(match.deals) == deal
        last = match.deals[-1]
        assert last.end == pb.DEAL_END_ABANDONED
        assert 0 < len(last.plays) < 52
        assert len(last.think_ms) == len(last.plays)
        # The complete deals are the same as in the full match up to there.
        full = simulate_match(rules, seed)
        for a, b in zip(match.deals[:-1], full.deals, strict=False):
            assert a == b


@pytest.mark.parametrize("deal", [1, 4, 13, 20])
def test_penalized_revoke_validates(deal: int) -> None:
    rules = preset("classic").replace(revoke=RevokeRule.PENALIZE)
    for seed in range(5):
        match = simulate_match(rules, seed, revoke_in_deal=deal)
        _assert_clean(match)
        assert len(match.deals) == rules.deal_count
        d = match.deals[deal - 1]
        assert d.end == pb.DEAL_END_REVOKE
        assert d.HasField("revoke_play")
        assert d.revoke_play == len(d.plays) - 1
        # The revoker held the led suit and played another one.
        state = DealPlay(rules, d.hands, d.declarer, d.contract, d.trump - 1)
        for card in d.plays[:-1]:
            state.push(card)
        revoker = state.to_play
        led = state.trick[0] // 13
        card = d.plays[-1]
        assert card // 13 != led and state.held[revoker] & SUIT_MASKS[led]
        expected = [0, 0, 0, 0]
        expected[revoker] = -abs(rules.full_total(d.contract))
        assert list(d.claimed_scores) == expected
        assert sum(1 for x in match.deals if x.HasField("revoke_play")) == 1


def test_revoke_needs_penalize() -> None:
    with pytest.raises(ValueError, match="PENALIZE"):
        simulate_match(preset("classic"), 1, revoke_in_deal=3)
    with pytest.raises(ValueError):
        simulate_match(preset("classic"), 1, abandon_after=21)


# -- determinism -----------------------------------------------------------------------


def test_deterministic(twins: Twins) -> None:
    rules = preset("kahvehane")
    a = simulate_match(rules, 42, twins=twins).SerializeToString()
    b = simulate_match(rules, 42, twins=twins).SerializeToString()
    assert a == b
    assert simulate_match(rules, 43).SerializeToString() != a
    pen = rules.replace(revoke=RevokeRule.PENALIZE)
    assert (
        simulate_match(pen, 5, revoke_in_deal=2).SerializeToString()
        == simulate_match(pen, 5, revoke_in_deal=2).SerializeToString()
    )
    assert (
        simulate_match(rules, 5, abandon_after=3).SerializeToString()
        == simulate_match(rules, 5, abandon_after=3).SerializeToString()
    )


def test_think_times_do_not_change_play(twins: Twins) -> None:
    rules = preset("classic")
    timed = simulate_match(rules, 9, twins=twins)
    plain = simulate_match(rules, 9, think_times=False, twins=twins)
    assert [d.plays for d in timed.deals] == [d.plays for d in plain.deals]
    assert all(not d.think_ms and not d.HasField("trump_think_ms") for d in plain.deals)
    _assert_clean(plain)


def test_simulate_matches_seeds(twins: Twins) -> None:
    rules = preset("short")
    matches = list(simulate_matches(rules, 3, seed=99, think_times=False, twins=twins))
    assert len({m.match_id for m in matches}) == 3
    for i, match in enumerate(matches):
        seed = derive_seed(99, i)
        assert match.metadata.tags["seed"] == str(seed)
        again = simulate_match(rules, seed, think_times=False, twins=twins)
        assert again.SerializeToString() == match.SerializeToString()


# -- the two twins give the same bytes ------------------------------------------------------

_ALL_VARIANTS: dict[str, Ruleset] = {**PRESETS, **HOUSE}


def _both(rules: Ruleset, seed: int, think_times: bool = True) -> tuple[bytes, bytes]:
    """The match from the compiled twin and from the pure-Python one."""
    assert COMPILED is not None
    fast = simulate_match(rules, seed, think_times=think_times, twins=COMPILED)
    slow = simulate_match(rules, seed, think_times=think_times, twins=PYTHON)
    return fast.SerializeToString(), slow.SerializeToString()


@needs_compiled
@pytest.mark.parametrize("name", sorted(_ALL_VARIANTS))
def test_twins_give_the_same_bytes(name: str) -> None:
    rules = _ALL_VARIANTS[name]
    for index in range(6):
        seed = derive_seed(99, index)
        fast, slow = _both(rules, seed)
        assert fast == slow, (name, seed)
    fast, slow = _both(rules, 5, think_times=False)
    assert fast == slow


def _rulesets() -> st.SearchStrategy[Ruleset]:
    contract_sets = st.frozensets(st.sampled_from(CARD_CONTRACTS))
    return st.builds(
        lambda base, **changes: PRESETS[base].replace(preset="house", **changes),
        st.sampled_from(sorted(PRESETS)),
        must_ruff=st.booleans(),
        must_overtrump=st.booleans(),
        must_raise_on_trump_lead=st.booleans(),
        trump_lead_needs_break=st.booleans(),
        heart_lead_ban=contract_sets,
        withholding=contract_sets,
        void_discard=contract_sets,
        early_end=contract_sets,
        rifki_heart_after_king=st.booleans(),
        first_declarer=st.sampled_from(FirstDeclarerRule),
        first_declarer_card=st.integers(0, 51),
        play_timeout_ms=st.integers(0, 20_000),
        trump_timeout_ms=st.integers(0, 20_000),
        scores=st.fixed_dictionaries({c: st.integers(-500, 500) for c in Contract}),
        schedule=st.sampled_from(Schedule),
        deal_count=st.integers(1, 30),
        koz_quota=st.integers(0, 4),
        penalty_quota=st.integers(0, 8),
        max_per_penalty=st.integers(0, 5),
        penalty_only_deals=st.integers(0, 10),
        fixed_order=st.lists(st.sampled_from(Contract), min_size=1, max_size=9).map(tuple),
    )


@needs_compiled
@settings(max_examples=60, deadline=None)
@given(rules=_rulesets(), seed=st.integers(0, 2**63 - 1))
def test_twins_agree_on_any_ruleset(rules: Ruleset, seed: int) -> None:
    fast, slow = _both(rules, seed)
    assert fast == slow


@needs_compiled
@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**64))
def test_twins_agree_on_many_short_matches(seed: int) -> None:
    # Long runs of the Mersenne Twister: a whole match per seed.
    fast, slow = _both(PRESETS["short"], seed)
    assert fast == slow


def test_random_state_is_what_the_compiled_twin_takes_over() -> None:
    """``_sim_c`` continues ``random.Random().getstate()``: version 3, 624 words + index."""
    version, internal, gauss_next = random.Random(1).getstate()
    assert version == 3 and len(internal) == 625 and gauss_next is None


@needs_compiled
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), drawn=st.integers(0, 2 * 624))
def test_a_random_state_taken_over_at_any_word_continues_alike_in_both_twins(
    seed: int, drawn: int
) -> None:
    # The compiled generator tempers the state's words in bulk: a state handed over partway
    # through its 624 words (or just used up) must go on exactly as random.Random does.
    assert COMPILED is not None
    rng = random.Random(seed)
    for _ in range(drawn):
        rng.getrandbits(32)
    state = rng.getstate()
    rules = PRESETS["short"]
    fast = COMPILED.sim.play_match(rules, state, state, 0)
    slow = PYTHON.sim.play_match(rules, state, state, 0)
    assert fast == slow


@needs_compiled
@pytest.mark.parametrize("index", [-1, 625, 10**6])
def test_the_compiled_twin_refuses_a_random_state_whose_index_is_out_of_range(
    index: int,
) -> None:
    assert COMPILED is not None
    version, internal, gauss_next = random.Random(1).getstate()
    state = (version, (*internal[:624], index), gauss_next)
    with pytest.raises(ValueError, match=r"unsupported random\.Random state"):
        COMPILED.sim.play_match(PRESETS["short"], state, None, 0)


@needs_compiled
def test_compiled_bots_constants_are_the_python_ones() -> None:
    assert COMPILED is not None
    const = COMPILED.sim.CONSTANTS
    assert const["HEARTS"] == cards.HEARTS
    assert const["KING_OF_HEARTS"] == cards.KING_OF_HEARTS
    assert (const["JACK"], const["QUEEN"], const["KING"], const["ACE"]) == (
        bots._JACK,
        cards.QUEEN,
        cards.KING,
        bots._ACE,
    )
    assert const["RAW_MEAN"] == [0.0, *(bots._RAW_MEAN[c] for c in Contract)]


@needs_compiled
@pytest.mark.parametrize(
    ("seed", "mu", "sigma"), [(0, 0.0, 1.0), (7, 6.9, 0.65), (2**63, 8.0, 0.5)]
)
def test_the_compiled_normalvariate_draws_what_random_draws(
    seed: int, mu: float, sigma: float
) -> None:
    # The think times' normal draws settle most tests of -log(u2) by bounds, not by libm:
    # every draw, and so the stream after it, must stay Python's, bit for bit.
    assert COMPILED is not None
    rng = random.Random(seed)
    expected = [rng.normalvariate(mu, sigma) for _ in range(50_000)]
    assert COMPILED.sim.normalvariates(seed, mu, sigma, 50_000) == expected


@needs_compiled
def test_the_bounds_on_minus_log_decide_as_log_does_at_its_edge() -> None:
    # zz at -log(u2) and its neighbours, for u2 from near 0 to 1 - 2**-53 and 1 itself:
    # where the bounds are tight (u2 near 1) a wrong margin would flip the answer here.
    import math

    assert COMPILED is not None
    accepts = COMPILED.sim.normal_accepts
    rng = random.Random(17)
    edges = [1.0, 1.0 - 2**-53, 1.0 - 2**-52, 0.5, 2**-53, 2**-30, 0.999999]
    spread = [1.0 - rng.random() ** rng.choice([1, 3, 10, 30]) for _ in range(20_000)]
    for u2 in (u for u in edges + spread if u > 0.0):
        bound = -math.log(u2)
        near = [bound, math.nextafter(bound, 0.0), math.nextafter(bound, 1.0)]
        near += [bound * (1 + f) for f in (-1e-11, -1e-12, -1e-15, 1e-15, 1e-12, 1e-11)]
        near += [0.0, bound / 2, bound * 2]
        for zz in near:
            assert accepts(zz, u2) == (zz <= bound), (zz, u2)
