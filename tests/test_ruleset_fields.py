"""A record's ruleset read from its wire bytes (``kingrec.ruleset_fields.read_ruleset``)
agrees with protobuf's decoding wherever it answers, and answers for what writers write."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kingrec.boundary import ruleset_from_proto, ruleset_to_proto, spelled_out
from kingrec.errors import RulesetError
from kingrec.fastcheck import _core_params, _ruleset_in_a_match
from kingrec.limits import MAX_FIXED_ORDER, MAX_STRING_BYTES
from kingrec.rules import PRESETS
from kingrec.ruleset_fields import (
    ENUM_OPTIONS,
    SCALAR_OPTIONS,
    SCORING_FIELDS,
    SET_OPTIONS,
    SpelledOut,
    read_ruleset,
    resolve_ruleset,
)
from kingrec.v1 import record_pb2 as pb


def _reference(raw: bytes) -> SpelledOut:
    """What protobuf decodes ``raw`` (a serialized Ruleset) to, where it sits in a Match."""
    return spelled_out(_ruleset_in_a_match(raw))


def _outcome(spelled: SpelledOut) -> object:
    """The ruleset a record resolves to, or the error it is refused with."""
    try:
        return resolve_ruleset(spelled).core_params()
    except RulesetError as exc:
        return ("refused", str(exc))


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_as_written_is_read_without_protobuf(name: str) -> None:
    raw = ruleset_to_proto(PRESETS[name]).SerializeToString()
    spelled = read_ruleset(raw)
    assert spelled is not None
    assert spelled == _reference(raw)
    assert resolve_ruleset(spelled) == PRESETS[name]


def test_a_ruleset_naming_only_its_preset_resolves_to_the_preset() -> None:
    raw = pb.Ruleset(preset="Short").SerializeToString()
    assert read_ruleset(raw) == SpelledOut(preset="Short")
    assert resolve_ruleset(SpelledOut(preset="Short")) == PRESETS["short"]


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (pb.Ruleset(deal_count=3).SerializeToString() * 2, "a field twice"),
        (b"\xc8\x01\x05", "an unknown field (25)"),
        (b"\x18\x80\x80\x80\x80\x10", "a uint32 over 32 bits"),
        (b"\x60\x02", "a bool that is neither 0 nor 1"),
        (b"\x10\xff\xff\xff\xff\x0f", "an enum over int32"),
        (b"\x0a\x02\xc3\xa7", "a preset that is not ASCII"),
        (b"\x0a\x05abc", "a truncated string"),
        (b"\x1d\x00\x00\x00\x00", "a fixed32 wire type"),
        (b"\x42\x02\x08\x80", "a truncated contract"),
        (b"\x42\x02\x10\x01", "an unknown field of a ContractSet"),
        (b"\xc2\x01\x04\x08\x01\x08\x01", "a scoring field twice"),
        (b"\x18", "a key without its value"),
        (b"\x98\x80\x80\x80\x80\x00\x05", "an overlong key"),
        (b"\x18\x85\x00", "an overlong value"),
    ],
)
def test_anything_but_the_plain_form_is_left_to_protobuf(raw: bytes, why: str) -> None:
    assert read_ruleset(raw) is None, why


def test_a_ruleset_protobuf_cannot_decode_is_still_refused() -> None:
    # Not plain (a group), then protobuf's turn: an unterminated group is undecodable.
    assert read_ruleset(b"\x0b") is None
    assert _core_params(b"\x0b") is None


_U32 = st.integers(0, (1 << 32) - 1)
_ANY_VARINT = st.one_of(st.integers(0, 40), _U32, st.integers(0, (1 << 64) - 1))


@st.composite
def _rulesets(draw: st.DrawFn) -> pb.Ruleset:
    """Rulesets with any subset of fields set, to values in and out of range."""
    msg = pb.Ruleset()
    if draw(st.booleans()):
        msg.preset = draw(st.sampled_from(["", "classic", "SHORT", "house", "çay"]))
    for option in SCALAR_OPTIONS:
        if draw(st.booleans()):
            field = msg.DESCRIPTOR.fields_by_name[option]
            value = draw(st.booleans()) if field.type == field.TYPE_BOOL else draw(_U32)
            setattr(msg, option, value)
    for option in ENUM_OPTIONS:
        if draw(st.booleans()):
            setattr(msg, option, draw(st.integers(-3, 8)))
    for option in (*SET_OPTIONS, "fixed_order"):
        if draw(st.booleans()):
            getattr(msg, option).SetInParent()
            getattr(msg, option).contracts.extend(draw(st.lists(st.integers(-2, 9), max_size=30)))
    if draw(st.booleans()):
        msg.scoring.SetInParent()
        for name in SCORING_FIELDS.values():
            if draw(st.booleans()):
                setattr(msg.scoring, name, draw(st.integers(-(1 << 31), (1 << 31) - 1)))
    return msg


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(msg=_rulesets())
def test_a_written_ruleset_reads_as_protobuf_decodes_it(msg: pb.Ruleset) -> None:
    raw = msg.SerializeToString()
    spelled = read_ruleset(raw)
    reference = spelled_out(msg)
    if spelled is not None:
        assert spelled == reference
        assert _outcome(spelled) == _outcome(reference)
    # What protobuf itself writes is plain unless it holds what the plain form leaves out.
    non_ascii = not msg.preset.isascii()
    negative = any(getattr(msg, o) < 0 for o in ENUM_OPTIONS if msg.HasField(o)) or any(  # type: ignore[arg-type]
        c < 0 for o in (*SET_OPTIONS, "fixed_order") for c in getattr(msg, o).contracts
    )
    assert (spelled is None) == (non_ascii or negative)
    # ...and the checker's resolution is the reference's (none when over a bound).
    try:
        expected = ruleset_from_proto(msg).core_params()
    except RulesetError:
        expected = None
    if len(msg.preset.encode()) > MAX_STRING_BYTES or any(
        len(getattr(msg, o).contracts) > MAX_FIXED_ORDER for o in (*SET_OPTIONS, "fixed_order")
    ):
        expected = None
    assert _core_params(raw) == expected


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(msg=_rulesets(), cuts=st.lists(st.tuples(st.integers(0, 400), _ANY_VARINT), max_size=4))
def test_damaged_ruleset_bytes_read_as_protobuf_decodes_them_or_not_at_all(
    msg: pb.Ruleset, cuts: list[tuple[int, int]]
) -> None:
    raw = bytearray(msg.SerializeToString())
    for at, value in cuts:  # overwrite, insert or cut bytes anywhere
        if raw and value % 3 == 0:
            raw[at % len(raw)] = value & 0xFF
        elif value % 3 == 1:
            raw[at % (len(raw) + 1) : at % (len(raw) + 1)] = value.to_bytes(8, "little")[:3]
        else:
            del raw[at % (len(raw) + 1) :]
    spelled = read_ruleset(bytes(raw))
    if spelled is None:
        return
    try:
        reference = _reference(bytes(raw))
    except Exception:  # protobuf refuses what the wire reader read: they disagree
        pytest.fail(f"read {bytes(raw)!r}, which protobuf cannot decode")
    assert spelled == reference
