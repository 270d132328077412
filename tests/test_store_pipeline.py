"""The pipelined ingest (kingrec.store.pipeline) that `kingrec ingest` and the server's Upload
share: transactions commit in order, a failed one takes those prepared behind it with it,
and the store keeps whole batches only. On real DuckDB files; a write failure is injected
by wrapping the one function that writes a transaction."""

from __future__ import annotations

import contextlib
import gc
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import grpc
import pytest

from kingrec import _twins
from kingrec.container import KrecWriter
from kingrec.errors import StoreError, StoreWriteAbortedError
from kingrec.findings import Location
from kingrec.records import open_records
from kingrec.rules import PRESETS, preset
from kingrec.simulate import simulate_match
from kingrec.store import Store, pipeline
from kingrec.store import ingest as ingest_module
from kingrec.store import store as store_module
from kingrec.store.db import connect
from kingrec.store.ingest import Batch, write_prepared
from kingrec.v1 import record_pb2 as pb
from kingrec.v1 import service_pb2 as svc
from kingrec_service import ServiceConfig, running_server
from kingrec_service._pb.service_pb2_grpc import KingrecServiceStub

MATCHES = [simulate_match(preset("short"), 500 + i) for i in range(24)]


def _payloads(matches: list[pb.Match]) -> list[bytes]:
    return [m.SerializeToString(deterministic=True) for m in matches]


def _batch(matches: list[pb.Match], source: str = "t") -> Batch:
    payloads = _payloads(matches)
    return Batch(source, payloads, [Location(source)] * len(payloads))


def _failing_on(
    monkeypatch: pytest.MonkeyPatch, failing: set[int], go: threading.Event | None = None
) -> Callable[[], list[int]]:
    """Make the pipeline's n-th write (from 1) in ``failing`` raise a DuckDB I/O error after
    its rows are appended (once ``go`` is set, if given); returns a function giving the
    writes made so far, in order."""
    calls: list[int] = []
    lock = threading.Lock()

    def write(con: duckdb.DuckDBPyConnection, prepared: Any, **kw: Any) -> None:
        with lock:
            calls.append(len(calls) + 1)
            n = len(calls)
        if n in failing:

            def fail() -> None:
                assert go is None or go.wait(30)
                raise duckdb.IOException("injected: the disk is full")

            write_prepared(con, prepared, before=fail)
        write_prepared(con, prepared, **kw)

    monkeypatch.setattr(pipeline, "write_prepared", write)
    return lambda: list(calls)


def _stored_ids(store: Store) -> set[str]:
    return {row[0] for row in store.con.execute("SELECT match_id FROM matches").fetchall()}


def test_a_failed_transaction_rolls_back_those_prepared_behind_it_and_keeps_those_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    go = threading.Event()
    writes = _failing_on(monkeypatch, {2}, go)
    groups = [MATCHES[0:8], MATCHES[8:16], MATCHES[16:24]]
    with Store.open(str(tmp_path / "k.duckdb")) as store:
        # Closing the pipeline raises the first failure.
        with pytest.raises(duckdb.IOException), store.pipeline() as ingest:
            submitted = [ingest.submit(_batch(group)) for group in groups]
            first, second, third = (written for _, written in submitted)
            go.set()  # the second fails only once the third was prepared behind it
            first.result()
            with pytest.raises(duckdb.IOException):
                second.result()
            # The third counted the second's records as stored: it must not commit alone.
            with pytest.raises(StoreWriteAbortedError, match="transaction before it failed"):
                third.result()
        assert writes() == [1, 2, 3]
        assert _stored_ids(store) == {m.match_id for m in groups[0]}
        assert store.count("deals") == 8 * 8
        # Nothing of the failed batches counts as stored: sending them again stores them all.
        monkeypatch.undo()
        again = store.ingest_payloads(_payloads(MATCHES), source="again")
        assert [v.status for v in again] == ["duplicate"] * 8 + ["stored"] * 16
        assert _stored_ids(store) == {m.match_id for m in MATCHES}
        keys = store.con.execute("SELECT count(DISTINCT match_key) FROM matches").fetchall()
        assert keys == [(24,)]


def test_ingest_stops_at_a_failed_write_and_a_rerun_completes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.krec"
    with KrecWriter.open(path) as writer:
        for m in MATCHES:
            writer.write_match(m)
    _failing_on(monkeypatch, {2})
    with Store.open(str(tmp_path / "k.duckdb")) as store:
        with pytest.raises((duckdb.IOException, StoreWriteAbortedError)):
            store.ingest_file(str(path), batch_matches=5)
        assert _stored_ids(store) == {m.match_id for m in MATCHES[:5]}
        monkeypatch.undo()
        summary = store.ingest_file(str(path), batch_matches=5)
        assert (summary.stored, summary.duplicates) == (19, 5)
        assert store.count("matches") == 24 and store.count("deals") == 24 * 8


def test_a_batch_lets_go_of_its_tables_as_soon_as_its_transaction_is_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A batch's tables are most of an ingest's memory: the writer drops them once the
    # transaction is committed or rolled back, not when the submitting thread next looks.
    go = threading.Event()
    _failing_on(monkeypatch, {2}, go)
    groups = [MATCHES[0:8], MATCHES[8:16], MATCHES[16:24]]
    with Store.open(str(tmp_path / "k.duckdb")) as store:
        with pytest.raises(duckdb.IOException), store.pipeline() as ingest:
            submitted = [ingest.submit(_batch(group)) for group in groups]
            assert all(prepared.deals == 8 * 8 for prepared, _ in submitted)
            go.set()
            for prepared, written in submitted:
                with (
                    pytest.raises((duckdb.IOException, StoreWriteAbortedError))
                    if (prepared is not submitted[0][0])
                    else contextlib.nullcontext()
                ):
                    written.result()
                # committed (the first) or rolled back (the others): nothing held
                assert prepared.tables == {}
                assert prepared.deals == 8 * 8 and len(prepared.verdicts) == 8
        assert store.count("deals") == 8 * 8


# Every table of a store (the views are made of these).
TABLES = ("matches", "players", "deals_base", "tricks_base", "plays_base", "findings",
          "records_base", "damage", "deal_par", "play_costs", "cards", "kingrec_meta")  # fmt: skip


def _awkward_file(path: Path) -> Path:
    """Short matches with, among them, an invalid record (stored, flagged), a record over a
    bound and one that is no match (rejected by the judge), a copy of an earlier record (a
    duplicate) and a damaged frame: batches of 5 meet each kind."""
    broken = pb.Match()
    broken.CopyFrom(MATCHES[12])
    plays = bytearray(broken.deals[0].plays)
    plays[0], plays[2] = plays[2], plays[0]
    broken.deals[0].plays = bytes(plays)
    over = pb.Match()
    over.CopyFrom(MATCHES[13])
    for _ in range(300):
        over.deals.add()
    good = _payloads(MATCHES[:12])
    payloads = [*good[:4], broken.SerializeToString(), over.SerializeToString(), *good[4:8],
                good[0], b"\xff\xff not a match", *good[8:]]  # fmt: skip
    with KrecWriter.open(path) as writer:
        frames = [writer.write(payload) for payload in payloads]
    damaged = bytearray(path.read_bytes())
    damaged[frames[-2].offset + 20] ^= 0xFF  # a byte of the payload: its checksum fails
    path.write_bytes(bytes(damaged))
    return path


def _table_rows(store: Store, table: str) -> list[str]:
    """A table's rows as a sorted multiset, ``ingested_at`` left out (the time of the run)."""
    names = [r[0] for r in store.con.execute(f"DESCRIBE {table}").fetchall()]
    kept = ", ".join(f'"{n}"' for n in names if n not in ("ingested_at", "analysed_at"))
    return sorted(repr(row) for row in store.con.execute(f"SELECT {kept} FROM {table}").fetchall())


def test_a_pipelined_ingest_stores_what_one_batch_at_a_time_stores_table_by_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The pipeline builds each batch in its builder threads (a share of the records each)
    # while the judge reads it, betting that the judge rejects none of the records not yet
    # stored; where it does reject one, the batch is built again without it. Either way the
    # store holds, in all its tables, what storing the same batches one by one (judge, then
    # build, one thread) holds.
    path = _awkward_file(tmp_path / "awkward.krec")
    built_in: list[str] = []
    columns = ingest_module._columns

    def spy(*args: Any) -> Any:
        built_in.append(threading.current_thread().name)
        return columns(*args)

    monkeypatch.setattr(ingest_module, "_columns", spy)
    with Store.open(str(tmp_path / "piped.duckdb")) as piped:
        summary = piped.ingest_file(str(path), batch_matches=5)
        assert (summary.stored, summary.stored_invalid, summary.duplicates) == (11, 1, 1)
        assert (summary.rejected, summary.damaged) == (2, 1)
        want = {table: _table_rows(piped, table) for table in TABLES}
    builder_thread = [name for name in built_in if name.startswith("kingrec-ingest-builder")]
    # every batch (of 15 readable records) built there first, in a share per builder
    assert len(builder_thread) == 3 * pipeline.BUILDERS
    assert len(built_in) - len(builder_thread) == 2  # the two with a rejected record again
    with Store.open(str(tmp_path / "one.duckdb")) as one, open_records(str(path)) as records:
        for batch in store_module._batches(records, 5):
            one._store(batch, None)
        for table in TABLES:
            assert _table_rows(one, table) == want[table], table
    assert len(want["matches"]) == 12 and len(want["damage"]) == 3


@pytest.mark.skipif(_twins.COMPILED is None, reason="the compiled builder builds off the GIL")
@pytest.mark.parametrize("batch_matches", [3, 5, 16])
def test_the_bet_that_every_record_is_new_stores_what_no_bet_stores_when_it_is_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch_matches: int
) -> None:
    # A batch is built before its records are keyed when the batch before stored all of
    # its records; the awkward file, stored twice into a store that holds some of it
    # already, loses the bet in every way (records stored before, repeated, rejected).
    path = _awkward_file(tmp_path / "awkward.krec")
    first = tmp_path / "first.krec"
    with KrecWriter.open(first) as writer:
        for payload in _payloads(MATCHES[2:7]):
            writer.write(payload)
    bets: list[bool] = []
    prepare = ingest_module.prepare_batch

    def spy(*args: Any, **kw: Any) -> Any:
        bets.append(kw["all_new"])
        return prepare(*args, **kw)

    rows = {}
    for bet in (False, True):
        monkeypatch.setattr(pipeline, "prepare_batch", spy if bet else _no_bet(prepare))
        with Store.open(str(tmp_path / f"{bet}.duckdb")) as store:
            for each in (first, path, path):
                store.ingest_file(str(each), batch_matches=batch_matches)
            rows[bet] = {table: _table_rows(store, table) for table in TABLES}
    for table in TABLES:
        assert rows[True][table] == rows[False][table], table
    assert len(rows[True]["matches"]) == 12
    # the bet made on each file's first batch, and given up after one lost in the file
    assert True in bets
    assert (False in bets) == (batch_matches < 16)


def _no_bet(prepare: Callable[..., Any]) -> Callable[..., Any]:
    return lambda *args, **kw: prepare(*args, **{**kw, "all_new": False})


@pytest.mark.parametrize("builders", [2, 3])
def test_a_batch_built_in_shares_stores_what_one_builder_stores_table_by_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, builders: int
) -> None:
    # Shares of a batch, each built on a builder of its own, are joined as one build: every
    # share's rulesets after those before (the matches' indices shifted), rows in order. Mixed
    # presets put several rulesets in every share; the awkward file puts rejected records,
    # duplicates and damage among them.
    mixed = [simulate_match(rules, 900 + i) for i, rules in enumerate(PRESETS.values())]
    mixed += [simulate_match(preset("short"), 950 + i) for i in range(5)]
    paths = [_awkward_file(tmp_path / "awkward.krec"), tmp_path / "mixed.krec"]
    with KrecWriter.open(paths[1]) as writer:
        for match in mixed[::2] + mixed[1::2]:
            writer.write_match(match)
    rows = {}
    for count in (1, builders):
        monkeypatch.setattr(pipeline, "BUILDERS", count)
        with Store.open(str(tmp_path / f"{count}.duckdb")) as store:
            for path in paths:
                store.ingest_file(str(path), batch_matches=7)
            rows[count] = {table: _table_rows(store, table) for table in TABLES}
            rulesets = store.con.execute("SELECT count(DISTINCT preset) FROM matches").fetchall()
    for table in TABLES:
        assert rows[builders][table] == rows[1][table], table
    assert rulesets[0][0] == len(PRESETS)


def test_the_pipeline_tells_where_its_threads_waited(tmp_path: Path) -> None:
    batches = [_batch(MATCHES[i : i + 6], f"b{i}") for i in range(0, 24, 6)]
    with Store.open(str(tmp_path / "s.duckdb")) as store:
        with pipeline.IngestPipeline(store) as piped:
            for batch in batches:
                piped.submit(batch)
        queues = piped.queues
        assert store.count("matches") == 24
    assert queues.batches == 4
    assert 0 <= queues.builder <= queues.preparing  # the build waited on is in the preparing
    if _twins.ACTIVE.columns.BUILDS_WITHOUT_GIL:  # built in the builder thread, waited on
        assert queues.builder > 0
    assert queues.writing > 0 and queues.writer_slot >= 0 and queues.commit_order >= 0


def test_an_ingest_pauses_the_garbage_collector_and_leaves_it_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "m.krec"
    with KrecWriter.open(path) as writer:
        for m in MATCHES[:6]:
            writer.write_match(m)
    during: list[bool] = []
    with Store.open(str(tmp_path / "k.duckdb")) as store:
        assert gc.isenabled()
        store.ingest_file(
            str(path), batch_matches=2, progress=lambda _: during.append(gc.isenabled())
        )
        assert during == [False, False, False] and gc.isenabled()
        gc.disable()  # a caller's choice is kept
        try:
            store.ingest_file(str(path))
            assert not gc.isenabled()
        finally:
            gc.enable()


# -- through the server's Upload ---------------------------------------------------------------


def _upload(port: int, matches: list[pb.Match], source: str) -> list[svc.UploadResponse]:
    request = svc.UploadRequest(records=[svc.Record(match=m) for m in matches], source=source)
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        return list(KingrecServiceStub(channel).Upload(iter([request])))


def _count(port: int, source: str) -> int:
    """Committed matches of ``source``, asked of the server as any client would."""
    sql = f"SELECT count(*) AS n FROM matches WHERE source = '{source}'"
    request = svc.QueryRequest(sql=sql, format=svc.QueryRequest.FORMAT_JSON)
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        text = "".join(r.json for r in KingrecServiceStub(channel).Query(request))
    return int(json.loads(text.splitlines()[0])["n"])


@pytest.fixture
def held_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[threading.Event, threading.Event]]:
    """Every write waits, its rows appended, for ``release`` before it commits; ``entered``
    is set once a write waits."""
    entered, release = threading.Event(), threading.Event()

    def write(con: duckdb.DuckDBPyConnection, prepared: Any, **kw: Any) -> None:
        def hold() -> None:
            entered.set()
            assert release.wait(30)
            if kw.get("before") is not None:
                kw["before"]()

        write_prepared(con, prepared, before=hold)

    monkeypatch.setattr(pipeline, "write_prepared", write)
    yield entered, release
    release.set()


def test_an_upload_is_answered_only_once_its_transaction_is_committed(
    tmp_path: Path, held_writes: tuple[threading.Event, threading.Event]
) -> None:
    entered, release = held_writes
    answers: list[svc.UploadResponse] = []
    with running_server(ServiceConfig(db=str(tmp_path / "s.duckdb"))) as (_, port):
        client = threading.Thread(target=lambda: answers.extend(_upload(port, MATCHES, "held")))
        client.start()
        assert entered.wait(30)
        # The rows are appended, not committed: no answer, and a reader sees none of them.
        assert answers == []
        assert _count(port, "held") == 0
        release.set()
        client.join(30)
        assert [len(a.verdicts) for a in answers] == [24, 0]
        assert all(v.status == svc.StoreVerdict.STATUS_STORED for v in answers[0].verdicts)
        assert _count(port, "held") == 24


def test_a_failed_transaction_fails_its_upload_and_the_server_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _failing_on(monkeypatch, {1})
    db = tmp_path / "f.duckdb"
    with running_server(ServiceConfig(db=str(db))) as (_, port):
        with pytest.raises(grpc.RpcError) as caught:
            _upload(port, MATCHES[:10], "lost")
        error = caught.value
        assert isinstance(error, grpc.Call)
        assert error.code() == grpc.StatusCode.UNAVAILABLE
        assert dict(error.trailing_metadata() or ()).get("kingrec-code") == "STORE_ERROR"
        assert "could not be written" in (error.details() or "")
        answers = _upload(port, MATCHES[:10], "kept")
        assert [v.status for v in answers[0].verdicts] == [svc.StoreVerdict.STATUS_STORED] * 10
    with Store.open(str(db), read_only=True) as store:
        rows = store.con.execute("SELECT DISTINCT source FROM matches").fetchall()
        assert rows == [("kept",)] and store.count("matches") == 10


def test_a_store_opened_beside_is_created_while_the_first_batch_is_read_and_stores_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ``Store.open_beside`` connects in a thread of its own; ``ingest_file`` reads its first
    # batch before it first needs the connection. Held here: the connection is not made
    # until the first batch is read (were the read after the open, the wait times out).
    path = _awkward_file(tmp_path / "awkward.krec")
    first_read = threading.Event()
    read_first: list[bool] = []
    batches = store_module._batches

    def reading(*args: Any) -> Iterator[Batch]:
        for batch in batches(*args):
            first_read.set()  # a batch read whole
            yield batch

    def slow_connect(where: str) -> duckdb.DuckDBPyConnection:
        read_first.append(first_read.wait(timeout=30))
        return connect(where)

    monkeypatch.setattr(store_module, "_batches", reading)
    monkeypatch.setattr(store_module, "connect", slow_connect)
    with Store.open_beside(str(tmp_path / "beside.duckdb")) as beside:
        summary = beside.ingest_file(str(path), batch_matches=5)
        got = {table: _table_rows(beside, table) for table in TABLES}
    assert read_first == [True]
    assert (summary.stored, summary.stored_invalid, summary.duplicates) == (11, 1, 1)
    monkeypatch.undo()
    with Store.open(str(tmp_path / "plain.duckdb")) as plain:
        plain.ingest_file(str(path), batch_matches=5)
        for table in TABLES:
            assert _table_rows(plain, table) == got[table], table


def test_a_store_opened_beside_that_cannot_be_opened_says_why_where_it_is_used(
    tmp_path: Path,
) -> None:
    db = tmp_path / "notes.duckdb"
    db.write_text("not a database")
    path = tmp_path / "m.krec"
    with KrecWriter.open(path) as writer:
        writer.write_match(MATCHES[0])
    store = Store.open_beside(str(db))
    with pytest.raises(StoreError, match="not a DuckDB file"):
        store.ready()
    with pytest.raises(StoreError, match="not a DuckDB file"):
        store.ingest_file(str(path))
    store.close()  # nothing was opened: nothing to close, and no second error
    assert db.read_text() == "not a database"
