"""The record bounds (kingrec.limits): the wire scan and the decoded check agree, on anything."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest
from google.protobuf.message import DecodeError
from hypothesis import given, settings
from hypothesis import strategies as st

from kingrec.limits import (
    MAX_DEALS,
    MAX_FIXED_ORDER,
    MAX_HAND_BYTES,
    MAX_PLAYERS,
    MAX_PLAYS,
    MAX_SCORES,
    MAX_STRING_BYTES,
    MAX_TAGS,
    check_match_limits,
    scan_match_limits,
)
from kingrec.rules import preset
from kingrec.simulate import simulate_match
from kingrec.v1 import record_pb2 as pb


def _verdicts(match: pb.Match) -> tuple[str | None, str | None]:
    return scan_match_limits(match.SerializeToString()), check_match_limits(match)


def _text(size: int) -> str:
    """A string of exactly ``size`` UTF-8 bytes, mostly two-byte letters (bytes, not chars)."""
    return "ş" * (size // 2) + "a" * (size % 2)


@pytest.fixture(scope="module")
def played() -> bytes:
    return simulate_match(preset("classic"), 7).SerializeToString()


def test_a_played_match_keeps_every_bound(played: bytes) -> None:
    match = pb.Match.FromString(played)
    assert _verdicts(match) == (None, None)


# -- each bound, met exactly and exceeded by one --------------------------------------------

Setter = Callable[[pb.Match, int], None]


def _deals(m: pb.Match, n: int) -> None:
    del m.deals[:]
    for _ in range(n):
        m.deals.add()


def _players(m: pb.Match, n: int) -> None:
    del m.players[:]
    for seat in range(n):
        m.players.add(seat=seat)


def _tags(m: pb.Match, n: int) -> None:
    m.metadata.tags.clear()
    for i in range(n):
        m.metadata.tags[f"k{i}"] = "v"


def _string(path: str) -> Setter:
    def set_it(m: pb.Match, n: int) -> None:
        *parents, name = path.split(".")
        target = m
        for parent in parents:
            target = getattr(target, parent)
        setattr(target, name, _text(n))

    return set_it


def _tag_key(m: pb.Match, n: int) -> None:
    m.metadata.tags[_text(n)] = "v"


def _tag_value(m: pb.Match, n: int) -> None:
    m.metadata.tags["k"] = _text(n)


def _player_string(field: str) -> Setter:
    def set_it(m: pb.Match, n: int) -> None:
        setattr(m.players[1], field, _text(n))

    return set_it


def _deal_bytes(field: str) -> Setter:
    def set_it(m: pb.Match, n: int) -> None:
        setattr(m.deals[2], field, bytes(n))

    return set_it


def _deal_repeated(field: str) -> Setter:
    def set_it(m: pb.Match, n: int) -> None:
        values = getattr(m.deals[2], field)
        del values[:]
        values.extend(range(n))

    return set_it


def _totals(m: pb.Match, n: int) -> None:
    del m.claimed_totals[:]
    m.claimed_totals.extend([-50] * n)


def _contract_set(field: str) -> Setter:
    def set_it(m: pb.Match, n: int) -> None:
        contracts = getattr(m.ruleset, field).contracts
        del contracts[:]
        contracts.extend([1 + i % 7 for i in range(n)])

    return set_it


def _deal_count(m: pb.Match, n: int) -> None:
    m.ruleset.deal_count = n


def _long(what: str) -> str:
    return what + " is {n} bytes long"


_SETS = ("fixed_order", "heart_lead_ban", "withholding", "void_discard", "early_end")
_METADATA = ("event", "site", "client_name", "client_version")
_PLAYER = ("id", "name", "seat_name")
_S = MAX_STRING_BYTES
# (name, how to set the quantity to n, its bound, the sentence up to "; at most ...")
BOUNDS: list[tuple[str, Setter, int, str]] = [
    ("deals", _deals, MAX_DEALS, "the match holds {n} deals"),
    ("players", _players, MAX_PLAYERS, "the match lists {n} players"),
    ("tags", _tags, MAX_TAGS, "the match holds {n} tags"),
    ("match_id", _string("match_id"), _S, _long("the match's match_id")),
    ("status_reason", _string("status_reason"), _S, _long("the match's status_reason")),
    *((f, _string(f"metadata.{f}"), _S, _long(f"the metadata's {f}")) for f in _METADATA),
    ("tag key", _tag_key, _S, _long("a tag key")),
    ("tag value", _tag_value, _S, _long("a tag value")),
    *((f"player {f}", _player_string(f), _S, _long(f"player #2's {f}")) for f in _PLAYER),
    ("preset", _string("ruleset.preset"), _S, _long("the ruleset's preset")),
    ("deal_count", _deal_count, MAX_DEALS, "the ruleset's deal_count is {n}"),
    *(
        (f, _contract_set(f), MAX_FIXED_ORDER, f"the ruleset's {f} lists {{n}} contracts")
        for f in _SETS
    ),
    ("hands", _deal_bytes("hands"), MAX_HAND_BYTES, "deal #3 has {n} hand bytes"),
    ("plays", _deal_bytes("plays"), MAX_PLAYS, "deal #3 has {n} play bytes"),
    ("think_ms", _deal_repeated("think_ms"), MAX_PLAYS, "deal #3 has {n} think times"),
    ("auto_plays", _deal_repeated("auto_plays"), MAX_PLAYS, "deal #3 has {n} auto-play marks"),
    ("claimed_scores", _deal_repeated("claimed_scores"), MAX_SCORES, "deal #3 claims {n} scores"),
    ("claimed_totals", _totals, MAX_SCORES, "the match claims {n} totals"),
]


@pytest.mark.parametrize(
    ("setter", "bound", "message"), [pytest.param(*b[1:], id=b[0]) for b in BOUNDS]
)
def test_each_bound_is_met_exactly_and_exceeded_by_one(
    played: bytes, setter: Setter, bound: int, message: str
) -> None:
    match = pb.Match.FromString(played)
    setter(match, bound)
    assert _verdicts(match) == (None, None)
    setter(match, bound + 1)
    expected = message.format(n=bound + 1) + f"; at most {bound} are allowed"
    assert _verdicts(match) == (expected, expected)


def test_the_first_bound_exceeded_is_named_in_one_order(played: bytes) -> None:
    match = pb.Match.FromString(played)
    _deal_repeated("think_ms")(match, MAX_PLAYS + 5)
    _totals(match, MAX_SCORES + 1)
    _deals(match, 20)  # deals back to empty: think times gone with them
    match.deals[4].plays = bytes(MAX_PLAYS + 1)
    match.deals[9].hands = bytes(MAX_HAND_BYTES + 1)
    match.players[3].name = _text(MAX_STRING_BYTES + 1)
    first = "player #4's name is 1025 bytes long; at most 1024 are allowed"
    assert _verdicts(match) == (first, first)
    match.players[3].name = "Emre"
    second = "deal #5 has 105 play bytes; at most 104 are allowed"
    assert _verdicts(match) == (second, second)


# -- the wire scan on hostile bytes ---------------------------------------------------------


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(number: int, wire: int, body: bytes) -> bytes:
    """One field: its tag, then ``body`` (prefixed by its length for wire type 2)."""
    length = _varint(len(body)) if wire == 2 else b""
    return _varint(number << 3 | wire) + length + body


def _decodes(raw: bytes) -> bool:
    try:
        pb.Match.FromString(raw)
    except DecodeError:
        return False
    return True


def test_repeated_counts_add_up_over_packed_and_unpacked_chunks() -> None:
    def think(values: Iterable[int]) -> bytes:
        return _field(8, 2, b"".join(_varint(v) for v in values))

    one_by_one = b"".join(_field(8, 0, _varint(300)) for _ in range(40))
    deal = think(range(40)) + one_by_one + think([70_000] * 24)  # 104 think times
    raw = _field(8, 2, deal)
    assert _decodes(raw) and len(pb.Match.FromString(raw).deals[0].think_ms) == MAX_PLAYS
    assert scan_match_limits(raw) is None

    over = _field(8, 2, deal + _field(8, 0, b"\x01"))
    expected = "deal #1 has 105 think times; at most 104 are allowed"
    assert scan_match_limits(over) == check_match_limits(pb.Match.FromString(over)) == expected


def test_totals_and_contract_sets_count_over_every_chunk_and_occurrence() -> None:
    totals = _field(9, 2, b"\x01" * 10) + _field(9, 0, b"\x02") * 7
    assert scan_match_limits(totals) == "the match claims 17 totals; at most 16 are allowed"
    # The ruleset twice: a decoder merges the two, so the lists add up.
    order = _field(8, 2, _field(1, 2, b"\x01" * 200))
    raw = _field(5, 2, order) + _field(5, 2, order)
    expected = "the ruleset's fixed_order lists 400 contracts; at most 256 are allowed"
    assert scan_match_limits(raw) == check_match_limits(pb.Match.FromString(raw)) == expected


_UNKNOWN = (
    _field(100, 0, _varint(2**63))
    + _field(101, 1, b"\x00" * 8)
    + _field(102, 2, b"\xff" * 30)
    + _field(103, 5, b"\x00" * 4)
    + _varint(104 << 3 | 3) + _field(1, 0, b"\x07") + _varint(105 << 3 | 3) + _varint(105 << 3 | 4)
    + _varint(104 << 3 | 4)
)  # fmt: skip


def test_unknown_fields_of_every_wire_type_are_skipped_anywhere() -> None:
    tag = _field(6, 2, _field(1, 2, b"k") + _UNKNOWN + _field(2, 2, b"v"))
    deal = _UNKNOWN + _field(7, 2, bytes(52)) + _UNKNOWN
    player = _field(2, 2, b"Ayse") + _UNKNOWN
    rules = _field(8, 2, _UNKNOWN + _field(1, 2, b"\x01\x02")) + _UNKNOWN
    raw = (
        _UNKNOWN
        + _field(3, 2, tag + _UNKNOWN)
        + _field(4, 2, player)
        + _field(5, 2, rules)
        + _field(8, 2, deal)
        + _UNKNOWN
    )
    assert _decodes(raw)
    assert scan_match_limits(raw) is None
    over = raw + _field(8, 2, _UNKNOWN + _field(6, 2, bytes(MAX_HAND_BYTES + 1)))
    expected = "deal #2 has 105 hand bytes; at most 104 are allowed"
    assert scan_match_limits(over) == check_match_limits(pb.Match.FromString(over)) == expected


def test_a_known_field_with_another_wire_type_is_an_unknown_field() -> None:
    raw = _field(8, 0, _varint(5)) * (MAX_DEALS + 1)  # "deals" as varints: no deals
    assert _decodes(raw) and not pb.Match.FromString(raw).deals
    assert scan_match_limits(raw) is None


def test_deal_count_is_read_as_the_uint32_a_decoder_keeps() -> None:
    raw = _field(5, 2, _field(3, 0, _varint(2**32 + MAX_DEALS + 1)))
    assert pb.Match.FromString(raw).ruleset.deal_count == MAX_DEALS + 1
    expected = "the ruleset's deal_count is 257; at most 256 are allowed"
    assert scan_match_limits(raw) == expected
    assert scan_match_limits(_field(5, 2, _field(3, 0, _varint(2**32 + 3)))) is None


def _nested_groups(depth: int) -> bytes:
    return _varint(110 << 3 | 3) * depth + _varint(110 << 3 | 4) * depth


MALFORMED = {
    "truncated varint": _field(1, 0, b"\x80"),
    "eleven-byte varint": _field(1, 0, b"\x80" * 10 + b"\x01"),
    "length past the end": _varint(2 << 3 | 2) + _varint(50) + b"short",
    "field number 0": b"\x00\x01",
    "wire type 6": _varint(1 << 3 | 6),
    "wire type 7": _varint(1 << 3 | 7),
    "tag over 32 bits": b"\xf8\xff\xff\xff\x7f\x00",
    "end group without start": _varint(110 << 3 | 4),
    "group without end": _varint(110 << 3 | 3) + _field(1, 0, b"\x01"),
    "mismatched end group": _varint(110 << 3 | 3) + _varint(111 << 3 | 4),
    "groups nested too deep": _nested_groups(101),
    "cut packed varint": _field(8, 2, _field(8, 2, b"\x01\x80")),
    "overlong packed varint": _field(9, 2, b"\x80" * 10 + b"\x01"),
    "cut deal": _field(8, 2, _field(6, 2, bytes(10))[:-3]),
    "bad tag in a tag entry": _field(3, 2, _field(6, 2, b"\x00")),
}


@pytest.mark.parametrize("raw", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_bytes_get_no_verdict_and_do_not_decode(raw: bytes) -> None:
    over = _field(8, 2, b"") * (MAX_DEALS + 1)  # over a bound too: still no verdict
    for payload in (raw, over + raw):
        assert not _decodes(payload)
        assert scan_match_limits(payload) is None


def test_groups_as_deep_as_the_decoder_allows_are_skipped() -> None:
    for raw in (_nested_groups(100), _field(8, 2, _nested_groups(99))):
        assert _decodes(raw)
        assert scan_match_limits(raw) is None
    assert not _decodes(_field(8, 2, _nested_groups(100)))
    assert scan_match_limits(_field(8, 2, _nested_groups(100))) is None


# -- time and memory ------------------------------------------------------------------------

MiB = 1 << 20

HOSTILE = {  # about a megabyte each, and what the scan says of it
    "half a million empty deals": (
        _field(8, 2, b"") * (MiB // 2),
        "the match holds 524288 deals; at most 256 are allowed",
    ),
    "a million think times": (
        _field(8, 2, _field(8, 2, b"\x01" * (MiB - 16))),
        f"deal #1 has {MiB - 16} think times; at most 104 are allowed",
    ),
    "half a million empty tags": (
        _field(3, 2, _field(6, 2, b"") * (MiB // 2 - 4)),
        f"the match holds {MiB // 2 - 4} tags; at most 64 are allowed",
    ),
}


@pytest.mark.parametrize(("payload", "expected"), HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_megabyte_is_scanned_in_bounded_time(payload: bytes, expected: str) -> None:
    assert MiB - 64 <= len(payload) <= MiB
    start = time.process_time()
    verdict = scan_match_limits(payload)
    seconds = time.process_time() - start
    assert verdict == expected
    assert seconds < 2.0, f"{seconds:.2f} s"  # 0.3 to 0.6 s on the 2-core test machine


# Reads the payload files named, then scans each; prints how far the peak RSS rose meanwhile.
_MEMORY_PROBE = """
import resource, sys
from pathlib import Path
from kingrec.limits import scan_match_limits

def peak_kib():
    # VmHWM, not ru_maxrss: a child's ru_maxrss counts the RSS of the parent it came from.
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM"))
    except OSError:  # no /proc: ru_maxrss is the best there is (KiB; bytes on macOS)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak // 1024 if sys.platform == "darwin" else peak

payloads = [Path(name).read_bytes() for name in sys.argv[1:]]
before = peak_kib()
verdicts = [scan_match_limits(payload) for payload in payloads]
print(peak_kib() - before)
"""


def test_scanning_a_hostile_megabyte_takes_no_memory_to_speak_of(tmp_path: Path) -> None:
    # tracemalloc would slow the scan twentyfold; the peak RSS of a child process shows
    # anything that grows with what the payload claims (a list per deal would be megabytes).
    names = []
    for i, (payload, _) in enumerate(HOSTILE.values()):
        names.append(str(tmp_path / f"{i}.bin"))
        Path(names[-1]).write_bytes(payload)
    result = subprocess.run(
        [sys.executable, "-c", _MEMORY_PROBE, *names], capture_output=True, text=True, check=True
    )
    growth_kib = int(result.stdout)
    assert growth_kib < 1024, f"peak RSS rose by {growth_kib} KiB"


# -- the two checks agree -------------------------------------------------------------------

_counts = st.integers(0, 3) | st.sampled_from([MAX_SCORES, MAX_SCORES + 1])
_sizes = st.sampled_from([0, 5, MAX_PLAYS, MAX_PLAYS + 1, MAX_STRING_BYTES, MAX_STRING_BYTES + 1])


@settings(max_examples=60, deadline=None)
@given(
    deals=st.lists(st.tuples(_sizes, _sizes, _counts, _counts, _counts), max_size=6),
    strings=st.lists(_sizes, min_size=4, max_size=4),
    tags=st.dictionaries(st.text(max_size=3), st.sampled_from(["", "ş" * 513]), max_size=4),
    totals=_counts,
)
def test_the_wire_scan_and_the_decoded_check_agree(
    deals: list[tuple[int, int, int, int, int]],
    strings: list[int],
    tags: dict[str, str],
    totals: int,
) -> None:
    m = pb.Match(match_id=_text(strings[0]), status_reason=_text(strings[1]))
    m.metadata.site = _text(strings[2])
    m.metadata.tags.update(tags)
    m.players.add(name=_text(strings[3]))
    for hands, plays, think, auto, scores in deals:
        d = m.deals.add(hands=bytes(hands), plays=bytes(plays))
        d.think_ms.extend([1_000] * think)
        d.auto_plays.extend(range(auto))
        d.claimed_scores.extend([-30] * scores)
    m.claimed_totals.extend([0] * totals)
    assert scan_match_limits(m.SerializeToString()) == check_match_limits(m)
