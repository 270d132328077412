"""What clients send as JSON (ProtoJSON, pretty documents, arrays), and input built to hurt."""

from __future__ import annotations

import contextlib
import io
import json
import pickle
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kingrec.errors import JsonRecordError, LimitError
from kingrec.findings import Location
from kingrec.jsonl import (
    JsonLimitError,
    JsonLineError,
    JsonRecord,
    dumps_match,
    json_line,
    loads_match,
    match_from_dict,
    match_to_dict,
    read_jsonl,
)
from kingrec.limits import MAX_JSON_DEPTH, MAX_JSON_LINE_BYTES
from kingrec.records import Damage, Record, RecordFile, read_records
from kingrec.rules import preset
from kingrec.simulate import simulate_match
from kingrec.v1 import record_pb2 as pb
from kingrec_cli.main import main


def _match(seed: int = 1, name: str = "classic") -> pb.Match:
    return simulate_match(preset(name), seed)


def _read(data: bytes) -> list[JsonRecord | JsonLineError]:
    return list(read_jsonl(io.BytesIO(data)))


def _shape(items: list[JsonRecord | JsonLineError]) -> list[tuple[str, int]]:
    """(kind, line) per item: "match", or the damage code."""
    return [(i.code if isinstance(i, JsonLineError) else "match", i.line) for i in items]


def _pretty(m: pb.Match) -> str:
    """A match as ``jq .`` lays it out: two-space indent, one value per line."""
    return json.dumps(match_to_dict(m), indent=2, ensure_ascii=False) + "\n"


def _lines(text: str) -> int:
    return text.count("\n")


# -- protobuf's standard JSON ------------------------------------------------------------


@pytest.mark.parametrize("name", ["classic", "short", "rotation", "plain", "kahvehane"])
@pytest.mark.parametrize(
    "options",
    [{}, {"preserving_proto_field_name": True}, {"use_integers_for_enums": True}],
    ids=["camel", "proto-names", "enum-numbers"],
)
def test_message_to_json_of_a_played_match_reads_back(name: str, options: Any) -> None:
    m = _match(3, name)
    assert loads_match(json_format.MessageToJson(m, **options)) == m
    assert match_from_dict(json_format.MessageToDict(m, **options)) == m


def _edge_record() -> pb.Match:
    m = _match(5)
    m.status = pb.MatchStatus.ValueType(9)  # numbers from a newer schema
    m.deals[0].contract = pb.Contract.ValueType(42)
    m.ruleset.schedule = pb.ScheduleKind.ValueType(7)
    m.ruleset.void_discard.contracts.append(pb.Contract.ValueType(99))
    m.ruleset.first_declarer_card = 52  # a code that is no card
    m.ruleset.penalty_only_deals = 0  # present though zero
    m.ruleset.scoring.koz_trick = 0
    m.ruleset.ClearField("early_end")
    m.ruleset.early_end.SetInParent()  # present though empty
    m.deals[0].revoke_play = 0
    m.deals[1].hands = bytes(range(51)) + b"\xff"  # damaged hands and plays
    m.deals[2].hands = b"\x00" * 60
    m.deals[3].plays = b"\x01\x34\xfe"
    m.metadata.start_time.nanos = 5000
    return m


def test_message_to_json_of_edge_records_reads_back() -> None:
    m = _edge_record()
    back = loads_match(json_format.MessageToJson(m))
    assert back == m
    assert back.ruleset.HasField("penalty_only_deals") and back.ruleset.HasField("early_end")
    assert back.deals[0].HasField("revoke_play")
    assert match_from_dict(json_format.MessageToDict(m, preserving_proto_field_name=True)) == m


def test_the_two_forms_mix_key_by_key() -> None:
    m = _match(2)
    friendly = match_to_dict(m)
    standard = json_format.MessageToDict(m)
    mixed = dict(friendly)
    mixed["matchId"] = mixed.pop("match_id")
    mixed["ruleset"] = standard["ruleset"]  # {"contracts": [...]}, CONTRACT_ names, camelCase
    deals = [dict(d) for d in friendly["deals"]]
    deals[0]["hands"] = standard["deals"][0]["hands"]  # base64 bytes beside card-name plays
    deals[1]["plays"] = standard["deals"][1]["plays"]
    deals[2]["claimedScores"] = deals[2].pop("claimed_scores")
    mixed["deals"] = deals
    assert isinstance(deals[0]["hands"], str) and isinstance(deals[0]["plays"], list)
    assert match_from_dict(mixed) == m


def test_one_field_given_under_both_names_is_an_error() -> None:
    with pytest.raises(JsonRecordError, match="match: both 'matchId' and 'match_id' given"):
        match_from_dict({"match_id": "a", "matchId": "b"})
    with pytest.raises(JsonRecordError, match=r"deals\[0\]: both 'thinkMs' and 'think_ms'"):
        match_from_dict({"deals": [{"think_ms": [1], "thinkMs": [2]}]})


@pytest.mark.parametrize(
    ("text", "data"),
    [("AQI0", b"\x01\x02\x34"), ("AQI", b"\x01\x02"), ("_-8=", b"\xff\xef"), ("", b"")],
    ids=["standard", "unpadded", "url-safe", "empty"],
)
def test_bytes_take_every_base64_protojson_allows(text: str, data: bytes) -> None:
    assert match_from_dict({"deals": [{"plays": text}]}).deals[0].plays == data


def test_64_bit_integers_may_be_decimal_strings() -> None:
    m = match_from_dict({"metadata": {"startTime": {"seconds": "-5", "nanos": 7}}})
    assert (m.metadata.start_time.seconds, m.metadata.start_time.nanos) == (-5, 7)
    with pytest.raises(JsonRecordError, match=r"start_time\.seconds: expected an integer"):
        match_from_dict({"metadata": {"start_time": {"seconds": "5s"}}})
    with pytest.raises(JsonRecordError, match=r"deals\[0\]\.number: expected an integer"):
        match_from_dict({"deals": [{"number": "1"}]})  # 32-bit: ProtoJSON writes numbers


# -- keys the schema does not know -------------------------------------------------------


def test_unknown_keys_are_reported_by_path_and_skipped() -> None:
    m = _match(4)
    d = match_to_dict(m)
    d["bonus"] = {"points": [1, 2]}
    d["deals"][3]["bonus"] = 5
    d["players"][0]["x y"] = True
    d["ruleset"]["scoring"]["\ud800"] = 1  # a lone surrogate, as JSON can spell it
    unknown: list[str] = []
    assert match_from_dict(d, unknown_keys=unknown) == m
    assert unknown == [
        "players[0]['x y']",
        "ruleset.scoring['\\ud800']",
        "deals[3].bonus",
        "bonus",
    ]
    for line in unknown:
        line.encode("utf-8")  # printable as it is
    with pytest.raises(JsonRecordError, match=r"unknown field 'x y' in players\[0\]"):
        match_from_dict(d)


def test_a_key_holding_a_lone_surrogate_is_a_clean_error() -> None:
    for text in ['{"\\ud800": 1}', '{"deals": [{"\\udfff": 1}]}', '{"\\ud800": {"a": 1}}']:
        with pytest.raises(JsonRecordError, match="unknown field '\\\\ud"):
            loads_match(text)
        keys: list[str] = []
        loads_match(text, unknown_keys=keys)
        assert len(keys) == 1 and "\\ud" in keys[0]


def test_unknown_keys_come_with_the_record_from_the_reader_and_the_file(tmp_path: Path) -> None:
    line = '{"match_id": "a", "bonus": 1, "deals": [{"number": 1, "tip": "x"}]}\n'
    (item,) = _read(line.encode())
    match = pb.Match(match_id="a", deals=[pb.Deal(number=1)])
    assert item == JsonRecord(1, match, ("bonus", "deals[0].tip"))
    path = tmp_path / "x.jsonl"
    path.write_text(line)
    (record,) = list(read_records(str(path)))
    assert isinstance(record, Record)
    assert not isinstance(record, Damage)
    location, match = record.location, record.match
    assert location == Location(str(path), line=1) and match.match_id == "a"
    assert (record.location, record.match) == (location, match)
    assert record.unknown_keys == ("bonus", "deals[0].tip")


def test_a_record_pickles_with_its_unknown_keys() -> None:
    record = Record(Location("f", line=3), pb.Match(match_id="m"), ("bonus",))
    back = pickle.loads(pickle.dumps(record))
    assert back == record and back.unknown_keys == ("bonus",) and isinstance(back, Record)


def test_unknown_keys_are_dropped_on_the_way_to_a_krec_while_unknown_wire_fields_survive() -> None:
    original = pb.Match(match_id="x")
    original.MergeFromString(b"\xf8\x06\x05")  # field 111 from a newer schema
    d = match_to_dict(original)
    d["bonus"] = 1
    via_krec = pb.Match.FromString(match_from_dict(d, unknown_keys=[]).SerializeToString())
    assert match_to_dict(via_krec) == {"match_id": "x", "_unknown": d["_unknown"]}


def test_nesting_is_bounded_even_under_unknown_keys() -> None:
    def record(depth: int) -> str:  # a record nested exactly ``depth`` levels deep
        return '{"x": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"

    assert loads_match(record(MAX_JSON_DEPTH), unknown_keys=[]) == pb.Match()
    with pytest.raises(JsonLimitError, match="x: nested deeper than 32 levels") as info:
        loads_match(record(MAX_JSON_DEPTH + 1), unknown_keys=[])
    assert info.value.code == "LIMIT_EXCEEDED" and isinstance(info.value, LimitError)
    with pytest.raises(JsonLimitError, match="nested deeper"):
        loads_match("[" * 50_000 + "]" * 50_000)


# -- seat 0 ----------------------------------------------------------------------------


def test_seat_zero_is_written() -> None:
    m = pb.Match(players=[pb.Player(id="a"), pb.Player(id="b", seat=1)])
    assert match_to_dict(m)["players"] == [{"id": "a", "seat": 0}, {"id": "b", "seat": 1}]
    assert loads_match(dumps_match(m)) == m
    assert match_to_dict(pb.Match(deals=[pb.Deal()])) == {"deals": [{}]}  # only the seat


# -- the forms of a stream ---------------------------------------------------------------


def test_pretty_printed_matches_are_read_from_the_line_they_start_on() -> None:
    matches = [_match(s) for s in (1, 2, 3)]
    docs = [_pretty(m) for m in matches]
    items = _read("".join(docs).encode())
    starts = [1, 1 + _lines(docs[0]), 1 + _lines(docs[0]) + _lines(docs[1])]
    assert items == [JsonRecord(line, m, ()) for line, m in zip(starts, matches, strict=True)]


def test_protojson_documents_are_read_too() -> None:
    matches = [_match(s) for s in (1, 2)]
    text = "".join(json_format.MessageToJson(m) + "\n" for m in matches)
    assert [i.match for i in _read(text.encode()) if isinstance(i, JsonRecord)] == matches


@pytest.mark.parametrize("indent", [2, None], ids=["jq-style", "one-line"])
def test_a_json_array_of_matches_is_read(indent: int | None) -> None:
    matches = [_match(s) for s in (1, 2, 3)]
    text = json.dumps([match_to_dict(m) for m in matches], indent=indent)
    items = _read(text.encode())
    assert [i.match for i in items if isinstance(i, JsonRecord)] == matches
    assert len(items) == 3
    if indent:
        assert items[0].line == 2


def test_the_forms_may_follow_each_other() -> None:
    one, two, three = (_match(s) for s in (1, 2, 3))
    text = dumps_match(one) + "\n" + _pretty(two) + json.dumps([match_to_dict(three)]) + "\n"
    assert _shape(_read(text.encode())) == [
        ("match", 1),
        ("match", 2),
        ("match", 2 + _lines(_pretty(two))),
    ]


def test_a_pretty_document_cut_short_is_one_damage_item() -> None:
    docs = [_pretty(_match(s)) for s in (1, 2)]
    text = (docs[0] + docs[1])[: len(docs[0]) + len(docs[1]) // 2]
    items = _read(text.encode())
    assert _shape(items) == [("match", 1), ("JSON_INVALID", 1 + _lines(docs[0]))]
    assert "input ends inside this record" in str(items[1])


def test_a_mistake_inside_a_pretty_match_costs_that_match_only() -> None:
    docs = [_pretty(_match(s)) for s in (1, 2, 3)]
    lines = docs[1].splitlines(keepends=True)
    lines[40] = lines[40].replace(",", "", 1)  # a missing comma deep inside the second match
    docs[1] = "".join(lines)
    items = _read("".join(docs).encode())
    second = 1 + _lines(docs[0])
    assert _shape(items) == [
        ("match", 1),
        ("JSON_INVALID", second),
        ("match", second + _lines(docs[1])),
    ]
    assert f"(line {second + 41}, column" in str(items[1])


def test_a_damaged_record_of_an_array_costs_that_record_only() -> None:
    text = json.dumps([match_to_dict(_match(s)) for s in (1, 2, 3)], indent=2)
    lines = text.splitlines(keepends=True)
    second = [i for i, line in enumerate(lines) if line == "  {\n"][1]
    lines[second + 30] = "    garbage\n"
    items = _read("".join(lines).encode())
    assert [kind for kind, _ in _shape(items)] == ["match", "JSON_INVALID", "match"]
    assert items[1].line == second + 1


def test_an_array_without_its_close_or_a_comma_is_reported_and_read() -> None:
    one, two = (dumps_match(_match(s)) for s in (1, 2))
    assert _shape(_read(f"[{one},\n{two}\n".encode())) == [
        ("match", 1),
        ("match", 2),
        ("JSON_INVALID", 3),
    ]
    items = _read(f"[{one}\n{two}]".encode())
    assert _shape(items) == [("match", 1), ("JSON_INVALID", 2), ("match", 2)]
    assert "expected ',' or ']'" in str(items[1])


def test_json_lines_damage_is_one_item_per_bad_line() -> None:
    good = dumps_match(_match(1))
    text = "\r\n".join(["\ufeff" + good, "garbage", "", '{"deals": [', "{", "   ", good, "]", good])
    assert _shape(_read(text.encode())) == [
        ("match", 1),
        ("JSON_INVALID", 2),
        ("JSON_INVALID", 4),
        ("JSON_INVALID", 5),
        ("match", 7),
        ("JSON_INVALID", 8),
        ("match", 9),
    ]


def test_bytes_that_are_not_utf8_make_their_record_damage_not_a_repaired_match() -> None:
    good = dumps_match(_match(1)).encode()
    bad = b'{"match_id": "caf\xe9"}'
    items = _read(b"\n".join([good, bad, good, b"\xff\xfe", good, b'{"a": "\xed\xa0\x80"}']))
    assert _shape(items) == [
        ("match", 1),
        ("JSON_INVALID", 2),
        ("match", 3),
        ("JSON_INVALID", 4),
        ("match", 5),
        ("JSON_INVALID", 6),
    ]
    assert str(items[1]) == "line 2: not UTF-8 text: byte 0xE9 on line 2"
    with pytest.raises(JsonRecordError, match="not UTF-8 text: byte 0xE9"):
        loads_match(bad)


def test_a_character_split_between_two_reads_is_decoded_whole() -> None:
    m = pb.Match(match_id="ş" * 70_000)  # 140,000 bytes: reads of 64 KiB split a character
    (item,) = _read(dumps_match(m).encode())
    assert item == JsonRecord(1, m, ())


@pytest.mark.parametrize(
    ("head", "kind"),
    [
        (b"[", "jsonl"),
        (b"\xef\xbb\xbf  \n {", "jsonl"),
        (b" " * 500 + b"\n{", "jsonl"),
        (b"\x89KREC", "krec"),
        (b"hello", "krec"),
    ],
    ids=["array", "bom-then-blanks", "long-blank-head", "krec", "neither"],
)
def test_the_file_format_follows_the_content_not_the_name(head: bytes, kind: str) -> None:
    assert RecordFile("records.bin", io.BytesIO(head + b"]"), None).format == kind


def test_validate_reads_a_pretty_document_whatever_its_name(tmp_path: Path) -> None:
    path = tmp_path / "export.txt"
    path.write_text(_pretty(_match(1)) + json_format.MessageToJson(_match(2)) + "\n")
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert "checked 2 match(es), 40 deal(s) in 1 file(s), 2 valid" in result.output


# -- bounds ------------------------------------------------------------------------------


def _line_of(size: int, fill: str = "a") -> bytes:
    """A JSON Lines record of exactly ``size`` bytes, ``fill`` repeated in its match_id."""
    frame = b'{"match_id": ""}'
    count = (size - len(frame)) // len(fill.encode())
    line = b'{"match_id": "' + (fill * count).encode() + b'"}'
    assert len(line) == size, len(line)
    return line


def test_a_record_of_exactly_the_limit_is_read_and_one_byte_more_is_skipped() -> None:
    good = dumps_match(pb.Match(match_id="after")).encode()
    at_limit = _read(_line_of(MAX_JSON_LINE_BYTES) + b"\n" + good)
    assert _shape(at_limit) == [("match", 1), ("match", 2)]
    over = _read(_line_of(MAX_JSON_LINE_BYTES + 2, "ç") + b"\n" + good)  # fewer characters
    assert _shape(over) == [("LIMIT_EXCEEDED", 1), ("match", 2)]
    assert "4194304 bytes (4 MiB)" in str(over[0]) and "MAX_JSON_LINE_BYTES" in str(over[0])
    over = _read(_line_of(MAX_JSON_LINE_BYTES + 1) + b"\n" + good)
    assert _shape(over) == [("LIMIT_EXCEEDED", 1), ("match", 2)]
    with pytest.raises(JsonLimitError, match="longer than 4194304 bytes"):
        loads_match(_line_of(MAX_JSON_LINE_BYTES + 1))


def test_a_pretty_document_over_the_limit_is_one_item() -> None:
    deals = [match_to_dict(_match(1))["deals"][0]] * 1700  # about 4.5 MiB when indented
    huge = json.dumps({"match_id": "huge", "deals": deals}, indent=2) + "\n"
    assert len(huge) > MAX_JSON_LINE_BYTES
    items = _read((huge + _pretty(_match(2))).encode())
    assert _shape(items) == [("LIMIT_EXCEEDED", 1), ("match", 1 + _lines(huge))]


class _Generated(io.RawIOBase):
    """``head``, then ``fill`` repeated over ``size`` bytes, then ``tail``, made as read."""

    def __init__(self, head: bytes, size: int, fill: bytes, tail: bytes) -> None:
        self.parts = [(head, len(head)), (fill, size), (tail, len(tail))]
        self.done = 0  # bytes of the first part already read

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while self.parts and self.done == self.parts[0][1]:
            self.parts.pop(0)
            self.done = 0
        if not self.parts:
            return 0
        pattern, size = self.parts[0]
        n = min(len(buffer), size - self.done, 1 << 20)
        start = self.done % len(pattern)
        buffer[:n] = (pattern * ((start + n) // len(pattern) + 1))[start : start + n]
        self.done += n
        return n


@pytest.mark.parametrize(
    ("head", "fill"), [(b'{"match_id": "', b"a"), (b"{\n", b" ")], ids=["line", "document"]
)
def test_a_huge_record_costs_bounded_memory(head: bytes, fill: bytes) -> None:
    tail = b'"}\n{"match_id": "last"}\n'
    stream = io.BufferedReader(_Generated(head, 48 << 20, fill, tail))
    tracemalloc.start()
    try:
        items = list(read_jsonl(stream))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40 << 20, peak  # a few windows of at most 4 MiB, never the whole input
    assert _shape(items) == [("LIMIT_EXCEEDED", 1), ("match", head.count(b"\n") + 2)]


def test_many_values_on_one_line_are_each_read() -> None:
    stream = io.BufferedReader(_Generated(b"", 200_000, b"{}", b"\n"))
    items = list(read_jsonl(stream))
    assert len(items) == 100_000 and items[-1] == JsonRecord(1, pb.Match(), ())


# -- hostile values: only JsonRecordError, with short, printable messages -------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"match_id": ' + "1" * 5000 + "}",
        '{"claimed_totals": [' + "9" * 5000 + "]}",
        '{"deals": [{"number": 1.0}]}',
        '{"deals": [{"number": 1e400}]}',
        '{"deals": [{"number": NaN}]}',
        '{"x": -Infinity}',
        '{"match_id": "a", "match_id": "b"}',
        '{"deals": [{"plays": "2Cş"}]}',
        '{"_unknown": "çok"}',
        '{"deals": [{"hands": "wörld"}]}',
        '{"match_id": "\\ud800"}',
        '{"metadata": {"tags": {"\\ud800": "x"}}}',
        '{"metadata": {"start_time": "2020-01-01T00:00:00\\ud800Z"}}',
        '{"metadata": {"start_time": "2020-01-01T00:00:00.' + "9" * 100_000 + 'Z"}}',
        '{"deals": [{"contract": "' + "x" * 100_000 + '"}]}',
        '{"deals": [{"plays": ["\\u0000", "' + "Q" * 100_000 + '"]}]}',
        '{"deals": {"0": {}}}',
        '{"players": [null, {}]}',
        '{"ruleset": {"first_declarer_card": -1}}',
        '{"claimed_totals": [' + str(2**70) + "]}",
        "null",
        "[]",
        '"match"',
        "",
    ],
)
def test_hostile_values_give_only_a_short_json_record_error(text: str) -> None:
    with pytest.raises(JsonRecordError) as info:
        loads_match(text)
    message = str(info.value)
    assert len(message) <= 300
    message.encode("utf-8")  # no lone surrogate: any report can print it


_json_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**4400, max_value=10**4500),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(st.characters(exclude_categories=()), max_size=12),  # lone surrogates too
    st.sampled_from(["KOZ", "2C", "QS", "CONTRACT_KIZ", "AA==", "2020-01-01T00:00:00Z"]),
)
_json_values = st.recursive(
    _json_leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.dictionaries(
            st.one_of(st.text(max_size=6), st.sampled_from(["deals", "hands", "plays", "seat"])),
            inner,
            max_size=5,
        ),
    ),
    max_leaves=15,
)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*path, i))
    return out


def _short(m: pb.Match) -> pb.Match:
    """``m`` with its first four deals only: every kind of value, at a fuzzer's pace."""
    del m.deals[4:]
    return m


_REAL = match_to_dict(_short(_edge_record()))
_REAL_STANDARD = json_format.MessageToDict(_short(_edge_record()))
_REAL_PATHS = _paths(_REAL)
_REAL_STANDARD_PATHS = _paths(_REAL_STANDARD)


def _replaced(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    copy = dict(doc) if isinstance(doc, dict) else list(doc)
    copy[path[0]] = _replaced(doc[path[0]], path[1:], value)
    return copy


def _only_record_errors(obj: Any) -> None:
    unknown_keys: list[list[str] | None] = [None, []]
    for unknown in unknown_keys:
        try:
            match_from_dict(obj, unknown_keys=unknown)
        except JsonRecordError as exc:
            str(exc).encode("utf-8")


@settings(max_examples=1200, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), _json_values, st.booleans())
def test_hostile_values_anywhere_in_a_real_record_give_only_json_record_errors(
    data: st.DataObject, value: Any, standard: bool
) -> None:
    doc, paths = (_REAL_STANDARD, _REAL_STANDARD_PATHS) if standard else (_REAL, _REAL_PATHS)
    path = data.draw(st.sampled_from(paths))
    _only_record_errors(_replaced(doc, path, value))
    _only_record_errors(value)
    try:
        text = json.dumps(value)  # NaN and Infinity appear as the json module spells them
    except ValueError:  # an integer past Python's digit limit
        return
    with contextlib.suppress(JsonRecordError):
        loads_match(text, unknown_keys=[])


_DOCUMENTS = [
    (dumps_match(_short(_match(1))) + "\n" + dumps_match(_short(_edge_record())) + "\n").encode(),
    (
        _pretty(_short(_match(2))) + json_format.MessageToJson(_short(_edge_record())) + "\n"
    ).encode(),
    json.dumps([match_to_dict(_short(_match(3))), _REAL], indent=2).encode(),
]


@settings(max_examples=1200, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(range(len(_DOCUMENTS))),
    st.lists(
        st.tuples(
            st.sampled_from(["flip", "insert", "delete", "cut"]),
            st.floats(0, 1, exclude_max=True),
            st.binary(min_size=1, max_size=4),
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_damaged_streams_give_only_records_and_damage(
    document: int, damage: list[tuple[str, float, bytes]]
) -> None:
    data = bytearray(_DOCUMENTS[document])
    for kind, where, junk in damage:
        at = int(where * len(data))
        if kind == "flip" and at < len(data):
            data[at] ^= junk[0] or 1
        elif kind == "insert":
            data[at:at] = junk
        elif kind == "delete":
            del data[at : at + len(junk) * 50]
        else:
            del data[at:]
    items = _read(bytes(data))
    assert all(isinstance(item, JsonRecord | JsonLineError) for item in items)
    for item in items:
        if isinstance(item, JsonLineError):
            assert item.code in ("JSON_INVALID", "LIMIT_EXCEEDED")
            str(item).encode("utf-8")
    # Damage is reported per record, not per line of a pretty-printed match.
    assert len(items) <= 4 + 4 * len(damage)


def test_file_damage_becomes_damage_items_with_their_code(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(_line_of(MAX_JSON_LINE_BYTES + 1) + b"\n{oops\n")
    items = list(read_records(str(path)))
    assert [(type(i), getattr(i, "code", None)) for i in items] == [
        (Damage, "LIMIT_EXCEEDED"),
        (Damage, "JSON_INVALID"),
    ]
    assert [i.location.line for i in items if isinstance(i, Damage)] == [1, 2]


# -- one safe line for reports -----------------------------------------------------------


def test_json_line_keeps_one_line_for_any_splitter() -> None:
    obj = {"a": "x\u2028y\x85z\u2029", "b": "ünicode", "c": "\ud800", "d": [1, None, True]}
    line = json_line(obj)
    assert line.splitlines() == [line] and "\n" not in line
    line.encode("utf-8")
    assert "ünicode" in line and ": " not in line
    assert json.loads(line) == obj
    ascii_line = json_line(obj, ascii_only=True)
    assert ascii_line.isascii() and json.loads(ascii_line) == obj
    with pytest.raises(ValueError):
        json_line({"x": float("nan")})


def test_dumps_match_is_json_line_of_the_friendly_form() -> None:
    m = pb.Match(match_id="a\u2028b", players=[pb.Player(name="Ayşe")])
    assert dumps_match(m) == json_line(match_to_dict(m))
