"""Validate's and ValidateStream's responses are put together from verdicts encoded once
(``kingrec_service.validating``): they must be the very bytes protobuf gives for the same
message built field by field, the way a client built from the .proto alone reads them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc
import pytest

from kingrec.container import FILE_HEADER_SIZE, KrecWriter
from kingrec.findings import Location, MatchReport
from kingrec.jsonl import clean_report_line, report_line
from kingrec.records import Damage, read_records
from kingrec.rules import preset
from kingrec.simulate import derive_seed, simulate_match
from kingrec.v1 import record_pb2 as pb
from kingrec.v1 import service_pb2 as svc
from kingrec_service import ServiceConfig, running_server
from kingrec_service.convert import (
    location_bytes,
    location_to_proto,
    report_bytes,
    report_json,
    report_to_proto,
    verdict_into,
)
from kingrec_service.records import Vouched, record_verdicts, stream_verdicts
from kingrec_service.validating import stream_responses, validate_response, verdict_bytes
from kingrec_service.wire import delimited, encode_varint, varint

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def _matches(name: str) -> list[pb.Match]:
    return [r.match for r in read_records(str(SAMPLES / name)) if hasattr(r, "match")]


CLASSIC = _matches("valid/classic.krec")[0]
INVALID = next(iter(sorted((SAMPLES / "invalid").glob("*.krec"))))


def _reference_response(record: svc.Record) -> svc.ValidateResponse:
    """ValidateResponse as the .proto describes it, built message by message."""
    items = record_verdicts(record)
    response = svc.ValidateResponse()
    if len(items) == 1 and isinstance(items[0], MatchReport):
        response.report.CopyFrom(report_to_proto(items[0]))
        response.report_json = report_json(items[0])
    for item in items:
        verdict_into(response.verdicts.add(), item)
    return response


def _file_of_many(tmp_path: Path) -> bytes:
    """A .krec file: a clean match, an invalid one, the clean one again, a damaged frame."""
    invalid = _matches(f"invalid/{INVALID.name}")[0]
    path = tmp_path / "many.krec"
    with KrecWriter.open(path) as writer:
        writer.write_match(CLASSIC)
        writer.write_match(invalid)
        writer.write_match(CLASSIC)
    return path.read_bytes() + b"\x05\x00\x00\x00junk!"


def _records(tmp_path: Path) -> list[svc.Record]:
    invalid = _matches(f"invalid/{INVALID.name}")[0]
    unnamed = pb.Match()
    unnamed.CopyFrom(CLASSIC)
    unnamed.match_id = ""
    return [
        svc.Record(krec=CLASSIC.SerializeToString(), name="clean.krec"),
        svc.Record(krec=CLASSIC.SerializeToString()),  # no name: no file in its location
        svc.Record(match=CLASSIC, name="şölen/ünlü ♥.krec"),  # a name beyond ASCII
        svc.Record(match=unnamed, name="no-id"),
        svc.Record(match=invalid, name="bad"),
        svc.Record(krec=b"\xff\xff", name="junk"),
        svc.Record(krec=_file_of_many(tmp_path), name="many.krec"),
        svc.Record(json='{"match_id": "j"}', name="j.jsonl"),
        svc.Record(),
    ]


def test_validate_answers_the_bytes_the_response_message_serializes_to(tmp_path: Path) -> None:
    for record in _records(tmp_path)[:5] + _records(tmp_path)[6:8]:
        expected = _reference_response(record).SerializeToString()
        assert validate_response(record) == expected, record.name


@pytest.mark.parametrize("checker", ["compiled", "reference"])
def test_validate_stream_answers_the_bytes_its_messages_serialize_to(
    tmp_path: Path, checker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the compiled checker, vouched-for records are encoded without a report being
    made; without it, every record is the reference's report: the bytes are the same."""
    if checker == "reference":
        monkeypatch.setattr("kingrec_service.records.checker_of", lambda: None)
    records = _records(tmp_path)
    for index in (0, 1, 300):
        expected = svc.ValidateStreamResponse(request=index, done=True)
        for item in stream_verdicts(records):
            if isinstance(item, Vouched):
                item = MatchReport(
                    item.match_id, Location(item.name, 0, FILE_HEADER_SIZE), deals=item.deals
                )
            verdict_into(expected.verdicts.add(), item)
        assert list(stream_responses(index, records)) == [expected.SerializeToString()]


def test_the_compiled_checker_vouches_for_the_clean_records_of_a_stream(
    tmp_path: Path,
) -> None:
    from kingrec.fastcheck import COMPILED

    if not COMPILED:
        pytest.skip("the compiled checker is not built")
    items = stream_verdicts(_records(tmp_path))
    assert [type(i).__name__ for i in items[:5]] == [
        "Vouched",
        "Vouched",
        "Vouched",
        "Vouched",
        "MatchReport",
    ]
    assert items[0] == Vouched(CLASSIC.match_id, len(CLASSIC.deals), "clean.krec")


@pytest.mark.parametrize(
    ("match_id", "deals", "name"),
    [("m", 20, ""), ("", 0, ""), ("ş♥" * 40, 300, "ü" * 200), ("x" * 5000, 1, "f")],
)
def test_a_vouched_record_encodes_as_the_report_fastcheck_gives_a_clean_match(
    match_id: str, deals: int, name: str
) -> None:
    report = MatchReport(match_id, Location(name, 0, FILE_HEADER_SIZE), deals=deals)
    expected = svc.Verdict()
    verdict_into(expected, report)
    assert verdict_bytes(Vouched(match_id, deals, name)) == expected.SerializeToString()
    assert verdict_bytes(report) == expected.SerializeToString()


def test_a_damage_verdict_encodes_as_its_message() -> None:
    damage = Damage(Location("f", 3, 99), "FRAME_CORRUPT", "the frame's checksum is wrong")
    expected = svc.Verdict()
    verdict_into(expected, damage)
    assert verdict_bytes(damage) == expected.SerializeToString()


@pytest.mark.parametrize("n", [0, 1, 127, 128, 300, 16383, 16384, 2**32 - 1, 2**64 - 1])
def test_varints_are_protobufs_own(n: int) -> None:
    encoded = svc.Location(offset=n).SerializeToString()  # optional uint64 offset = 3
    assert encoded == b"\x18" + encode_varint(n) == b"\x18" + varint(n)


def test_a_length_delimited_field_is_protobufs_own() -> None:
    for size in (1, 127, 128, 20_000, 3 << 20):  # proto3 leaves an empty one out
        text = "a" * size
        assert delimited(b"\x0a", text.encode()) == svc.QueryRequest(sql=text).SerializeToString()


def test_clients_built_from_the_proto_read_the_encoded_responses(tmp_path: Path) -> None:
    """End to end: the generated stubs decode what the server sends, for one match, a file of
    many, and a stream of requests (one of them a whole file)."""
    from kingrec_service._pb.service_pb2_grpc import KingrecServiceStub

    rules = preset("classic")
    matches = [simulate_match(rules, derive_seed(5, i)) for i in range(30)]
    records = [svc.Record(krec=m.SerializeToString(), name=f"r{i}") for i, m in enumerate(matches)]
    many = svc.Record(krec=_file_of_many(tmp_path), name="many.krec")
    requests = [
        svc.ValidateStreamRequest(records=records[:20]),
        svc.ValidateStreamRequest(records=[many, *records[20:]]),
    ]
    with (
        running_server(ServiceConfig()) as (_, port),
        grpc.insecure_channel(f"127.0.0.1:{port}") as channel,
    ):
        stub = KingrecServiceStub(channel)
        one = stub.Validate(svc.ValidateRequest(record=records[0]))
        answer = stub.Validate(svc.ValidateRequest(record=many))
        responses = list(stub.ValidateStream(iter(requests)))
    assert one == _reference_response(records[0])
    assert one.report.valid and one.report.deals == len(matches[0].deals)
    assert answer == _reference_response(many)
    kinds = [v.WhichOneof("verdict") for v in answer.verdicts]
    assert kinds == ["report", "report", "report", "damage"]
    assert [(r.request, r.done) for r in responses] == [(0, True), (1, True)]
    assert [v.report.match_id for v in responses[0].verdicts] == [m.match_id for m in matches[:20]]
    assert all(v.report.valid for v in responses[0].verdicts)
    assert len(responses[1].verdicts) == 4 + 10
    assert responses[1].verdicts[3].damage.code == "FRAME_CORRUPT"


@pytest.mark.parametrize(
    "location",
    [
        Location(),
        Location("a.jsonl", line=7),
        Location("f.krec", 0, FILE_HEADER_SIZE),
        Location("ş", 2**32 - 1, 2**64 - 1),
        Location("", None, 12),
    ],
)
def test_a_report_without_findings_encodes_as_its_message(location: Location) -> None:
    for match_id, deals in (("m", 20), ("", 0), ("♥" * 70, 1)):
        report = MatchReport(match_id, location, deals=deals)
        assert report_bytes(report) == report_to_proto(report).SerializeToString()
        assert location_bytes(location) == location_to_proto(location).SerializeToString()


def test_a_report_with_findings_encodes_as_its_message(tmp_path: Path) -> None:
    invalid = _matches(f"invalid/{INVALID.name}")[0]
    (report,) = record_verdicts(svc.Record(match=invalid, name="bad"))
    assert isinstance(report, MatchReport) and report.findings
    assert report_bytes(report) == report_to_proto(report).SerializeToString()


@pytest.mark.parametrize(
    "location",
    [
        Location(),
        Location("a.jsonl", line=7),
        Location("f.krec", 0, FILE_HEADER_SIZE),
        Location('q"uo\\te\u2028d\x85\x00\x1b[2J.krec', 2**32 - 1, 2**64 - 1),
        Location("şölen/ünlü ♥.krec", 0, FILE_HEADER_SIZE),
        Location("\ud800 lone", None, 12, 3),
    ],
)
def test_a_clean_report_line_is_the_report_line_byte_for_byte(location: Location) -> None:
    ids = ["m", "", "ş♥" * 40, 'a"b\\c\n\t\x7f', "sep\u2028\u2029\x85", "x" * 5000]
    for match_id in ids:
        for deals in (0, 1, 20, 2**40):
            report = MatchReport(match_id, location, deals=deals)
            line = clean_report_line(match_id, location, deals)
            assert line == report_line(report) == report_json(report)
            assert line.encode("utf-8", "surrogatepass") == report_json(report).encode(
                "utf-8", "surrogatepass"
            )


def test_a_record_the_checker_vouches_for_is_answered_without_a_report_being_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kingrec.fastcheck import COMPILED

    if not COMPILED:
        pytest.skip("the compiled checker is not built")
    names = ["clean.krec", "", "şölen/ünlü ♥.krec", 'a"\u2028'] * 2  # again: from the cache
    records = [svc.Record(krec=CLASSIC.SerializeToString(), name=n) for n in names]
    records.append(svc.Record(match=CLASSIC, name="as a message"))
    expected = [_reference_response(r).SerializeToString() for r in records]

    def made(*args: object, **kwargs: object) -> object:
        raise AssertionError("a report was made for a record the checker vouched for")

    for where in ("validating.report_bytes", "validating.report_json", "records.validate_payload"):
        monkeypatch.setattr(f"kingrec_service.{where}", made)
    monkeypatch.setattr("kingrec.findings.MatchReport.__init__", made)
    assert [validate_response(r) for r in records] == expected


def test_a_vouched_record_whose_answer_is_over_the_limit_is_refused_as_the_reference_refuses_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kingrec.errors import LimitError
    from kingrec_service.validating import VERDICT_BYTES

    huge = svc.Record(krec=CLASSIC.SerializeToString(), name="n" * (VERDICT_BYTES // 3 + 1))
    with pytest.raises(LimitError) as vouched:
        validate_response(huge)
    monkeypatch.setattr("kingrec_service.records.checker_of", lambda: None)
    with pytest.raises(LimitError) as judged:  # the reference's report, the same refusal
        validate_response(huge)
    assert str(vouched.value) == str(judged.value) and "ValidateStream" in str(judged.value)


def test_the_places_kept_encoded_are_only_short_names() -> None:
    from kingrec.fastcheck import COMPILED
    from kingrec.jsonl import write
    from kingrec_service import validating

    if not COMPILED:
        pytest.skip("the compiled checker is not built")
    validating._frame_zero.cache_clear()
    write._clean_place.cache_clear()
    long_name = "ş" * 100_000
    records = [svc.Record(krec=CLASSIC.SerializeToString(), name=n) for n in ("a", long_name)]
    expected = [_reference_response(r).SerializeToString() for r in records]
    assert [validate_response(r) for r in records * 2] == expected * 2
    assert validating._frame_zero.cache_info().currsize == 1  # "a" only
    for name in ("a", long_name) * 2:  # the library's own cache of places, the same way
        place = Location(name, 0, FILE_HEADER_SIZE)
        assert clean_report_line("m", place, 1) == report_line(MatchReport("m", place, deals=1))
    assert write._clean_place.cache_info().currsize == 1


def test_one_match_is_answered_on_the_event_loop_and_a_whole_file_off_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A match or a frame's bytes is judged in the time of the compiled checker, at once; a
    whole .krec file or JSON text may hold thousands of records and goes to a thread. The
    answers are the same bytes either way."""
    import asyncio

    from kingrec_service import servicers
    from kingrec_service.live import Hub, LiveConfig

    hopped: list[str] = []
    to_thread = asyncio.to_thread

    async def counted(work: Any, record: svc.Record) -> Any:
        hopped.append(record.name)
        return await to_thread(work, record)

    monkeypatch.setattr(servicers.asyncio, "to_thread", counted)
    servicer = servicers.KingrecServicer(Hub(LiveConfig()), None)
    records = _records(tmp_path)[:5] + _records(tmp_path)[6:8]  # those answered, not refused

    async def answers() -> list[bytes]:
        return [await servicer.Validate(svc.ValidateRequest(record=r), None) for r in records]

    assert asyncio.run(answers()) == [_reference_response(r).SerializeToString() for r in records]
    assert hopped == ["many.krec", "j.jsonl"]
