"""Validating record files (kingrec.validation): the fast path and the reference agree,
records over a bound are reported without being decoded, and clean records can be counted."""

from __future__ import annotations

from pathlib import Path

import pytest

from kingrec import _twins
from kingrec.container import KrecWriter
from kingrec.findings import CleanMatches, MatchReport
from kingrec.jsonl import dumps_match
from kingrec.limits import MAX_DEALS, MAX_PLAYS
from kingrec.records import Damage
from kingrec.rules import preset
from kingrec.simulate import simulate_match
from kingrec.v1 import record_pb2 as pb
from kingrec.validation import Verdict, validate_file


def _matches() -> list[pb.Match]:
    clean = [simulate_match(preset("short"), seed) for seed in range(5)]
    broken = pb.Match()
    broken.CopyFrom(clean[2])
    broken.deals[0].plays = broken.deals[0].plays[::-1]
    return [clean[0], clean[1], broken, clean[3], clean[4]]


def _krec(path: Path, matches: list[pb.Match]) -> Path:
    with KrecWriter.open(path) as writer:
        for m in matches:
            writer.write_match(m)
    return path


def _reports(items: list[Verdict]) -> list[MatchReport]:
    return [item for item in items if isinstance(item, MatchReport)]


def test_counting_the_clean_records_reports_the_same_problems(
    tmp_path: Path, twins: _twins.Twins
) -> None:
    path = _krec(tmp_path / "five.krec", _matches())
    every = list(validate_file(str(path), twins=twins))
    counted = list(validate_file(str(path), count_clean=True, twins=twins))
    assert [r.match_id for r in _reports(every)] == [f"sim-short-{s}" for s in range(5)]
    problems = [r for r in _reports(every) if r.findings]
    assert [r.match_id for r in problems] == ["sim-short-2"]
    assert [r for r in _reports(counted) if r.findings] == problems
    clean = sum(item.count for item in counted if isinstance(item, CleanMatches))
    if twins.fastcheck is None:  # the pure path reports every record
        assert clean == 0 and len(_reports(counted)) == 5
    else:
        assert clean == 4 and _reports(counted) == problems
    deals = sum(item.deals for item in counted if isinstance(item, CleanMatches))
    deals += sum(r.deals for r in _reports(counted))
    assert deals == 5 * preset("short").deal_count


def _too_many_deals() -> pb.Match:
    match = simulate_match(preset("short"), 1)
    for _ in range(MAX_DEALS + 1 - len(match.deals)):
        match.deals.add()
    return match


def _too_many_plays() -> pb.Match:
    match = simulate_match(preset("short"), 1)
    match.deals[0].plays = bytes(MAX_PLAYS + 1)
    return match


@pytest.mark.parametrize(
    ("build", "says"),
    [(_too_many_deals, "at most 256"), (_too_many_plays, f"at most {MAX_PLAYS}")],
)
def test_a_record_over_a_bound_is_reported_not_judged(
    tmp_path: Path, twins: _twins.Twins, build: object, says: str
) -> None:
    match = build()  # type: ignore[operator]
    for path in (_krec(tmp_path / "over.krec", [match]), tmp_path / "over.jsonl"):
        if path.suffix == ".jsonl":
            path.write_text(dumps_match(match) + "\n", encoding="utf-8")
        (item,) = list(validate_file(str(path), count_clean=True, twins=twins))
        assert isinstance(item, MatchReport), item
        assert [f.code for f in item.findings] == ["LIMIT_EXCEEDED"]
        assert says in item.findings[0].message
        assert item.match_id == "sim-short-1"
        assert not item.valid


def test_damage_passes_through_in_file_order(tmp_path: Path, twins: _twins.Twins) -> None:
    path = _krec(tmp_path / "two.krec", _matches()[:2])
    data = bytearray(path.read_bytes())
    data[40] ^= 0xFF  # inside the first frame's payload
    path.write_bytes(bytes(data))
    items = list(validate_file(str(path), twins=twins))
    assert isinstance(items[0], Damage) and items[0].code == "FRAME_CORRUPT"
    assert isinstance(items[1], MatchReport) and items[1].match_id == "sim-short-1"


def test_a_record_seen_again_is_a_duplicate_warning_in_a_file_and_across_files(
    tmp_path: Path, twins: _twins.Twins
) -> None:
    matches = _matches()
    path = _krec(tmp_path / "again.krec", [matches[0], matches[1], matches[0], matches[2]])
    for count_clean in (False, True):
        items = list(validate_file(str(path), count_clean=count_clean, twins=twins))
        repeated = [
            r for r in _reports(items) if any(f.code == "DUPLICATE_RECORD" for f in r.findings)
        ]
        assert [(r.match_id, r.location.frame, r.valid) for r in repeated] == [
            ("sim-short-0", 2, True)
        ]
        total = sum(i.count for i in items if isinstance(i, CleanMatches)) + len(_reports(items))
        assert total == 4
    # The same records in a second file are repeats when the run shares its memory.
    other = _krec(tmp_path / "other.krec", [matches[1], matches[3]])
    seen: set[int] = set()
    list(validate_file(str(path), twins=twins, seen=seen))
    second = _reports(list(validate_file(str(other), twins=twins, seen=seen)))
    assert [any(f.code == "DUPLICATE_RECORD" for f in r.findings) for r in second] == [True, False]
    # A changed record is no repeat, even under the same id.
    changed = pb.Match()
    changed.CopyFrom(matches[0])
    changed.metadata.site = "elsewhere"
    third = _krec(tmp_path / "third.krec", [matches[0], changed])
    assert not any(
        f.code == "DUPLICATE_RECORD"
        for r in _reports(list(validate_file(str(third), twins=twins)))
        for f in r.findings
    )


def test_json_keys_the_schema_does_not_know_are_a_warning(
    tmp_path: Path, twins: _twins.Twins
) -> None:
    match = simulate_match(preset("short"), 3)
    line = dumps_match(match)
    path = tmp_path / "newer.jsonl"
    path.write_text(line[:-1] + ',"bonus":7,"players2":[1]}\n', encoding="utf-8")
    (report,) = _reports(list(validate_file(str(path), twins=twins)))
    assert report.valid
    (finding,) = report.findings
    assert finding.code == "UNKNOWN_JSON_KEY" and finding.severity == "warning"
    assert "bonus" in finding.message and "players2" in finding.message
