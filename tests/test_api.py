"""The public API of ``import kingrec``: its names, their documents, paths and streams alike,
a light import, and the README's example run as written."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import kingrec
from kingrec import cards, errors, findings, game, records, replay, rules, validation
from kingrec.container import MAGIC, KrecWriter
from kingrec.limits import MAX_STRING_BYTES
from kingrec.rules import preset
from kingrec.simulate import simulate_match
from kingrec.v1 import record_pb2 as pb

ROOT = Path(__file__).resolve().parent.parent

PUBLIC = [
    # records: read, write, judge, replay
    "read_records",
    "write_records",
    "validate",
    "validate_file",
    "Record",
    "Damage",
    "MatchReport",
    "replay_match",
    # making records, playing deals
    "MatchBuilder",
    "DealBuilder",
    "build_match",
    "DealPlay",
    # cards and rules
    "parse_card",
    "card_name",
    "Contract",
    "Ruleset",
    "preset",
    # errors
    "KingrecError",
    "CardError",
    "ContractError",
    "DamagedFileError",
    "IllegalPlayError",
    "JsonRecordError",
    "LimitError",
    "NotRecordFileError",
    "RecordBuildError",
    "RecordFileError",
    "RulesetError",
    "UnreadableFileError",
    "UnsupportedVersionError",
    "QueryError",
    "QueryLimitError",
    "QueryRefusedError",
    "QueryRowError",
    "StoreError",
    "StoreLockedError",
    "StoreVersionError",
    "StoreWriteAbortedError",
    # the store
    "Store",
]


def _matches(n: int = 3, name: str = "short") -> list[pb.Match]:
    return [simulate_match(preset(name), seed) for seed in range(n)]


# -- the names --------------------------------------------------------------------------------


def test_all_is_exactly_the_public_api() -> None:
    assert sorted(kingrec.__all__) == sorted(PUBLIC)
    assert len(set(kingrec.__all__)) == len(kingrec.__all__)
    assert kingrec.__version__ == "0.1.0"


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_name_exists_and_has_a_written_docstring(name: str) -> None:
    value = getattr(kingrec, name)
    doc = value.__doc__ or ""
    assert doc.strip(), f"kingrec.{name} has no docstring"
    # a dataclass without one gets its signature as __doc__: not a document
    assert not doc.startswith(f"{name}("), f"kingrec.{name} has only a generated docstring"
    assert name in dir(kingrec)


def test_public_names_are_the_library_s_own_objects() -> None:
    assert kingrec.parse_card is cards.parse_card and kingrec.card_name is cards.card_name
    assert kingrec.Record is records.Record and kingrec.Damage is records.Damage
    assert kingrec.MatchReport is findings.MatchReport
    assert kingrec.replay_match is replay.replay_match
    assert kingrec.DealPlay is game.DealPlay
    assert kingrec.preset is rules.preset and kingrec.Ruleset is rules.Ruleset
    for name in errors.__all__:
        assert getattr(kingrec, name) is getattr(errors, name)
        assert issubclass(getattr(kingrec, name), kingrec.KingrecError)


def test_unknown_names_are_attribute_errors() -> None:
    with pytest.raises(AttributeError, match=r"module 'kingrec' has no attribute 'parse_cardz'"):
        kingrec.parse_cardz  # type: ignore[attr-defined]  # noqa: B018
    assert not hasattr(kingrec, "_ORIGINS_")


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from kingrec import *", namespace)
    assert sorted(k for k in namespace if k != "__builtins__") == sorted(PUBLIC)


# -- a light import ---------------------------------------------------------------------------


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter has loaded after ``code``, beyond a bare start."""
    script = (
        "import json, sys; before = set(sys.modules)\n"
        f"{code}\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    return set(json.loads(out))


def _own_modules_after(code: str) -> set[str]:
    """kingrec's own modules and protobuf's that ``code`` loads."""
    return {m for m in _modules_after(code) if m.startswith(("kingrec", "google"))}


def test_import_kingrec_loads_nothing_but_itself() -> None:
    assert _modules_after("import kingrec") == {"kingrec"}


def test_one_name_loads_only_what_it_needs() -> None:
    card_only = _own_modules_after("import kingrec; kingrec.parse_card('QS')")
    assert card_only == {"kingrec", "kingrec.cards", "kingrec.errors"}
    reading = _own_modules_after("import kingrec; kingrec.read_records")
    assert not {"kingrec.validator", "kingrec.jsonl", "kingrec.builder"} & reading
    building = _own_modules_after("import kingrec; kingrec.MatchBuilder")
    assert not {"kingrec.validator", "kingrec.container", "kingrec.jsonl"} & building


def test_import_kingrec_is_fast() -> None:
    """``python -X importtime -c 'import kingrec'``: a few milliseconds, not the protobuf
    runtime's hundred (a generous bound, for slow CI machines)."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import kingrec"],
        capture_output=True,
        text=True,
        check=True,
    )
    line = [x for x in result.stderr.splitlines() if x.rstrip().endswith("| kingrec")][-1]
    cumulative_us = int(line.split("|")[1])
    assert cumulative_us < 50_000, line


# -- reading: paths and streams -------------------------------------------------------------


@pytest.fixture
def krec(tmp_path: Path) -> Path:
    path = tmp_path / "three.krec"
    with KrecWriter.open(path) as w:
        for m in _matches():
            w.write_match(m)
    return path


def test_read_records_from_a_path_or_a_binary_stream(krec: Path) -> None:
    from_path = list(kingrec.read_records(krec))
    from_str = list(kingrec.read_records(str(krec)))
    with open(krec, "rb") as f:
        from_file = list(kingrec.read_records(f))
    from_bytes = list(kingrec.read_records(io.BytesIO(krec.read_bytes())))
    expected = _matches()
    for items in (from_path, from_str, from_file, from_bytes):
        assert [r.match for r in items if isinstance(r, kingrec.Record)] == expected
    assert [r.location.frame for r in from_path if isinstance(r, kingrec.Record)] == [0, 1, 2]
    assert from_path[0].location.file == str(krec)
    assert from_file[0].location.file == str(krec)  # a file's name is the stream's name
    assert from_bytes[0].location.file == "<stream>"


def test_read_records_gives_damage_between_records(krec: Path) -> None:
    data = bytearray(krec.read_bytes())
    data[200] ^= 0xFF  # inside frame 0's payload
    items = list(kingrec.read_records(io.BytesIO(bytes(data))))
    assert isinstance(items[0], kingrec.Damage) and items[0].code == "FRAME_CORRUPT"
    assert [type(i).__name__ for i in items[1:]] == ["Record", "Record"]


def test_read_records_reads_json_lines_from_a_stream() -> None:
    text = "".join(f"{line}\n" for line in _json_lines(_matches(2)))
    items = list(kingrec.read_records(io.BytesIO(f"{text}not json\n".encode())))
    assert [i.location.line for i in items] == [1, 2, 3]
    assert [i.match for i in items if isinstance(i, kingrec.Record)] == _matches(2)
    assert isinstance(items[2], kingrec.Damage) and items[2].code == "JSON_INVALID"


def _json_lines(matches: list[pb.Match]) -> list[str]:
    from kingrec.jsonl import dumps_match

    return [dumps_match(m) for m in matches]


def test_read_records_refuses_text_streams_and_unreadable_sources(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"binary stream"):
        list(kingrec.read_records(io.StringIO("{}")))  # type: ignore[arg-type]
    with pytest.raises(kingrec.UnreadableFileError, match=r"cannot open"):
        list(kingrec.read_records(tmp_path / "missing.krec"))
    with pytest.raises(kingrec.NotRecordFileError):
        list(kingrec.read_records(io.BytesIO(b"PK\x03\x04 a zip file")))


# -- writing: paths and streams -------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "fmt", "head"),
    [
        ("out.krec", None, MAGIC),
        ("out.jsonl", None, b'{"format_version":1'),
        ("out.json", "jsonl", b'{"format_version":1'),
        ("out.bin", "krec", MAGIC),
    ],
)
def test_write_records_to_a_path_by_extension_or_format(
    tmp_path: Path, name: str, fmt: str | None, head: bytes
) -> None:
    path = tmp_path / name
    n = kingrec.write_records(path, _matches(), format=fmt)  # type: ignore[arg-type]
    assert n == 3
    assert path.read_bytes().startswith(head)
    assert [r.match for r in kingrec.read_records(path)] == _matches()  # type: ignore[union-attr]
    assert [p.name for p in tmp_path.iterdir()] == [name]  # no temporary file left


def test_write_records_to_streams() -> None:
    binary = io.BytesIO()
    assert kingrec.write_records(binary, _matches(), format="krec") == 3
    assert [r.match for r in kingrec.read_records(io.BytesIO(binary.getvalue()))] == _matches()  # type: ignore[union-attr]
    lines = io.BytesIO()
    assert kingrec.write_records(lines, _matches(), format="jsonl") == 3
    assert not lines.closed  # the caller's stream stays open
    assert lines.getvalue().decode().splitlines() == _json_lines(_matches())
    text = io.StringIO()
    assert kingrec.write_records(text, _matches()[0], format="jsonl") == 1  # one match
    assert text.getvalue() == _json_lines(_matches(1))[0] + "\n"
    with pytest.raises(ValueError, match=r"say format="):
        kingrec.write_records(io.BytesIO(), _matches())
    with pytest.raises(TypeError, match=r"needs a binary stream"):
        kingrec.write_records(io.StringIO(), _matches(), format="krec")


def test_write_records_to_a_path_is_atomic(tmp_path: Path) -> None:
    path = tmp_path / "out.krec"
    kingrec.write_records(path, _matches(1))
    before = path.read_bytes()

    def failing() -> Iterator[pb.Match]:
        yield from _matches(2)
        raise RuntimeError("the client crashed")

    with pytest.raises(RuntimeError, match="crashed"):
        kingrec.write_records(path, failing())
    assert path.read_bytes() == before  # the old file, whole
    assert [p.name for p in tmp_path.iterdir()] == ["out.krec"]
    with pytest.raises(kingrec.LimitError):
        kingrec.write_records(tmp_path / "big.krec", _oversized())
    assert not (tmp_path / "big.krec").exists()


def _oversized() -> pb.Match:
    m = pb.Match(match_id="big")
    for i in range(2000):
        m.metadata.tags[f"k{i}"] = "x" * 1000
    return m


# -- validating -----------------------------------------------------------------------------


def test_validate_judges_one_match_by_its_own_ruleset() -> None:
    match = simulate_match(preset("rotation"), 5)
    report = kingrec.validate(match)
    assert isinstance(report, kingrec.MatchReport)
    assert report.valid and report.findings == [] and report.deals == 28
    match.deals[3].plays = match.deals[3].plays[:-1]
    bad = kingrec.validate(match)
    assert not bad.valid and "DEAL_INCOMPLETE" in [f.code for f in bad.findings]


def test_validate_holds_a_match_to_the_bounds_as_a_file_would() -> None:
    match = simulate_match(preset("short"), 1)
    match.metadata.event = "x" * (MAX_STRING_BYTES + 1)
    report = kingrec.validate(match)
    assert [f.code for f in report.findings] == ["LIMIT_EXCEEDED"]


def test_validate_file_takes_a_path_or_a_stream_and_matches_validate(krec: Path) -> None:
    expected = [kingrec.validate(m).to_dict()["findings"] for m in _matches()]
    for source in (krec, str(krec), io.BytesIO(krec.read_bytes())):
        reports = list(kingrec.validate_file(source))
        assert all(isinstance(r, kingrec.MatchReport) for r in reports)
        assert [r.to_dict()["findings"] for r in reports] == expected  # type: ignore[union-attr]
        assert all(r.valid for r in reports)  # type: ignore[union-attr]
    assert list(kingrec.validate_file(krec)) == list(validation.validate_file(str(krec)))


# -- replaying and playing ------------------------------------------------------------------


def test_replay_match_uses_the_record_s_own_ruleset() -> None:
    match = simulate_match(preset("kahvehane"), 3)
    views = list(kingrec.replay_match(match))
    assert [v.scores for v in views] == [list(d.claimed_scores) for d in match.deals]
    assert views[-1].totals == list(match.claimed_totals)


def test_deal_play_gives_legal_cards_as_codes() -> None:
    match = simulate_match(preset("classic"), 2)
    deal = match.deals[0]
    play = kingrec.DealPlay(
        preset("classic"), deal.hands, deal.declarer, deal.contract, deal.trump - 1
    )
    for card in deal.plays:
        legal = play.legal_cards()
        assert legal == [c for c in range(52) if play.legal_plays() >> c & 1]
        assert card in legal
        play.push(card)
    assert play.over and play.legal_cards() == []
    assert [kingrec.card_name(c) for c in (0, 49, 50)] == ["2C", "QS", "KS"]
    assert kingrec.parse_card("QS") == 49 and kingrec.parse_card("♠K") == 50


# -- the README's example, as written -----------------------------------------------------


def _readme_section(title: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else None]


def test_readme_python_api_example_runs_and_prints_what_it_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    section = _readme_section("Python API")
    code = re.findall(r"```python\n(.*?)```", section, re.S)
    shown = re.findall(r"```text\n(.*?)```", section, re.S)
    assert len(code) == 1 and len(shown) == 1
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code[0], "README.md", "exec"), {"__name__": "__readme__"})
    assert out.getvalue() == shown[0]
    assert (tmp_path / "friday.krec").exists()
