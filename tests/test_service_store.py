"""The service on a store: Upload, Query, ListMatches, GetMatch, Replay of a stored match and
the storing of a finished live match, against a real server on a free port in this process,
over a real DuckDB file (opened afterwards, as anyone would, to check what it holds)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kingrec.jsonl import dumps_match
from kingrec.records import read_records
from kingrec.rules import preset
from kingrec.simulate import simulate_match
from kingrec.store import Store
from kingrec.v1 import record_pb2 as pb
from kingrec.v1 import service_pb2 as svc
from kingrec_cli.publish import live_requests
from kingrec_service import ServiceConfig, running_server
from kingrec_service._pb.service_pb2_grpc import KingrecServiceStub
from kingrec_service.querying import CHUNK_BYTES
from kingrec_service.storage import QueryLimits

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
TOKEN = "up-token"
AUTH = (("authorization", f"Bearer {TOKEN}"),)
V = svc.StoreVerdict


def _matches(name: str) -> list[pb.Match]:
    return [r.match for r in read_records(str(SAMPLES / name)) if hasattr(r, "match")]


VALID = [m for path in sorted((SAMPLES / "valid").glob("*.krec")) for m in _matches(str(path))]
INVALID = _matches("invalid/must-follow-suit.krec")


class Served:
    def __init__(self, port: int, db: Path) -> None:
        self.port = port
        self.db = db
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.stub = KingrecServiceStub(self.channel)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    db = tmp_path_factory.mktemp("store") / "served.duckdb"
    config = ServiceConfig(db=str(db), token=TOKEN, query=QueryLimits(timeout_s=3))
    with running_server(config) as (_, port):
        served = Served(port, db)
        # Every sample, once, and an invalid record: what the tests below read.
        upload(served.stub, [svc.Record(match=m) for m in VALID + INVALID], "samples")
        yield served
        served.channel.close()


def upload(
    stub: KingrecServiceStub, records: list[svc.Record], source: str, per_message: int = 0
) -> tuple[list[list[svc.StoreVerdict]], svc.UploadSummary]:
    size = per_message or max(len(records), 1)
    requests = [
        svc.UploadRequest(records=records[i : i + size], source=source)
        for i in range(0, len(records), size)
    ]
    answers = list(stub.Upload(iter(requests), metadata=AUTH))
    assert answers[-1].HasField("summary") and not answers[-1].verdicts
    return [list(a.verdicts) for a in answers[:-1]], answers[-1].summary


def _error(call: object) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        if callable(call):
            call()
    return caught.value


def _status(error: grpc.RpcError) -> tuple[grpc.StatusCode, str, str]:
    assert isinstance(error, grpc.Call)
    code = dict(error.trailing_metadata() or ()).get("kingrec-code", "")
    return error.code(), str(code), error.details() or ""


def _rows(stub: KingrecServiceStub, sql: str, **options: object) -> list[dict[str, object]]:
    request = svc.QueryRequest(sql=sql, **options)  # type: ignore[arg-type]
    rows: list[dict[str, object]] = []
    for response in stub.Query(request):
        if response.arrow:
            rows += pa.ipc.open_stream(response.arrow).read_all().to_pylist()
    return rows


# -- Upload ----------------------------------------------------------------------------------


def test_upload_gives_a_verdict_per_record_in_order_and_a_summary(served: Served) -> None:
    fresh = [simulate_match(preset("classic"), 9000 + i) for i in range(3)]
    fresh[1].match_id = "upload-json"
    records = [
        svc.Record(match=fresh[0]),
        svc.Record(json=dumps_match(fresh[1])),
        svc.Record(krec=fresh[2].SerializeToString()),
        svc.Record(match=VALID[0]),  # stored by the fixture already
        svc.Record(json="{not json"),
        svc.Record(krec=b"\x00\xffgarbage"),
        svc.Record(),
    ]
    (verdicts,), summary = upload(served.stub, records, "mixed")
    assert [v.status for v in verdicts] == [
        V.STATUS_STORED, V.STATUS_STORED, V.STATUS_STORED, V.STATUS_DUPLICATE,
        V.STATUS_REJECTED, V.STATUS_REJECTED, V.STATUS_REJECTED,
    ]  # fmt: skip
    assert [v.match_id for v in verdicts[:3]] == [m.match_id for m in fresh]
    assert all(v.report.valid for v in verdicts[:3])
    assert "JSON_INVALID" in verdicts[4].message and verdicts[6].message
    assert (summary.records, summary.stored, summary.duplicates, summary.rejected) == (7, 3, 1, 3)
    again, summary = upload(served.stub, records[:3], "mixed")
    assert [v.status for v in again[0]] == [V.STATUS_DUPLICATE] * 3 and summary.duplicates == 3


def test_an_invalid_record_is_stored_with_its_findings(served: Served) -> None:
    rows = _rows(
        served.stub,
        "SELECT m.valid, f.code FROM matches m JOIN findings f USING (match_key) "
        f"WHERE m.match_id = '{INVALID[0].match_id}' ORDER BY f.n",
    )
    assert rows and all(r["valid"] is False for r in rows)
    assert rows[0]["code"] == "MUST_FOLLOW_SUIT"


def test_each_message_of_a_stream_is_answered_on_its_own_whatever_the_transactions(
    served: Served,
) -> None:
    """Many small messages, taken into shared transactions: still one answer per message,
    with its own records' verdicts, in order."""
    matches = [simulate_match(preset("short"), 7000 + i) for i in range(60)]
    records = [svc.Record(match=m) for m in matches]
    answers, summary = upload(served.stub, records, "small-messages", per_message=7)
    assert [len(a) for a in answers] == [7] * 8 + [4]
    assert [v.match_id for a in answers for v in a] == [m.match_id for m in matches]
    assert summary.stored == 60
    count = _rows(served.stub, "SELECT count(*) AS n FROM matches WHERE source = 'small-messages'")
    assert count == [{"n": 60}]


def test_upload_needs_the_token_and_query_does_not(served: Served) -> None:
    request = svc.UploadRequest(records=[svc.Record(match=VALID[0])])
    for metadata in [(), (("authorization", "Bearer nope"),)]:
        error = _error(lambda m=metadata: list(served.stub.Upload(iter([request]), metadata=m)))
        assert _status(error)[0] == grpc.StatusCode.UNAUTHENTICATED
    assert _rows(served.stub, "SELECT 1 AS one") == [{"one": 1}]


# -- Query -----------------------------------------------------------------------------------


def test_query_streams_rows_in_chunks_with_column_names_and_types(served: Served) -> None:
    sql = "SELECT match_key, card, seat FROM plays ORDER BY match_key, deal, play"
    responses = list(served.stub.Query(svc.QueryRequest(sql=sql)))
    assert (responses[0].columns[0].name, responses[0].columns[0].type) == ("match_key", "UBIGINT")
    assert [c.name for c in responses[0].columns] == ["match_key", "card", "seat"]
    assert all(not r.columns for r in responses[1:])
    assert all(len(r.SerializeToString()) < 4 << 20 for r in responses)
    table = pa.concat_tables(pa.ipc.open_stream(r.arrow).read_all() for r in responses if r.arrow)
    total = int(str(_rows(served.stub, "SELECT count(*) AS n FROM plays")[0]["n"]))
    assert table.num_rows == total > 10_000  # more than one Arrow batch
    assert not responses[-1].truncated
    as_json = served.stub.Query(
        svc.QueryRequest(sql=sql + " LIMIT 50000", format=svc.QueryRequest.FORMAT_JSON)
    )
    lines = [line for r in as_json for line in r.json.splitlines()]
    assert len(lines) == min(total, 50_000) and lines[0].startswith('{"match_key": ')


def test_query_results_are_cut_at_the_row_and_byte_limits_and_say_so(served: Served) -> None:
    cut = list(served.stub.Query(svc.QueryRequest(sql="SELECT * FROM range(1000)", max_rows=10)))
    assert sum(pa.ipc.open_stream(r.arrow).read_all().num_rows for r in cut if r.arrow) == 10
    assert cut[-1].truncated
    big = svc.QueryRequest(
        sql="SELECT repeat('x', 1000) AS s FROM range(100000)", max_bytes=1 << 20
    )
    responses = list(served.stub.Query(big))
    assert responses[-1].truncated
    assert sum(len(r.arrow) for r in responses) < 2 * CHUNK_BYTES + (1 << 20)
    empty = list(served.stub.Query(svc.QueryRequest(sql="SELECT 1 AS x WHERE false")))
    assert [c.name for c in empty[0].columns] == ["x"] and not empty[-1].truncated


@pytest.mark.parametrize(
    ("sql", "code"),
    [
        ("SELECT * FROM read_csv('{csv}')", "QUERY_REFUSED"),
        ("SELECT * FROM read_parquet('{parquet}')", "QUERY_REFUSED"),
        ("SELECT * FROM '{parquet}'", "QUERY_REFUSED"),
        ("ATTACH '{dir}/other.duckdb' AS other", "QUERY_REFUSED"),
        ("COPY matches TO '{dir}/out.csv'", "QUERY_REFUSED"),
        ("COPY (SELECT 1) TO '{dir}/out.parquet' (FORMAT parquet)", "QUERY_REFUSED"),
        ("SET enable_external_access = true", "QUERY_REFUSED"),
        ("SET lock_configuration = false", "QUERY_REFUSED"),
        ("INSTALL httpfs", "QUERY_REFUSED"),
        ("LOAD httpfs", "QUERY_REFUSED"),
        ("PRAGMA database_list", "QUERY_REFUSED"),
        ("SELECT 1; SELECT 2", "QUERY_REFUSED"),
        ("CREATE TABLE t (x INT)", "QUERY_REFUSED"),
        ("DELETE FROM matches", "QUERY_REFUSED"),
        ("DROP TABLE matches", "QUERY_REFUSED"),
        ("CHECKPOINT", "QUERY_REFUSED"),
        ("SELECT FROM WHERE", "QUERY_INVALID"),
        ("SELECT * FROM no_such_table", "QUERY_INVALID"),
        ("", "QUERY_REFUSED"),
    ],
)
def test_hostile_sql_is_refused_with_a_clear_status_and_nothing_changes(
    served: Served, tmp_path: Path, sql: str, code: str
) -> None:
    (tmp_path / "secret.csv").write_text("secret\nhunter2\n")
    pq.write_table(pa.table({"secret": ["hunter2"]}), tmp_path / "secret.parquet")
    text = sql.format(
        csv=tmp_path / "secret.csv", parquet=tmp_path / "secret.parquet", dir=tmp_path
    )
    before = _rows(served.stub, "SELECT count(*) AS n FROM matches")
    status, got, details = _status(
        _error(lambda: list(served.stub.Query(svc.QueryRequest(sql=text))))
    )
    wanted = (
        grpc.StatusCode.INVALID_ARGUMENT
        if code == "QUERY_INVALID"
        else (grpc.StatusCode.PERMISSION_DENIED)
    )
    assert (status, got) == (wanted, code), details
    assert details and "hunter2" not in details and "Traceback" not in details
    assert sorted(p.name for p in tmp_path.iterdir()) == ["secret.csv", "secret.parquet"]
    assert _rows(served.stub, "SELECT count(*) AS n FROM matches") == before


def test_a_query_that_never_ends_is_stopped_at_the_time_limit(served: Served) -> None:
    never = svc.QueryRequest(sql="SELECT count(*) FROM range(1e15::BIGINT)")
    # The client waits 60 s: only the server's 3 s limit can end the call as QUERY_LIMIT.
    status, code, details = _status(_error(lambda: list(served.stub.Query(never, timeout=60))))
    assert (status, code) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "QUERY_LIMIT")
    assert "time limit of 3 s" in details
    # A client's deadline before the server's limit: DEADLINE_EXCEEDED, whichever side
    # notices first (the server ends such a query as DEADLINE_EXCEEDED too).
    short = _error(lambda: list(served.stub.Query(never, timeout=0.5)))
    assert _status(short)[0] == grpc.StatusCode.DEADLINE_EXCEEDED
    assert _rows(served.stub, "SELECT 2 AS two") == [{"two": 2}]  # the server goes on


# -- ListMatches, GetMatch, Replay -----------------------------------------------------------


def _list(stub: KingrecServiceStub, **filters: object) -> list[svc.MatchSummary]:
    out: list[svc.MatchSummary] = []
    token = ""
    while True:
        page = stub.ListMatches(
            svc.ListMatchesRequest(page_token=token, **filters)  # type: ignore[arg-type]
        )
        out += page.matches
        token = page.next_page_token
        if not token:
            return out


def test_list_matches_filters_and_pages(served: Served) -> None:
    everything = _list(served.stub, limit=4)
    samples = [m for m in everything if m.source == "samples"]
    assert [m.match_id for m in samples] == [m.match_id for m in VALID + INVALID]
    first = samples[0]
    assert [p.name for p in first.players] == [p.name for p in VALID[0].players]
    assert first.deals == len(VALID[0].deals) and first.valid and len(first.totals) == 4
    for summary, match in zip(samples, VALID + INVALID, strict=True):  # when each started
        assert summary.HasField("start_time") == match.metadata.HasField("start_time")
        assert summary.start_time == match.metadata.start_time
    assert any(m.HasField("start_time") for m in samples)
    invalid = _list(served.stub, valid=False)
    assert INVALID[0].match_id in {m.match_id for m in invalid}
    assert all(not m.valid for m in invalid)
    short = _list(served.stub, preset="short", limit=5)
    assert short and all(m.preset == "short" for m in short)
    name = VALID[0].players[2].name
    assert all(name in [p.name for p in m.players] for m in _list(served.stub, player=name))
    abandoned = _list(served.stub, status=pb.MATCH_STATUS_ABANDONED)
    assert abandoned and all(m.status == pb.MATCH_STATUS_ABANDONED for m in abandoned)
    error = _error(lambda: served.stub.ListMatches(svc.ListMatchesRequest(page_token="zz")))
    assert _status(error)[:2] == (grpc.StatusCode.INVALID_ARGUMENT, "BAD_REQUEST")


def test_get_match_gives_the_record_as_stored(served: Served) -> None:
    for match in (VALID[0], INVALID[0]):
        got = served.stub.GetMatch(svc.GetMatchRequest(match_id=match.match_id)).match
        assert got.SerializeToString(deterministic=True) == match.SerializeToString(
            deterministic=True
        )
    error = _error(lambda: served.stub.GetMatch(svc.GetMatchRequest(match_id="no-such")))
    assert _status(error)[:2] == (grpc.StatusCode.NOT_FOUND, "MATCH_NOT_FOUND")


def test_replay_of_a_stored_match_is_the_replay_of_its_record(served: Served) -> None:
    match = INVALID[0]
    by_id = svc.ReplayRequest(match_id=match.match_id, seat=1, start_trick=2)
    inline = svc.ReplayRequest(record=svc.Record(match=match), seat=1, start_trick=2)
    events = [e for r in served.stub.Replay(by_id) for e in r.events]
    assert events == [e for r in served.stub.Replay(inline) for e in r.events]
    assert any(e.card_played.broke == "MUST_FOLLOW_SUIT" for e in events)
    error = _error(lambda: list(served.stub.Replay(svc.ReplayRequest(match_id="no-such"))))
    assert _status(error)[:2] == (grpc.StatusCode.NOT_FOUND, "MATCH_NOT_FOUND")


def test_a_finished_live_match_is_stored_exactly_as_an_upload_of_it(served: Served) -> None:
    recorded = simulate_match(preset("classic"), 4242)
    live_id = "live-stored"
    response = served.stub.Publish(live_requests(recorded, svc.Pace(), live_id), metadata=AUTH)
    assert response.finished and response.stored.status == V.STATUS_STORED
    assert response.stored.match_id == live_id and response.stored.report.valid
    stored = served.stub.GetMatch(svc.GetMatchRequest(match_id=live_id)).match
    assert list(stored.deals) == list(recorded.deals) and stored.status == recorded.status
    (verdicts,), _ = upload(served.stub, [svc.Record(match=stored)], "again")
    assert [v.status for v in verdicts] == [V.STATUS_DUPLICATE]  # the very same bytes
    rows = _rows(served.stub, f"SELECT source FROM matches WHERE match_id = '{live_id}'")
    assert rows == [{"source": "live"}]


# -- the file ----------------------------------------------------------------------------------


def test_the_store_file_holds_what_was_acknowledged_once_the_server_stops(tmp_path: Path) -> None:
    db = tmp_path / "stopped.duckdb"
    matches = [simulate_match(preset("short"), 100 + i) for i in range(40)]
    with (
        running_server(ServiceConfig(db=str(db))) as (_, port),
        grpc.insecure_channel(f"127.0.0.1:{port}") as channel,
    ):
        stub = KingrecServiceStub(channel)
        _, summary = upload(stub, [svc.Record(match=m) for m in matches], "f", 5)
    assert summary.stored == 40
    with Store.open(str(db), read_only=True) as store:
        rows = store.con.execute(
            "SELECT count(*), count(DISTINCT content_hash), sum(deals) FROM matches"
        ).fetchall()
        assert rows == [(40, 40, sum(len(m.deals) for m in matches))]
        assert store.count("records") == 40


def test_a_server_without_a_store_refuses_the_store_calls(tmp_path: Path) -> None:
    with (
        running_server(ServiceConfig()) as (_, port),
        grpc.insecure_channel(f"127.0.0.1:{port}") as channel,
    ):
        stub = KingrecServiceStub(channel)
        for call in (
            lambda: list(stub.Query(svc.QueryRequest(sql="SELECT 1"))),
            lambda: stub.GetMatch(svc.GetMatchRequest(match_id="x")),
            lambda: list(stub.Upload(iter([svc.UploadRequest()]))),
        ):
            status = _status(_error(call))
            assert status[:2] == (grpc.StatusCode.FAILED_PRECONDITION, "NO_STORE")


def test_stopping_the_server_answers_what_an_upload_sent_then_ends_it_unavailable(
    tmp_path: Path,
) -> None:
    db = tmp_path / "stopping.duckdb"
    matches = [simulate_match(preset("short"), 300 + i) for i in range(20)]
    answered = threading.Event()
    stopped = threading.Event()
    outcome: dict[str, object] = {"answers": []}

    def requests() -> Iterator[svc.UploadRequest]:
        for i in range(0, 20, 10):
            yield svc.UploadRequest(records=[svc.Record(match=m) for m in matches[i : i + 10]])
        answered.wait(30)
        stopped.wait(60)  # a client that would go on, later: the server stops first

    def client(port: int) -> None:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            try:
                for answer in KingrecServiceStub(channel).Upload(requests()):
                    outcome["answers"].append(answer)  # type: ignore[attr-defined]
                    if len(outcome["answers"]) == 2:  # type: ignore[arg-type]
                        answered.set()
            except grpc.RpcError as exc:
                outcome["error"] = exc

    with running_server(ServiceConfig(db=str(db), grace=5)) as (_, port):
        thread = threading.Thread(target=client, args=(port,))
        thread.start()
        assert answered.wait(30)
    stopped.set()
    thread.join(30)
    answers = outcome["answers"]
    assert isinstance(answers, list) and [len(a.verdicts) for a in answers] == [10, 10]
    error = outcome["error"]
    assert isinstance(error, grpc.RpcError)
    assert _status(error)[:2] == (grpc.StatusCode.UNAVAILABLE, "SHUTTING_DOWN")
    with Store.open(str(db), read_only=True) as store:
        assert store.count("matches") == 20
