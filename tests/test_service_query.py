"""The store's Query edge as an attacker meets it: statements that would change the store
(refused, the file byte for byte unchanged), queries that would read the server's
configuration, slow queries that would starve the other reads, rows too large for a
message, a SIGTERM during a query; against ``kingrec serve`` on a real port or a server
in this process, with the client generated from service.proto."""

from __future__ import annotations

import hashlib
import json
import signal
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pyarrow as pa
import pytest

from kingrec.rules import preset
from kingrec.simulate import simulate_match
from kingrec.v1 import service_pb2 as svc
from kingrec_service import ServiceConfig, running_server
from kingrec_service._pb.service_pb2_grpc import KingrecServiceStub
from kingrec_service.storage import QueryLimits

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
KINGREC = Path(sys.executable).parent / "kingrec"

# Statements that would change the store if they ran: DELETE, UPDATE and INSERT in CTEs
# (plain, nested, in subqueries, with comments and odd casing), in query()/table functions,
# a schema version forged, the file checkpointed, EXPLAIN ANALYZE / SUMMARIZE that execute.
WRITES = [
    "WITH d AS (DELETE FROM matches WHERE match_key <= 3 RETURNING 1) SELECT count(*) FROM d",
    "WITH u AS (UPDATE matches SET valid = NOT valid RETURNING 1) SELECT count(*) FROM u",
    "WITH i AS (INSERT INTO cards SELECT * FROM cards RETURNING 1) SELECT count(*) FROM i",
    "WITH u AS (UPDATE kingrec_meta SET value = '999' WHERE key = 'schema_version' "
    "RETURNING 1) SELECT * FROM u",
    "WITH d AS MATERIALIZED (DELETE FROM deals RETURNING *) SELECT 1",
    "SELECT * FROM (WITH d AS (DELETE FROM deals RETURNING 1) SELECT * FROM d)",
    "SELECT 1 WHERE EXISTS (WITH d AS (DELETE FROM plays RETURNING 1) SELECT * FROM d)",
    "SELECT (WITH d AS (DELETE FROM players RETURNING 1) SELECT count(*) FROM d) AS n",
    "SELECT 1 AS x UNION ALL (WITH d AS (DELETE FROM findings RETURNING 1) SELECT 1 FROM d)",
    "WITH a AS (SELECT 1), b AS (WITH c AS (DELETE FROM matches RETURNING 1) SELECT * FROM c) "
    "SELECT * FROM a, b",
    "WITH RECURSIVE r(n) AS (SELECT 1), d AS (DELETE FROM matches RETURNING 1) SELECT * FROM r, d",
    "SELECT * FROM (VALUES (1)) t(x), LATERAL (WITH d AS (DELETE FROM matches RETURNING 1) "
    "SELECT * FROM d)",
    "wItH /* a comment */ d As (dElEtE /* another */ fRoM MaTcHeS ReTuRnInG 1) -- and one\n"
    "SeLeCt CoUnT(*) FrOm d",
    'WITH "d" AS (DELETE FROM "main"."matches" RETURNING 1) SELECT * FROM "d"',
    "SELECT * FROM query('DELETE FROM matches RETURNING 1')",
    "SELECT * FROM query('UPDATE kingrec_meta SET value = ''0'' RETURNING 1')",
    "SELECT * FROM query_table('matches')",
    "SELECT * FROM json_execute_serialized_sql(json_serialize_sql('SELECT 1'))",
    "SELECT * FROM checkpoint()",
    "SELECT * FROM force_checkpoint()",
    "DESCRIBE WITH d AS (DELETE FROM matches RETURNING 1) SELECT * FROM d",
    "SUMMARIZE (WITH d AS (DELETE FROM matches RETURNING 1) SELECT * FROM d)",
    "EXPLAIN ANALYZE WITH d AS (DELETE FROM matches RETURNING 1) SELECT * FROM d",
    "PIVOT (WITH d AS (DELETE FROM matches RETURNING match_key) SELECT * FROM d) ON match_key",
    "DELETE FROM matches",
    "UPDATE kingrec_meta SET value = '0' WHERE key = 'schema_version'",
    "INSERT INTO cards SELECT * FROM cards",
    "FROM matches; DELETE FROM matches",
    "CALL checkpoint()",
    "SELECT nextval('kingrec_seq')",
]

# Queries that would tell of the server rather than the store: its settings, its files,
# its DuckDB, its session.
SNOOPS = [
    "SELECT * FROM duckdb_settings()",
    "SELECT current_setting('temp_directory')",
    "SELECT CURRENT_SETTING('home_directory') AS h",
    "SELECT path FROM duckdb_databases()",
    "SELECT * FROM system.main.duckdb_databases()",
    "SELECT * FROM pragma_database_list",
    "SELECT * FROM duckdb_temporary_files()",
    "SELECT * FROM duckdb_extensions()",
    "SELECT * FROM duckdb_memory()",
    "SELECT * FROM duckdb_secrets()",
    "SELECT * FROM duckdb_logs()",
    "SELECT * FROM pragma_version()",
    "SELECT * FROM information_schema.tables",
    "SELECT current_database()",
    "SELECT version()",
    "SELECT getvariable('x')",
    "SELECT 1 WHERE current_schema() = 'main'",
    "SELECT * FROM range((SELECT count(*) FROM duckdb_settings()))",
    "SELECT * FROM (WITH pragma_database_list AS (SELECT 1) SELECT 1), pragma_database_list",
    "SELECT * FROM glob('*')",
    "SELECT * FROM read_text('/etc/hostname')",
    "SELECT pg_sleep(100)",
]


def _status(error: grpc.RpcError) -> tuple[grpc.StatusCode, str, str]:
    assert isinstance(error, grpc.Call)
    code = dict(error.trailing_metadata() or ()).get("kingrec-code", "")
    return error.code(), str(code), error.details() or ""


def _query(stub: KingrecServiceStub, sql: str, **options: object) -> list[svc.QueryResponse]:
    return list(stub.Query(svc.QueryRequest(sql=sql, **options)))  # type: ignore[arg-type]


def _refusal(stub: KingrecServiceStub, sql: str, **options: object) -> tuple[str, str, str]:
    try:
        _query(stub, sql, **options)
    except grpc.RpcError as error:
        status, code, details = _status(error)
        return status.name, code, details
    return "OK", "", ""


def _rows(stub: KingrecServiceStub, sql: str) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for response in _query(stub, sql):
        if response.arrow:
            rows += pa.ipc.open_stream(response.arrow).read_all().to_pylist()
    return rows


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Served:
    def __init__(self, process: subprocess.Popen[str], port: int) -> None:
        self.process = process
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.stub = KingrecServiceStub(self.channel)

    def stop(self, timeout: float = 60) -> tuple[int, str]:
        """SIGTERM, then the exit status and what the server wrote on standard error."""
        self.channel.close()
        self.process.send_signal(signal.SIGTERM)
        _, err = self.process.communicate(timeout=timeout)
        return self.process.returncode, err


def _serve(db: Path, *options: str) -> Served:
    process = subprocess.Popen(
        [str(KINGREC), "serve", "--port", "0", "--db", str(db), *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert "serving on 127.0.0.1:" in line, line + (process.stderr.read() if process.stderr else "")
    return Served(process, int(line.split("127.0.0.1:")[1].split()[0]))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding every valid sample, made by ``kingrec ingest`` and closed."""
    db = tmp_path_factory.mktemp("edge") / "edge.duckdb"
    done = subprocess.run(
        [str(KINGREC), "ingest", "--db", str(db), str(SAMPLES / "valid")],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return db


@pytest.fixture
def served(store: Path, tmp_path: Path) -> Iterator[tuple[Served, Path]]:
    db = tmp_path / "served.duckdb"
    db.write_bytes(store.read_bytes())
    (tmp_path / "original.duckdb").write_bytes(store.read_bytes())
    served = _serve(db, "--grace", "2")
    try:
        yield served, db
    finally:
        if served.process.poll() is None:
            served.process.kill()
            served.process.communicate()


# -- point 1: a remote query cannot change the store ---------------------------------------


def test_data_changing_statements_are_refused_and_the_store_file_is_byte_for_byte_unchanged(
    served: tuple[Served, Path],
) -> None:
    server, db = served
    before = _digest(db.with_name("original.duckdb"))  # the file as the server found it
    counts = _rows(server.stub, "SELECT count(*) AS n FROM matches")
    answers = {sql: _refusal(server.stub, sql) for sql in WRITES}
    # refused; or, for a few, not even parsed by DuckDB (a recursive CTE beside a DML one)
    ends = {("PERMISSION_DENIED", "QUERY_REFUSED"), ("INVALID_ARGUMENT", "QUERY_INVALID")}
    assert not {sql: a for sql, a in answers.items() if a[:2] not in ends}
    assert sum(a[1] == "QUERY_REFUSED" for a in answers.values()) >= len(WRITES) - 2
    assert all("Traceback" not in details for _, _, details in answers.values())
    # the server still serves, and every table holds what it held
    assert _rows(server.stub, "SELECT count(*) AS n FROM matches") == counts
    assert server.stub.ListMatches(svc.ListMatchesRequest(limit=2)).matches
    status, err = server.stop()
    assert status == 0 and "Traceback" not in err, err
    # Byte for byte: only reads ran, so DuckDB had nothing to log or checkpoint.
    assert _digest(db) == before and not db.with_name("served.duckdb.wal").exists()
    reopened = _serve(db)
    try:  # the next serve starts (the schema version was not forged) and sees every match
        assert _rows(reopened.stub, "SELECT count(*) AS n FROM matches") == counts
        assert _rows(reopened.stub, "SELECT value FROM kingrec_meta WHERE key = 'schema_version'")
    finally:
        reopened.stop()


def test_a_data_changing_cte_is_refused_by_the_local_query_too(store: Path) -> None:
    sql = WRITES[0]
    done = subprocess.run(
        [str(KINGREC), "query", "--db", str(store), sql],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode != 0 and "a query may only read" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


# -- point 3: a query sees the store's tables and views, not the server's configuration --------


def test_queries_cannot_read_the_servers_settings_paths_or_session(
    served: tuple[Served, Path],
) -> None:
    server, db = served
    answers = {sql: _refusal(server.stub, sql) for sql in SNOOPS}
    wrong = {
        sql: a for sql, a in answers.items() if a[:2] != ("PERMISSION_DENIED", "QUERY_REFUSED")
    }
    assert not wrong
    for _, _, details in answers.values():
        assert str(db.parent) not in details and "/tmp" not in details
    # what the store documents of itself stays readable (docs/STORE.md's own example)
    columns = _rows(
        server.stub,
        "SELECT table_name, column_name, comment FROM duckdb_columns() WHERE table_name = 'deals'",
    )
    assert columns and all(row["table_name"] == "deals" for row in columns)
    assert _rows(server.stub, "SELECT card_name(51) AS c") == [{"c": "AS"}]
    local = subprocess.run(
        [str(KINGREC), "query", "--db", str(server_db_copy(db)), SNOOPS[0]],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert local.returncode != 0 and "duckdb_settings" in local.stderr, local.stderr


def server_db_copy(db: Path) -> Path:
    """A copy of the store the server holds (DuckDB lets one process open a file it writes)."""
    copy = db.with_name("copy.duckdb")
    copy.write_bytes(db.read_bytes())
    return copy


# -- point 5: a row too large for a message is refused, coded ---------------------------------


def test_a_row_over_the_response_limit_gets_a_coded_refusal_and_the_server_goes_on(
    served: tuple[Served, Path],
) -> None:
    server, _ = served
    for form in (svc.QueryRequest.FORMAT_ARROW, svc.QueryRequest.FORMAT_JSON):
        status, code, details = _refusal(
            server.stub, "SELECT repeat('x', 5000000) AS s", format=form
        )
        assert (status, code) == ("RESOURCE_EXHAUSTED", "QUERY_ROW_TOO_LARGE"), details
        assert "5000000 bytes" in details
    # under the row limit, but JSON's escapes (\u0001 for each byte) would pass a message
    escaped = "SELECT repeat(chr(1), 1000000) AS s"
    status, code, details = _refusal(server.stub, escaped, format=svc.QueryRequest.FORMAT_JSON)
    assert (status, code) == ("RESOURCE_EXHAUSTED", "QUERY_ROW_TOO_LARGE"), details
    wide = "SELECT repeat('x', 600000) AS a, repeat('y', 600000) AS b"  # two values, one row
    assert _refusal(server.stub, wide)[:2] == ("RESOURCE_EXHAUSTED", "QUERY_ROW_TOO_LARGE")
    assert _rows(server.stub, "SELECT length(repeat('x', 900000)) AS n") == [{"n": 900000}]
    ordered = _rows(
        server.stub, "SELECT i, repeat('z', 10) AS s FROM range(30000) t(i) ORDER BY i DESC"
    )
    assert [row["i"] for row in ordered] == list(range(29999, -1, -1))
    exit_status, err = server.stop()
    assert exit_status == 0 and "Traceback" not in err and "TOO_MANY_OPERATIONS" not in err, err


# -- point 14: one SQL value -> JSON mapping ----------------------------------------------------

VALUES_SQL = (
    "SELECT TIMESTAMP '2020-01-01 00:17:50' AS t, DATE '2020-01-02' AS d, '\\x00\\xff'::BLOB AS b, "
    "1.25::DECIMAL(5, 2) AS m, INTERVAL 90 SECOND AS i, [1, NULL] AS l, 'nan'::DOUBLE AS f"
)


def test_the_service_and_the_cli_write_the_same_json_for_the_same_values(
    served: tuple[Served, Path],
) -> None:
    server, db = served
    lines = [
        line
        for r in _query(server.stub, VALUES_SQL, format=svc.QueryRequest.FORMAT_JSON)
        for line in r.json.splitlines()
    ]
    local = subprocess.run(
        [str(KINGREC), "query", "-f", "json", "--db", str(server_db_copy(db)), VALUES_SQL],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert local.returncode == 0, local.stderr
    assert [json.loads(line) for line in local.stdout.splitlines()] == [
        json.loads(line) for line in lines
    ]
    assert json.loads(lines[0])["t"] == "2020-01-01T00:17:50"
    assert json.loads(lines[0])["b"] == "00ff" and json.loads(lines[0])["m"] == "1.25"
    assert json.loads(lines[0])["i"] == {"months": 0, "days": 0, "nanoseconds": 90_000_000_000}


# -- point 6: SIGTERM interrupts running queries ------------------------------------------------


def test_sigterm_interrupts_a_running_query_and_the_server_exits_within_its_grace(
    store: Path, tmp_path: Path
) -> None:
    db = tmp_path / "sigterm.duckdb"
    db.write_bytes(store.read_bytes())
    server = _serve(db, "--grace", "2", "--query-timeout", "600")
    outcome: dict[str, object] = {}
    first = threading.Event()

    def client() -> None:
        # rows at once, then a scan that would go on for hours
        sql = "SELECT i FROM range(1e15::BIGINT) t(i) WHERE i < 20000 OR i = -1"
        try:
            for _ in server.stub.Query(svc.QueryRequest(sql=sql)):
                first.set()
        except grpc.RpcError as error:
            outcome["status"] = _status(error)
        first.set()

    thread = threading.Thread(target=client)
    thread.start()
    assert first.wait(60)
    server.process.send_signal(signal.SIGTERM)
    # The query's own limit is 600 s: only the interrupt can end the process in time.
    _, err = server.process.communicate(timeout=30)
    thread.join(30)
    assert server.process.returncode == 0, err
    assert "cannot schedule new futures" not in err and "Traceback" not in err, err
    assert outcome["status"][:2] == (grpc.StatusCode.UNAVAILABLE, "SHUTTING_DOWN"), err  # type: ignore[index]
    restarted = _serve(db)  # the store is free again
    restarted.stop()


# The console script without its early exit: a server stopped this way goes through the
# interpreter's whole teardown, DuckDB's exit hook included.
_NORMAL_TEARDOWN = """
import sys
sys.argv = ["kingrec", *sys.argv[1:]]
from kingrec_cli.main import main
main()
"""
ROWS_THEN_HOURS = "SELECT i FROM range(1e15::BIGINT) t(i) WHERE i < 20000 OR i = -1"


def test_an_interrupted_query_leaves_no_result_open_past_its_end(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kingrec.store import query as store_query

    readers: list[pa.RecordBatchReader] = []
    limited = store_query._limited

    def kept(reader: pa.RecordBatchReader, *rest: Any) -> Iterator[pa.RecordBatch]:
        readers.append(reader)  # the DuckDB result the query's rows come from
        return limited(reader, *rest)

    monkeypatch.setattr(store_query, "_limited", kept)
    db = tmp_path / "interrupted.duckdb"
    db.write_bytes(store.read_bytes())
    limits = QueryLimits(timeout_s=600)
    with running_server(ServiceConfig(db=str(db), query=limits)) as (server, port):
        assert server.store is not None
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = KingrecServiceStub(channel).Query(svc.QueryRequest(sql=ROWS_THEN_HOURS))
            assert next(iter(call)).columns  # rows out: the scan goes on for hours
            call.cancel()  # the call's end interrupts it
            assert _until(lambda: server.store is not None and server.store.queries_in_flight == 0)
            assert _rows(KingrecServiceStub(channel), "SELECT 1 AS one") == [{"one": 1}]
    assert len(readers) == 2
    for reader in readers:  # each closed by the query itself, not left to the collector
        with pytest.raises(pa.ArrowInvalid, match="closed"):
            reader.read_next_batch()


def test_a_server_stopped_after_an_interrupted_query_exits_through_the_usual_teardown(
    store: Path, tmp_path: Path
) -> None:
    db = tmp_path / "teardown.duckdb"
    db.write_bytes(store.read_bytes())
    args = ["serve", "--port", "0", "--db", str(db), "--grace", "2", "--query-timeout", "600"]
    process = subprocess.Popen(
        [sys.executable, "-I", "-c", _NORMAL_TEARDOWN, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert "serving on 127.0.0.1:" in line, line
        port = int(line.split("127.0.0.1:")[1].split()[0])
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = KingrecServiceStub(channel)
            call = stub.Query(svc.QueryRequest(sql=ROWS_THEN_HOURS))
            assert next(iter(call)).columns
            call.cancel()  # interrupted between two batches of its rows
            with pytest.raises(grpc.RpcError) as late:  # and inside its one batch
                list(stub.Query(svc.QueryRequest(sql=NEVER), timeout=3.0))
            assert _status(late.value)[0] == grpc.StatusCode.DEADLINE_EXCEEDED
            assert _rows(stub, "SELECT 1 AS one") == [{"one": 1}]
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert out.strip().endswith("kingrec: stopped") and "Traceback" not in err, err


# -- point 4: slow queries cannot starve the other reads ---------------------------------------

NEVER = "SELECT count(*) FROM range(1e15::BIGINT)"


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _until(condition: Callable[[], bool]) -> bool:
    """Wait for ``condition`` on the server's state (bounded), polling an event's wait."""
    tick = threading.Event()
    for _ in range(3000):
        if condition():
            return True
        tick.wait(0.01)
    return condition()


def _background(stub: KingrecServiceStub, sql: str) -> tuple[Any, dict[str, object]]:
    call = stub.Query(svc.QueryRequest(sql=sql))
    outcome: dict[str, object] = {}

    def drain() -> None:
        try:
            for _ in call:
                pass
        except grpc.RpcError as error:
            outcome["status"] = _status(error)

    threading.Thread(target=drain, daemon=True).start()
    return call, outcome


def test_four_slow_queries_leave_list_get_and_replay_free_and_a_fifth_is_refused_busy(
    store: Path, tmp_path: Path
) -> None:
    db = tmp_path / "busy.duckdb"
    db.write_bytes(store.read_bytes())
    limits = QueryLimits(timeout_s=600, threads=2, in_flight=4)
    with running_server(ServiceConfig(db=str(db), query=limits)) as (server, port):
        assert server.store is not None
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = KingrecServiceStub(channel)
            slow = [_background(stub, NEVER) for _ in range(4)]
            assert _until(lambda: server.store is not None and server.store.queries_in_flight == 4)
            listed = stub.ListMatches(svc.ListMatchesRequest(limit=3), timeout=20)
            assert listed.matches
            match_id = listed.matches[0].match_id
            assert stub.GetMatch(svc.GetMatchRequest(match_id=match_id), timeout=20).match
            replay = stub.Replay(svc.ReplayRequest(match_id=match_id), timeout=20)
            assert next(iter(replay))
            busy = _refusal(stub, "SELECT 1 AS one")
            assert busy[:2] == ("RESOURCE_EXHAUSTED", "QUERIES_BUSY"), busy
            for call, _ in slow:  # clients that give up free their places and threads
                call.cancel()
            assert _until(lambda: server.store is not None and server.store.queries_in_flight == 0)
            assert _rows(stub, "SELECT 1 AS one") == [{"one": 1}]


def test_the_web_statistics_are_queries_too_and_never_take_the_readers(
    store: Path, tmp_path: Path
) -> None:
    db = tmp_path / "busy-web.duckdb"
    db.write_bytes(store.read_bytes())
    limits = QueryLimits(timeout_s=600, threads=2, in_flight=2)
    config = ServiceConfig(db=str(db), query=limits, http_host="127.0.0.1")
    with running_server(config) as (server, port):
        gateway = server.store
        assert gateway is not None
        web = f"http://127.0.0.1:{server.http_port}"
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = KingrecServiceStub(channel)
            answer = json.loads(urllib.request.urlopen(web + "/api/stats/contracts").read())
            assert answer["rows"]  # a question is answered while places are free
            slow = [_background(stub, NEVER) for _ in range(2)]
            assert _until(lambda: gateway.queries_in_flight == 2)
            with pytest.raises(urllib.error.HTTPError) as refused:  # no place: told at once
                urllib.request.urlopen(web + "/api/stats/contracts", timeout=20)
            assert refused.value.code == 429
            assert json.loads(refused.value.read())["error"]["code"] == "QUERIES_BUSY"
            listed = json.loads(urllib.request.urlopen(web + "/api/matches?limit=2").read())
            assert listed["matches"]  # the readers are free
            for call, _ in slow:
                call.cancel()
            assert _until(lambda: gateway.queries_in_flight == 0)


def test_a_web_statistic_whose_client_goes_away_is_interrupted_and_holds_its_place_until_then(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kingrec.store import Store
    from kingrec_service.http import stats as http_stats

    ended = threading.Event()

    def never_answered(store: Store, name: str, timeout_s: float, stop: Any = None) -> Any:
        try:  # the question, made one that runs for hours unless it is interrupted
            with store.query(NEVER, timeout_s=600, stop=stop) as result:
                return list(result.batches())
        finally:
            ended.set()

    monkeypatch.setattr(http_stats, "stat_answer", never_answered)
    db = tmp_path / "gone-web.duckdb"
    db.write_bytes(store.read_bytes())
    limits = QueryLimits(timeout_s=600, threads=1, in_flight=1)
    config = ServiceConfig(db=str(db), query=limits, http_host="127.0.0.1")
    with running_server(config) as (server, _):
        gateway = server.store
        assert gateway is not None and server.http_port is not None
        with socket.create_connection(("127.0.0.1", server.http_port), timeout=60) as client:
            client.sendall(b"GET /api/stats/contracts HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert _until(lambda: gateway.queries_in_flight == 1)
        # the client is gone: its query is interrupted, and only then is its place free
        assert ended.wait(60), "the query ran on after its client went away"
        assert _until(lambda: gateway.queries_in_flight == 0)
        monkeypatch.undo()
        web = f"http://127.0.0.1:{server.http_port}"
        answer = json.loads(urllib.request.urlopen(web + "/api/stats/contracts", timeout=60).read())
        assert answer["rows"]  # the one place and the one thread are free again


def test_a_query_s_time_limit_counts_from_its_arrival_not_from_when_it_got_a_thread(
    store: Path, tmp_path: Path
) -> None:
    db = tmp_path / "arrival.duckdb"
    db.write_bytes(store.read_bytes())
    clock = FakeClock()
    limits = QueryLimits(timeout_s=600, threads=1, in_flight=2)
    with running_server(ServiceConfig(db=str(db), query=limits)) as (server, port):
        gateway = server.store
        assert gateway is not None
        gateway.clock = clock
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = KingrecServiceStub(channel)
            holder, _ = _background(stub, NEVER)  # takes the one query thread
            assert _until(lambda: gateway.queries_in_flight == 1)
            _, outcome = _background(stub, "SELECT 42 AS answer")
            assert _until(lambda: gateway.queries_in_flight == 2)  # arrived, at 0 s
            clock.now = 601.0  # its 600 s went by while it waited
            holder.cancel()  # the thread comes free
            assert _until(lambda: "status" in outcome)
            answer = outcome["status"]
            assert isinstance(answer, tuple)
            assert answer[:2] == (grpc.StatusCode.RESOURCE_EXHAUSTED, "QUERY_LIMIT")
            assert "counted from its arrival" in answer[2]


def test_uploads_beside_a_stream_of_data_changing_queries_all_succeed(
    store: Path, tmp_path: Path
) -> None:
    db = tmp_path / "beside.duckdb"
    db.write_bytes(store.read_bytes())
    matches = [simulate_match(preset("short"), 900 + i) for i in range(20)]
    with (
        running_server(ServiceConfig(db=str(db))) as (_, port),
        grpc.insecure_channel(f"127.0.0.1:{port}") as channel,
    ):
        stub = KingrecServiceStub(channel)
        before = int(str(_rows(stub, "SELECT count(*) AS n FROM matches")[0]["n"]))
        done = threading.Event()
        answers: list[tuple[str, str, str]] = []

        def attack() -> None:
            for _ in range(3):  # three passes over every write, while the uploads go on
                answers.extend(_refusal(stub, sql) for sql in WRITES)
            done.set()

        attacker = threading.Thread(target=attack)
        attacker.start()
        requests = [
            svc.UploadRequest(records=[svc.Record(match=m) for m in matches[i : i + 2]])
            for i in range(0, 20, 2)
        ]
        replies = list(stub.Upload(iter(requests)))
        assert done.wait(120)
        attacker.join()
        assert replies[-1].summary.stored == 20
        assert all(a[0] in ("PERMISSION_DENIED", "INVALID_ARGUMENT") for a in answers)
        assert _rows(stub, "SELECT count(*) AS n FROM matches")[0]["n"] == before + 20
