"""The gRPC service against a real server on a free port, in this process (its own thread and
event loop), called through the generated stubs like any client."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from kingrec.cards import card_name
from kingrec.container import KrecWriter
from kingrec.jsonl import dumps_match
from kingrec.records import Damage, open_records, read_records
from kingrec.v1 import record_pb2 as pb
from kingrec.v1 import service_pb2 as svc
from kingrec_cli.publish import live_requests
from kingrec_service import (
    MAX_REQUEST_BYTES,
    ServerError,
    ServiceConfig,
    create_server,
    running_server,
)
from kingrec_service._pb.service_pb2_grpc import KingrecServiceStub
from kingrec_service.live import LiveConfig

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
KINGREC = Path(sys.executable).parent / "kingrec"
FAST = svc.Pace()
MAX_LAG = 64


def _matches(name: str) -> list[pb.Match]:
    return [r.match for r in read_records(str(SAMPLES / name)) if hasattr(r, "match")]


CLASSIC = _matches("valid/classic.krec")[0]


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    config = ServiceConfig(live=LiveConfig(max_lag=MAX_LAG, idle_timeout=60, retention=60))
    with running_server(config) as (_, bound):
        yield bound


@pytest.fixture(scope="module")
def stub(port: int) -> Iterator[KingrecServiceStub]:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield KingrecServiceStub(channel)


def _error(call: object) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        if callable(call):
            call()
    return caught.value


def _trailer(error: grpc.RpcError, key: str) -> str | bytes | None:
    assert isinstance(error, grpc.Call)
    for k, v in error.trailing_metadata() or ():
        if k == key:
            return v
    return None


def _code(error: grpc.RpcError) -> grpc.StatusCode:
    assert isinstance(error, grpc.Call)
    return error.code()


def _details(error: grpc.RpcError) -> str:
    assert isinstance(error, grpc.Call)
    return error.details() or ""


def _events(stub: KingrecServiceStub, request: svc.ReplayRequest) -> list[svc.MatchEvent]:
    return [e for response in stub.Replay(request) for e in response.events]


def _replay(stub: KingrecServiceStub, match: pb.Match, **options: object) -> list[svc.MatchEvent]:
    request = svc.ReplayRequest(record=svc.Record(match=match), **options)  # type: ignore[arg-type]
    return _events(stub, request)


@pytest.mark.parametrize("token", ["", " s3cret", "jeton-ş", "a\nb"])
def test_a_server_with_an_empty_or_unsendable_token_refuses_to_start(token: str) -> None:
    """An empty token would mean no authentication at all; the others no client could send."""
    with pytest.raises(ServerError, match="token"):
        create_server(ServiceConfig(token=token))


# -- Validate ------------------------------------------------------------------------------


def test_validate_gives_exactly_the_report_of_kingrec_validate_json(
    stub: KingrecServiceStub, tmp_path: Path
) -> None:
    """Every sample record, alone in a file: the service's report line is the CLI's."""
    files = []
    for path in sorted((SAMPLES / "valid").glob("*.krec")) + sorted(
        (SAMPLES / "invalid").glob("*.krec")
    ):
        with open_records(str(path)) as records:
            for item in records.raw_frames():
                assert not isinstance(item, Damage)
                single = tmp_path / f"{path.stem}-{item[0].frame}.krec"
                with KrecWriter.open(single) as writer:
                    writer.write(item[1])
                files.append(single)
    result = subprocess.run(
        [str(KINGREC), "validate", "--json", "--all", *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    expected = [line for line in lines if line["type"] == "match"]
    assert len(expected) == len(files)
    for path, line in zip(files, expected, strict=True):
        record = svc.Record(krec=_payload(path), name=str(path))
        response = stub.Validate(svc.ValidateRequest(record=record))
        assert json.loads(response.report_json) == line
        report = response.report
        assert report.valid == line["valid"] and report.deals == line["deals"]
        assert [f.code for f in report.findings] == [f["code"] for f in line["findings"]]
        for finding, want in zip(report.findings, line["findings"], strict=True):
            assert finding.message == want["message"]
            legal = [card_name(c) for c in finding.legal] if finding.HasField("legal") else None
            assert legal == want.get("legal")
            assert (finding.deal if finding.HasField("deal") else None) == want.get("deal")


def test_report_json_is_byte_for_byte_the_line_kingrec_validate_json_writes(
    stub: KingrecServiceStub, tmp_path: Path
) -> None:
    """Non-ASCII names, a line separator in the id, findings with legal cards: the service's
    ``report_json`` is the very bytes of the line the CLI writes (UTF-8, without its newline)."""
    records = []
    for sample, match_id in (("valid/classic.krec", "Rıfkı\u2028ğ"),
                             ("invalid/must-follow-suit.krec", "kör\u0085\"ş\"")):  # fmt: skip
        match = _matches(sample)[0]
        match.match_id = match_id
        match.players[0].name = "Şükrü «♥»"
        records.append(match)
    for n, match in enumerate(records):
        path = tmp_path / f"odd-{n}.krec"
        with KrecWriter.open(path) as writer:
            writer.write(match.SerializeToString())
        written = subprocess.run(
            [str(KINGREC), "validate", "--json", "--all", str(path)],
            capture_output=True,
            check=False,
            env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        ).stdout
        line = next(x for x in written.split(b"\n") if x.startswith(b'{"type":"match"'))
        record = svc.Record(krec=_payload(path), name=str(path))
        response = stub.Validate(svc.ValidateRequest(record=record))
        assert response.report_json.encode("utf-8") == line
        assert not line.isascii()


def _payload(path: Path) -> bytes:
    """The one frame's payload of a single-record .krec file."""
    return path.read_bytes()[12 + 16 :]


def test_validate_takes_a_match_its_bytes_a_krec_file_or_a_json_line(
    stub: KingrecServiceStub,
) -> None:
    match = _matches("invalid/must-follow-suit.krec")[0]
    as_match = stub.Validate(svc.ValidateRequest(record=svc.Record(match=match)))
    as_bytes = stub.Validate(svc.ValidateRequest(record=svc.Record(krec=match.SerializeToString())))
    as_json = stub.Validate(svc.ValidateRequest(record=svc.Record(json=dumps_match(match))))
    assert not as_match.report.valid
    assert as_match.report == as_bytes.report
    assert as_match.report.location.frame == 0 and as_match.report.location.offset == 12
    assert as_json.report.location.line == 1
    assert list(as_json.report.findings) == list(as_match.report.findings)


@pytest.mark.parametrize(
    ("record", "code"),
    [
        (svc.Record(), "BAD_REQUEST"),
        (svc.Record(krec=b"\x00\xffgarbage\x07"), "FRAME_UNDECODABLE"),
        (svc.Record(krec=b"\x89KREC\r\n\x1a\x09\x00\x00\x00"), "UNSUPPORTED_VERSION"),
        (svc.Record(json='{"match_id": 7}'), "JSON_INVALID"),
        (svc.Record(json='{"match_id": "x", "deals": [}'), "JSON_INVALID"),
        (svc.Record(json="[1, 2]"), "JSON_INVALID"),
        (svc.Record(json="not json at all"), "JSON_INVALID"),
        (svc.Record(krec=(SAMPLES / "valid" / "classic.krec").read_bytes()[:12]), "BAD_REQUEST"),
    ],
    ids=["empty", "garbage", "newer-krec", "json-type", "json-syntax", "json-array", "text",
         "no-record"],
)  # fmt: skip
def test_validate_refuses_what_is_not_one_record_with_invalid_argument_and_its_code(
    stub: KingrecServiceStub, record: svc.Record, code: str
) -> None:
    error = _error(lambda: stub.Validate(svc.ValidateRequest(record=record)))
    assert _code(error) == grpc.StatusCode.INVALID_ARGUMENT
    assert _trailer(error, "kingrec-code") == code
    assert _details(error)


def _mixed_file(path: Path) -> Path:
    """A .krec file of many records: valid, invalid, one repeated, one undecodable frame,
    and a last frame whose checksum no longer matches (damage)."""
    valid = _matches("valid/classic.krec") + _matches("valid/short.krec")
    invalid = _matches("invalid/must-follow-suit.krec")
    with KrecWriter.open(path) as writer:
        for m in [*valid, *invalid, valid[0]]:
            writer.write_match(m)
        writer.write(b"\xff\xff\xff")  # passes its checksums, is no Match
        writer.write_match(valid[-1])
    data = bytearray(path.read_bytes())
    data[-10] ^= 0xFF
    path.write_bytes(bytes(data))
    return path


def _cli_lines(path: Path) -> list[dict[str, object]]:
    """`kingrec validate --json --all` of a file: its match and damage lines."""
    result = subprocess.run(
        [str(KINGREC), "validate", "--json", "--all", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    return [line for line in lines if line["type"] in ("match", "damage")]


def _as_line(verdict: svc.Verdict) -> dict[str, object]:
    """A verdict as the CLI's --json line of the same thing."""
    if verdict.HasField("damage"):
        d, loc = verdict.damage, verdict.damage.location
        return {
            "type": "damage",
            "file": loc.file,
            "frame": loc.frame if loc.HasField("frame") else None,
            "offset": loc.offset if loc.HasField("offset") else None,
            "line": loc.line if loc.HasField("line") else None,
            "code": d.code,
            "message": d.message,
        }
    r = verdict.report
    return {
        "type": "match",
        "match_id": r.match_id,
        "frame": r.location.frame,
        "offset": r.location.offset,
        "valid": r.valid,
        "deals": r.deals,
        "codes": [f.code for f in r.findings],
        "messages": [f.message for f in r.findings],
    }


def _cli_as_line(line: dict[str, object]) -> dict[str, object]:
    if line["type"] == "damage":
        return line
    findings = line["findings"]
    assert isinstance(findings, list)
    return {
        "type": "match",
        "match_id": line["match_id"],
        "frame": line["frame"],
        "offset": line["offset"],
        "valid": line["valid"],
        "deals": line["deals"],
        "codes": [f["code"] for f in findings],
        "messages": [f["message"] for f in findings],
    }


def test_validate_of_a_krec_file_of_many_records_gives_a_verdict_per_record_like_the_cli(
    stub: KingrecServiceStub, tmp_path: Path
) -> None:
    path = _mixed_file(tmp_path / "mixed.krec")
    expected = [_cli_as_line(line) for line in _cli_lines(path)]
    record = svc.Record(krec=path.read_bytes(), name=str(path))
    response = stub.Validate(svc.ValidateRequest(record=record))
    assert [_as_line(v) for v in response.verdicts] == expected
    kinds = [line["type"] == "damage" or line["valid"] for line in expected]
    assert kinds.count(True) >= 3 and False in kinds and "DUPLICATE_RECORD" in str(expected)
    assert not response.HasField("report") and not response.report_json
    # JSON Lines text of many records too, one verdict per line.
    text = "\n".join(dumps_match(m) for m in [*_matches("valid/short.krec"), CLASSIC]) + "\n"
    lines = stub.Validate(svc.ValidateRequest(record=svc.Record(json=text, name="x.jsonl")))
    assert [v.report.location.line for v in lines.verdicts] == [1, 2, 3][: len(lines.verdicts)]
    assert len(lines.verdicts) == len(_matches("valid/short.krec")) + 1


def test_validate_of_one_record_gives_its_report_and_the_same_as_its_one_verdict(
    stub: KingrecServiceStub,
) -> None:
    response = stub.Validate(svc.ValidateRequest(record=svc.Record(match=CLASSIC)))
    assert [v.report for v in response.verdicts] == [response.report]
    assert response.report.valid and json.loads(response.report_json)["type"] == "match"


def test_validate_stream_answers_each_request_in_order_with_a_verdict_per_record(
    stub: KingrecServiceStub, tmp_path: Path
) -> None:
    path = _mixed_file(tmp_path / "mixed.krec")
    file_lines = [_cli_as_line(line) for line in _cli_lines(path)]
    invalid = _matches("invalid/must-follow-suit.krec")[0]
    first = [
        svc.Record(krec=CLASSIC.SerializeToString(), name="a"),
        svc.Record(match=invalid, name="b"),
        svc.Record(krec=CLASSIC.SerializeToString(), name="c"),  # alone: no duplicate
        svc.Record(name="empty"),
        svc.Record(krec=b"\x00\xffgarbage\x07", name="junk"),
        svc.Record(json="[1, 2]", name="array"),
    ]
    second = [svc.Record(krec=path.read_bytes(), name=str(path))]
    requests = [svc.ValidateStreamRequest(records=rs) for rs in (first, second, [])]
    responses = list(stub.ValidateStream(iter(requests)))
    assert [(r.request, r.done) for r in responses] == [(0, True), (1, True), (2, True)]
    one = responses[0].verdicts
    alone = [stub.Validate(svc.ValidateRequest(record=r)).report for r in first[:3]]
    assert [v.report for v in one[:3]] == alone
    assert [v.report.valid for v in one[:3]] == [True, False, True]
    assert [(v.damage.location.file, v.damage.code) for v in one[3:]] == [
        ("empty", "BAD_REQUEST"),
        ("junk", "FRAME_UNDECODABLE"),
        ("array", "JSON_INVALID"),
    ]
    assert [_as_line(v) for v in responses[1].verdicts] == file_lines
    assert not responses[2].verdicts


def test_validate_stream_splits_verdicts_that_do_not_fit_in_one_response(
    stub: KingrecServiceStub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The server is in this process: a small response budget shows the split."""
    monkeypatch.setattr("kingrec_service.validating.VERDICT_BYTES", 1000)
    records = [svc.Record(krec=CLASSIC.SerializeToString(), name=f"r{i}") for i in range(40)]
    request = svc.ValidateStreamRequest(records=records)
    responses = list(stub.ValidateStream(iter([request, request])))
    for index in (0, 1):
        mine = [r for r in responses if r.request == index]
        assert len(mine) >= 2
        assert [r.done for r in mine] == [False] * (len(mine) - 1) + [True]
        assert all(r.ByteSize() < 1200 for r in mine)
        files = [v.report.location.file for r in mine for v in r.verdicts]
        assert files == [f"r{i}" for i in range(40)]
    # Validate has one response only: a file whose verdicts do not fit is refused.
    path = tmp_path / "many.krec"
    with KrecWriter.open(path) as writer:
        for _ in range(40):
            writer.write_match(CLASSIC)
    record = svc.Record(krec=path.read_bytes())
    error = _error(lambda: stub.Validate(svc.ValidateRequest(record=record)))
    assert _code(error) == grpc.StatusCode.INVALID_ARGUMENT
    assert _trailer(error, "kingrec-code") == "LIMIT_EXCEEDED"
    assert "ValidateStream" in _details(error)


def test_a_message_of_more_verdicts_than_the_bound_is_refused_and_the_server_goes_on(
    stub: KingrecServiceStub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """4 MiB of empty frames would be a quarter of a million records for the reference to
    judge: a message may ask for MAX_VERDICTS verdicts (made small here: the server is in
    this process), by its records or by the records of a file in it."""
    monkeypatch.setattr("kingrec_service.records.MAX_VERDICTS", 30)
    path = tmp_path / "empties.krec"
    with KrecWriter.open(path) as writer:
        for _ in range(31):
            writer.write(b"")
    file = svc.Record(krec=path.read_bytes(), name="empties.krec")
    few = svc.Record(krec=CLASSIC.SerializeToString())
    calls = [
        lambda: stub.Validate(svc.ValidateRequest(record=file)),
        lambda: list(stub.ValidateStream(iter([svc.ValidateStreamRequest(records=[file])]))),
        lambda: list(stub.ValidateStream(iter([svc.ValidateStreamRequest(records=[few] * 31)]))),
        lambda: list(
            stub.ValidateStream(iter([svc.ValidateStreamRequest(records=[few] * 10 + [file])]))
        ),
    ]
    for call in calls:
        error = _error(call)
        assert _code(error) == grpc.StatusCode.INVALID_ARGUMENT
        assert _trailer(error, "kingrec-code") == "LIMIT_EXCEEDED"
        assert "MAX_VERDICTS" in _details(error)
    answers = list(stub.ValidateStream(iter([svc.ValidateStreamRequest(records=[few] * 30)])))
    assert sum(len(a.verdicts) for a in answers) == 30


def test_a_record_over_kingrecs_bounds_gets_a_limit_report_like_the_cli(
    stub: KingrecServiceStub,
) -> None:
    match = pb.Match()
    match.CopyFrom(CLASSIC)
    match.metadata.event = "x" * 5000
    response = stub.Validate(svc.ValidateRequest(record=svc.Record(match=match)))
    assert [f.code for f in response.report.findings] == ["LIMIT_EXCEEDED"]
    error = _error(lambda: _replay(stub, match))
    assert _code(error) == grpc.StatusCode.INVALID_ARGUMENT
    assert _trailer(error, "kingrec-code") == "LIMIT_EXCEEDED"


def test_bytes_that_are_no_request_message_get_invalid_argument(port: int) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        raw: grpc.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
            "/kingrec.v1.KingrecService/Validate"
        )
        error = _error(lambda: raw(b"\xff\xff\xff\xff"))
    assert _code(error) == grpc.StatusCode.INVALID_ARGUMENT
    assert "ValidateRequest" in _details(error)


def test_a_message_over_the_size_limit_gets_resource_exhausted(stub: KingrecServiceStub) -> None:
    huge = svc.Record(json=" " * MAX_REQUEST_BYTES)
    error = _error(lambda: stub.Validate(svc.ValidateRequest(record=huge)))
    assert _code(error) == grpc.StatusCode.RESOURCE_EXHAUSTED


# -- Replay --------------------------------------------------------------------------------


def test_replay_streams_every_event_numbered_from_match_start_to_match_end(
    stub: KingrecServiceStub,
) -> None:
    events = _replay(stub, CLASSIC)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    kinds = [e.WhichOneof("event") for e in events]
    assert kinds[0] == "match_started" and kinds[-1] == "match_ended"
    assert kinds.count("deal_started") == kinds.count("contract_chosen") == 20
    assert kinds.count("card_played") == sum(len(d.plays) for d in CLASSIC.deals)
    assert list(events[-1].match_ended.totals) == list(CLASSIC.claimed_totals)
    ended = [e.deal_ended for e in events if e.HasField("deal_ended")]
    assert [list(d.scores) for d in ended] == [list(d.claimed_scores) for d in CLASSIC.deals]
    started = events[0].match_started
    assert started.match_id == CLASSIC.match_id and len(started.players) == 4


def test_replay_marks_the_rule_an_illegal_card_broke(stub: KingrecServiceStub) -> None:
    match = _matches("invalid/must-follow-suit.krec")[0]
    broke = [e.card_played for e in _replay(stub, match) if e.card_played.broke]
    assert broke and broke[0].broke == "MUST_FOLLOW_SUIT"
    assert broke[0].deal == 1 and broke[0].trick == 1 and broke[0].legal


def test_replay_from_a_deal_and_trick_keeps_the_numbers_and_the_earlier_tricks(
    stub: KingrecServiceStub,
) -> None:
    full = _replay(stub, CLASSIC)
    late = _replay(stub, CLASSIC, start_deal=3, start_trick=5)
    assert late[0] == full[0]
    by_seq = {e.seq: e for e in full}
    assert all(by_seq[e.seq] == e for e in late)
    deal3 = next(e for e in late if e.HasField("deal_started")).deal_started
    assert deal3.deal == 3 and list(deal3.totals) == list(
        [e for e in full if e.HasField("deal_ended")][1].deal_ended.totals
    )
    cards = [e.card_played for e in late if e.HasField("card_played") and e.card_played.deal == 3]
    assert cards[0].trick == 5 and cards[0].position == 0
    tricks = [e.trick_won.trick for e in late if e.HasField("trick_won") and e.trick_won.deal == 3]
    assert tricks[:4] == [1, 2, 3, 4]
    error = _error(lambda: _replay(stub, CLASSIC, start_deal=21))
    assert _code(error) == grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.parametrize("seat", [0, 1, 2, 3])
def test_replay_in_a_one_seat_view_never_shows_a_card_before_it_is_played(
    stub: KingrecServiceStub, seat: int
) -> None:
    for deal_events in _per_deal(_replay(stub, CLASSIC, seat=seat)):
        started = deal_events[0].deal_started
        own = set(started.hands[seat].cards)
        assert len(own) == 13
        assert all(not h.cards and h.hidden == 13 for s, h in enumerate(started.hands) if s != seat)
        seen = set(own)
        for event in deal_events[1:]:
            if event.HasField("card_played"):
                card = event.card_played
                assert set(card.legal) <= seen, "legal cards of another seat shown"
                seen.add(card.card)
            elif event.HasField("trick_won"):
                assert set(event.trick_won.cards) <= seen


def _per_deal(events: list[svc.MatchEvent]) -> Iterator[list[svc.MatchEvent]]:
    deal: list[svc.MatchEvent] = []
    for event in events:
        if event.HasField("deal_started") and deal:
            yield deal
            deal = []
        if event.HasField("deal_started") or deal:
            deal.append(event)
    yield deal


def test_paced_replay_waits_and_a_deadline_ends_it(stub: KingrecServiceStub) -> None:
    request = svc.ReplayRequest(
        record=svc.Record(match=CLASSIC), pace=svc.Pace(fixed_delay_ms=20), start_deal=20
    )
    started = time.monotonic()
    responses = stub.Replay(request)
    first_cards = []
    for response in responses:
        first_cards += [e for e in response.events if e.HasField("card_played")]
        if len(first_cards) >= 5:
            break
    assert time.monotonic() - started >= 0.08
    responses.cancel()
    slow = svc.ReplayRequest(record=svc.Record(match=CLASSIC), pace=svc.Pace(fixed_delay_ms=500))
    error = _error(lambda: _events_with_timeout(stub, slow, 0.3))
    assert _code(error) == grpc.StatusCode.DEADLINE_EXCEEDED  # the deadline ended it


def _events_with_timeout(
    stub: KingrecServiceStub, request: svc.ReplayRequest, timeout: float
) -> None:
    for _ in stub.Replay(request, timeout=timeout):
        pass


def test_replay_of_a_stored_match_needs_the_store(stub: KingrecServiceStub) -> None:
    error = _error(lambda: _events(stub, svc.ReplayRequest(match_id="classic-0")))
    assert _code(error) == grpc.StatusCode.FAILED_PRECONDITION
    assert _trailer(error, "kingrec-code") == "NO_STORE"
    error = _error(
        lambda: _events(stub, svc.ReplayRequest(seat=7, record=svc.Record(match=CLASSIC)))
    )
    assert _code(error) == grpc.StatusCode.INVALID_ARGUMENT


# -- Publish and Watch ------------------------------------------------------------------------


def _publish(stub: KingrecServiceStub, match: pb.Match, live_id: str) -> svc.PublishResponse:
    return stub.Publish(live_requests(match, FAST, live_id))  # type: ignore[no-any-return]


def _watch(stub: KingrecServiceStub, match_id: str, **options: object) -> list[svc.MatchEvent]:
    request = svc.WatchRequest(match_id=match_id, **options)  # type: ignore[arg-type]
    return [e for response in stub.Watch(request) for e in response.events]


def test_a_published_match_is_watched_exactly_as_its_record_replays(
    stub: KingrecServiceStub,
) -> None:
    response = _publish(stub, CLASSIC, "live-classic")
    assert response.finished and response.match_id == "live-classic"
    watched = _watch(stub, "live-classic")
    replayed = _replay(stub, CLASSIC)
    assert response.events == len(watched) == len(replayed)
    for live, recorded in zip(watched, replayed, strict=True):
        if live.HasField("match_started"):
            live.match_started.match_id = recorded.match_started.match_id
        assert live == recorded
    again = _watch(stub, "live-classic", resume_from=1000)
    assert [e.seq for e in again] == list(range(1001, len(watched) + 1))


def test_the_finished_live_record_is_the_record_that_was_published() -> None:
    match = _matches("valid/abandoned.krec")[0]
    config = ServiceConfig(live=LiveConfig(retention=60))
    with (
        running_server(config) as (server, bound),
        grpc.insecure_channel(f"127.0.0.1:{bound}") as ch,
    ):
        KingrecServiceStub(ch).Publish(live_requests(match, FAST, match.match_id))
        stored = server.hub.matches[match.match_id].match
    assert stored == match


def _start(match: pb.Match, live_id: str) -> svc.PublishRequest:
    request: svc.PublishRequest = next(live_requests(match, FAST, live_id))
    return request


def _deal_start(deal: pb.Deal) -> svc.PublishRequest:
    requests = live_requests(pb.Match(deals=[deal]), FAST, "x")
    next(requests)
    request: svc.PublishRequest = next(requests)
    return request


def test_an_illegal_card_is_refused_with_its_finding_and_the_match_stays_as_it_was(
    stub: KingrecServiceStub,
) -> None:
    deal = CLASSIC.deals[0]
    first_card = svc.PublishRequest(card=svc.LiveCard(card=deal.plays[0]))
    stub.Publish(iter([_start(CLASSIC, "live-refusal"), _deal_start(deal), first_card]))
    before = _snapshot(stub, "live-refusal")
    led, seat = deal.plays[0] // 13, (deal.declarer + 1) % 4
    hand = deal.hands[13 * seat : 13 * seat + 13]
    wrong = next(c for c in hand if c // 13 != led)
    legal = {c for c in hand if c // 13 == led}
    assert legal  # the seat can follow suit, so it must
    error = _error(
        lambda: stub.Publish(
            iter([svc.PublishRequest(resume="live-refusal"),
                  svc.PublishRequest(card=svc.LiveCard(card=wrong, seat=seat))])
        )
    )  # fmt: skip
    assert _code(error) == grpc.StatusCode.FAILED_PRECONDITION
    assert _trailer(error, "kingrec-code") == "MUST_FOLLOW_SUIT"
    finding = svc.Finding.FromString(_trailer(error, "kingrec-finding-bin"))  # type: ignore[arg-type]
    assert finding.code == "MUST_FOLLOW_SUIT" and finding.message == _details(error)
    assert (finding.deal, finding.trick, finding.seat, finding.play) == (1, 1, seat, 1)
    assert set(finding.legal) == legal
    assert set(str(_trailer(error, "kingrec-legal")).split()) == {card_name(c) for c in legal}
    assert "had to follow suit" in _details(error)
    assert _snapshot(stub, "live-refusal") == before
    # the publisher goes on where it was
    response = stub.Publish(
        iter([svc.PublishRequest(resume="live-refusal"),
              svc.PublishRequest(card=svc.LiveCard(card=deal.plays[1], seat=seat))])
    )  # fmt: skip
    assert response.events == len(before) + 1 and not response.finished


def _wrong_declarer(live_id: str) -> list[svc.PublishRequest]:
    """Deal 1 played out, then deal 2 declared by the wrong seat."""
    requests = list(live_requests(CLASSIC, FAST, live_id))
    second = [i for i, r in enumerate(requests) if r.HasField("deal")][1]
    requests[second].deal.declarer = (requests[second].deal.declarer + 1) % 4
    return requests[: second + 1]


def _snapshot(stub: KingrecServiceStub, match_id: str) -> list[svc.MatchEvent]:
    responses = stub.Watch(svc.WatchRequest(match_id=match_id))
    first = next(responses)
    responses.cancel()
    assert first.snapshot
    return list(first.events)


@pytest.mark.parametrize(
    ("steps", "status", "code"),
    [
        (lambda: [svc.PublishRequest(card=svc.LiveCard(card=0))],
         "INVALID_ARGUMENT", "BAD_REQUEST"),
        (lambda: [_start(CLASSIC, "bad-1"), svc.PublishRequest(card=svc.LiveCard(card=0))],
         "FAILED_PRECONDITION", "OUT_OF_ORDER"),
        (lambda: [_start(CLASSIC, "bad-2"), _deal_start(CLASSIC.deals[1])],
         "FAILED_PRECONDITION", "DEAL_NUMBER"),
        (lambda: _wrong_declarer("bad-7"), "FAILED_PRECONDITION", "WRONG_DECLARER"),
        (lambda: [_start(CLASSIC, "bad-3"), _deal_start(CLASSIC.deals[0]),
                  svc.PublishRequest(card=svc.LiveCard(card=CLASSIC.deals[0].plays[0], seat=2))],
         "FAILED_PRECONDITION", "OUT_OF_ORDER"),
        (lambda: [_start(CLASSIC, "bad-4"),
                  svc.PublishRequest(end=svc.LiveEnd(status=pb.MATCH_STATUS_COMPLETE))],
         "FAILED_PRECONDITION", "MATCH_INCOMPLETE"),
        (lambda: [_start(pb.Match(match_id="bad-5", ruleset=CLASSIC.ruleset), "bad-5")],
         "INVALID_ARGUMENT", "BAD_PLAYERS"),
        (lambda: [_start(pb.Match(match_id="bad-6", players=CLASSIC.players), "bad-6")],
         "INVALID_ARGUMENT", "RULESET_INVALID"),
        (lambda: [svc.PublishRequest(resume="no-such-match")], "NOT_FOUND", "MATCH_NOT_FOUND"),
    ],
    ids=["no-start", "card-before-deal", "deal-number", "wrong-declarer", "not-your-turn",
         "complete-too-soon", "bad-players", "no-ruleset", "unknown-match"],
)  # fmt: skip
def test_publish_refuses_events_out_of_order_or_against_the_rules(
    stub: KingrecServiceStub, steps: object, status: str, code: str
) -> None:
    requests = steps()  # type: ignore[operator]
    error = _error(lambda: stub.Publish(iter(requests)))
    assert _code(error) == getattr(grpc.StatusCode, status)
    assert _trailer(error, "kingrec-code") == code
    assert _details(error)


def test_one_publisher_at_a_time_and_no_second_match_with_the_same_id(
    stub: KingrecServiceStub,
) -> None:
    stub.Publish(iter([_start(CLASSIC, "live-busy")]))
    gate = threading.Event()

    def held() -> Iterator[svc.PublishRequest]:
        yield svc.PublishRequest(resume="live-busy")
        gate.wait(5)

    viewer = Viewer(stub, "live-busy")
    holder = stub.Publish.future(held())
    viewer.until(svc.PUBLISHER_PUBLISHING)  # the holder has the match
    try:
        busy = _error(lambda: stub.Publish(iter([svc.PublishRequest(resume="live-busy")])))
        twice = _error(lambda: stub.Publish(iter([_start(CLASSIC, "live-busy")])))
    finally:
        gate.set()
    holder.result()
    stub.Publish(iter([svc.PublishRequest(resume="live-busy"),
                       svc.PublishRequest(end=svc.LiveEnd())]))  # fmt: skip
    viewer.thread.join(30)
    assert _code(busy) == grpc.StatusCode.ABORTED
    assert _code(twice) == grpc.StatusCode.ALREADY_EXISTS


def test_two_viewers_one_never_reading_neither_blocks_the_publisher_or_the_other(
    stub: KingrecServiceStub, port: int
) -> None:
    stub.Publish(iter([_start(CLASSIC, "live-two")]))
    # The idle viewer's connection takes only 1 KiB before its reader must read.
    options = [("grpc.http2.lookahead_bytes", 1024), ("grpc.http2.bdp_probe", 0)]
    with grpc.insecure_channel(f"127.0.0.1:{port}", options=options) as idle_channel:
        idle = KingrecServiceStub(idle_channel).Watch(svc.WatchRequest(match_id="live-two"))
        assert next(idle).snapshot  # then it reads nothing more for now
        received: list[int] = []
        watching = threading.Event()

        def read() -> None:
            for message in stub.Watch(svc.WatchRequest(match_id="live-two")):
                received.extend(e.seq for e in message.events)
                watching.set()  # the snapshot came: this viewer is in

        reader = threading.Thread(target=read)
        reader.start()
        assert watching.wait(10)
        requests = live_requests(CLASSIC, FAST, "live-two")
        next(requests)
        publishing = stub.Publish.future(iter([svc.PublishRequest(resume="live-two"), *requests]))
        response = publishing.result(timeout=30)  # while the idle viewer reads nothing
        reader.join(10)
        assert response.finished
        assert received == list(range(1, response.events + 1))
        # The idle viewer, reading at last: what was buffered, then told it fell behind.
        seen = [1]
        error = _error(lambda: seen.extend(e.seq for r in idle for e in r.events))
    assert _code(error) == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert _trailer(error, "kingrec-code") == "FELL_BEHIND"
    resume_from = int(str(_trailer(error, "kingrec-resume-from")))
    assert seen == list(range(1, resume_from + 1))
    rest = _watch(stub, "live-two", resume_from=resume_from)
    assert seen + [e.seq for e in rest] == list(range(1, response.events + 1))


def test_a_viewer_with_a_delay_sees_each_event_that_long_after_it(stub: KingrecServiceStub) -> None:
    stub.Publish(iter([_start(CLASSIC, "live-delay")]))
    seen: list[tuple[float, int]] = []

    watching = threading.Event()

    def view() -> None:
        for response in stub.Watch(svc.WatchRequest(match_id="live-delay", delay_ms=300)):
            watching.set()  # the snapshot came
            seen.extend((time.monotonic(), e.seq) for e in response.events)
            if any(e.HasField("card_played") for e in response.events):
                return

    viewer = threading.Thread(target=view)
    viewer.start()
    assert watching.wait(30)
    played = time.monotonic()
    stub.Publish(
        iter([svc.PublishRequest(resume="live-delay"), _deal_start(CLASSIC.deals[0]),
              svc.PublishRequest(card=svc.LiveCard(card=CLASSIC.deals[0].plays[0]))])
    )  # fmt: skip
    viewer.join(5)
    card_time = next(t for t, seq in seen if seq == 4)
    assert card_time - played >= 0.28


def test_watching_an_unknown_match_is_not_found_and_live_matches_are_listed(
    stub: KingrecServiceStub,
) -> None:
    error = _error(lambda: _watch(stub, "nobody-plays-this"))
    assert _code(error) == grpc.StatusCode.NOT_FOUND
    stub.Publish(iter([_start(CLASSIC, "live-listed")]))
    listed = stub.ListMatches(svc.ListMatchesRequest(live=True, limit=1000))
    summary = next(m for m in listed.matches if m.match_id == "live-listed")
    assert summary.status == pb.MATCH_STATUS_IN_PROGRESS and len(summary.players) == 4
    error = _error(lambda: stub.ListMatches(svc.ListMatchesRequest()))
    assert _code(error) == grpc.StatusCode.FAILED_PRECONDITION


def test_a_viewer_that_disconnects_resumes_without_gaps_or_repeats(
    stub: KingrecServiceStub,
) -> None:
    stub.Publish(iter([_start(CLASSIC, "live-resume")]))
    requests = live_requests(CLASSIC, FAST, "live-resume")
    next(requests)
    publishing = stub.Publish.future(iter([svc.PublishRequest(resume="live-resume"), *requests]))
    seen: list[int] = []
    first = stub.Watch(svc.WatchRequest(match_id="live-resume"))
    for response in first:
        seen += [e.seq for e in response.events]
        if len(seen) > 100:
            break
    first.cancel()  # the connection is lost
    for response in stub.Watch(svc.WatchRequest(match_id="live-resume", resume_from=seen[-1])):
        assert not response.snapshot
        seen += [e.seq for e in response.events]
    total = publishing.result().events
    assert seen == list(range(1, total + 1))


def test_watching_as_one_seat_shows_its_hand_only(stub: KingrecServiceStub) -> None:
    _publish(stub, CLASSIC, "live-seat")
    watched = _watch(stub, "live-seat", seat=2)
    assert len(watched) == len(_watch(stub, "live-seat"))
    for deal_events in _per_deal(watched):
        hands = deal_events[0].deal_started.hands
        assert [len(h.cards) for h in hands] == [0, 0, 13, 0]
        legal_shown = [e.card_played.seat for e in deal_events if e.card_played.legal]
        assert set(legal_shown) <= {2}


def test_events_published_within_the_flush_reach_a_viewer_together_and_a_lone_one_at_once() -> None:
    """A live match wakes its viewers at most every ``LiveConfig.flush`` seconds: the first
    event after a quiet spell goes out at once; what is published in the flush after it
    travels together, one message per viewer, in order. The clock is the test's, so "at
    once" and "a flush later" are exact: each message is stamped with the clock's time when
    it arrives (a message held for the flush can only arrive once the test moves it on)."""
    clock = ManualClock()
    deal = CLASSIC.deals[0]
    cards = [svc.PublishRequest(card=svc.LiveCard(card=c)) for c in deal.plays[:9]]
    config = ServiceConfig(live=LiveConfig(flush=1.0, clock=clock))
    with (
        running_server(config) as (_, port),
        grpc.insecure_channel(f"127.0.0.1:{port}") as channel,
    ):
        stub = KingrecServiceStub(channel)
        stub.Publish(iter([_start(CLASSIC, "live-flush")]))
        came: queue.Queue[tuple[float, list[int]]] = queue.Queue()

        def view() -> None:
            for response in stub.Watch(svc.WatchRequest(match_id="live-flush")):
                if response.events or response.snapshot:  # not the publisher's comings
                    came.put((clock.time(), [e.seq for e in response.events]))

        viewer = threading.Thread(target=view)
        viewer.start()
        assert came.get(timeout=30) == (0.0, [1])  # the snapshot: match_started
        clock.advance(2.0)  # a quiet spell
        resume = svc.PublishRequest(resume="live-flush")
        stub.Publish(iter([resume, _deal_start(deal), *cards[:8]]))
        assert came.get(timeout=30) == (2.0, [2, 3])  # deal_started, contract_chosen: at once
        clock.advance(1.0)  # the flush: 8 cards, 2 tricks won, together
        assert came.get(timeout=30) == (3.0, list(range(4, 14)))
        clock.advance(2.0)  # a quiet spell again
        stub.Publish(iter([resume, cards[8]]))
        assert came.get(timeout=30) == (5.0, [14])  # the ninth card: at once, alone
        stub.Publish(iter([resume, svc.PublishRequest(end=svc.LiveEnd())]))
        clock.advance(1.0)  # the deal and the match ended within the flush: together
        assert came.get(timeout=30) == (6.0, [15, 16])
        viewer.join(30)
    assert came.empty()


# -- a publisher that goes away ------------------------------------------------------------------


class ManualClock:
    """The hub's clock (``LiveConfig.clock``), moved by the test: flushes and idle timeouts
    fall when the test says, not when the machine gets round to them."""

    def __init__(self) -> None:
        self.now = 0.0
        self._calls: list[
            tuple[float, asyncio.AbstractEventLoop, Callable[[], object], Handle]
        ] = []
        self._lock = threading.Lock()

    def time(self) -> float:
        return self.now

    def call_later(self, delay: float, callback: Callable[[], object], /) -> Handle:
        handle = Handle()
        with self._lock:
            self._calls.append((self.now + delay, asyncio.get_running_loop(), callback, handle))
        return handle

    def advance(self, seconds: float) -> None:
        """Move on; the calls that fall due and were not cancelled run, in the server's loop,
        in the order they fall."""
        with self._lock:
            self.now += seconds
            due = [c for c in self._calls if c[0] <= self.now]
            self._calls = [c for c in self._calls if c[0] > self.now]
        for _, loop, callback, handle in sorted(due, key=lambda c: c[0]):
            if not handle.cancelled:
                loop.call_soon_threadsafe(callback)


class Handle:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Viewer:
    """A Watch in a thread of its own, every message queued as it comes."""

    def __init__(self, stub: KingrecServiceStub, match_id: str) -> None:
        self.messages: queue.Queue[svc.WatchResponse | None] = queue.Queue()
        self.call = stub.Watch(svc.WatchRequest(match_id=match_id))
        self.thread = threading.Thread(target=self._read)
        self.thread.start()

    def _read(self) -> None:
        try:
            for message in self.call:
                self.messages.put(message)
        finally:
            self.messages.put(None)

    def next(self) -> svc.WatchResponse | None:
        return self.messages.get(timeout=30)

    def until(self, publisher: svc.Publisher.ValueType) -> svc.WatchResponse:
        """The next message that says this of the publisher (events before it skipped)."""
        while True:
            message = self.next()
            assert message is not None, "the watch ended"
            if message.publisher == publisher:
                return message


def test_viewers_are_told_when_the_publisher_goes_and_comes_back(stub: KingrecServiceStub) -> None:
    stub.Publish(iter([_start(CLASSIC, "live-presence")]))  # then the publisher goes
    viewer = Viewer(stub, "live-presence")
    first = viewer.next()
    assert first is not None and first.snapshot
    assert first.publisher == svc.PUBLISHER_GONE
    assert 0 < first.abandon_in_ms <= 60_000  # the module's server waits 60 s
    gate = threading.Event()

    def held() -> Iterator[svc.PublishRequest]:
        yield svc.PublishRequest(resume="live-presence", resume_from=1)
        gate.wait(30)

    holder = stub.Publish.future(held())
    back = viewer.until(svc.PUBLISHER_PUBLISHING)
    assert not back.events and not back.snapshot  # nothing else happened: only that
    # one publisher at a time: a second is refused while the first holds the match
    busy = _error(lambda: stub.Publish(iter([svc.PublishRequest(resume="live-presence")])))
    assert _code(busy) == grpc.StatusCode.ABORTED
    gate.set()
    assert not holder.result(timeout=30).finished
    gone = viewer.until(svc.PUBLISHER_GONE)
    assert not gone.events and 0 < gone.abandon_in_ms <= 60_000
    stub.Publish(iter([svc.PublishRequest(resume="live-presence"),
                       svc.PublishRequest(end=svc.LiveEnd())]))  # fmt: skip
    rest: list[svc.WatchResponse] = []
    while (message := viewer.next()) is not None:
        rest.append(message)
    assert rest[-1].events[-1].HasField("match_ended")
    assert rest[-1].publisher == svc.PUBLISHER_UNSPECIFIED  # nothing said once it ended
    viewer.thread.join(30)


def test_a_publisher_resumes_from_the_last_accepted_event_and_is_told_it_when_wrong(
    stub: KingrecServiceStub,
) -> None:
    requests = list(live_requests(CLASSIC, FAST, "live-resumed"))
    first = stub.Publish(iter(requests[:5]))  # start, deal 1, three cards; then the link is lost
    assert first.events == 6 and not first.finished
    for wrong in (0, 5, 7):  # a publisher that knows nothing, one behind, one ahead
        error = _error(
            lambda at=wrong: stub.Publish(
                iter([svc.PublishRequest(resume="live-resumed", resume_from=at), requests[5]])
            )
        )
        assert _code(error) == grpc.StatusCode.FAILED_PRECONDITION
        assert _trailer(error, "kingrec-code") == "OUT_OF_ORDER"
        assert _trailer(error, "kingrec-resume-from") == "6"
        assert "last event is 6" in _details(error)
    # nothing was claimed nor changed: the resume the refusal named goes on from there
    resumed = svc.PublishRequest(resume="live-resumed", resume_from=6)
    done = stub.Publish(iter([resumed, *requests[5:]]))
    assert done.finished
    watched = _watch(stub, "live-resumed")
    assert [e.seq for e in watched] == list(range(1, done.events + 1))
    assert len(watched) == len(_replay(stub, CLASSIC))
    late = _error(lambda: stub.Publish(iter([resumed])))
    assert _trailer(late, "kingrec-code") == "OUT_OF_ORDER" and "over" in _details(late)


def test_resume_from_goes_only_with_a_resume() -> None:
    start = _start(CLASSIC, "x")
    start.resume_from = 1
    with (
        running_server(ServiceConfig()) as (_, port),
        grpc.insecure_channel(f"127.0.0.1:{port}") as channel,
    ):
        stub = KingrecServiceStub(channel)
        error = _error(lambda: stub.Publish(iter([start])))
        assert _trailer(error, "kingrec-code") == "BAD_REQUEST"
        card = svc.PublishRequest(card=svc.LiveCard(card=0), resume_from=1)
        error = _error(lambda: stub.Publish(iter([_start(CLASSIC, "y"), card])))
        assert _trailer(error, "kingrec-code") == "BAD_REQUEST"


def test_a_match_without_a_publisher_is_abandoned_when_its_idle_time_is_up() -> None:
    """The clock is the test's: the match waits 600 s of it, not of the machine's."""
    clock = ManualClock()
    config = ServiceConfig(live=LiveConfig(clock=clock))
    requests = list(live_requests(CLASSIC, FAST, "live-idle"))
    with (
        running_server(config) as (server, port),
        grpc.insecure_channel(f"127.0.0.1:{port}") as channel,
    ):
        stub = KingrecServiceStub(channel)
        stub.Publish(iter(requests[:3]))  # start, deal 1, a card; then the publisher vanishes
        viewer = Viewer(stub, "live-idle")
        told = viewer.next()
        assert told is not None and told.publisher == svc.PUBLISHER_GONE
        assert told.abandon_in_ms == 600_000
        again = _error(lambda: stub.Publish(iter(requests[:1])))
        assert _code(again) == grpc.StatusCode.ALREADY_EXISTS
        assert "waiting for its publisher" in _details(again)
        assert "kingrec publish --resume" in _details(again)
        clock.advance(599)
        # a publisher that came back and went again: the first timeout is off, a new one on
        stub.Publish(iter([svc.PublishRequest(resume="live-idle", resume_from=4)]))
        clock.advance(1)  # 600 s after it first went: nothing happens (and a flush falls)
        back_and_gone = viewer.until(svc.PUBLISHER_GONE)  # told with that flush
        assert back_and_gone.abandon_in_ms == 599_000
        listed = stub.ListMatches(svc.ListMatchesRequest(live=True)).matches
        assert [m.status for m in listed] == [pb.MATCH_STATUS_IN_PROGRESS]
        clock.advance(599)  # 600 s after it went again: abandoned
        ended: list[svc.MatchEvent] = []
        while not ended:  # the deal in progress ends at once; the match_ended after it
            message = viewer.next()
            assert message is not None
            ended += message.events
        assert [e.WhichOneof("event") for e in ended] == ["deal_ended"]
        clock.advance(1)  # within the flush after it
        while (message := viewer.next()) is not None:
            ended += message.events
        assert ended[-1].match_ended.status == pb.MATCH_STATUS_ABANDONED
        assert ended[-1].match_ended.reason == "no publisher for 600 s"
        assert server.hub.matches["live-idle"].finished
