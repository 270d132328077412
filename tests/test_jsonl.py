"""The JSON Lines form of a match: lossless both ways, strict and path-naming on bad input."""

from __future__ import annotations

import io
import json
import pickle
import random
from typing import Any, cast

import pytest
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kingrec.boundary import ruleset_to_proto
from kingrec.errors import JsonRecordError
from kingrec.jsonl import (
    JsonLineError,
    JsonRecord,
    dumps_match,
    loads_match,
    match_from_dict,
    match_to_dict,
    read_jsonl,
    write_jsonl,
)
from kingrec.rules import preset
from kingrec.v1 import record_pb2 as pb


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _unknown_varint(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _unknown_bytes(number: int, data: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _assert_lossless(m: pb.Match) -> pb.Match:
    back = loads_match(dumps_match(m))
    assert back == m
    # Map entries serialize in hash order unless deterministic.
    assert back.SerializeToString(deterministic=True) == m.SerializeToString(deterministic=True)
    return back


def _realistic_match() -> pb.Match:
    rng = random.Random(1)
    m = pb.Match(
        format_version=1,
        match_id="m-2024-0001",
        ruleset=ruleset_to_proto(preset("classic")),
        status=pb.MATCH_STATUS_IN_PROGRESS,
        status_reason="stopped for dinner",
    )
    m.metadata.event = "Kadıköy kış turnuvası"
    m.metadata.site = "kahve.example"
    m.metadata.client_name = "kingcli"
    m.metadata.client_version = "3.2.1"
    m.metadata.direction = pb.DIRECTION_ANTICLOCKWISE
    m.metadata.start_time.FromJsonString("2024-01-13T19:30:00.250Z")
    m.metadata.tags["round"] = "2"
    m.metadata.tags["table"] = "Ç-4"
    for seat, name in enumerate(["Ayşe", "Berk", "Cem", "Deniz"]):
        m.players.add(id=f"p{seat}", name=name, seat=seat, seat_name="NESW"[seat])

    deck = list(range(52))
    rng.shuffle(deck)
    koz = m.deals.add(
        number=1,
        dealer=0,
        declarer=0,
        contract=pb.CONTRACT_KOZ,
        trump=pb.SUIT_HEARTS,
        hands=bytes(deck),
        trump_think_ms=0,
        end=pb.DEAL_END_ALL_TRICKS,
        claimed_scores=[150, 200, 100, 200],
    )
    koz.plays = bytes(deck[0:52:13] + deck[1:52:13])
    koz.think_ms.extend(rng.randrange(5000) for _ in koz.plays)
    koz.auto_plays.extend([3, 6])

    rng.shuffle(deck)
    kiz = m.deals.add(
        number=2,
        declarer=1,
        contract=pb.CONTRACT_KIZ,
        hands=bytes(deck),
        plays=bytes(deck[1:52:13]),
        revoke_play=2,
        end=pb.DEAL_END_REVOKE,
    )
    kiz.think_ms.extend([800, 1200, 0, 950])
    m.claimed_totals.extend([-250, 650, 0, -100])
    return m


def test_realistic_match_round_trips_through_json() -> None:
    _assert_lossless(_realistic_match())


def test_json_form_uses_card_and_short_enum_names() -> None:
    d = match_to_dict(_realistic_match())
    deal = d["deals"][0]
    assert deal["contract"] == "KOZ"
    assert deal["trump"] == "HEARTS"
    assert deal["end"] == "ALL_TRICKS"
    assert len(deal["hands"]) == 4 and all(len(hand) == 13 for hand in deal["hands"])
    assert all(isinstance(card, str) and len(card) == 2 for card in deal["plays"])
    assert deal["dealer"] == 0 and deal["trump_think_ms"] == 0  # present optionals, though zero
    assert "revoke_play" not in deal
    assert d["deals"][1]["revoke_play"] == 2
    assert d["status"] == "IN_PROGRESS"
    assert d["metadata"]["direction"] == "ANTICLOCKWISE"
    assert d["metadata"]["start_time"] == "2024-01-13T19:30:00.250Z"
    assert d["ruleset"]["schedule"] == "QUOTA"
    assert d["ruleset"]["first_declarer_card"] == "2D"
    assert d["ruleset"]["heart_lead_ban"] == ["KUPA", "RIFKI"]
    assert d["claimed_totals"] == [-250, 650, 0, -100]


def test_default_values_are_left_out() -> None:
    assert match_to_dict(pb.Match()) == {}
    assert match_to_dict(pb.Match(deals=[pb.Deal()])) == {"deals": [{}]}


def test_dumps_writes_one_compact_line() -> None:
    m = pb.Match(match_id="a\nb\u2028c\x85d", status_reason="ünicode")
    line = dumps_match(m)
    assert len(line.splitlines()) == 1
    assert "ünicode" in line
    assert ": " not in line and ", " not in line
    assert loads_match(line) == m


def test_unknown_fields_survive_at_top_level_and_inside_messages() -> None:
    m = _realistic_match()
    m.MergeFromString(b"\xf8\x06\x05")  # field 111, varint 5
    m.MergeFromString(_unknown_bytes(112, b"future"))
    m.deals[1].MergeFromString(b"\xf8\x06\x07")
    m.ruleset.MergeFromString(_unknown_varint(300, 1))
    m.ruleset.heart_lead_ban.MergeFromString(_unknown_varint(9, 2))
    m.ruleset.scoring.MergeFromString(_unknown_varint(99, 3))
    m.metadata.MergeFromString(_unknown_varint(50, 4))
    m.metadata.start_time.MergeFromString(_unknown_varint(7, 5))
    m.players[2].MergeFromString(_unknown_varint(20, 6))
    original = m.SerializeToString(deterministic=True)

    line = dumps_match(m)
    d = json.loads(line)
    assert "_unknown" in d and "_unknown" in d["deals"][1] and "_unknown" not in d["deals"][0]
    # The compact forms cannot carry "_unknown", so these fall back to objects.
    assert d["ruleset"]["heart_lead_ban"]["contracts"] == ["KUPA", "RIFKI"]
    assert set(d["metadata"]["start_time"]) == {"seconds", "nanos", "_unknown"}

    back = loads_match(line)
    assert back.SerializeToString(deterministic=True) == original
    assert back == m


def test_unknown_field_with_known_number_but_wrong_wire_type_survives() -> None:
    m = pb.Match()
    m.MergeFromString(_unknown_bytes(1, b"x"))  # format_version is a varint, not bytes
    assert loads_match(dumps_match(m)).SerializeToString() == m.SerializeToString()


def test_present_optional_zero_values_survive() -> None:
    m = pb.Match()
    m.ruleset.must_ruff = False
    m.ruleset.penalty_only_deals = 0
    m.ruleset.dealer = pb.DEALER_RULE_UNSPECIFIED
    m.ruleset.scoring.koz_trick = 0
    m.ruleset.early_end.SetInParent()
    m.deals.add(dealer=0, revoke_play=0)
    m.metadata.start_time.SetInParent()  # the epoch itself
    back = _assert_lossless(m)
    assert back.ruleset.HasField("must_ruff") and back.ruleset.HasField("penalty_only_deals")
    assert back.ruleset.HasField("dealer") and back.ruleset.scoring.HasField("koz_trick")
    assert back.ruleset.HasField("early_end") and not back.ruleset.HasField("withholding")
    assert back.deals[0].HasField("revoke_play")
    assert back.metadata.HasField("start_time")
    d = match_to_dict(m)
    assert d["ruleset"]["must_ruff"] is False
    assert d["ruleset"]["early_end"] == []
    assert d["ruleset"]["dealer"] == "UNSPECIFIED"
    assert d["metadata"]["start_time"] == "1970-01-01T00:00:00Z"


@pytest.mark.parametrize(
    "hands",
    [bytes(range(51)), bytes(range(53)), bytes(range(51)) + b"\xff", b"\x00" * 52],
    ids=["short", "long", "byte-over-51", "duplicates"],
)
def test_damaged_hands_round_trip(hands: bytes) -> None:
    m = pb.Match(deals=[pb.Deal(number=1, hands=hands)])
    _assert_lossless(m)


def test_damaged_hands_and_plays_are_written_as_hex() -> None:
    m = pb.Match(deals=[pb.Deal(hands=bytes(range(51)), plays=b"\x01\x34")])
    deal = match_to_dict(m)["deals"][0]
    assert deal == {"hands_raw": bytes(range(51)).hex(), "plays_raw": "0134"}
    _assert_lossless(m)


def test_unknown_enum_numbers_and_card_codes_are_written_as_ints() -> None:
    m = pb.Match(
        status=pb.MatchStatus.ValueType(9),
        deals=[
            pb.Deal(
                contract=pb.Contract.ValueType(42),
                trump=pb.Suit.ValueType(-3),
                end=pb.DealEnd.ValueType(17),
            )
        ],
    )
    m.ruleset.schedule = pb.ScheduleKind.ValueType(5)
    m.ruleset.first_declarer_card = 52
    m.ruleset.void_discard.contracts.extend([pb.CONTRACT_KUPA, pb.Contract.ValueType(99)])
    d = match_to_dict(m)
    assert d["status"] == 9
    assert d["deals"][0] == {"contract": 42, "trump": -3, "end": 17}
    assert d["ruleset"]["first_declarer_card"] == 52
    assert d["ruleset"]["void_discard"] == ["KUPA", 99]
    _assert_lossless(m)


def test_out_of_range_timestamp_round_trips_as_object() -> None:
    m = pb.Match()
    m.metadata.start_time.seconds = 10**13
    m.metadata.start_time.nanos = -1
    assert match_to_dict(m)["metadata"]["start_time"] == {"seconds": 10**13, "nanos": -1}
    _assert_lossless(m)


def test_enum_full_names_and_any_case_are_accepted() -> None:
    m = match_from_dict(
        {
            "status": "match_status_complete",
            "metadata": {"direction": "Clockwise"},
            "ruleset": {
                "schedule": "SCHEDULE_KIND_FIXED",
                "fixed_order": ["CONTRACT_KIZ", "son_iki"],
                "first_declarer": "holder_of_card",
                "revoke": "REVOKE_RULE_PENALIZE",
            },
            "deals": [{"contract": "CONTRACT_KOZ", "trump": "SUIT_SPADES", "end": "early"}],
        }
    )
    assert m.status == pb.MATCH_STATUS_COMPLETE
    assert m.metadata.direction == pb.DIRECTION_CLOCKWISE
    assert m.ruleset.schedule == pb.SCHEDULE_KIND_FIXED
    assert list(m.ruleset.fixed_order.contracts) == [pb.CONTRACT_KIZ, pb.CONTRACT_SON_IKI]
    assert m.ruleset.first_declarer == pb.FIRST_DECLARER_RULE_HOLDER_OF_CARD
    assert m.ruleset.revoke == pb.REVOKE_RULE_PENALIZE
    deal = m.deals[0]
    assert (deal.contract, deal.trump, deal.end) == (
        pb.CONTRACT_KOZ,
        pb.SUIT_SPADES,
        pb.DEAL_END_EARLY,
    )


def test_card_name_variants_are_accepted() -> None:
    m = match_from_dict(
        {"deals": [{"plays": ["10H", "♠Q", "qs", "TH"]}], "ruleset": {"first_declarer_card": "2♦"}}
    )
    assert m.deals[0].plays == bytes([34, 49, 49, 34])
    assert m.ruleset.first_declarer_card == 13


def test_null_means_absent() -> None:
    m = match_from_dict(
        {"match_id": None, "ruleset": {"must_ruff": None}, "deals": [{"hands": None}]}
    )
    assert m == pb.Match(ruleset=pb.Ruleset(), deals=[pb.Deal()])
    assert not m.ruleset.HasField("must_ruff")


def _hands_json() -> list[list[str]]:
    deal = match_to_dict(_realistic_match())["deals"][0]
    hands: list[list[str]] = deal["hands"]
    return hands


@pytest.mark.parametrize(
    ("d", "message"),
    [
        (
            {"deals": [{}, {}, {}, {"plays": ["2C"] * 17 + ["ZZ"]}]},
            "deals[3].plays[17]: 'ZZ' is not a card",
        ),
        ({"deals": [{"foo": 1}]}, "unknown field 'foo' in deals[0]"),
        ({"foo": 1}, "unknown field 'foo' in match"),
        ({"deals": [{"hands": [["2C"]] * 3}]}, "deals[0].hands: expected 4 lists"),
        ({"deals": [{"hands": "2C 3C"}]}, "deals[0].hands: expected 4 lists"),
        ({"deals": [{"hands": [["2C"]] * 4}]}, "deals[0].hands[0]: expected 13 cards, got 1"),
        (
            {"deals": [{"hands": [*_hands_json()[:3], [*_hands_json()[3][:12], 7]]}]},
            "deals[0].hands[3][12]: expected a card name, got an integer",
        ),
        (
            {"deals": [{"hands_raw": "00", "hands": _hands_json()}]},
            "deals[0]: both 'hands' and 'hands_raw' given",
        ),
        ({"deals": [{"plays_raw": "zz"}]}, "deals[0].plays_raw: not a hex string"),
        ({"deals": [{"plays": "2C 3C"}]}, "deals[0].plays: expected a list of card names"),
        ({"deals": [{"number": "1"}]}, "deals[0].number: expected an integer, got a string"),
        ({"deals": [{"number": 1.0}]}, "deals[0].number: expected an integer, got a number"),
        ({"deals": [{"number": True}]}, "deals[0].number: expected an integer, got a boolean"),
        ({"deals": [{"number": -1}]}, "deals[0].number: -1 is out of range"),
        ({"claimed_totals": [1, 2**31]}, "claimed_totals[1]: 2147483648 is out of range"),
        ({"deals": [{"contract": "TRUMPS"}]}, "deals[0].contract: 'TRUMPS' is not a Contract"),
        ({"ruleset": {"must_ruff": 1}}, "ruleset.must_ruff: expected true or false"),
        (
            {"ruleset": {"early_end": ["KUPA", "XX"]}},
            "ruleset.early_end[1]: 'XX' is not a Contract",
        ),
        ({"ruleset": {"early_end": "KUPA"}}, "ruleset.early_end: expected an object, got a string"),
        ({"ruleset": {"first_declarer_card": "1D"}}, "ruleset.first_declarer_card: '1D' is not"),
        ({"metadata": {"start_time": "yesterday"}}, "metadata.start_time: 'yesterday' is not"),
        ({"metadata": {"tags": {"a": 1}}}, "metadata.tags['a']: expected a string"),
        ({"players": {"id": "x"}}, "players: expected a list, got an object"),
        ({"players": ["x"]}, "players[0]: expected an object, got a string"),
        ({"_unknown": "!!"}, "_unknown: not base64"),
        ({"deals": [{"_unknown": "/w=="}]}, "deals[0]._unknown: not protobuf wire bytes"),
        ([], "match: expected an object, got a list"),
    ],
)
def test_bad_json_names_the_path(d: Any, message: str) -> None:
    with pytest.raises(JsonRecordError) as info:
        match_from_dict(d)
    assert str(info.value).startswith(message)


def test_loads_reports_invalid_json() -> None:
    with pytest.raises(JsonRecordError, match="invalid JSON"):
        loads_match('{"deals": [')
    with pytest.raises(JsonRecordError, match="nested deeper than 32 levels"):
        loads_match("[" * 100_000)


def test_json_record_error_is_the_one_of_kingrec_errors() -> None:
    from kingrec import jsonl

    assert jsonl.JsonRecordError is JsonRecordError
    assert JsonRecordError("x").code == "JSON_INVALID"


def test_read_jsonl_continues_past_bad_lines() -> None:
    good = [_realistic_match(), pb.Match(match_id="second")]
    text = (
        "\n".join(
            [
                "\ufeff" + dumps_match(good[0]),
                "",
                "{not json",
                '{"deals": [{"plays": ["ZZ"]}]}',
                "   ",
                dumps_match(good[1]),
            ]
        )
        + "\n"
    )
    items = list(read_jsonl(io.BytesIO(text.encode("utf-8"))))
    assert items[0] == JsonRecord(1, good[0], ())
    assert isinstance(items[1], JsonLineError) and items[1].line == 3
    assert str(items[1]).startswith("line 3: invalid JSON")
    assert isinstance(items[2], JsonLineError) and items[2].line == 4
    assert str(items[2]).startswith("line 4: deals[0].plays[0]: 'ZZ' is not a card")
    assert items[3] == JsonRecord(6, good[1], ())
    assert len(items) == 4


def test_line_error_pickles() -> None:
    err = pickle.loads(pickle.dumps(JsonLineError(7, "bad", "LIMIT_EXCEEDED")))
    assert (err.line, err.message, str(err), err.code) == (
        7,
        "bad",
        "line 7: bad",
        "LIMIT_EXCEEDED",
    )


def test_write_jsonl_then_read_jsonl_gives_back_the_matches() -> None:
    matches = [_realistic_match(), pb.Match(), pb.Match(match_id="x")]
    stream = io.StringIO()
    assert write_jsonl(stream, matches) == 3
    assert stream.getvalue().count("\n") == 3
    lines = io.BytesIO(stream.getvalue().encode("utf-8"))
    assert list(read_jsonl(lines)) == [JsonRecord(n, m, ()) for n, m in enumerate(matches, 1)]


# -- property: any message the schema can hold, damaged or not, round-trips ----------

_INT_BOUNDS = {
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_ENUM: (-(2**31), 2**31 - 1),
}

_cards = st.integers(0, 51)
_FIRST_SECOND, _LAST_SECOND = -62135596800, 253402300799  # RFC 3339: years 1 to 9999
_SPECIAL: dict[str, st.SearchStrategy[Any]] = {
    "kingrec.v1.Deal.hands": st.one_of(
        st.permutations(range(52)).map(bytes), st.binary(max_size=60)
    ),
    "kingrec.v1.Deal.plays": st.one_of(
        st.lists(_cards, max_size=52).map(bytes), st.binary(max_size=60)
    ),
    "kingrec.v1.Ruleset.first_declarer_card": st.one_of(_cards, st.integers(0, 2**32 - 1)),
    "google.protobuf.Timestamp.seconds": st.one_of(
        st.integers(_FIRST_SECOND, _LAST_SECOND), st.integers(-(2**63), 2**63 - 1)
    ),
    "google.protobuf.Timestamp.nanos": st.one_of(
        st.integers(0, 999_999_999), st.integers(-(2**31), 2**31 - 1)
    ),
}


def _scalar(field: FieldDescriptor) -> st.SearchStrategy[Any]:
    special = _SPECIAL.get(field.full_name)
    if special is not None:
        return special
    if field.type == FieldDescriptor.TYPE_ENUM:
        assert field.enum_type is not None
        known = st.sampled_from([v.number for v in field.enum_type.values])
        return st.one_of(known, st.integers(*_INT_BOUNDS[field.type]))
    if field.type in _INT_BOUNDS:
        return st.integers(*_INT_BOUNDS[field.type])
    if field.type == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if field.type == FieldDescriptor.TYPE_STRING:
        return st.text(max_size=8)
    if field.type == FieldDescriptor.TYPE_BYTES:
        return st.binary(max_size=8)
    raise AssertionError(f"no strategy for {field.full_name}")


_unknown_fields = st.lists(
    st.one_of(
        st.builds(_unknown_varint, st.integers(100, 5000), st.integers(0, 2**64 - 1)),
        st.builds(_unknown_bytes, st.integers(100, 5000), st.binary(max_size=6)),
    ),
    max_size=2,
).map(b"".join)


def _fill(draw: st.DrawFn, msg: Message, depth: int) -> None:
    descriptor = cast(Descriptor, msg.DESCRIPTOR)  # the stubs also allow upb's twin type
    for field in descriptor.fields:
        if not draw(st.booleans()):
            continue
        name = field.name
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            assert field.message_type is not None
            if field.message_type.GetOptions().map_entry:
                tags = draw(st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3))
                getattr(msg, name).update(tags)
            elif field.is_repeated:
                for _ in range(draw(st.integers(0, 2 if depth == 0 else 1))):
                    _fill(draw, getattr(msg, name).add(), depth + 1)
            else:
                getattr(msg, name).SetInParent()
                _fill(draw, getattr(msg, name), depth + 1)
        elif field.is_repeated:
            getattr(msg, name).extend(draw(st.lists(_scalar(field), max_size=4)))
        else:
            setattr(msg, name, draw(_scalar(field)))
    msg.MergeFromString(draw(_unknown_fields))


@st.composite
def _matches(draw: st.DrawFn) -> pb.Match:
    m = pb.Match()
    _fill(draw, m, 0)
    return m


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(_matches())
def test_any_match_round_trips(m: pb.Match) -> None:
    _assert_lossless(m)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(_matches(), st.booleans())
def test_any_match_reads_back_from_protobufs_standard_json(m: pb.Match, proto_names: bool) -> None:
    m.DiscardUnknownFields()  # ProtoJSON has no place for them; "_unknown" is kingrec's own
    ts = m.metadata.start_time
    if not (_FIRST_SECOND <= ts.seconds <= _LAST_SECOND and 0 <= ts.nanos < 10**9):
        m.metadata.ClearField("start_time")  # outside years 1..9999: ProtoJSON cannot write it
    text = json_format.MessageToJson(m, preserving_proto_field_name=proto_names)
    assert loads_match(text) == m
    assert match_from_dict(json_format.MessageToDict(m)) == m


@given(st.permutations(range(52)), st.lists(_cards, min_size=1, max_size=52))
def test_valid_cards_are_written_as_names(deck: list[int], plays: list[int]) -> None:
    m = pb.Match(deals=[pb.Deal(hands=bytes(deck), plays=bytes(plays))])
    deal = match_to_dict(m)["deals"][0]
    assert set(deal) == {"hands", "plays"}
    _assert_lossless(m)


def test_timestamp_text_reads_back_exactly() -> None:
    ts = Timestamp(seconds=1_700_000_000, nanos=5000)
    m = pb.Match(metadata=pb.MatchMetadata(start_time=ts))
    assert match_to_dict(m)["metadata"]["start_time"] == "2023-11-14T22:13:20.000005Z"
    _assert_lossless(m)
