"""The contract schedule (kingrec.schedule): who may declare what, in both twins' tallies."""

from __future__ import annotations

import functools
import importlib
import random
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from kingrec._engine_types import SCHEDULE_OK
from kingrec.contracts import PENALTY_CONTRACTS, Contract
from kingrec.rules import PRESETS, Ruleset, Schedule, preset
from kingrec.schedule import ScheduleTally, allowed_contracts

from rulesets import ER, HOUSE, KI, KU, E, K, R, S

_VARIANTS = HOUSE


try:
    _COMPILED_TALLY = importlib.import_module("kingrec._engine_c").ScheduleTally
except ImportError:  # pragma: no cover - the compiled core is not built
    _COMPILED_TALLY = None


def _tallies() -> list[object]:
    if _COMPILED_TALLY is None:
        compiled = pytest.param(None, id="cython", marks=pytest.mark.skip("not built"))
    else:
        compiled = pytest.param(_COMPILED_TALLY, id="cython")
    return [pytest.param(ScheduleTally, id="python"), compiled]


@pytest.fixture(params=_tallies())
def tally_class(request: pytest.FixtureRequest) -> type[ScheduleTally]:
    """A schedule tally: the Python one or the compiled core's."""
    return request.param  # type: ignore[no-any-return]


def _allowed(
    tally_class: type[ScheduleTally],
    rules: Ruleset,
    seat: int,
    number: int,
    history: list[tuple[int, int]],
) -> list[Contract]:
    tally = tally_class(rules)
    for s, c in history:
        tally.add(s, c)
    return list(tally.allowed(seat, number))


def _history(*choices: Contract, first: int = 0) -> list[tuple[int, int]]:
    return [((first + i) % 4, c) for i, c in enumerate(choices)]


def test_penalty_quota_used_forces_koz(tally_class: type[ScheduleTally]) -> None:
    rules = preset("classic")
    # Seat 0 declared penalties in deals 1, 5 and 9; the others declared koz.
    hist = _history(KU, K, K, K, ER, K, K, K, KI, KU, ER, KI)
    assert _allowed(tally_class, rules, 0, 13, hist) == [K]


def test_koz_quota_used_forces_penalty(tally_class: type[ScheduleTally]) -> None:
    rules = preset("classic")
    hist = _history(K, E, E, KU, K, KU, ER, ER)
    allowed = _allowed(tally_class, rules, 0, 9, hist)
    assert K not in allowed
    # El almaz and kupa were chosen twice already (the limit), so they are gone too.
    assert allowed == [KI, R, S]


def test_limit_per_penalty_contract(tally_class: type[ScheduleTally]) -> None:
    rules = preset("classic")
    hist = _history(KI, KI)
    allowed = _allowed(tally_class, rules, 2, 3, hist)
    assert KI not in allowed
    assert set(allowed) == {K, E, KU, ER, R, S}


def test_no_koz_in_penalty_only_deals(tally_class: type[ScheduleTally]) -> None:
    rules = preset("classic").replace(penalty_only_deals=4)
    for number in range(1, 5):
        assert K not in _allowed(
            tally_class, rules, (number - 1) % 4, number, _history(*[E, KU, ER][: number - 1])
        )
    assert K in _allowed(tally_class, rules, 0, 5, _history(E, KU, ER, KI))


def test_lookahead_avoids_dead_end(tally_class: type[ScheduleTally]) -> None:
    # 16 deals, 3 koz + 2 penalties each, each penalty contract once: 6 penalty deals in all.
    rules = preset("classic").replace(
        deal_count=16, koz_quota=3, penalty_quota=2, max_per_penalty=1
    )
    hist = _history(
        KU,
        KI,
        R,
        K,  # deals 1-4
        ER,
        K,
        S,
        K,  # deals 5-8
        K,
        K,
        K,
        K,  # deals 9-12
        K,
    )  # deal 13
    # Seat 1 may still take el almaz by its own quota, but seat 3 must take a penalty in deal
    # 16 (its koz quota is used) and el almaz is the only one left: seat 1 must choose koz.
    assert _allowed(tally_class, rules, 1, 14, hist) == [K]
    assert _allowed(tally_class, rules, 3, 16, [*hist, (1, K), (2, K)]) == [E]


def test_fixed_and_rotation_schedules(tally_class: type[ScheduleTally]) -> None:
    rules = preset("classic").replace(schedule=Schedule.FIXED, fixed_order=(KU, K))
    assert _allowed(tally_class, rules, 0, 1, []) == [KU]
    assert _allowed(tally_class, rules, 1, 2, _history(KU)) == [K]
    assert _allowed(tally_class, rules, 2, 3, _history(KU, K)) == [KU]
    rot = preset("rotation")
    hist = _history(K, K, K, K, E)
    assert _allowed(tally_class, rot, 0, 9, hist) == [KU, ER, KI, R, S]
    assert _allowed(tally_class, rot, 1, 6, hist) == [E, KU, ER, KI, R, S]


def _completable(
    rules: Ruleset, first: int
) -> Callable[[int, tuple[int, ...], tuple[int, ...], tuple[int, ...]], bool]:
    """Brute force: can deals number+1 .. deal_count still be declared within the quotas?"""

    @functools.cache
    def done(number: int, koz: tuple[int, ...], pen: tuple[int, ...], per: tuple[int, ...]) -> bool:
        if number == rules.deal_count:
            return True
        nxt = number + 1
        seat = (first + nxt - 1) % 4
        if nxt > rules.penalty_only_deals and koz[seat] < rules.koz_quota:
            k = list(koz)
            k[seat] += 1
            if done(nxt, tuple(k), pen, per):
                return True
        if pen[seat] < rules.penalty_quota:
            p = list(pen)
            p[seat] += 1
            for i in sorted(set(range(6)), key=lambda i: per[i]):
                if per[i] < rules.max_per_penalty:
                    q = list(per)
                    q[i] += 1
                    if done(nxt, koz, tuple(p), tuple(sorted(q))):
                        return True
        return False

    return done


def _expected_choices(
    rules: Ruleset,
    seat: int,
    number: int,
    history: list[tuple[int, int]],
    done: Callable[[int, tuple[int, ...], tuple[int, ...], tuple[int, ...]], bool],
) -> list[Contract]:
    """The validator's checks now, and a brute-force look at the rest of the match."""
    out = []
    for c in Contract:
        koz, pen = [0] * 4, [0] * 4
        per: dict[int, int] = dict.fromkeys(PENALTY_CONTRACTS, 0)
        for s, x in [*history, (seat, c)]:
            if x == Contract.KOZ:
                koz[s] += 1
            else:
                pen[s] += 1
                per[Contract(x)] += 1
        if c == Contract.KOZ:
            ok = number > rules.penalty_only_deals and koz[seat] <= rules.koz_quota
        else:
            ok = pen[seat] <= rules.penalty_quota and per[c] <= rules.max_per_penalty
        if ok and done(number, tuple(koz), tuple(pen), tuple(sorted(per.values()))):
            out.append(c)
    return out


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@example(
    deal_count=8, koz_quota=1, penalty_quota=2, max_per_penalty=1, penalty_only_deals=0, first=0
)
@example(
    deal_count=9, koz_quota=2, penalty_quota=2, max_per_penalty=1, penalty_only_deals=3, first=2
)
@given(
    deal_count=st.integers(4, 9),
    koz_quota=st.integers(0, 2),
    penalty_quota=st.integers(0, 2),
    max_per_penalty=st.integers(0, 2),
    penalty_only_deals=st.integers(0, 5),
    first=st.integers(0, 3),
)
def test_quota_schedule_offers_exactly_the_completable_choices(
    tally_class: type[ScheduleTally],
    deal_count: int,
    koz_quota: int,
    penalty_quota: int,
    max_per_penalty: int,
    penalty_only_deals: int,
    first: int,
) -> None:
    # Every reachable schedule state of a small quota ruleset: allowed_contracts offers a
    # choice exactly when the validator accepts it now and the match can still be finished.
    rules = preset("classic").replace(
        deal_count=deal_count,
        koz_quota=koz_quota,
        penalty_quota=penalty_quota,
        max_per_penalty=max_per_penalty,
        penalty_only_deals=penalty_only_deals,
    )
    done = _completable(rules, first)
    assume(done(0, (0,) * 4, (0,) * 4, (0,) * 6))
    seen: set[tuple[int, ...]] = set()
    stack: list[list[tuple[int, int]]] = [[]]
    while stack:
        history = stack.pop()
        number = len(history) + 1
        koz, pen = [0] * 4, [0] * 4
        per: dict[int, int] = dict.fromkeys(PENALTY_CONTRACTS, 0)
        for s, c in history:
            if c == Contract.KOZ:
                koz[s] += 1
            else:
                pen[s] += 1
                per[Contract(c)] += 1
        key = (number, *koz, *pen, *per.values())
        if number > deal_count or key in seen:
            continue
        seen.add(key)
        seat = (first + number - 1) % 4
        allowed = _allowed(tally_class, rules, seat, number, history)
        assert allowed == _expected_choices(rules, seat, number, history, done)
        assert allowed  # never a dead end
        schedule = tally_class(rules)
        for i, (s, c) in enumerate([*history, (seat, allowed[0])]):
            assert schedule.problem(i + 1, s, c) == SCHEDULE_OK
            schedule.add(s, c)
        stack.extend([*history, (seat, c)] for c in allowed)


@pytest.mark.parametrize("seed", range(3))
def test_quota_schedule_long_playouts(tally_class: type[ScheduleTally], seed: int) -> None:
    # Random playouts of the 20-deal presets and variants never dead-end.
    rng = random.Random(seed)
    for rules in [
        preset("classic"),
        preset("kahvehane"),
        *(_VARIANTS[n] for n in ("penalty_only_4", "tight")),
    ]:
        for _ in range(30):
            schedule = tally_class(rules)
            history: list[tuple[int, int]] = []
            first = rng.randrange(4)
            for number in range(1, rules.deal_count + 1):
                seat = (first + number - 1) % 4
                allowed = _allowed(tally_class, rules, seat, number, history)
                contract = rng.choice(allowed)
                assert schedule.problem(number, seat, contract) == SCHEDULE_OK
                schedule.add(seat, contract)
                history.append((seat, contract))


# -- the two tallies agree ---------------------------------------------------------------


def _schedules() -> dict[str, st.SearchStrategy[object]]:
    """Schedule options, keepable or not (a declarer is then offered what breaks nothing)."""
    return {
        "schedule": st.sampled_from(Schedule),
        "deal_count": st.integers(1, 30),
        "koz_quota": st.integers(0, 4),
        "penalty_quota": st.integers(0, 8),
        "max_per_penalty": st.integers(0, 5),
        "penalty_only_deals": st.integers(0, 10),
        "fixed_order": st.lists(st.sampled_from(Contract), min_size=1, max_size=9).map(tuple),
    }


@pytest.mark.skipif(_COMPILED_TALLY is None, reason="the compiled core is not built")
@settings(max_examples=300, deadline=None)
@given(
    options=st.fixed_dictionaries(_schedules()),
    seat=st.integers(0, 3),
    history=st.lists(st.tuples(st.integers(0, 3), st.sampled_from(Contract)), max_size=30),
)
def test_compiled_tally_rules_as_the_python_one(
    options: dict[str, object], seat: int, history: list[tuple[int, Contract]]
) -> None:
    assert _COMPILED_TALLY is not None
    rules = PRESETS["classic"].replace(**options)
    number = len(history) + 1
    python, core = ScheduleTally(rules), _COMPILED_TALLY(rules)
    for i, (s, c) in enumerate(history, 1):
        assert python.problem(i, s, c) == core.problem(i, s, c)
        python.add(s, c)
        core.add(s, c)
    assert python.allowed(seat, number) == core.allowed(seat, number)
    assert allowed_contracts(rules, seat, number, history) == python.allowed(seat, number)


def test_a_breach_says_which_rule_and_why() -> None:
    tally = ScheduleTally(preset("classic"))
    for seat, contract in _history(KI, KI):
        tally.add(seat, contract)
    breach = tally.breach(3, 2, Contract.KIZ)
    assert breach is not None
    assert breach.code == "PENALTY_CONTRACT_LIMIT"
    assert "already chosen 2 time(s)" in breach.reason
    fixed = ScheduleTally(preset("classic").replace(schedule=Schedule.FIXED, fixed_order=(KU, K)))
    breach = fixed.breach(1, 0, Contract.KOZ)
    assert breach is not None and breach.code == "CONTRACT_NOT_SCHEDULED"
    assert "plays Kupa almaz in deal 1" in breach.reason
