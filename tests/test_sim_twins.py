"""The two simulator twins (compiled ``_sim_c`` and pure Python) give byte-identical matches."""

from __future__ import annotations

import importlib
import random
from collections.abc import Iterator
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kingrec import _engine_types, bots, cards, rules, simulate
from kingrec.contracts import CARD_CONTRACTS, Contract
from kingrec.rules import PRESETS, FirstDeclarerRule, Ruleset, Schedule
from kingrec.simulate import _twin_schedule, allowed_contracts, derive_seed, simulate_match
from kingrec.validator import validate_match

from rulesets import HOUSE

try:
    _SIM_C: ModuleType | None = importlib.import_module("kingrec._sim_c")
except ImportError:  # pragma: no cover - the compiled twin is not built
    _SIM_C = None

needs_twin = pytest.mark.skipif(_SIM_C is None, reason="kingrec._sim_c is not built")


_VARIANTS: dict[str, Ruleset] = {**PRESETS, **HOUSE}


def _both(rules: Ruleset, seed: int, think_times: bool = True) -> tuple[bytes, bytes]:
    """The match from the compiled twin and from the pure-Python one."""
    fast = simulate_match(rules, seed, think_times=think_times).SerializeToString()
    with _pure():
        slow = simulate_match(rules, seed, think_times=think_times).SerializeToString()
    return fast, slow


class _pure:
    """Within this block ``kingrec.simulate`` plays with the pure-Python twin."""

    def __enter__(self) -> None:
        self.saved = simulate._twin
        simulate._twin = None

    def __exit__(self, *exc: object) -> None:
        simulate._twin = self.saved


@pytest.fixture(autouse=True)
def _compiled_twin() -> Iterator[None]:
    """Every test here runs the compiled twin, even under KINGREC_PURE_PYTHON."""
    saved = simulate._twin
    simulate._twin = _SIM_C
    yield
    simulate._twin = saved


@needs_twin
def test_compiled_twin_is_the_default() -> None:
    assert simulate._load_twin(False) is _SIM_C
    assert simulate._load_twin(True) is None


@needs_twin
def test_constants_agree_with_the_python_ones() -> None:
    assert _SIM_C is not None
    const = _SIM_C.CONSTANTS
    for c in Contract:
        assert const[c.name] == int(c)
    for name in dir(rules):
        if name.startswith("F_") and name != "F_REVOKE_PENALIZE":
            assert const[name] == getattr(rules, name), name
    assert const["END_ALL_TRICKS"] == _engine_types.END_ALL_TRICKS
    assert const["END_EARLY"] == _engine_types.END_EARLY
    assert const["HEARTS"] == cards.HEARTS
    assert const["KING_OF_HEARTS"] == cards.KING_OF_HEARTS
    assert (const["JACK"], const["QUEEN"], const["KING"], const["ACE"]) == (
        bots._JACK,
        cards.QUEEN,
        cards.KING,
        bots._ACE,
    )
    assert const["RAW_MEAN"] == [0.0, *(bots._RAW_MEAN[c] for c in Contract)]


@needs_twin
@pytest.mark.parametrize("name", sorted(_VARIANTS))
def test_twins_give_the_same_bytes(name: str) -> None:
    rules_ = _VARIANTS[name]
    for index in range(6):
        seed = derive_seed(99, index)
        fast, slow = _both(rules_, seed)
        assert fast == slow, (name, seed)
    fast, slow = _both(rules_, 5, think_times=False)
    assert fast == slow


@needs_twin
def test_compiled_matches_validate_clean() -> None:
    for name in ("classic", "rotation", "kahvehane"):
        for seed in range(3):
            report = validate_match(simulate_match(PRESETS[name], seed))
            assert report.findings == [], [f.message for f in report.findings]


@needs_twin
def test_abandon_and_revoke_still_work_with_the_compiled_twin() -> None:
    rules_ = PRESETS["classic"]
    match = simulate_match(rules_, 3, abandon_after=4)
    assert len(match.deals) == 4
    pen = rules_.replace(revoke=rules.RevokeRule.PENALIZE)
    match = simulate_match(pen, 3, revoke_in_deal=2)
    assert match.deals[1].HasField("revoke_play")


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
        **_schedules(),
    )


def _schedules() -> dict[str, st.SearchStrategy[object]]:
    """Schedule options, feasible or not (the simulator then just keeps going)."""
    return {
        "schedule": st.sampled_from(Schedule),
        "deal_count": st.integers(1, 30),
        "koz_quota": st.integers(0, 4),
        "penalty_quota": st.integers(0, 8),
        "max_per_penalty": st.integers(0, 5),
        "penalty_only_deals": st.integers(0, 10),
        "fixed_order": st.lists(st.sampled_from(Contract), min_size=1, max_size=9).map(tuple),
    }


@needs_twin
@settings(max_examples=300, deadline=None)
@given(
    options=st.fixed_dictionaries(_schedules()),
    seat=st.integers(0, 3),
    history=st.lists(st.tuples(st.integers(0, 3), st.sampled_from(Contract)), max_size=30),
)
def test_compiled_schedule_is_allowed_contracts(
    options: dict[str, object], seat: int, history: list[tuple[int, Contract]]
) -> None:
    assert _SIM_C is not None
    rules_ = PRESETS["classic"].replace(**options)
    number = len(history) + 1
    expected = sorted(set(allowed_contracts(rules_, seat, number, history)))
    got = _SIM_C._allowed(_twin_schedule(rules_), rules_.deal_count, seat, number, history)
    assert got == expected


@needs_twin
@settings(max_examples=60, deadline=None)
@given(rules_=_rulesets(), seed=st.integers(0, 2**63 - 1))
def test_twins_agree_on_any_ruleset(rules_: Ruleset, seed: int) -> None:
    fast, slow = _both(rules_, seed)
    assert fast == slow


@needs_twin
@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**64))
def test_twins_agree_on_many_classic_seeds(seed: int) -> None:
    # Long runs of the Mersenne Twister: a whole classic match per seed.
    fast, slow = _both(PRESETS["short"], seed)
    assert fast == slow


def test_random_state_is_what_the_twin_expects() -> None:
    """``_sim_c`` takes over ``random.Random().getstate()``: version 3, 624 words + index."""
    version, internal, gauss_next = random.Random(1).getstate()
    assert version == 3 and len(internal) == 625 and gauss_next is None
