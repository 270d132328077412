"""docs/FORMAT.md is held to the code: what it states is read out of it and checked.

The finding codes, the limits, the container layout, the checksum vectors, the example
file, the wire and JSON examples and the preset table of the document are compared with
kingrec; and a writer in a second language (``tests/node/write_krec.mjs``, plain Node,
written from the documents alone) must write files kingrec accepts, byte for byte.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import zlib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from google.protobuf import json_format
from google.protobuf.unknown_fields import UnknownFieldSet

from kingrec import container, limits
from kingrec.boundary import ruleset_to_proto
from kingrec.cards import card_name, parse_card
from kingrec.errors import RecordFileError
from kingrec.findings import CODES
from kingrec.jsonl import dumps_match, loads_match, match_from_dict, match_to_dict
from kingrec.records import Record, read_records
from kingrec.rules import PRESETS
from kingrec.v1 import record_pb2 as pb
from kingrec.validator import validate_match
from kingrec_cli.main import main

ROOT = Path(__file__).resolve().parent.parent
FORMAT = (ROOT / "docs" / "FORMAT.md").read_text(encoding="utf-8")
RULES = (ROOT / "docs" / "RULES.md").read_text(encoding="utf-8")
WRITER = ROOT / "tests" / "node" / "write_krec.mjs"
MANIFEST: list[dict[str, Any]] = json.loads((ROOT / "samples" / "manifest.json").read_text())[
    "samples"
]

# Codes another change adds to kingrec.findings.CODES; the document lists them already.
PENDING_CODES = {"LIMIT_EXCEEDED", "DUPLICATE_RECORD", "UNKNOWN_JSON_KEY"}
SEVERITIES = {"error", "warning", "damage"}


def _block(name: str, doc: str = FORMAT) -> str:
    """The fenced block that follows the ``<!-- spec:NAME -->`` marker."""
    marker = f"<!-- spec:{name} -->"
    assert doc.count(marker) == 1, f"{marker} must appear once in the document"
    found = re.search(r"^```[^\n]*\n(.*?)^```$", doc[doc.index(marker) :], re.S | re.M)
    assert found, f"no fenced block after {marker}"
    return found.group(1)


def _section(title: str) -> str:
    """The text of the ``## title`` section, up to the next ``## `` heading."""
    start = FORMAT.index(f"\n## {title}")
    end = FORMAT.find("\n## ", start + 1)
    return FORMAT[start : end if end >= 0 else len(FORMAT)]


def _hex(text: str) -> bytes:
    """The bytes of every two-digit hex group in ``text`` (labels are skipped)."""
    return bytes.fromhex("".join(re.findall(r"\b[0-9A-Fa-f]{2}\b", text)))


def _slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("doc", ["FORMAT.md", "RULES.md"])
def test_the_documents_links_lead_somewhere(doc: str) -> None:
    docs = ROOT / "docs"
    anchors = {
        name: {_slug(h) for h in re.findall(r"^#+ (.+)$", (docs / name).read_text(), re.M)}
        for name in ("FORMAT.md", "RULES.md")
    }
    links = re.findall(r"\]\(([^)\s]+)\)", (docs / doc).read_text(encoding="utf-8"))
    assert links
    for link in links:
        path, _, anchor = link.partition("#")
        target = path or doc
        if target in anchors:
            assert not anchor or anchor in anchors[target], link
        else:
            assert (docs / path).resolve().exists(), link


# -- finding codes ------------------------------------------------------------------------


def _documented_codes() -> dict[str, str]:
    rows = re.findall(r"^\| `([A-Z_]+)` \| (\w+) \| .+ \|$", _section("6. Finding codes"), re.M)
    codes = dict(rows)
    assert len(codes) == len(rows), "a code is listed twice"
    return codes


def test_every_finding_code_is_in_the_spec_with_a_severity() -> None:
    documented = _documented_codes()
    assert set(documented) == set(CODES) | PENDING_CODES
    assert set(documented.values()) <= SEVERITIES


def test_the_codes_of_rules_md_are_codes() -> None:
    named = set(re.findall(r"\b[A-Z]+(?:_[A-Z]+)+\b", RULES.split("## Presets")[0]))
    codes = set(CODES) | PENDING_CODES
    options = {"EL_ALMAZ", "SON_IKI"}  # contract names, not codes
    assert named - options <= codes


@pytest.mark.parametrize("sample", MANIFEST, ids=[s["file"] for s in MANIFEST])
def test_documented_severities_agree_with_the_samples(sample: dict[str, Any]) -> None:
    documented = _documented_codes()
    severities = {documented[code] for code in sample["codes"]}
    if sample["exit"] == 0:  # valid: warnings only
        assert severities <= {"warning"}
    elif sample["exit"] == 1:  # invalid: an error, perhaps warnings
        assert "error" in severities and severities <= {"error", "warning"}
    else:
        assert "damage" in severities


# -- limits ---------------------------------------------------------------------------------


def _limits_table() -> str:
    """The limits table (a Markdown table after its marker, not a fenced block)."""
    start = FORMAT.index("<!-- spec:limits -->")
    return FORMAT[start : FORMAT.index("\n\n", FORMAT.index("|", start))]


def test_every_limit_is_in_the_spec_with_its_value() -> None:
    constants = {name: getattr(limits, name) for name in limits.__all__ if name.startswith("MAX_")}
    assert constants, "kingrec.limits has no MAX_ constants?"
    rows = dict(re.findall(r"^\| `(MAX_[A-Z_]+)` \| (\d+) \|", _limits_table(), re.M))
    assert {name: int(value) for name, value in rows.items()} == constants


def test_the_limits_table_names_limit_exceeded_for_every_bound() -> None:
    for row in _limits_table().splitlines()[3:]:
        assert "LIMIT_EXCEEDED" in row, row


# -- the container -----------------------------------------------------------------------


def _layout(name: str) -> list[tuple[int, int, str, str]]:
    """(offset, size, field, value) of each row of a layout block."""
    rows = []
    for line in _block(name).splitlines()[1:]:
        offset, size, field, value = line.split(None, 3)
        rows.append((int(offset), int(size) if size.isdigit() else -1, field, value))
    return rows


def test_the_file_header_layout_is_the_containers() -> None:
    rows = _layout("file-header")
    assert [field for _, _, field, _ in rows] == ["magic", "version", "flags"]
    (_, magic_size, _, magic), (version_at, _, _, version), (flags_at, _, _, flags) = rows
    assert _hex(magic) == container.MAGIC and magic_size == len(container.MAGIC)
    assert version == f"u16 = {container.FORMAT_VERSION}" and version_at == 8
    assert flags == "u16 = 0" and flags_at == 10
    assert sum(size for _, size, _, _ in rows) == container.FILE_HEADER_SIZE
    out = io.BytesIO()
    container.KrecWriter(out).close()  # an empty container: the header alone
    assert out.getvalue() == container.MAGIC + b"\x01\x00\x00\x00"
    assert len(out.getvalue()) == container.FILE_HEADER_SIZE


def test_the_frame_header_layout_is_the_containers() -> None:
    rows = _layout("frame-header")
    fields = [field for _, _, field, _ in rows]
    assert fields == ["marker", "length", "payload_crc", "header_crc", "payload"]
    at = 0
    for offset, size, _, _ in rows[:-1]:
        assert offset == at
        at += size
    assert at == rows[-1][0] == container.FRAME_HEADER_SIZE
    assert _hex(rows[0][3].split("(")[0]) == container.FRAME_MARKER
    assert "MAX_FRAME_BYTES" in rows[1][3] and "first 12 bytes" in rows[3][3]
    payload = b"any payload"
    out = io.BytesIO()
    with container.KrecWriter(out) as writer:
        writer.write(payload)
    head = out.getvalue()[container.FILE_HEADER_SIZE :][: container.FRAME_HEADER_SIZE]
    assert head[:4] == container.FRAME_MARKER
    assert int.from_bytes(head[4:8], "little") == len(payload)
    assert int.from_bytes(head[8:12], "little") == zlib.crc32(payload)
    assert int.from_bytes(head[12:16], "little") == zlib.crc32(head[:12])


def test_the_crc_test_vectors_are_zlibs() -> None:
    vectors = re.findall(r"^crc32\((.*)\)\s+= 0x([0-9A-F]{8})$", _block("crc-vectors"), re.M)
    assert len(vectors) >= 4
    for argument, expected in vectors:
        data = (
            _hex(argument.removeprefix("hex "))
            if argument.startswith("hex ")
            else json.loads(argument).encode("ascii")
        )
        assert zlib.crc32(data) == int(expected, 16), argument
    assert ('"123456789"', "CBF43926") in vectors


def test_the_example_file_reads_back_to_its_payload() -> None:
    data = _hex(_block("tiny-file"))
    payload = _hex(_block("tiny-payload"))
    frames = list(container.read_frames(io.BytesIO(data)))
    assert frames == [container.Frame(0, container.FILE_HEADER_SIZE, payload)]
    assert pb.Match.FromString(payload) == pb.Match(format_version=1, match_id="tiny")
    out = io.BytesIO()
    with container.KrecWriter(out) as writer:
        writer.write(payload)
    assert out.getvalue() == data  # and kingrec writes exactly that file
    assert f"{len(data)} bytes in all" in FORMAT


def test_the_example_file_damaged_is_reported_as_the_spec_says() -> None:
    data = _hex(_block("tiny-file"))
    flipped = data[:-1] + bytes([data[-1] ^ 1])
    (damage,) = container.read_frames(io.BytesIO(flipped))
    assert isinstance(damage, container.FrameDamage) and damage.kind == "corrupt"
    for cut in (13, 20, len(data) - 1):  # inside the frame header, and inside the payload
        (damage,) = container.read_frames(io.BytesIO(data[:cut]))
        assert isinstance(damage, container.FrameDamage) and damage.kind == "truncated"


def _read(data: bytes) -> list[tuple[str, int, int]]:
    """(kind, frame number, offset) of each item the container reader yields."""
    return [
        ("frame" if isinstance(item, container.Frame) else item.kind, item.index, item.offset)
        for item in container.read_frames(io.BytesIO(data))
    ]


def test_the_reader_follows_section_2() -> None:
    data = _hex(_block("tiny-file"))
    header, frame = data[:12], data[12:]
    end = len(data)
    # §2.1: the file header.
    for bad, code in [
        (b"", "NOT_KREC"),
        (b"{}" + data, "NOT_KREC"),
        (data[:5], "UNREADABLE"),
        (header[:8] + b"\x00\x00\x00\x00", "UNREADABLE"),
        (header[:8] + b"\x02\x00\x00\x00", "UNSUPPORTED_VERSION"),
        (header[:8] + b"\x01\x00\x01\x00", "UNSUPPORTED_VERSION"),
    ]:
        with pytest.raises(RecordFileError) as raised:
            _read(bad)
        assert raised.value.code == code, bad
    assert _read(header) == []  # §2.6: the header alone is an empty container
    # §2.5: fewer than 16 bytes left, like a frame or not.
    assert _read(data + b"KR")[1:] == [("truncated", 1, end)]
    assert _read(data + b"KRF1abc")[1:] == [("truncated", 1, end)]
    assert _read(data + b"XYZ")[1:] == [("corrupt", 1, end)]
    # A damaged stretch is one item and one frame number; reading resumes at the next
    # sound frame header, searched from one byte after the damaged frame's start.
    broken = frame[:-1] + b"\x00"
    assert _read(header + broken + frame) == [("corrupt", 0, 12), ("frame", 1, end)]
    head = frame[:4] + (limits.MAX_FRAME_BYTES + 1).to_bytes(4, "little") + frame[8:12]
    bad_length = head + zlib.crc32(head).to_bytes(4, "little") + frame[16:]  # only the length
    assert _read(data + bad_length + frame)[1:] == [("corrupt", 1, end), ("frame", 2, 2 * end - 12)]
    # A sound header whose payload the file does not hold: truncated, or corrupt when a
    # sound frame header starts inside the missing span.
    assert _read(data + frame[:-3]) == [("frame", 0, 12), ("truncated", 1, end)]
    assert _read(header + frame[:-3] + frame) == [("corrupt", 0, 12), ("frame", 1, end - 3)]


def test_an_intact_frame_that_is_no_match_is_undecodable_and_reading_goes_on(
    tmp_path: Path,
) -> None:
    data = _hex(_block("tiny-file"))
    out = io.BytesIO()
    with container.KrecWriter(out) as writer:
        writer.write(b"\xff\xff\xff")  # sound checksums, no protobuf message
        writer.write(data[28:])
    (tmp_path / "f.krec").write_bytes(out.getvalue())
    damage, record = read_records(str(tmp_path / "f.krec"))
    assert not isinstance(damage, Record) and damage.code == "FRAME_UNDECODABLE"
    assert isinstance(record, Record) and record.match.match_id == "tiny"
    assert record.location.frame == 1 and record.location.offset == 12 + 16 + 3


# -- the record --------------------------------------------------------------------------


def test_the_wire_examples_are_how_kingrec_encodes() -> None:
    lines = _block("wire-examples").splitlines()
    assert len(lines) == 4
    for head, encoded in zip(lines[::2], lines[1::2], strict=True):
        kind, text = head.split(None, 1)
        obj = json.loads(text)
        if kind == "Deal":
            message: Any = match_from_dict({"deals": [obj]}).deals[0]
        else:
            assert kind == "Ruleset"
            message = match_from_dict({"ruleset": obj}).ruleset
        assert message.SerializeToString() == _hex(encoded), kind


def test_the_card_examples_are_the_codes() -> None:
    pairs = re.findall(r"(\w+)=(\d+)", _block("card-examples"))
    assert pairs
    for name, code in pairs:
        assert parse_card(name) == int(code) and card_name(int(code)) == name
    for spelling in ("10H", "th", "♠Q", "Q♠", " QS "):
        assert card_name(parse_card(spelling)) in ("TH", "QS")


def test_the_preset_table_is_every_option_of_every_preset() -> None:
    documented = [json.loads(line) for line in _block("presets").splitlines()]
    assert [r["preset"] for r in documented] == list(PRESETS)
    for rules in documented:
        spelled_out = match_to_dict(pb.Match(ruleset=ruleset_to_proto(PRESETS[rules["preset"]])))
        assert spelled_out["ruleset"] == rules


def test_the_enum_table_lists_every_enum_value() -> None:
    enum_rows = dict(re.findall(r"^\| `(\w+)` \| (.+) \|$", _section("3. The Match record"), re.M))
    for enum in pb.DESCRIPTOR.enum_types_by_name.values():
        prefix = re.sub(r"(?<!^)(?=[A-Z])", "_", enum.name).upper() + "_"
        listed = re.findall(r"(\d+) ([A-Z_]+)", enum_rows[enum.name])
        assert listed == [(str(v.number), v.name.removeprefix(prefix)) for v in enum.values]


def test_the_field_tables_name_every_field_with_its_number() -> None:
    record = _section("3. The Match record")
    for message in ("Match", "Deal", "Ruleset"):
        descriptor = pb.DESCRIPTOR.message_types_by_name[message]
        for field in descriptor.fields:
            assert f"| {field.number} | `{field.name}` |" in record, f"{message}.{field.name}"


# -- the JSON forms -----------------------------------------------------------------------


def test_the_friendly_example_is_what_kingrec_writes_and_is_valid() -> None:
    text = _block("json-friendly").strip()
    match = loads_match(text)
    assert dumps_match(match) == text
    assert validate_match(match).findings == []


def test_the_protojson_example_is_the_same_record() -> None:
    friendly = loads_match(_block("json-friendly"))
    text = _block("json-protojson")
    assert loads_match(text) == friendly
    assert json.loads(text) == json.loads(json_format.MessageToJson(friendly))


def test_the_raw_and_unknown_example_survives_both_ways() -> None:
    text = _block("json-raw").strip()
    match = loads_match(text)
    assert dumps_match(match) == text
    assert match.deals[0].hands == bytes.fromhex("00010203")
    assert match.SerializeToString().endswith(b"\xc2\x3e\x05hello")
    assert len(UnknownFieldSet(match)) == 1


# -- a writer in a second language ---------------------------------------------------------


def test_the_javascript_writer_reads_nothing_of_kingrec() -> None:
    source = WRITER.read_text(encoding="utf-8")
    imports = re.findall(r"""^import .* from ["']([^"']+)["'];$""", source, re.M)
    assert imports and all(name.startswith("node:") for name in imports), imports
    assert "readFile" not in source and "require(" not in source and "import(" not in source


def _validate(path: Path) -> list[dict[str, Any]]:
    result = CliRunner().invoke(main, ["validate", "--json", "--all", str(path)])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def _convert(source: Path, target: Path) -> None:
    result = CliRunner().invoke(main, ["convert", str(source), str(target)])
    assert result.exit_code == 0, result.output


def _only_match(path: Path) -> pb.Match:
    (record,) = read_records(str(path))
    assert isinstance(record, Record) and not record.unknown_keys
    return record.match


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the second-language writer cannot run")
    out = tmp_path_factory.mktemp("node")
    subprocess.run(
        [node, str(WRITER), str(out)], check=True, capture_output=True, text=True, timeout=120
    )
    return out


@pytest.mark.parametrize("name", ["match.krec", "match.jsonl", "match.protojson.json"])
def test_what_the_javascript_writer_writes_is_valid(written: Path, name: str) -> None:
    # One file per run, so that the same match in two files is no duplicate.
    *reports, summary = _validate(written / name)
    (report,) = reports
    assert report["type"] == "match" and report["valid"] and report["findings"] == []
    assert report["deals"] == 8
    assert summary["matches"] == 1 and summary["warnings"] == 0 and summary["damaged"] == 0


def test_the_javascript_writer_writes_one_match_three_ways(written: Path) -> None:
    krec = _only_match(written / "match.krec")
    assert krec.ruleset.preset == "short" and len(krec.deals) == 8
    assert krec.status == pb.MATCH_STATUS_COMPLETE and len(krec.players) == 4
    assert len(UnknownFieldSet(krec)) == 1  # the field from a newer schema was kept
    same = krec.SerializeToString(deterministic=True)
    assert _only_match(written / "match.jsonl").SerializeToString(deterministic=True) == same
    known = pb.Match()
    known.CopyFrom(krec)
    known.DiscardUnknownFields()  # ProtoJSON cannot carry it
    assert _only_match(written / "match.protojson.json") == known


def test_kingrec_round_trips_the_javascript_files_byte_for_byte(
    written: Path, tmp_path: Path
) -> None:
    krec = (written / "match.krec").read_bytes()
    jsonl = (written / "match.jsonl").read_bytes()
    _convert(written / "match.krec", tmp_path / "a.jsonl")
    _convert(tmp_path / "a.jsonl", tmp_path / "b.krec")
    _convert(written / "match.jsonl", tmp_path / "c.krec")
    _convert(written / "match.protojson.json", tmp_path / "d.jsonl")
    assert (tmp_path / "a.jsonl").read_bytes() == jsonl  # kingrec's friendly form, exactly
    assert (tmp_path / "b.krec").read_bytes() == krec  # and its container, exactly
    assert (tmp_path / "c.krec").read_bytes() == krec
    assert json.loads((tmp_path / "d.jsonl").read_text()) == {
        key: value for key, value in json.loads(jsonl).items() if key != "_unknown"
    }


_SOURCE_PATH = re.compile(r"(?<![\w/.])(?:kingrec|service|cli|bench|tests)/[\w/]+\.(?:pyx?|pxd)\b")


def test_every_source_file_the_schema_and_the_docs_point_to_is_there() -> None:
    """record.proto sent readers to kingrec/container.py long after it became a package."""
    texts = [*ROOT.glob("proto/**/*.proto"), *ROOT.glob("docs/*.md"), ROOT / "README.md",
             ROOT / "service" / "README.md"]  # fmt: skip
    cited = {
        (text.relative_to(ROOT).as_posix(), path)
        for text in texts
        for path in _SOURCE_PATH.findall(text.read_text("utf-8"))
    }
    assert ("proto/kingrec/v1/record.proto", "kingrec/container/layout.py") in cited
    assert [c for c in sorted(cited) if not (ROOT / c[1]).is_file()] == []
