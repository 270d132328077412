"""``kingrec serve`` as people run it: a process on a free port, with a token, called by
generic gRPC tools (health, reflection), by the kingrec commands, and stopped with SIGTERM
while streams are open. Also TLS."""

from __future__ import annotations

import json
import os
import queue
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from kingrec.records import open_records
from kingrec.store import Store
from kingrec.v1 import service_pb2 as svc
from kingrec_cli.client import pick_match
from kingrec_cli.publish import live_requests
from kingrec_service import ServiceConfig, running_server
from kingrec_service._pb.service_pb2_grpc import KingrecServiceStub

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
CLASSIC = SAMPLES / "valid" / "classic.krec"
KINGREC = Path(sys.executable).parent / "kingrec"
TOKEN = "s3cret-token"
SERVICE = "kingrec.v1.KingrecService"


class Served:
    def __init__(self, process: subprocess.Popen[str], port: int, db: Path) -> None:
        self.process = process
        self.port = port
        self.address = f"127.0.0.1:{port}"
        self.db = db


def start_server(db: Path, *options: str) -> Served:
    """``kingrec serve`` on a free port over the store ``db``, once it takes calls."""
    process = subprocess.Popen(
        [str(KINGREC), "serve", "--port", "0", "--db", str(db), *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert "serving on 127.0.0.1:" in line, line + (process.stderr.read() if process.stderr else "")
    return Served(process, int(line.split("127.0.0.1:")[1].split()[0]), db)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    db = tmp_path_factory.mktemp("served") / "kingrec.duckdb"
    served = start_server(db, "--token", TOKEN, "--grace", "5")
    try:
        yield served
    finally:
        if served.process.poll() is None:
            served.process.kill()
        served.process.communicate()  # closes the pipes too


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KINGREC), *args], capture_output=True, text=True, check=False, timeout=60
    )


def _code(error: grpc.RpcError) -> grpc.StatusCode:
    assert isinstance(error, grpc.Call)
    return error.code()


def test_health_says_serving_and_reflection_lists_the_service(served: Served) -> None:
    with grpc.insecure_channel(served.address) as channel:
        health: Any = health_pb2_grpc.HealthStub(channel)  # the stubs type no methods
        for name in ("", SERVICE):
            answer = health.Check(health_pb2.HealthCheckRequest(service=name))
            assert answer.status == health_pb2.HealthCheckResponse.SERVING
        reflect: Any = reflection_pb2_grpc.ServerReflectionStub(channel)
        requests = [
            reflection_pb2.ServerReflectionRequest(list_services=""),
            reflection_pb2.ServerReflectionRequest(file_containing_symbol=SERVICE),
        ]
        listed, files = list(reflect.ServerReflectionInfo(iter(requests)))
    names = {s.name for s in listed.list_services_response.service}
    assert {SERVICE, "grpc.health.v1.Health"} <= names
    protos = files.file_descriptor_response.file_descriptor_proto
    assert any(b"kingrec/v1/service.proto" in p for p in protos)


def test_publish_needs_the_token_and_validate_does_not(served: Served) -> None:
    with grpc.insecure_channel(served.address) as channel:
        stub = KingrecServiceStub(channel)
        start = svc.PublishRequest(resume="anything")
        for metadata in [(), (("authorization", "Bearer wrong"),), (("authorization", TOKEN),)]:
            with pytest.raises(grpc.RpcError) as caught:
                stub.Publish(iter([start]), metadata=metadata)
            assert _code(caught.value) == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.RpcError) as caught:
            stub.Publish(iter([start]), metadata=(("authorization", f"Bearer {TOKEN}"),))
        assert _code(caught.value) == grpc.StatusCode.NOT_FOUND  # past the token
        record = svc.Record(krec=CLASSIC.read_bytes()[28:])  # not the right length: undecodable
        with pytest.raises(grpc.RpcError) as caught:
            stub.Validate(svc.ValidateRequest(record=record))
        assert _code(caught.value) == grpc.StatusCode.INVALID_ARGUMENT


def test_the_commands_publish_watch_and_replay_against_the_server(served: Served) -> None:
    server = ["--server", served.address]
    refused = _cli("publish", str(CLASSIC), "--fast", "--as", "cli-demo", *server)
    assert refused.returncode == 2 and "token" in refused.stderr
    published = _cli(
        "publish", str(CLASSIC), "--fast", "--as", "cli-demo", "--token", TOKEN, *server
    )
    assert published.returncode == 0, published.stderr
    assert "published match cli-demo: 1272 events, finished" in published.stdout
    watched = _cli("watch", "cli-demo", *server)
    assert watched.returncode == 0, watched.stderr
    assert "Match cli-demo" in watched.stdout and "Match over: complete" in watched.stdout
    replayed = _cli("replay", str(CLASSIC), "--fast", "--seat", "2", "--deal", "20", *server)
    assert replayed.returncode == 0, replayed.stderr
    assert "Deal 20" in replayed.stdout and "Deal 19" not in replayed.stdout
    missing = _cli("watch", "no-such-match", *server)
    assert missing.returncode == 2 and "NOT_FOUND" in missing.stderr
    unreachable = _cli("replay", str(CLASSIC), "--fast", "--server", "127.0.0.1:1")
    assert unreachable.returncode == 2 and "cannot reach" in unreachable.stderr


def test_publish_resume_goes_on_where_a_lost_publisher_stopped_and_watch_says_it_was_gone(
    served: Served,
) -> None:
    server, token = ["--server", served.address], ["--token", TOKEN]
    match = pick_match(str(CLASSIC), None, 1)
    requests = list(live_requests(match, svc.Pace(), "cli-lost"))
    with grpc.insecure_channel(served.address) as channel:
        lost = KingrecServiceStub(channel).Publish(
            iter(requests[:40]), metadata=(("authorization", f"Bearer {TOKEN}"),)
        )  # then the publisher vanishes, the match left open
    again = _cli("publish", str(CLASSIC), "--fast", "--as", "cli-lost", *token, *server)
    assert again.returncode == 2 and "ALREADY_EXISTS" in again.stderr
    assert "waiting for its publisher" in again.stderr and "--resume" in again.stderr
    anyone = _cli("publish", str(CLASSIC), "--fast", "--as", "cli-lost", "--resume", *server)
    assert anyone.returncode == 2 and "token" in anyone.stderr  # the token-holder only
    watcher = subprocess.Popen(
        [str(KINGREC), "watch", "cli-lost", *server],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    told: queue.Queue[str] = queue.Queue()
    assert watcher.stderr is not None
    stderr = watcher.stderr

    def read() -> None:
        for line in stderr:
            told.put(line)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        gone = told.get(timeout=30)  # the watch's first message: no publisher
        waiting = re.search(r"the publisher is gone: .* abandoned in (\d+) s unless", gone)
        assert waiting is not None and 0 < int(waiting.group(1)) <= 600, gone
        resumed = _cli(
            "publish", str(CLASSIC), "--fast", "--as", "cli-lost", "--resume", *token, *server
        )
        assert resumed.returncode == 0, resumed.stderr
        assert f"resuming match cli-lost after event {lost.events}: 40 of" in resumed.stdout
        assert "published match cli-lost: 1272 events, finished" in resumed.stdout
        stdout, _ = watcher.communicate(timeout=60)
    finally:
        if watcher.poll() is None:
            watcher.kill()
            watcher.communicate()
        reader.join(30)
    assert watcher.returncode == 0
    assert "the publisher is back" in told.get(timeout=1)
    assert stdout.count("Deal 1 ") == 1 and "Match over: complete" in stdout
    with grpc.insecure_channel(served.address) as channel:
        events = [
            e.seq
            for r in KingrecServiceStub(channel).Watch(svc.WatchRequest(match_id="cli-lost"))
            for e in r.events
        ]
    assert events == list(range(1, 1273))


def test_publish_abandon_gives_up_a_match_left_without_its_publisher(served: Served) -> None:
    server, token = ["--server", served.address], ["--token", TOKEN]
    match = pick_match(str(CLASSIC), None, 1)
    requests = list(live_requests(match, svc.Pace(), "cli-given-up"))
    with grpc.insecure_channel(served.address) as channel:
        stub = KingrecServiceStub(channel)
        stub.Publish(iter(requests[:10]), metadata=(("authorization", f"Bearer {TOKEN}"),))
        both = _cli("publish", str(CLASSIC), "--as", "cli-given-up", "--resume", "--abandon")
        assert both.returncode == 2 and "opposite" in both.stderr
        given_up = _cli("publish", str(CLASSIC), "--as", "cli-given-up", "--abandon", *token,
                        *server)  # fmt: skip
        assert given_up.returncode == 0, given_up.stderr
        assert "abandoned match cli-given-up:" in given_up.stdout
        assert "finished" in given_up.stdout
        events = [e for r in stub.Watch(svc.WatchRequest(match_id="cli-given-up"))
                  for e in r.events]  # fmt: skip
        ended = events[-1].match_ended
        assert ended.status == 2 and ended.reason == "given up by its publisher"  # ABANDONED
        stored = stub.GetMatch(svc.GetMatchRequest(match_id="cli-given-up")).match
        assert stored.status == 2 and len(stored.deals) == 1


def test_the_commands_upload_and_query_against_the_server(served: Served) -> None:
    server = ["--server", served.address]
    invalid = str(SAMPLES / "invalid" / "must-follow-suit.krec")
    refused = _cli("upload", str(CLASSIC), *server)
    assert refused.returncode == 2 and "UNAUTHENTICATED" in refused.stderr
    uploaded = _cli("upload", str(CLASSIC), invalid, "--token", TOKEN, *server)
    assert uploaded.returncode == 1, uploaded.stderr  # an invalid record among them
    assert "invalid-must-follow-suit: stored invalid (MUST_FOLLOW_SUIT" in uploaded.stdout
    assert f"{CLASSIC}, frame 1, byte 12: classic-0: stored" in uploaded.stdout
    assert "3 record(s)" in uploaded.stderr and "2 stored, 1 stored invalid" in uploaded.stderr
    again = _cli("upload", str(CLASSIC), "--token", TOKEN, "--quiet", *server)
    assert again.returncode == 0 and "2 duplicate(s)" in again.stderr and not again.stdout
    sql = "SELECT match_id, valid FROM matches WHERE source <> 'live' ORDER BY match_key"
    as_csv = _cli("query", sql, "--format", "csv", *server)
    assert as_csv.returncode == 0, as_csv.stderr
    assert as_csv.stdout.splitlines() == [
        "match_id,valid", "classic-0,true", "classic-1,true", "invalid-must-follow-suit,false",
    ]  # fmt: skip
    as_json = _cli("query", sql, "--format", "json", "--max-rows", "1", *server)
    assert json.loads(as_json.stdout) == {"match_id": "classic-0", "valid": True}
    assert "showing the first 1 row(s)" in as_json.stderr
    table = _cli(
        "query",
        "SELECT count(*) AS uploaded FROM matches WHERE source <> 'live'",
        "--format",
        "table",
        *server,
    )
    lines = table.stdout.splitlines()
    assert any("uploaded" in line for line in lines) and any(
        line.strip().strip("│ ") == "3" for line in lines
    ), table.stdout
    hostile = _cli("query", f"SELECT * FROM read_csv('{CLASSIC}')", *server)
    assert hostile.returncode == 2 and "PERMISSION_DENIED" in hostile.stderr
    assert "Traceback" not in hostile.stderr
    stored = _cli("replay", "classic-1", "--fast", *server)
    assert stored.returncode == 0 and "Match classic-1" in stored.stdout
    with grpc.insecure_channel(served.address) as channel:
        stub = KingrecServiceStub(channel)
        page = stub.ListMatches(svc.ListMatchesRequest(valid=False))
        assert [m.match_id for m in page.matches] == ["invalid-must-follow-suit"]
        got = stub.GetMatch(svc.GetMatchRequest(match_id="classic-1")).match
        assert got == pick_match(str(CLASSIC), "classic-1", None)


@pytest.mark.parametrize(
    ("options", "env", "said"),
    [
        (["--token", ""], {}, "the token is empty"),
        (["--token="], {}, "the token is empty"),
        ([], {"KINGREC_TOKEN": ""}, "$KINGREC_TOKEN is set but empty"),
        (["--token", "two words"], {}, "visible ASCII without spaces"),
        (["--token", "jeton-ş"], {}, "visible ASCII without spaces"),
    ],
    ids=["empty", "empty-equals", "empty-variable", "space", "non-ascii"],
)
def test_an_empty_or_unsendable_token_is_a_usage_error_and_nothing_starts(
    tmp_path: Path, options: list[str], env: dict[str, str], said: str
) -> None:
    db = tmp_path / "kingrec.duckdb"
    environ = {k: v for k, v in os.environ.items() if k != "KINGREC_TOKEN"}
    result = subprocess.run(
        [str(KINGREC), "serve", "--port", "0", "--db", str(db), *options],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={**environ, **env},
    )
    assert result.returncode == 2, result.stderr
    assert said in result.stderr and "--token" in result.stderr
    assert "Traceback" not in result.stderr and "serving" not in result.stdout
    assert not db.exists()


def test_without_a_token_the_startup_line_says_anyone_can_upload_and_publish(
    tmp_path: Path,
) -> None:
    environ = {k: v for k, v in os.environ.items() if k != "KINGREC_TOKEN"}
    process = subprocess.Popen(
        [str(KINGREC), "serve", "--port", "0", "--db", str(tmp_path / "kingrec.duckdb")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environ,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert "no token: anyone can Upload and Publish" in line, line
        address = line.split("serving on ")[1].split()[0]
        published = _cli("publish", str(CLASSIC), "--fast", "--as", "open", "--server", address)
        assert published.returncode == 0, published.stderr  # as the line says
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)
    with_token = start_server(tmp_path / "other.duckdb", "--token", TOKEN)
    with_token.process.send_signal(signal.SIGTERM)
    stdout, _ = with_token.process.communicate(timeout=30)
    assert "no token" not in stdout


def test_an_upload_tells_each_unreadable_file_as_validate_does_and_stores_the_rest_whole(
    tmp_path: Path,
) -> None:
    """Once ``UNKNOWN: Exception iterating requests!``, part of the good files stored, and
    ``Task exception was never retrieved … StopAsyncIteration`` in the server's log."""
    served = start_server(tmp_path / "kingrec.duckdb")
    (tmp_path / "no-records").mkdir()
    (tmp_path / "no-records" / "notes.txt").write_text("not a record")
    noise = tmp_path / "noise.krec"
    noise.write_bytes(random.Random(15).randbytes(5000))
    short = SAMPLES / "valid" / "short.krec"
    files = [str(CLASSIC), str(tmp_path / "nosuch.krec"), str(tmp_path / "no-records"),
             str(noise), str(short)]  # fmt: skip
    try:
        uploaded = _cli("upload", *files, "--server", served.address)
        again = _cli("upload", str(CLASSIC), "--server", served.address)
        with grpc.insecure_channel(served.address) as channel:  # a client that gives up
            stub = KingrecServiceStub(channel)

            def requests() -> Iterator[svc.UploadRequest]:
                with open_records(str(CLASSIC)) as records:  # stored already: a duplicate
                    first = next(records.raw_frames())
                assert isinstance(first, tuple)
                yield svc.UploadRequest(source="x", records=[svc.Record(krec=first[1])])
                raise OSError("the client's disk went away")

            with pytest.raises(grpc.RpcError):
                list(stub.Upload(requests()))
            listed = stub.ListMatches(svc.ListMatchesRequest())  # and the server serves on
            assert [m.match_id for m in listed.matches] == ["classic-0", "classic-1", "short-0",
                                                            "short-1"]  # fmt: skip
    finally:
        served.process.send_signal(signal.SIGTERM)
        _, log = served.process.communicate(timeout=30)
    validated = _cli("validate", *files)
    told = [line for line in uploaded.stderr.splitlines() if line.startswith("kingrec: error: ")]
    assert told == validated.stderr.splitlines() and len(told) == 3, uploaded.stderr
    assert uploaded.returncode == 2 and "Exception iterating" not in uploaded.stderr
    assert uploaded.stderr.splitlines()[-1] == (
        f"uploaded 4 record(s) to {served.address}: 4 stored, 0 stored invalid, 0 duplicate(s), "
        "0 rejected; 3 unreadable file(s)"
    )
    assert f"{short}, frame 2, byte" in uploaded.stdout  # the file after the bad ones
    with Store.open(str(served.db), read_only=True) as store:
        ids = store.con.execute("SELECT match_id FROM matches ORDER BY match_key").fetchall()
    assert [i for (i,) in ids] == ["classic-0", "classic-1", "short-0", "short-1"]
    # a duplicate names the match it is (its verdict once carried an empty match_id)
    assert again.returncode == 0 and again.stdout.splitlines() == [
        f"{CLASSIC}, frame 1, byte 12: classic-0: duplicate",
        f"{CLASSIC}, frame 2, byte 4821: classic-1: duplicate",
    ]  # fmt: skip
    assert "Task exception" not in log and "Traceback" not in log, log


def test_watch_flush_sets_how_long_events_gather_before_viewers_get_them(tmp_path: Path) -> None:
    """``kingrec serve --watch-flush MS``: the first event after a quiet spell reaches a viewer
    at once, the events published within MS after it together, MS later."""
    served = start_server(tmp_path / "kingrec.duckdb", "--watch-flush", "1000")
    match = pick_match(str(CLASSIC), "classic-1", None)
    requests = list(live_requests(match, svc.Pace(), "flush"))
    came: list[tuple[float, list[int]]] = []
    try:
        with grpc.insecure_channel(served.address) as channel:
            stub = KingrecServiceStub(channel)
            stub.Publish(iter(requests[:1]))

            def view() -> None:
                for response in stub.Watch(svc.WatchRequest(match_id="flush")):
                    if not (response.events or response.snapshot):
                        continue  # the publisher came or went: not an event
                    came.append((time.monotonic(), [e.seq for e in response.events]))
                    if len(came) == 3:
                        return

            viewer = threading.Thread(target=view)
            viewer.start()
            time.sleep(1.2)  # a quiet spell
            stub.Publish(iter([svc.PublishRequest(resume="flush"), *requests[1:4]]))
            viewer.join(10)
    finally:
        served.process.send_signal(signal.SIGTERM)
        served.process.communicate(timeout=30)
    (_, snapshot), (dealt_at, dealt), (played_at, played) = came
    assert snapshot == [1]  # match_started
    assert dealt == [2, 3]  # deal_started, contract_chosen: at once
    assert played == [4, 5] and played_at - dealt_at >= 0.9  # two cards: together, later


def test_a_viewer_that_never_reads_falls_behind_alone_and_is_told_where_to_resume(
    tmp_path: Path,
) -> None:
    """``kingrec serve`` as it ships (a viewer may lag 1,024 events). One viewer's connection
    takes 1 KiB before its reader must read, and it reads nothing after its snapshot while a
    whole match (1,272 events, ~34 KB: far over that window) is published. The publisher
    finishes and the other viewers get every event while it still has read nothing; when it
    reads at last it gets what was in flight, then FELL_BEHIND with where to resume, and
    resuming there gives the rest without a gap or a repeat."""
    served = start_server(tmp_path / "kingrec.duckdb")
    match = pick_match(str(CLASSIC), None, 1)
    requests = list(live_requests(match, svc.Pace(), "slow"))
    try:
        with grpc.insecure_channel(served.address) as channel:
            stub = KingrecServiceStub(channel)
            stub.Publish(iter(requests[:1]))  # match_started; the match waits for the rest
            options = [("grpc.http2.lookahead_bytes", 1024), ("grpc.http2.bdp_probe", 0)]
            with grpc.insecure_channel(served.address, options=options) as slow_channel:
                slow = KingrecServiceStub(slow_channel).Watch(svc.WatchRequest(match_id="slow"))
                assert [e.seq for e in next(slow).events] == [1]  # in; then it stops reading
                watching = [threading.Event(), threading.Event()]
                seen: list[list[int]] = [[], []]

                def view(n: int) -> None:
                    for response in stub.Watch(svc.WatchRequest(match_id="slow")):
                        seen[n] += [e.seq for e in response.events]
                        watching[n].set()  # the snapshot came: this viewer is in

                viewers = [threading.Thread(target=view, args=(n,)) for n in range(2)]
                for viewer in viewers:
                    viewer.start()
                assert all(w.wait(30) for w in watching)
                published = stub.Publish.future(
                    iter([svc.PublishRequest(resume="slow"), *requests[1:]])
                )
                response = published.result(timeout=60)  # while the slow one reads nothing
                for viewer in viewers:
                    viewer.join(60)
                total = response.events
                assert response.finished and total == 1272
                assert seen == [list(range(1, total + 1))] * 2
                got = [1]
                with pytest.raises(grpc.RpcError) as caught:
                    for batch in slow:  # reading at last
                        got += [e.seq for e in batch.events]
            error = caught.value
            assert isinstance(error, grpc.Call)
            assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            trailers = dict(error.trailing_metadata() or ())
            assert trailers["kingrec-code"] == "FELL_BEHIND"
            resume_from = int(trailers["kingrec-resume-from"])
            assert got == list(range(1, resume_from + 1)) and resume_from < total - 1024
            assert f"resume_from={resume_from}" in (error.details() or "")
            rest = stub.Watch(svc.WatchRequest(match_id="slow", resume_from=resume_from))
            assert got + [e.seq for r in rest for e in r.events] == list(range(1, total + 1))
    finally:
        served.process.send_signal(signal.SIGTERM)
        _, stderr = served.process.communicate(timeout=30)
    assert served.process.returncode == 0 and "Traceback" not in stderr, stderr


def test_sigterm_ends_streams_cleanly_stores_live_matches_and_exits(served: Served) -> None:
    """Runs last in this module: it stops the server."""
    outcome: dict[str, object] = {}
    with grpc.insecure_channel(served.address) as channel:
        stub = KingrecServiceStub(channel)
        # bad input first: none of it may leave a traceback in the log
        raw: grpc.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
            f"/{SERVICE}/Validate"
        )
        for junk in (b"\xff\x00\xff", b"x" * (5 << 20)):
            with pytest.raises(grpc.RpcError):
                raw(junk)
        open_stream = threading.Event()

        def publisher() -> Iterator[svc.PublishRequest]:
            requests = live_requests(pick_match(str(CLASSIC), None, 1), svc.Pace(), "stopping")
            yield from (next(requests) for _ in range(5))  # start, deal 1, three cards
            open_stream.set()
            time.sleep(30)  # the server stops long before

        def publish() -> None:
            try:
                stub.Publish(publisher(), metadata=(("authorization", f"Bearer {TOKEN}"),))
            except grpc.RpcError as exc:
                outcome["publish"] = exc

        def watch() -> None:
            events = []
            for response in stub.Watch(svc.WatchRequest(match_id="stopping")):
                events += response.events
            outcome["watch"] = events

        def replay() -> None:
            slow = svc.ReplayRequest(
                record=svc.Record(krec=CLASSIC.read_bytes()[12 + 16 : 12 + 16 + _first_len()]),
                pace=svc.Pace(fixed_delay_ms=50),
            )
            try:
                for _ in stub.Replay(slow):
                    pass
            except grpc.RpcError as exc:
                outcome["replay"] = exc

        threads = [threading.Thread(target=publish)]
        threads[0].start()
        assert open_stream.wait(10)
        time.sleep(0.3)
        threads += [threading.Thread(target=watch), threading.Thread(target=replay)]
        for t in threads[1:]:
            t.start()
        time.sleep(0.5)
        served.process.send_signal(signal.SIGTERM)
        stdout, stderr = served.process.communicate(timeout=20)
        for t in threads:
            t.join(10)
    assert served.process.returncode == 0, stderr
    assert "kingrec: stopped" in stdout
    assert "Traceback" not in stderr and "Exception" not in stderr, stderr
    watched = outcome["watch"]
    assert isinstance(watched, list) and watched[-1].HasField("match_ended")
    assert watched[-1].match_ended.status == 2  # MATCH_STATUS_ABANDONED
    assert watched[-1].match_ended.reason == "the server shut down"
    for name in ("publish", "replay"):
        error = outcome[name]
        assert isinstance(error, grpc.RpcError) and _code(error) == grpc.StatusCode.UNAVAILABLE
    # The publisher is told the last event its messages made: match_started, deal_started,
    # contract_chosen and three cards (the abandonment's events are the server's own).
    trailers = dict(outcome["publish"].trailing_metadata())  # type: ignore[attr-defined]
    assert trailers["kingrec-code"] == "SHUTTING_DOWN"
    assert trailers["kingrec-resume-from"] == "6"
    assert [e.seq for e in watched] == list(range(1, len(watched) + 1))
    assert [e.WhichOneof("event") for e in watched[6:]] == ["deal_ended", "match_ended"]
    assert "replay again from start_deal=" in str(outcome["replay"].details())  # type: ignore[attr-defined]
    with Store.open(str(served.db), read_only=True) as store:  # the server let go of it
        rows = store.con.execute(
            "SELECT CAST(status AS VARCHAR), deals FROM matches WHERE match_id = 'stopping'"
        ).fetchall()
    assert rows == [("ABANDONED", 1)]


def _first_len() -> int:
    """The payload length of the first frame of classic.krec."""
    header = CLASSIC.read_bytes()[12:28]
    return int.from_bytes(header[4:8], "little")


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, bytes]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: no certificate to test TLS with")
    folder = tmp_path_factory.mktemp("tls")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
         "-keyout", str(folder / "key.pem"), "-out", str(folder / "cert.pem")],
        check=True, capture_output=True,
    )  # fmt: skip
    return (folder / "cert.pem").read_bytes(), (folder / "key.pem").read_bytes()


def test_tls_serves_clients_that_trust_the_certificate_only(
    certificate: tuple[bytes, bytes],
) -> None:
    cert, key = certificate
    payload = CLASSIC.read_bytes()[28 : 28 + _first_len()]
    request = svc.ValidateRequest(record=svc.Record(krec=payload))
    with running_server(ServiceConfig(tls_cert=cert, tls_key=key)) as (_, port):
        credentials = grpc.ssl_channel_credentials(root_certificates=cert)
        with grpc.secure_channel(f"localhost:{port}", credentials) as channel:
            assert KingrecServiceStub(channel).Validate(request).report.valid
        with grpc.insecure_channel(f"localhost:{port}") as channel:
            with pytest.raises(grpc.RpcError) as caught:
                KingrecServiceStub(channel).Validate(request, timeout=5)
            assert _code(caught.value) == grpc.StatusCode.UNAVAILABLE


# -- uploads cut off midway ------------------------------------------------------------------

# A client that sends a file's records 40 to a message and prints each answer as it comes,
# held after its third message until its standard input closes: the test kills it (or the
# server) once those three are acknowledged, with the rest certainly unsent.
SLOW_CLIENT = """
import sys, grpc
from kingrec.records import open_records
from kingrec.v1 import service_pb2 as svc
from kingrec_service._pb.service_pb2_grpc import KingrecServiceStub

address, path = sys.argv[1:3]
with open_records(path) as records:
    payloads = [p for run in records.raw_frame_runs() for p in run.payloads]

def requests():
    for i in range(0, len(payloads), 40):
        yield svc.UploadRequest(records=[svc.Record(krec=p) for p in payloads[i : i + 40]])
        if i == 80:
            sys.stdin.readline()

stub = KingrecServiceStub(grpc.insecure_channel(address))
for answer in stub.Upload(requests()):
    print(len(answer.verdicts), flush=True)
"""
MATCHES = 480  # 12 messages


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("many") / "many.krec"
    made = _cli("simulate", "--preset", "short", "--matches", str(MATCHES), "-o", str(path))
    assert made.returncode == 0, made.stderr
    return path


def _acknowledged(client: subprocess.Popen[str], messages: int) -> int:
    """Read the client's answers until ``messages`` came; the records they acknowledged."""
    assert client.stdout is not None
    return sum(int(client.stdout.readline()) for _ in range(messages))


def _check_whole(db: Path) -> int:
    """The store holds whole records only, each once; how many."""
    with Store.open(str(db), read_only=True) as store:
        [(matches, distinct, records, torn)] = store.con.execute(
            "SELECT count(*), count(DISTINCT content_hash), (SELECT count(*) FROM records), "
            "count(*) FILTER (WHERE deals <> (SELECT count(*) FROM deals d "
            "WHERE d.match_key = m.match_key)) FROM matches m"
        ).fetchall()
    assert matches == distinct == records and torn == 0
    return int(matches)


@pytest.mark.parametrize("killed", ["client", "server"])
def test_an_upload_killed_midway_then_sent_again_loses_nothing_and_stores_nothing_twice(
    tmp_path: Path, many: Path, killed: str
) -> None:
    db = tmp_path / "cut.duckdb"
    served = start_server(db)
    client = subprocess.Popen(
        [sys.executable, "-c", SLOW_CLIENT, served.address, str(many)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        acknowledged = _acknowledged(client, 3)
        (client if killed == "client" else served.process).kill()
        client.communicate(timeout=20)
    finally:
        for process in (client, served.process):  # the server too, to read the file
            if process.poll() is None:
                process.kill()
            process.communicate()
    stored = _check_whole(db)  # what a kill -9 left: whole transactions, every record once
    assert acknowledged == 120 and acknowledged <= stored < MATCHES
    served = start_server(db)
    try:
        again = _cli("upload", str(many), "--quiet", "--server", served.address)
        served.process.send_signal(signal.SIGTERM)
        served.process.communicate(timeout=30)
    finally:
        if served.process.poll() is None:
            served.process.kill()
            served.process.communicate()
    assert again.returncode == 0, again.stderr
    assert f"{MATCHES - stored} stored, 0 stored invalid, {stored} duplicate(s)" in again.stderr
    assert _check_whole(db) == MATCHES
