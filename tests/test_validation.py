"""Validating record files (kingrec.validation): the fast path and the reference agree,
records over a bound are reported without being decoded, and clean records can be counted."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from kingrec import _twins, validator
from kingrec.container import KrecWriter
from kingrec.fastcheck import validate_runs
from kingrec.findings import CleanMatches, Location, MatchReport
from kingrec.jsonl import dumps_match
from kingrec.judges import JudgePool
from kingrec.limits import MAX_DEALS, MAX_PLAYS
from kingrec.records import Damage, open_records
from kingrec.rules import preset
from kingrec.simulate import simulate_match
from kingrec.v1 import record_pb2 as pb
from kingrec.validation import Verdict, validate_file, validate_records


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


def _judged_by_the_reference(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The match ids the reference validator is asked about from now on, in order."""
    judged: list[str] = []
    reference = validator.validate_match

    def noted(
        match: pb.Match, location: Location | None = None, engine: ModuleType | None = None
    ) -> MatchReport:
        judged.append(match.match_id)
        return reference(match, location, engine)

    monkeypatch.setattr(validator, "validate_match", noted)
    return judged


def _in_place(path: Path, seen: set[int]) -> list[Verdict]:
    return list(validate_file(str(path), count_clean=True, twins=_twins.COMPILED, seen=seen))


def _by_a_pool(path: Path, seen: set[int]) -> list[Verdict]:
    with JudgePool(1, chunk_bytes=3000) as pool, open_records(str(path)) as records:
        return list(validate_records(records, count_clean=True, seen=seen, pool=pool))


def _by_the_reader(path: Path, seen: set[int]) -> list[Verdict]:
    with open_records(str(path)) as records:  # as a stream's runs are judged
        runs = records.raw_frame_runs()
        return list(validate_runs(runs, str(path), count_clean=True, seen=seen))


@pytest.mark.skipif(_twins.COMPILED is None, reason="the compiled twins are not built")
@pytest.mark.parametrize(
    "judge", [_in_place, _by_a_pool, _by_the_reader], ids=["in-place", "pool", "reader"]
)
def test_a_clean_record_seen_again_is_judged_by_the_compiled_checker_not_the_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, judge: Callable[..., list[Verdict]]
) -> None:
    """A repeat costs what a clean record costs: with the reference validator (~1 ms a
    match) ``kingrec validate F F`` took 50 times as long as ``F``. Its report, with its
    DUPLICATE_RECORD warning, is still the reference's, in file order."""
    matches = _matches()  # sim-short-2 is the broken one
    first = _krec(tmp_path / "first.krec", [matches[0], matches[1], matches[0], matches[2]])
    again = _krec(tmp_path / "again.krec", matches)
    seen: set[int] = set()
    expected = [  # the reference's reports (the pure twins judge every record by it)
        report
        for path in (first, again)
        for report in _reports(list(validate_file(str(path), twins=_twins.PYTHON, seen=seen)))
        if report.findings
    ]
    judged = _judged_by_the_reference(monkeypatch)
    seen = set()
    items = judge(first, seen) + judge(again, seen)
    assert judged == ["sim-short-2", "sim-short-2"]  # the broken one, in each file
    assert _reports(items) == expected
    repeats = [
        (Path(r.location.file or "").name, r.location.frame, r.valid)
        for r in _reports(items)
        if any(f.code == "DUPLICATE_RECORD" for f in r.findings)
    ]
    assert repeats == [
        ("first.krec", 2, True),
        ("again.krec", 0, True),
        ("again.krec", 1, True),
        ("again.krec", 2, False),
    ]
    assert sum(i.count for i in items if isinstance(i, CleanMatches)) == 4  # 0 1, then 3 4


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
