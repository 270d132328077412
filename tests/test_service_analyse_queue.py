"""The Analyse RPC's searches under load, against a real server on a free port: a bounded
number of calls wait for a search thread and one more is refused at once, over gRPC and
HTTP alike; a call that ends first (cancelled, past its deadline) stops its search, so the
thread is free for the next call.

The searches are held by a gate the tests open (events, never a sleep): the server runs in
this process (``running_server``), so the gate wraps the library call its search threads
make (``kingrec_service.analysing.analyse_deal``), and every search still runs for real.
"""

from __future__ import annotations

import importlib
import json
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from click.testing import CliRunner

from kingrec.analysis.batch import DealTask, analyse_deal
from kingrec.rules import preset
from kingrec.simulate import simulate_match
from kingrec.store import Store
from kingrec.v1 import service_pb2 as svc
from kingrec_service import KingrecServer, ServiceConfig, analysing, running_server
from kingrec_service._pb.service_pb2_grpc import KingrecServiceStub
from kingrec_service.analysing import WAITING_CALLS, AnalyseLimits

serve_command = importlib.import_module("kingrec_cli.serve")
MATCH = simulate_match(preset("classic"), 5)
LIMITS = AnalyseLimits(threads=1, waiting=1)  # one search at a time, one call waiting
QUICK = svc.AnalyseRequest(match_id=MATCH.match_id, deals=[1], from_trick=12, budget_ms=10_000)
# From the first trick with every card priced: seconds of search, had it not been stopped.
LONG = svc.AnalyseRequest(match_id=MATCH.match_id, deals=[2], budget_ms=10_000)
BOUND = 60.0  # seconds: how long a wait may take before the test fails (never reached)


def _until(condition: Callable[[], bool]) -> bool:
    """Wait for ``condition`` on the server's state (bounded), polling an event's wait."""
    tick = threading.Event()
    for _ in range(int(BOUND / 0.005)):
        if condition():
            return True
        tick.wait(0.005)
    return condition()


@dataclass
class Gate:
    """Wraps the searches: each waits at its start until ``opened`` (``hold_start``), or
    holds inside the solver's first look at its stop until the call stops it
    (``hold_until_stopped``); says what the searches did."""

    hold_start: bool = False
    hold_until_stopped: bool = False
    opened: threading.Event = field(default_factory=threading.Event)
    started: list[int] = field(default_factory=list)  # deal numbers, as searches begin
    searching: threading.Event = field(default_factory=threading.Event)
    stopped: list[bool] = field(default_factory=list)  # per search ended: was it stopped
    ended: threading.Event = field(default_factory=threading.Event)

    def search(self, task: DealTask, stop: Callable[[], bool] | None = None) -> Any:
        self.started.append(task.number)
        if self.hold_start:
            assert self.opened.wait(BOUND)
        assert stop is not None, "the server gives every search a stop"
        looked = stop

        if self.hold_until_stopped:

            def held() -> bool:  # the search is under way: wait here for the call to end
                self.searching.set()
                _until(stop)
                return stop()

            looked = held
        try:
            return analyse_deal(task, looked)
        finally:
            self.stopped.append(stop())
            self.ended.set()


@dataclass
class Served:
    server: KingrecServer
    stub: KingrecServiceStub
    http: str

    def get(self, path: str) -> tuple[int, Any]:
        try:
            with urllib.request.urlopen(self.http + path, timeout=BOUND) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = str(tmp_path / "kingrec.duckdb")
    with Store.open(path) as store:
        store.ingest_matches([MATCH], source="sim")
    return path


@contextmanager
def _served(db: str, gate: Gate, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    monkeypatch.setattr(analysing, "analyse_deal", gate.search)
    config = ServiceConfig(db=db, analyse=LIMITS, http_host="127.0.0.1", grace=1)
    with running_server(config) as (server, port):
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        try:
            yield Served(
                server, KingrecServiceStub(channel), f"http://127.0.0.1:{server.http_port}"
            )
        finally:
            gate.opened.set()  # nothing held past the test
            channel.close()


def _status(error: grpc.RpcError) -> tuple[grpc.StatusCode, str, str]:
    assert isinstance(error, grpc.Call)
    code = dict(error.trailing_metadata() or ()).get("kingrec-code", "")
    return error.code(), str(code), error.details() or ""


# -- the queue's bound -----------------------------------------------------------------------


def test_a_call_past_the_waiting_calls_is_refused_at_once_before_any_search(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate(hold_start=True)
    with _served(db, gate, monkeypatch) as served:
        analyser = served.server.analyser
        searching = served.stub.Analyse.future(QUICK)
        assert _until(lambda: gate.started == [1])
        waiting = served.stub.Analyse.future(QUICK)
        assert _until(lambda: analyser.in_flight == 2)
        with pytest.raises(grpc.RpcError) as refused:
            served.stub.Analyse(QUICK, timeout=BOUND)
        code, kingrec_code, details = _status(refused.value)
        assert (code, kingrec_code) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "ANALYSES_BUSY")
        assert "1 Analyse call(s) at once and keeps 1 waiting" in details
        # the same bound, server-wide, for the HTTP API's par route
        status, body = served.get(f"/api/matches/{MATCH.match_id}/par?deal=1&from_trick=12")
        assert (status, body["error"]["code"]) == (429, "ANALYSES_BUSY"), body
        assert gate.started == [1]  # the refused calls searched nothing, the waiting one not yet
        gate.opened.set()
        for call in (searching, waiting):
            (deal,) = call.result(timeout=BOUND).deals
            assert deal.deal == 1 and deal.solved and deal.costs_solved
        assert _until(lambda: analyser.in_flight == 0)
        assert served.stub.Analyse(QUICK, timeout=BOUND).deals[0].solved  # room again
        assert gate.started == [1, 1, 1]


def test_a_call_refused_for_its_size_takes_no_place_in_the_queue(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate()
    with _served(db, gate, monkeypatch) as served:
        too_big = svc.AnalyseRequest(match_id=MATCH.match_id, deals=[1], budget_ms=10_001)
        for _ in range(LIMITS.threads + LIMITS.waiting + 1):
            with pytest.raises(grpc.RpcError) as refused:
                served.stub.Analyse(too_big, timeout=BOUND)
            assert _status(refused.value)[1] == "LIMIT_EXCEEDED"
        assert served.server.analyser.in_flight == 0 and gate.started == []
        assert served.stub.Analyse(QUICK, timeout=BOUND).deals[0].solved


def _reads(served: Served, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every read the server's store gateway makes from now on (a list that grows)."""
    gateway = served.server.store
    assert gateway is not None
    real = gateway.read
    reads: list[object] = []

    async def read(work: Callable[[Store], Any]) -> Any:
        reads.append(work)
        return await real(work)

    monkeypatch.setattr(gateway, "read", read)
    return reads


def test_a_call_refused_for_want_of_a_place_reads_no_stored_match(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate(hold_start=True)
    with _served(db, gate, monkeypatch) as served:
        reads = _reads(served, monkeypatch)
        analyser = served.server.analyser
        searching = served.stub.Analyse.future(QUICK)
        assert _until(lambda: gate.started == [1])
        waiting = served.stub.Analyse.future(QUICK)
        assert _until(lambda: analyser.in_flight == 2 and len(reads) == 2)
        # refused as busy before its match is looked for: not even NOT_FOUND
        missing = svc.AnalyseRequest(match_id="no-such-match", deals=[1], from_trick=12)
        for request in (QUICK, missing):
            with pytest.raises(grpc.RpcError) as refused:
                served.stub.Analyse(request, timeout=BOUND)
            assert _status(refused.value)[1] == "ANALYSES_BUSY"
        status, body = served.get("/api/matches/no-such-match/par?deal=1&from_trick=12")
        assert (status, body["error"]["code"]) == (429, "ANALYSES_BUSY"), body
        assert len(reads) == 2  # the three refused calls read nothing
        gate.opened.set()
        for call in (searching, waiting):
            assert call.result(timeout=BOUND).deals[0].solved


def test_a_call_refused_for_its_size_reads_no_stored_match(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate()
    with _served(db, gate, monkeypatch) as served:
        reads = _reads(served, monkeypatch)
        too_big = [
            svc.AnalyseRequest(match_id="no-such-match", deals=[1], budget_ms=10_001),
            svc.AnalyseRequest(match_id="no-such-match", deals=list(range(1, 22))),
            svc.AnalyseRequest(match_id="no-such-match", deals=[1, 2, 3], budget_ms=9_000),
        ]
        for request in too_big:
            with pytest.raises(grpc.RpcError) as refused:
                served.stub.Analyse(request, timeout=BOUND)
            assert _status(refused.value)[1] == "LIMIT_EXCEEDED"
        status, body = served.get("/api/matches/no-such-match/par?deal=1&budget_ms=10001")
        assert (status, body["error"]["code"]) == (429, "LIMIT_EXCEEDED"), body
        with pytest.raises(grpc.RpcError) as refused:  # a seat that is none: no read either
            served.stub.Analyse(
                svc.AnalyseRequest(match_id="no-such-match", seats=[4]), timeout=BOUND
            )
        assert _status(refused.value)[0] == grpc.StatusCode.INVALID_ARGUMENT
        assert reads == [] and gate.started == []


def test_a_call_for_a_match_not_stored_gives_its_place_back(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate()
    with _served(db, gate, monkeypatch) as served:
        missing = svc.AnalyseRequest(match_id="no-such-match", deals=[1], from_trick=12)
        for _ in range(LIMITS.threads + LIMITS.waiting + 1):
            with pytest.raises(grpc.RpcError) as refused:
                served.stub.Analyse(missing, timeout=BOUND)
            assert _status(refused.value)[0] == grpc.StatusCode.NOT_FOUND
        assert served.server.analyser.in_flight == 0
        assert served.stub.Analyse(QUICK, timeout=BOUND).deals[0].solved


# -- a call that ends first stops its search -------------------------------------------------


def test_a_cancelled_call_stops_its_search_and_frees_the_thread_for_the_next(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate(hold_until_stopped=True)
    with _served(db, gate, monkeypatch) as served:
        call = served.stub.Analyse.future(LONG)
        assert gate.searching.wait(BOUND)  # the search is under way, looking at its stop
        call.cancel()
        assert gate.ended.wait(BOUND), "the search went on after its call was cancelled"
        assert gate.stopped == [True]
        gate.hold_until_stopped = False
        (deal,) = served.stub.Analyse(QUICK, timeout=BOUND).deals  # the one thread is free
        assert deal.solved and gate.stopped == [True, False]
        assert _until(lambda: served.server.analyser.in_flight == 0)


def test_an_http_par_request_whose_client_goes_away_stops_its_search(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate(hold_until_stopped=True)
    with _served(db, gate, monkeypatch) as served:
        port = served.server.http_port
        assert port is not None
        path = f"/api/matches/{MATCH.match_id}/par?deal=2&budget_ms=10000"
        with socket.create_connection(("127.0.0.1", port), timeout=BOUND) as client:
            client.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
            assert gate.searching.wait(BOUND)  # the search is under way, looking at its stop
        # the client is gone (its socket closed, no answer read)
        assert gate.ended.wait(BOUND), "the search went on after its client went away"
        assert gate.stopped == [True]
        assert _until(lambda: served.server.analyser.in_flight == 0)
        gate.hold_until_stopped = False
        status, body = served.get(f"/api/matches/{MATCH.match_id}/par?deal=1&from_trick=12")
        assert status == 200 and body["deals"][0]["solved"], body  # the one thread is free
        assert gate.stopped == [True, False]


def test_a_call_past_its_deadline_stops_its_search_and_frees_the_thread(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate(hold_until_stopped=True)
    with _served(db, gate, monkeypatch) as served:
        # The search holds until stopped: whenever the deadline passes, it is still running
        # (or, on a machine slow to start it, still waiting: dropped from the queue then).
        with pytest.raises(grpc.RpcError) as late:
            served.stub.Analyse(LONG, timeout=2.0)
        assert _status(late.value)[0] == grpc.StatusCode.DEADLINE_EXCEEDED
        assert _until(lambda: served.server.analyser.in_flight == 0)
        assert gate.stopped in ([True], [])
        gate.hold_until_stopped = False
        assert served.stub.Analyse(QUICK, timeout=BOUND).deals[0].solved


def test_a_waiting_call_that_is_cancelled_never_searches(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate(hold_start=True)
    with _served(db, gate, monkeypatch) as served:
        analyser = served.server.analyser
        searching = served.stub.Analyse.future(QUICK)
        assert _until(lambda: gate.started == [1])
        waiting = served.stub.Analyse.future(LONG)
        assert _until(lambda: analyser.in_flight == 2)
        waiting.cancel()
        assert _until(lambda: analyser.in_flight == 1)  # its place is given back at once
        gate.opened.set()
        assert searching.result(timeout=BOUND).deals[0].solved
        assert _until(lambda: analyser.in_flight == 0)
        assert gate.started == [1]  # deal 2 (the cancelled call's) never searched


# -- kingrec serve ---------------------------------------------------------------------------


def test_kingrec_serve_takes_the_number_of_waiting_calls(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    configs: list[ServiceConfig] = []

    async def run_server(config: ServiceConfig, ready: object) -> None:
        configs.append(config)

    monkeypatch.setattr(serve_command, "run_server", run_server)
    runner = CliRunner()
    db = str(tmp_path / "k.duckdb")
    done = runner.invoke(serve_command.serve, ["--db", db, "--analyse-queue", "0"])
    assert done.exit_code == 0, done.output
    default = runner.invoke(serve_command.serve, ["--db", db])
    assert default.exit_code == 0, default.output
    assert [c.analyse.waiting for c in configs] == [0, WAITING_CALLS]
    bad = runner.invoke(serve_command.serve, ["--db", db, "--analyse-queue", "-1"])
    assert bad.exit_code == 2 and "--analyse-queue" in bad.output
    helped = runner.invoke(serve_command.serve, ["--help"])
    assert "--analyse-queue" in helped.output and "ANALYSES_BUSY" in helped.output
