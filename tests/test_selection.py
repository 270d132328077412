"""``kingrec.selection``: the record and the deal a person means, counted from 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from kingrec.errors import DamagedFileError
from kingrec.findings import Location
from kingrec.records import Damage, Record, read_records
from kingrec.selection import (
    DealNotFoundError,
    RecordNotFoundError,
    deal_position,
    pick_record,
    record_number,
)
from kingrec.v1 import record_pb2 as pb

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
FLIPPED = str(SAMPLES / "damaged" / "flipped-byte.krec")


def _json_items() -> list[Record | Damage]:
    return [
        Record(Location("x.jsonl", line=1), pb.Match(match_id="a")),
        Damage(Location("x.jsonl", line=2), "JSON_INVALID", "bad"),
        Record(Location("x.jsonl", line=9), pb.Match(match_id="b")),
    ]


def test_records_are_numbered_from_1_with_the_damaged_ones() -> None:
    items = list(read_records(FLIPPED))
    assert [record_number(item, i) for i, item in enumerate(items, 1)] == [1, 2, 3]
    third = pick_record(read_records(FLIPPED), number=3)
    assert third.match.match_id == "damaged-2" and third.location.frame == 2
    assert pick_record(_json_items(), number=3).match.match_id == "b"


def test_the_damage_passed_over_is_handed_on() -> None:
    seen: list[Damage] = []
    assert pick_record(read_records(FLIPPED), match_id="damaged-2", on_damage=seen.append)
    assert [d.code for d in seen] == ["FRAME_CORRUPT"]
    seen.clear()
    assert pick_record(read_records(FLIPPED), number=1, on_damage=seen.append)
    assert seen == []  # nothing after the record is read


def test_a_damaged_record_asked_for_is_an_error() -> None:
    with pytest.raises(DamagedFileError, match="record 2 of the file is damaged"):
        pick_record(read_records(FLIPPED), number=2)


def test_no_record_says_what_the_file_holds() -> None:
    with pytest.raises(RecordNotFoundError, match="there is no record 4: x holds 2 readable "
                       r"record\(s\) and 1 damaged one\(s\)"):  # fmt: skip
        pick_record(_json_items(), number=4, name="x")
    with pytest.raises(RecordNotFoundError, match="no match 'c'"):
        pick_record(_json_items(), match_id="c")
    with pytest.raises(RecordNotFoundError, match="no record to show"):
        pick_record([])
    with pytest.raises(RecordNotFoundError, match="numbered from 1"):
        pick_record(_json_items(), number=0)
    with pytest.raises(ValueError, match="not both"):
        pick_record(_json_items(), number=1, match_id="a")


def test_the_first_readable_record_by_default() -> None:
    assert pick_record(_json_items()[1:]).match.match_id == "b"


def test_deals_are_numbered_from_1_within_the_match() -> None:
    match = pb.Match(match_id="m")
    for _ in range(3):
        match.deals.add()
    assert [deal_position(match, n) for n in (1, 2, 3)] == [0, 1, 2]
    with pytest.raises(DealNotFoundError, match="there is no deal 4: match 'm' has deals 1 to 3"):
        deal_position(match, 4)
    with pytest.raises(DealNotFoundError, match=r"has deal 1$"):
        deal_position(pb.Match(match_id="m", deals=[pb.Deal()]), 0)
    with pytest.raises(DealNotFoundError, match="the match has no deals"):
        deal_position(pb.Match(), 1)
