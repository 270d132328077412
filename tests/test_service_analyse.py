"""The Analyse RPC against a real server on a free port, with a client from the generated
stubs: a record's bytes or a stored match in, each deal's par and card costs out, the same
as the library gives; the work of a call bounded before any search runs."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest

from kingrec.analysis.batch import DealTask, analyse_deal
from kingrec.analysis.review import DealReview
from kingrec.boundary import ruleset_from_proto
from kingrec.rules import preset
from kingrec.simulate import simulate_match
from kingrec.v1 import record_pb2 as pb
from kingrec.v1 import service_pb2 as svc
from kingrec_service import ServiceConfig, running_server
from kingrec_service._pb.service_pb2_grpc import KingrecServiceStub
from kingrec_service.analysing import MAX_DEALS

TOKEN = "up-token"
AUTH = (("authorization", f"Bearer {TOKEN}"),)
MATCH = simulate_match(preset("classic"), 5)
# From trick 10 a deal solves in milliseconds; the most a deal may have, so a loaded machine
# never makes it unsolved (two deals of it are the most a call may ask).
ROOM_MS = 10_000


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KingrecServiceStub]:
    db = tmp_path_factory.mktemp("analyse") / "served.duckdb"
    with running_server(ServiceConfig(db=str(db), token=TOKEN)) as (_, port):
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        client = KingrecServiceStub(channel)
        upload = svc.UploadRequest(records=[svc.Record(match=MATCH)], source="test")
        answers = list(client.Upload(iter([upload]), metadata=AUTH))
        assert answers[-1].summary.stored == 1
        yield client
        channel.close()


def _status(call: object) -> tuple[grpc.StatusCode, str, str]:
    with pytest.raises(grpc.RpcError) as caught:
        assert callable(call)
        call()
    error = caught.value
    assert isinstance(error, grpc.Call)
    code = dict(error.trailing_metadata() or ()).get("kingrec-code", "")
    return error.code(), str(code), error.details() or ""


def _library(number: int, from_play: int) -> DealReview:
    task = DealTask(
        MATCH.deals[number - 1].SerializeToString(),
        ruleset_from_proto(MATCH.ruleset),
        number,
        from_play=from_play,
    )
    result = analyse_deal(task)
    assert isinstance(result, DealReview)
    return result


def test_analyse_gives_each_seats_par_and_each_plays_cost_as_the_library_does(
    stub: KingrecServiceStub,
) -> None:
    by_record = svc.AnalyseRequest(
        record=svc.Record(krec=MATCH.SerializeToString()),
        deals=[3, 1],
        from_trick=10,
        budget_ms=ROOM_MS,
    )
    by_id = svc.AnalyseRequest(
        match_id=MATCH.match_id, deals=[3, 1], from_trick=10, budget_ms=ROOM_MS
    )
    answers = [stub.Analyse(by_record), stub.Analyse(by_id)]
    for answer in answers:
        assert [d.deal for d in answer.deals] == [3, 1]
        for deal in answer.deals:
            want = _library(deal.deal, 36)
            assert deal.solved and deal.costs_solved
            assert deal.contract == want.par.contract
            assert deal.from_play == want.par.at_play
            assert [(s.seat, s.par, s.actual, s.par_points) for s in deal.seats] == [
                (s.seat, s.par, s.actual, s.par_points) for s in want.par.seats
            ]
            assert [
                (p.play, p.seat, p.card, p.cost_units, p.cost_points, list(p.best))
                for p in deal.plays
            ] == [(c.play, c.seat, c.card, c.cost, c.cost_points, list(c.best)) for c in want.plays]


def test_a_deal_past_its_budget_is_answered_unsolved_with_no_par(
    stub: KingrecServiceStub,
) -> None:
    answer = stub.Analyse(
        svc.AnalyseRequest(match_id=MATCH.match_id, deals=[1], seats=[2], budget_nodes=1)
    )
    (deal,) = answer.deals
    assert not deal.solved and not deal.costs_solved and not deal.plays
    assert [s.seat for s in deal.seats] == [2]
    assert not deal.seats[0].HasField("par") and deal.seats[0].HasField("actual")


def test_a_call_asking_for_too_much_search_is_refused_before_any_runs(
    stub: KingrecServiceStub,
) -> None:
    many = pb.Match()
    many.CopyFrom(MATCH)
    while len(many.deals) <= MAX_DEALS:
        many.deals.add().CopyFrom(MATCH.deals[0])
    too_many = svc.AnalyseRequest(record=svc.Record(match=many), par_only=True, budget_ms=1)
    code, kingrec_code, details = _status(lambda: stub.Analyse(too_many))
    assert (code, kingrec_code) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "LIMIT_EXCEEDED")
    assert f"at most {MAX_DEALS}" in details
    big_budget = svc.AnalyseRequest(match_id=MATCH.match_id, deals=[1], budget_ms=10_001)
    code, kingrec_code, _ = _status(lambda: stub.Analyse(big_budget))
    assert (code, kingrec_code) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "LIMIT_EXCEEDED")
    whole_call = svc.AnalyseRequest(match_id=MATCH.match_id, deals=range(1, 12), budget_ms=2000)
    code, _, details = _status(lambda: stub.Analyse(whole_call))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "one call may search" in details


def test_bad_analyse_requests_get_a_clear_status_and_the_server_goes_on(
    stub: KingrecServiceStub,
) -> None:
    cases = [
        (svc.AnalyseRequest(), grpc.StatusCode.INVALID_ARGUMENT, "say what to analyse"),
        (svc.AnalyseRequest(match_id="nope"), grpc.StatusCode.NOT_FOUND, "no match 'nope'"),
        (
            svc.AnalyseRequest(match_id=MATCH.match_id, deals=[99]),
            grpc.StatusCode.INVALID_ARGUMENT,
            "deal 99 is not in the match",
        ),
        (
            svc.AnalyseRequest(match_id=MATCH.match_id, deals=[1], seats=[4]),
            grpc.StatusCode.INVALID_ARGUMENT,
            "seat 4 is not a seat",
        ),
        (
            svc.AnalyseRequest(record=svc.Record(krec=b"\x00garbage")),
            grpc.StatusCode.INVALID_ARGUMENT,
            "",
        ),
    ]
    for request, want, words in cases:
        code, _, details = _status(lambda r=request: stub.Analyse(r))
        assert code == want and words in details, (request, details)
    answer = stub.Analyse(
        svc.AnalyseRequest(match_id=MATCH.match_id, deals=[2], from_trick=13, budget_ms=ROOM_MS)
    )
    assert answer.deals[0].solved


def test_a_server_without_a_store_analyses_records_but_not_stored_ids() -> None:
    with (
        running_server(ServiceConfig()) as (_, port),
        grpc.insecure_channel(f"127.0.0.1:{port}") as channel,
    ):
        client = KingrecServiceStub(channel)
        record = svc.Record(match=MATCH)
        answer = client.Analyse(
            svc.AnalyseRequest(record=record, deals=[4], from_trick=12, budget_ms=ROOM_MS)
        )
        assert answer.deals[0].solved
        code, _, _ = _status(lambda: client.Analyse(svc.AnalyseRequest(match_id=MATCH.match_id)))
        assert code == grpc.StatusCode.FAILED_PRECONDITION
