"""The gRPC service against a real server on a free port, in this process (its own thread and
event loop), called through the generated stubs like any client."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
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
from kingrec_service import MAX_REQUEST_BYTES, ServiceConfig, running_server
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
        assert response.report_json == json.dumps(line, ensure_ascii=False)
        report = response.report
        assert report.valid == line["valid"] and report.deals == line["deals"]
        assert [f.code for f in report.findings] == [f["code"] for f in line["findings"]]
        for finding, want in zip(report.findings, line["findings"], strict=True):
            assert finding.message == want["message"]
            legal = [card_name(c) for c in finding.legal] if finding.HasField("legal") else None
            assert legal == want.get("legal")
            assert (finding.deal if finding.HasField("deal") else None) == want.get("deal")


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
        (svc.Record(krec=(SAMPLES / "valid" / "classic.krec").read_bytes()), "BAD_REQUEST"),
    ],
    ids=["empty", "garbage", "newer-krec", "json-type", "json-syntax", "json-array", "text",
         "two-records"],
)  # fmt: skip
def test_validate_refuses_what_is_not_one_record_with_invalid_argument_and_its_code(
    stub: KingrecServiceStub, record: svc.Record, code: str
) -> None:
    error = _error(lambda: stub.Validate(svc.ValidateRequest(record=record)))
    assert _code(error) == grpc.StatusCode.INVALID_ARGUMENT
    assert _trailer(error, "kingrec-code") == code
    assert _details(error)


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

    holder = stub.Publish.future(held())
    time.sleep(0.2)
    try:
        busy = _error(lambda: stub.Publish(iter([svc.PublishRequest(resume="live-busy")])))
        twice = _error(lambda: stub.Publish(iter([_start(CLASSIC, "live-busy")])))
    finally:
        gate.set()
    holder.result()
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
        received: list[svc.MatchEvent] = []
        reader = threading.Thread(target=lambda: received.extend(_watch(stub, "live-two")))
        reader.start()
        time.sleep(0.2)
        started = time.monotonic()
        requests = live_requests(CLASSIC, FAST, "live-two")
        next(requests)
        response = stub.Publish(iter([svc.PublishRequest(resume="live-two"), *requests]))
        publish_time = time.monotonic() - started
        reader.join(10)
        assert response.finished and publish_time < 5
        assert [e.seq for e in received] == list(range(1, response.events + 1))
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

    def view() -> None:
        for response in stub.Watch(svc.WatchRequest(match_id="live-delay", delay_ms=300)):
            seen.extend((time.monotonic(), e.seq) for e in response.events)
            if any(e.HasField("card_played") for e in response.events):
                return

    viewer = threading.Thread(target=view)
    viewer.start()
    time.sleep(0.1)
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
    travels together, one message per viewer, in order."""
    flush = 1.0
    deal = CLASSIC.deals[0]
    cards = [svc.PublishRequest(card=svc.LiveCard(card=c)) for c in deal.plays[:9]]
    with (
        running_server(ServiceConfig(live=LiveConfig(flush=flush))) as (_, port),
        grpc.insecure_channel(f"127.0.0.1:{port}") as channel,
    ):
        stub = KingrecServiceStub(channel)
        stub.Publish(iter([_start(CLASSIC, "live-flush")]))
        came: list[tuple[float, list[int]]] = []

        def view() -> None:
            for response in stub.Watch(svc.WatchRequest(match_id="live-flush")):
                came.append((time.monotonic(), [e.seq for e in response.events]))

        viewer = threading.Thread(target=view)
        viewer.start()
        time.sleep(flush + 0.2)  # a quiet spell
        published = time.monotonic()
        resume = svc.PublishRequest(resume="live-flush")
        stub.Publish(iter([resume, _deal_start(deal), *cards[:8]]))
        time.sleep(2 * flush + 0.2)  # the flush came; then a quiet spell again
        stub.Publish(iter([resume, cards[8]]))
        time.sleep(0.5)
        stub.Publish(iter([resume, svc.PublishRequest(end=svc.LiveEnd())]))
        viewer.join(10)
    snapshot, start, cards_and_tricks, lone, end = came
    assert snapshot[1] == [1]  # match_started
    assert start[1] == [2, 3]  # deal_started, contract_chosen: at once
    assert start[0] - published < flush
    assert cards_and_tricks[1] == list(range(4, 14))  # 8 cards, 2 tricks won: together
    assert cards_and_tricks[0] - start[0] >= flush * 0.9
    assert lone[1] == [14]  # the ninth card, after a quiet spell: alone
    assert end[1] == [15, 16]  # the deal and the match ended, within the flush: together
    assert end[0] - lone[0] >= flush * 0.9
