"""The simulator's record bytes (``simulate_match_bytes``, the twins' ``match_tail``) are the
bytes protobuf writes for the match ``simulate_match`` builds, on both simulator twins."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kingrec._twins import COMPILED, PYTHON, Twins
from kingrec.container import Frame, KrecWriter, read_frames
from kingrec.contracts import CARD_CONTRACTS, Contract
from kingrec.rules import PRESETS, DealerRule, FirstDeclarerRule, Ruleset, Schedule
from kingrec.simrun import simulate_to_file
from kingrec.simulate import RecordSimulator, derive_seed, simulate_match, simulate_match_bytes
from kingrec.v1 import record_pb2 as pb

from rulesets import HOUSE

needs_compiled = pytest.mark.skipif(COMPILED is None, reason="the compiled twins are not built")

_ALL_VARIANTS: dict[str, Ruleset] = {**PRESETS, **HOUSE}


def _old_bytes(rules: Ruleset, seed: int, twins: Twins, think_times: bool = True) -> bytes:
    """What ``kingrec simulate`` wrote before: the message built, then serialized."""
    return simulate_match(rules, seed, think_times=think_times, twins=twins).SerializeToString()


@pytest.mark.parametrize("name", sorted(_ALL_VARIANTS))
def test_the_bytes_are_the_built_match_serialized_under_every_ruleset(
    twins: Twins, name: str
) -> None:
    rules = _ALL_VARIANTS[name]
    matches = 12 if twins is PYTHON else 60
    for index in range(matches):
        seed = derive_seed(2026, index)
        match = simulate_match(rules, seed, twins=twins)
        fast = simulate_match_bytes(rules, seed, twins=twins)
        assert fast == match.SerializeToString(), (name, seed)
        assert fast == match.SerializeToString(deterministic=True), (name, seed)


def test_thousands_of_deals_give_the_same_bytes_both_ways(twins: Twins) -> None:
    # Classic matches of 20 deals: 2,000 deals on the compiled twin, 400 on the pure one
    # (plus those of the test above); every deal compared in its own bytes too.
    rules = PRESETS["classic"]
    matches = 20 if twins is PYTHON else 100
    deals = 0
    for index in range(matches):
        seed = derive_seed(17, index)
        built = simulate_match(rules, seed, twins=twins)
        fast = pb.Match.FromString(simulate_match_bytes(rules, seed, twins=twins))
        assert fast.SerializeToString() == built.SerializeToString()
        for ours, theirs in zip(fast.deals, built.deals, strict=True):
            assert ours.SerializeToString(deterministic=True) == theirs.SerializeToString(
                deterministic=True
            )
            deals += 1
    assert deals == 20 * matches


def test_without_think_times_the_bytes_match_too(twins: Twins) -> None:
    for name in ("classic", "short", "kahvehane"):
        rules = PRESETS[name]
        for seed in (0, 5, 2**63 - 1):
            fast = simulate_match_bytes(rules, seed, think_times=False, twins=twins)
            assert fast == _old_bytes(rules, seed, twins, think_times=False), (name, seed)


def test_a_given_match_id_is_written_as_simulate_match_writes_it(twins: Twins) -> None:
    rules = PRESETS["short"]
    fast = simulate_match_bytes(rules, 3, match_id="table-7 ✓", twins=twins)
    assert fast == simulate_match(rules, 3, match_id="table-7 ✓", twins=twins).SerializeToString()


@needs_compiled
@pytest.mark.parametrize(
    "seed",
    [
        *(0, 1, -1, 2**32 - 1, 2**32, 2**64 + 3, -(2**70), 2**200 + 12345),
        pytest.param(10**2000 + 3, id="2001-digits"),
        pytest.param(10**3000 + 1, id="3001-digits"),
    ],
)
def test_any_int_seed_is_seeded_in_c_as_random_seeds_it(seed: int) -> None:
    # The compiled twin seeds its streams itself: every length and sign of seed must give
    # the words random.Random would take (abs(seed), 32 bits at a time). The two streams are
    # seeded together when both keys fit the 624 words of the state, apart when one does
    # not (the clock's key holds the seed's digits: 772 words for 3001 of them).
    assert COMPILED is not None
    rules = PRESETS["short"]
    fast = simulate_match_bytes(rules, seed, twins=COMPILED)
    assert fast == _old_bytes(rules, seed, PYTHON)


@pytest.mark.parametrize("name", sorted(_ALL_VARIANTS))
def test_records_of_many_seeds_are_each_seeds_built_match_serialized(
    twins: Twins, name: str
) -> None:
    # The compiled twin writes the head (id, metadata) itself: any int seed, however long
    # its digits (the lengths then take two bytes), negative ones too.
    rules = _ALL_VARIANTS[name]
    seeds = [derive_seed(5, i) for i in range(3 if twins is PYTHON else 12)]
    seeds += [0, 1, -7, 2**63 - 1, 2**64 + 3, 10**300]
    records = RecordSimulator(rules, twins=twins).records(seeds)
    assert records == [_old_bytes(rules, seed, twins) for seed in seeds]


def test_records_without_think_times_are_the_built_matches_too(twins: Twins) -> None:
    rules = PRESETS["kahvehane"]
    records = RecordSimulator(rules, think_times=False, twins=twins).records([3, 4])
    assert records == [_old_bytes(rules, s, twins, think_times=False) for s in (3, 4)]


@needs_compiled
def test_the_compiled_records_refuse_a_seed_that_is_no_int() -> None:
    assert COMPILED is not None
    records = RecordSimulator(PRESETS["short"], twins=COMPILED)
    with pytest.raises(TypeError, match="a seed is an int"):
        records.records([1, "2"])  # type: ignore[list-item]


@needs_compiled
@pytest.mark.parametrize("part", ["event", "tag_key", "fixed"])
@pytest.mark.parametrize("bad", [None, "text"])
def test_the_compiled_records_refuse_a_form_whose_part_is_no_bytes(part: str, bad: object) -> None:
    assert COMPILED is not None
    records = RecordSimulator(PRESETS["short"], twins=COMPILED)
    changes: dict[str, Any] = {part: bad}
    form = records._form._replace(**changes)
    with pytest.raises(TypeError):
        records._tails.records([1], True, form)


def test_a_seed_that_is_no_int_is_refused_by_the_compiled_writer() -> None:
    if COMPILED is None:
        pytest.skip("the compiled twins are not built")
    with pytest.raises(TypeError, match="a seed is an int"):
        COMPILED.sim.TailWriter(PRESETS["short"]).tail("7", True)


def test_both_twins_count_the_same_plays_without_recording_them() -> None:
    rules = PRESETS["short"]
    counts = {t.name: t.sim.TailWriter(rules).bot_play(11, True) for t in (PYTHON, COMPILED) if t}
    match = simulate_match(rules, 11, twins=PYTHON)
    assert set(counts.values()) == {sum(len(d.plays) for d in match.deals)}


@needs_compiled
def test_the_two_twins_write_the_same_tail() -> None:
    assert COMPILED is not None
    for name, rules in sorted(_ALL_VARIANTS.items()):
        for seed in range(4):
            rng = random.Random(seed)
            clock = random.Random(f"clock/{seed}").getstate()
            for clock_state in (clock, None):
                args = (rules, rng.getstate(), clock_state, seed % 4)
                assert COMPILED.sim.match_tail(*args) == PYTHON.sim.match_tail(*args), name


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
        dealer=st.sampled_from(DealerRule),
        play_timeout_ms=st.integers(0, 2**32 - 1),
        trump_timeout_ms=st.integers(0, 2**32 - 1),
        scores=st.fixed_dictionaries({c: st.integers(-5000, 5000) for c in Contract}),
        schedule=st.sampled_from(Schedule),
        deal_count=st.integers(1, 30),
        koz_quota=st.integers(0, 4),
        penalty_quota=st.integers(0, 8),
        max_per_penalty=st.integers(0, 5),
        penalty_only_deals=st.integers(0, 10),
        fixed_order=st.lists(st.sampled_from(Contract), min_size=1, max_size=9).map(tuple),
    )


@needs_compiled
@settings(max_examples=80, deadline=None)
@given(rules=_rulesets(), seed=st.integers(0, 2**64), think_times=st.booleans())
def test_any_ruleset_gives_the_built_bytes_on_the_compiled_twin(
    rules: Ruleset, seed: int, think_times: bool
) -> None:
    assert COMPILED is not None
    fast = simulate_match_bytes(rules, seed, think_times=think_times, twins=COMPILED)
    assert fast == _old_bytes(rules, seed, PYTHON, think_times=think_times)


def test_a_score_beyond_sint32_is_refused_not_wrapped(twins: Twins) -> None:
    # The record's scores are sint32: protobuf refuses a bigger one, and so does the writer.
    rules = PRESETS["short"].replace(
        preset="house", scores={c: 2**30 if c is Contract.KOZ else -(2**30) for c in Contract}
    )
    state = random.Random(1).getstate()
    with pytest.raises(ValueError, match="out of range"):
        twins.sim.match_tail(rules, state, None, 0)


# What `kingrec simulate --preset classic --matches 40 --seed 2026 -o x.krec` wrote before
# the simulator wrote the bytes itself (main at d994fad): the file's SHA-256.
_GOLDEN_CLASSIC_40 = "da513c0b8d1a00595deecef438cd4eed9e624f6daefb6876ce0647db2c41252f"


def test_simulate_writes_the_file_it_wrote_before_the_bytes_path(tmp_path: Path) -> None:
    out = tmp_path / "sim.krec"
    summary = simulate_to_file(str(out), "classic", 40, 2026, jobs=1)
    assert (summary.matches, summary.deals) == (40, 800)
    assert hashlib.sha256(out.read_bytes()).hexdigest() == _GOLDEN_CLASSIC_40
    # And the same file, frame by frame, as the message path writes it today.
    old = tmp_path / "old.krec"
    with KrecWriter.open(old) as writer:
        for index in range(40):
            writer.write(_old_bytes(PRESETS["classic"], derive_seed(2026, index), PYTHON))
    assert old.read_bytes() == out.read_bytes()
    frames = list(read_frames(out))
    assert len(frames) == 40 and all(isinstance(f, Frame) for f in frames)
