"""The two engine twins: the compiled one loads when built, and both always agree."""

from __future__ import annotations

import functools
import importlib
import os
import random
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kingrec
from kingrec import _engine_py, engine, fastcheck
from kingrec._engine_types import END_INCOMPLETE
from kingrec.contracts import Contract
from kingrec.rules import PRESETS, RevokeRule
from kingrec.simulate import simulate_match
from kingrec.v1 import record_pb2 as pb
from kingrec.validator import validate_match

PACKAGE = Path(kingrec.__file__).resolve().parent


def _compiled() -> ModuleType | None:
    try:
        return importlib.import_module("kingrec._engine_c")
    except ImportError:
        return None


COMPILED = _compiled()
needs_compiled = pytest.mark.skipif(COMPILED is None, reason="the Cython twin is not built")


def _pure_forced() -> bool:
    return os.environ.get("KINGREC_PURE_PYTHON", "") not in ("", "0")


def _compiled_expected() -> bool:
    """CI says so, or a built extension sits next to the package."""
    if os.environ.get("KINGREC_REQUIRE_COMPILED", "") not in ("", "0"):
        return True
    return any(PACKAGE.glob("_engine_c*.so")) or any(PACKAGE.glob("_engine_c*.pyd"))


def _twin_in_subprocess(**env: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", "import kingrec.engine as e; print(e.TWIN)"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()


# -- which twin runs ----------------------------------------------------------------------


def test_compiled_twin_loaded_when_it_should_have() -> None:
    if _pure_forced():
        assert engine.TWIN == "python"
        return
    if not _compiled_expected():
        pytest.skip("no compiled twin is built and KINGREC_REQUIRE_COMPILED is not set")
    assert engine.TWIN == "cython", "the Cython twin is built (or required) but did not load"
    assert fastcheck.COMPILED


def test_pure_python_switch_forces_the_reference() -> None:
    assert _twin_in_subprocess(KINGREC_PURE_PYTHON="1") == "python"


def test_without_the_switch_the_compiled_twin_runs_when_built() -> None:
    env = {**os.environ}
    env.pop("KINGREC_PURE_PYTHON", None)
    result = subprocess.run(
        [sys.executable, "-c", "import kingrec.engine as e; print(e.TWIN)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == ("cython" if COMPILED is not None else "python")


def _import_without_the_engine(**env: str) -> subprocess.CompletedProcess[str]:
    """Import kingrec in a process where ``kingrec._engine_c`` cannot load."""
    code = (
        "import sys; sys.modules['kingrec._engine_c'] = None\n"
        "import kingrec.engine as e, kingrec._twins as t; print(e.TWIN, t.COMPILED)"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("KINGREC_")}
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_missing_compiled_twin_falls_back_to_the_reference() -> None:
    result = _import_without_the_engine()
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["python", "None"]


def test_a_required_compiled_twin_that_does_not_load_is_an_error() -> None:
    result = _import_without_the_engine(KINGREC_REQUIRE_COMPILED="1")
    assert result.returncode != 0
    assert "KINGREC_REQUIRE_COMPILED is set but the compiled twins do not load" in result.stderr


# -- random deals: both twins judge every step alike ----------------------------------------


def _random_hands(rng: random.Random) -> bytes:
    deck = list(range(52))
    rng.shuffle(deck)
    return bytes(deck)


def _pick_card(rng: random.Random, hand: int, legal: int) -> int:
    """Mostly legal cards; sometimes an illegal card of the hand, a card not held, no card."""
    roll = rng.random()
    if roll < 0.75 and legal:
        pool = legal
    elif roll < 0.87 and hand & ~legal:
        pool = hand & ~legal
    elif roll < 0.98:
        pool = ((1 << 52) - 1) & ~hand
    else:
        return rng.randrange(52, 256)
    cards = [c for c in range(52) if pool >> c & 1]
    return rng.choice(cards) if cards else rng.randrange(52)


@needs_compiled
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    flags=st.integers(0, 1023),
    contract=st.one_of(st.just(int(Contract.KOZ)), st.integers(1, 7)),  # koz has most options
    trump=st.integers(-1, 3),
    declarer=st.integers(0, 3),
    extra=st.integers(0, 12),
)
def test_twins_agree_play_by_play(
    seed: int, flags: int, contract: int, trump: int, declarer: int, extra: int
) -> None:
    assert COMPILED is not None
    if contract == Contract.KOZ and trump < 0:
        trump = seed % 4
    rng = random.Random(seed)
    hands = _random_hands(rng)
    held = [0, 0, 0, 0]
    for i, card in enumerate(hands):
        held[i // 13] |= 1 << card
    plays = bytearray()
    trick: list[int] = []
    played = 0
    leader = declarer
    tricks = 0
    # Play on past the deal's end and with illegal cards, as bad records do.
    for _ in range(rng.randrange(0, 52 + extra)):
        seat = (leader + len(trick)) % 4
        args = (held[seat], list(trick), contract, trump, flags, played)
        legal = _engine_py.legal_plays(*args)
        assert COMPILED.legal_plays(*args) == legal
        card = _pick_card(rng, held[seat], legal)
        plays.append(card)
        if card >= 52:
            break
        judge = (held[seat], tuple(trick), card, contract, trump, flags, played)
        assert COMPILED.judge_play(*judge) == _engine_py.judge_play(*judge)
        held[seat] &= ~(1 << card)
        trick.append(card)
        if len(trick) == 4:
            position = _engine_py.trick_winner(trick, trump)
            assert COMPILED.trick_winner(trick, trump) == position
            units = _engine_py.trick_units(trick, tricks, contract)
            assert COMPILED.trick_units(bytes(trick), tricks, contract) == units
            for c in trick:
                played |= 1 << c
            leader = (leader + position) % 4
            tricks += 1
            trick.clear()
    for revoke in (-1, rng.randrange(-1, len(plays) + 2)):
        args2 = (hands, bytes(plays), declarer, contract, trump, flags, revoke)
        assert COMPILED.replay_deal(*args2) == _engine_py.replay_deal(*args2)
    assert COMPILED.replay_deal(hands, bytearray(plays), declarer, contract, trump, flags) == (
        _engine_py.replay_deal(hands, bytes(plays), declarer, contract, trump, flags)
    )


@needs_compiled
@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    flags=st.integers(0, 1023),
    contract=st.integers(1, 7),
    declarer=st.integers(0, 3),
)
def test_twins_deals_step_alike(seed: int, flags: int, contract: int, declarer: int) -> None:
    """``Deal.step`` on both twins: the same verdicts, legal sets and state after every card."""
    assert COMPILED is not None
    trump = seed % 4 if contract == Contract.KOZ else -1
    rng = random.Random(seed)
    hands = _random_hands(rng)
    fast = COMPILED.Deal(hands, declarer, contract, trump, flags)
    slow = _engine_py.Deal(hands, declarer, contract, trump, flags)
    revoke = rng.randrange(-1, 60)
    for index in range(60):
        if slow.end:
            break
        assert fast.legal() == slow.legal()
        card = _pick_card(rng, slow.held[slow.to_play], slow.legal())
        assert fast.judge(card) == slow.judge(card)
        assert fast.step(card, index == revoke) == slow.step(card, index == revoke)
        for name in ("to_play", "leader", "played", "end", "revoker", "nplays"):
            assert getattr(fast, name) == getattr(slow, name), name
        assert list(fast.held) == slow.held
        assert list(fast.trick) == slow.trick
        assert bytes(fast.winners) == bytes(slow.winners)
        assert list(fast.units) == slow.units


@needs_compiled
@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    flags=st.integers(0, 1023),
    contract=st.integers(1, 7),
    trump=st.integers(-1, 3),
)
def test_twins_agree_on_legal_games(seed: int, flags: int, contract: int, trump: int) -> None:
    """Whole legal deals (lowest legal card) replay to the same end, winners and units."""
    assert COMPILED is not None
    if contract == Contract.KOZ and trump < 0:
        trump = 0
    rng = random.Random(seed)
    hands = _random_hands(rng)
    declarer = rng.randrange(4)
    held = [0, 0, 0, 0]
    for i, card in enumerate(hands):
        held[i // 13] |= 1 << card
    plays = bytearray()
    trick: list[int] = []
    played, leader = 0, declarer
    while len(plays) < 52:
        seat = (leader + len(trick)) % 4
        legal = COMPILED.legal_plays(held[seat], trick, contract, trump, flags, played)
        card = (legal & -legal).bit_length() - 1
        held[seat] &= ~(1 << card)
        trick.append(card)
        plays.append(card)
        if len(trick) == 4:
            leader = (leader + COMPILED.trick_winner(trick, trump)) % 4
            for c in trick:
                played |= 1 << c
            trick.clear()
    args = (hands, bytes(plays), declarer, contract, trump, flags, -1)
    result = COMPILED.replay_deal(*args)
    assert result == _engine_py.replay_deal(*args)
    assert result.violations == [] and result.end != END_INCOMPLETE


@needs_compiled
@pytest.mark.parametrize(
    "call",
    [
        ("judge_play", (0b111, [60], 1, 3, -1, 0, 0)),  # a trick card that is no card
        ("judge_play", (0b111, [], -1, 3, -1, 0, 0)),  # a negative card
        ("judge_play", (1 << 70, [], 2, 3, -1, 0, 0)),  # a hand wider than 64 bits
        ("judge_play", (0b111, [5], 1, 1, -1, 1, 0)),  # koz without a trump suit
        ("judge_play", (0b111, [5], 1, 9, -1, 64, 0)),  # an unknown contract
        ("judge_play", (0b111, [1, 2, 3, 4, 5], 1, 3, -1, 0, 0)),  # a trick of five
        ("legal_plays", (0b111, "ab", 3, -1, 0, 0)),  # not cards at all
        ("trick_winner", ([1, 2, 3, 4, 5, 6], 0)),
        ("trick_winner", ([1, 70], 0)),
        ("trick_units", ([1, 2], 11.5, 7)),
        ("trick_units", ([1, 2], 3, 0)),
        ("replay_deal", (bytes(range(51)), b"", 0, 3, -1, 0)),  # hands too short
        ("replay_deal", (list(range(52)), [0, 13], 0, 3, -1, 0)),  # lists, not bytes
        ("replay_deal", (bytes(range(52)), b"\x00\x0d", 5, 3, -1, 0)),  # seat 5
        ("replay_deal", (bytes(range(52)), b"\x00\x0d", 0, 3, -1, 512, None)),
    ],
)
def test_twins_agree_outside_the_domain(call: tuple[str, tuple[object, ...]]) -> None:
    """Odd arguments give the same result, or the same error, on both twins."""
    name, args = call

    def outcome(twin: ModuleType) -> object:
        try:
            return getattr(twin, name)(*args)
        except Exception as exc:
            return type(exc)

    assert outcome(COMPILED) == outcome(_engine_py)  # type: ignore[arg-type]


# -- whole matches: the validator finds the same on both twins ------------------------------


@functools.cache
def _simulated(name: str, seed: int) -> bytes:
    rules = PRESETS[name]
    if name == "classic" and seed % 2:
        rules = rules.replace(revoke=RevokeRule.PENALIZE)
    return simulate_match(rules, seed).SerializeToString()


def _mutate(match: pb.Match, rng: random.Random) -> None:
    """A few random edits of the kinds the validator judges."""
    for _ in range(rng.randrange(1, 4)):
        deal = match.deals[rng.randrange(len(match.deals))]
        kind = rng.randrange(9)
        plays = bytearray(deal.plays)
        if kind == 0 and plays:
            plays[rng.randrange(len(plays))] = rng.randrange(52)
        elif kind == 1 and len(plays) > 1:
            i, j = rng.randrange(len(plays)), rng.randrange(len(plays))
            plays[i], plays[j] = plays[j], plays[i]
        elif kind == 2:
            del plays[rng.randrange(len(plays) + 1) :]
        elif kind == 3:
            plays += bytes(rng.randrange(52) for _ in range(rng.randrange(1, 5)))
        elif kind == 4:
            deal.contract = rng.randrange(0, 9)  # type: ignore[assignment]
        elif kind == 5:
            deal.trump = rng.randrange(0, 6)  # type: ignore[assignment]
        elif kind == 6:
            deal.declarer = rng.randrange(5)
        elif kind == 7 and plays:
            deal.revoke_play = rng.randrange(len(plays) + 1)
        elif kind == 8:
            hands = bytearray(deal.hands)
            i, j = rng.randrange(52), rng.randrange(52)
            hands[i], hands[j] = hands[j], hands[i]
            deal.hands = bytes(hands)
        deal.plays = bytes(plays)


@needs_compiled
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(PRESETS)),
    seed=st.integers(0, 3),
    edits=st.integers(0, 2**32 - 1),
)
def test_validator_finds_the_same_on_both_twins(name: str, seed: int, edits: int) -> None:
    match = pb.Match.FromString(_simulated(name, seed))
    _mutate(match, random.Random(edits))
    reference = validate_match(match, engine=_engine_py)
    assert validate_match(match, engine=COMPILED) == reference
