"""The samples manifest: every committed record gives exactly the findings it lists."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner

from kingrec.records import Damage, read_records
from kingrec.validator import validate_match
from kingrec_cli.main import main

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
MANIFEST: list[dict[str, Any]] = json.loads((SAMPLES / "manifest.json").read_text())["samples"]


def _validate_json(path: Path) -> tuple[int, list[dict[str, Any]]]:
    result = CliRunner().invoke(main, ["validate", "--json", str(path)])
    return result.exit_code, [json.loads(line) for line in result.stdout.splitlines()]


@pytest.mark.parametrize("sample", MANIFEST, ids=[s["file"] for s in MANIFEST])
def test_sample_gives_exactly_its_listed_codes(sample: dict[str, Any]) -> None:
    exit_code, lines = _validate_json(SAMPLES / sample["file"])
    codes = sorted(
        {f["code"] for line in lines if line["type"] == "match" for f in line["findings"]}
        | {line["code"] for line in lines if line["type"] in ("damage", "error")}
    )
    assert codes == sample["codes"]
    assert exit_code == sample["exit"]


def test_manifest_lists_every_sample_file() -> None:
    on_disk = {
        str(p.relative_to(SAMPLES)) for p in SAMPLES.rglob("*") if p.suffix in (".krec", ".jsonl")
    }
    assert on_disk == {s["file"] for s in MANIFEST}


def test_every_play_rule_and_match_check_has_a_sample() -> None:
    listed = {code for s in MANIFEST for code in s["codes"]}
    for code in (
        "NOT_IN_HAND", "MUST_FOLLOW_SUIT", "MUST_RUFF", "MUST_OVERTRUMP", "MUST_RAISE_TRUMP",
        "TRUMP_LEAD_BANNED", "HEART_LEAD_BANNED", "MUST_GIVE_PENALTY_CARD",
        "MUST_DISCARD_PENALTY_CARD", "PLAY_AFTER_DEAL_END", "DEAL_INCOMPLETE", "BAD_DECK",
        "WRONG_DECLARER", "CONTRACT_QUOTA", "PENALTY_CONTRACT_LIMIT", "TRUMP_MISSING",
        "SCORE_MISMATCH", "TOTALS_MISMATCH", "FRAME_CORRUPT", "FRAME_TRUNCATED",
    ):  # fmt: skip
        assert code in listed, code


def test_two_bad_cards_are_both_reported() -> None:
    _, lines = _validate_json(SAMPLES / "invalid" / "two-bad-cards.krec")
    findings = [f for line in lines if line["type"] == "match" for f in line["findings"]]
    assert len({f["deal"] for f in findings}) == 2
    assert all(f["legal"] for f in findings)


@pytest.mark.parametrize(
    "sample", [s for s in MANIFEST if s["file"].endswith(".krec") and s["exit"] != 2],
    ids=lambda s: s["file"],
)  # fmt: skip
def test_both_twins_give_the_manifest_codes(sample: dict[str, Any], twin: ModuleType) -> None:
    found: set[str] = set()
    for item in read_records(str(SAMPLES / sample["file"])):
        assert not isinstance(item, Damage)
        location, match = item.location, item.match
        found |= {f.code for f in validate_match(match, location, engine=twin).findings}
    assert sorted(found) == sample["codes"]


def test_illegal_play_finding_names_its_place_and_the_legal_cards() -> None:
    (record,) = list(read_records(str(SAMPLES / "invalid" / "must-ruff.krec")))
    assert not isinstance(record, Damage)
    location, match = record.location, record.match
    (finding,) = validate_match(match, location).findings
    assert finding.code == "MUST_RUFF"
    assert location.frame == 0 and location.offset == 12
    assert finding.deal is not None and finding.trick is not None and finding.seat is not None
    assert finding.card is not None and finding.legal
    assert all(card // 13 == match.deals[finding.deal - 1].trump - 1 for card in finding.legal)
    assert f"trick {finding.trick}" in finding.message and "legal:" in finding.message
