"""The HTTP API of ``kingrec serve --http`` (docs/HTTP.md), called as a browser or a program
calls it: a real server on a free port (the factory in a thread of its own, the same one
``kingrec serve`` runs), a plain HTTP client (urllib and raw sockets), and answers held to
what the gRPC service and the CLI give for the same thing."""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format

from kingrec.records import Record, read_records
from kingrec.store import Store
from kingrec.v1 import record_pb2 as pb
from kingrec.v1 import service_pb2 as svc
from kingrec_cli.publish import live_requests
from kingrec_service import ServiceConfig, running_server
from kingrec_service._pb.service_pb2_grpc import KingrecServiceStub
from kingrec_service.http import CSP, MAX_BODY_BYTES
from kingrec_service.live import LiveConfig

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
CLASSIC = SAMPLES / "valid" / "classic.krec"
KINGREC = Path(sys.executable).parent / "kingrec"
HOSTILE_NAME = "</script><img src=x onerror=alert(1)>\u202eevil"


def _matches(path: Path) -> list[pb.Match]:
    return [r.match for r in read_records(str(path)) if isinstance(r, Record)]


class Web:
    """A running server: its gRPC stub and its HTTP base URL."""

    def __init__(self, grpc_port: int, http_port: int, db: Path | None) -> None:
        self.base = f"http://127.0.0.1:{http_port}"
        self.port = http_port
        self.channel = grpc.insecure_channel(f"127.0.0.1:{grpc_port}")
        self.stub = KingrecServiceStub(self.channel)
        self.db = db
        self.copy = None if db is None else db.with_name("copy.duckdb")

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, Any, bytes]:
        """Status, headers and body of a GET (errors included)."""
        request = urllib.request.Request(self.base + path, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.headers, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.headers, error.read()

    def json(self, path: str, headers: dict[str, str] | None = None) -> Any:
        status, _, body = self.get(path, headers)
        assert status == 200, body
        return json.loads(body)

    def post(self, path: str, body: bytes) -> tuple[int, Any, bytes]:
        request = urllib.request.Request(self.base + path, data=body, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, response.headers, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.headers, error.read()


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Web]:
    db = tmp_path_factory.mktemp("web") / "kingrec.duckdb"
    hostile = _matches(CLASSIC)[0]
    hostile.match_id = "<script>alert(1)</script>"
    hostile.players[0].name = HOSTILE_NAME
    with Store.open(str(db)) as store:
        for path in sorted((SAMPLES / "valid").glob("*.krec")):
            store.ingest_file(str(path))
        store.ingest_file(str(SAMPLES / "invalid" / "must-follow-suit.krec"))
        store.ingest_matches([hostile], source="hostile")
    # the server owns its store while it runs: the CLI reads a copy of it
    shutil.copy(db, db.with_name("copy.duckdb"))
    config = ServiceConfig(db=str(db), http_host="127.0.0.1", live=LiveConfig(flush=0.005))
    with running_server(config) as (server, port):
        assert server.http_port is not None
        served = Web(port, server.http_port, db)
        yield served
        served.channel.close()


@pytest.fixture(scope="module")
def bare() -> Iterator[Web]:
    """A server without a store, with CORS for one origin."""
    config = ServiceConfig(http_host="127.0.0.1", http_cors="https://viewer.example")
    with running_server(config) as (server, port):
        assert server.http_port is not None
        served = Web(port, server.http_port, None)
        yield served
        served.channel.close()


def _error(body: bytes) -> dict[str, Any]:
    error = json.loads(body)["error"]
    assert set(error) >= {"code", "message"}
    return error  # type: ignore[no-any-return]


# -- headers, errors, hostile paths -------------------------------------------------------------


def test_every_response_carries_the_security_headers_and_no_cors(web: Web) -> None:
    for path in ("/", "/static/index.html", "/api/matches", "/api/nothing", "/api/matches/x"):
        status, headers, _ = web.get(path)
        assert status in (200, 404), path
        assert headers["Content-Security-Policy"] == CSP, path
        assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP
        assert headers["X-Content-Type-Options"] == "nosniff", path
        assert "Access-Control-Allow-Origin" not in headers, path


def test_cors_is_one_origin_and_only_when_asked(bare: Web) -> None:
    status, headers, _ = bare.get("/api/live")
    assert status == 200
    assert headers["Access-Control-Allow-Origin"] == "https://viewer.example"


def test_errors_are_json_with_the_kingrec_code_and_the_status_of_the_one_table(
    web: Web, bare: Web
) -> None:
    status, headers, body = web.get("/api/matches/no-such-match")
    assert (status, _error(body)["code"]) == (404, "MATCH_NOT_FOUND")
    assert headers["Content-Type"] == "application/json; charset=utf-8"
    status, _, body = web.get("/api/matches?limit=lots")
    assert (status, _error(body)["code"]) == (400, "BAD_REQUEST")
    assert "limit" in _error(body)["message"]
    status, _, body = web.get("/api/matches?status=NOT_A_STATUS")
    assert (status, _error(body)["code"]) == (400, "BAD_REQUEST")
    status, _, body = web.get("/api/matches/classic-0/replay?seat=4")
    assert (status, _error(body)["code"]) == (400, "BAD_REQUEST")
    assert "seat 4 does not exist" in _error(body)["message"]
    status, _, body = bare.get("/api/matches")
    assert (status, _error(body)["code"]) == (409, "NO_STORE")
    status, _, body = web.post("/api/matches", b"")
    assert (status, _error(body)["code"]) == (405, "METHOD_NOT_ALLOWED")
    status, _, body = web.get("/api/stats/no-such-question")
    assert (status, _error(body)["code"]) == (404, "NOT_FOUND")


@pytest.mark.parametrize(
    "match_id",
    [
        "x" * 10_000,
        "<script>alert(1)</script>x",
        "../../../../etc/passwd",
        "..%2F..%2Fpyproject.toml",
        "a%00b",
        "\u202egnp.exe",
        "%ZZ",
    ],
    ids=["10000-chars", "script", "dot-dot", "encoded-slash", "nul", "rtl-override", "bad-escape"],
)
def test_a_hostile_match_id_gets_a_coded_404_never_a_traceback(web: Web, match_id: str) -> None:
    for suffix in ("", "/report", "/replay"):
        path = "/api/matches/" + urllib.parse.quote(match_id, safe="%/") + suffix
        status, headers, body = web.get(path)
        assert status == 404, (path[:80], body[:200])
        assert _error(body)["code"] in ("MATCH_NOT_FOUND", "NOT_FOUND")
        assert b"Traceback" not in body and b"<" not in body
        assert headers["Content-Security-Policy"] == CSP


@pytest.mark.parametrize(
    "path",
    [
        "/static/../pyproject.toml",
        "/static/%2e%2e/%2e%2e/pyproject.toml",
        "/static/..%2f..%2fpyproject.toml",
        "/static/%00",
        "/static/",
        "/static/nothing.js",
        "/static/" + "a" * 10_000,
    ],
)
def test_no_static_path_reaches_a_file_outside_the_web_folder(web: Web, path: str) -> None:
    sock = socket.create_connection(("127.0.0.1", web.port), timeout=10)
    with sock:  # raw, so that no client tidies the path first
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.split()[1] in (b"404", b"400"), head[:200]
    assert b"[project]" not in body and b"Traceback" not in body
    assert b"Content-Security-Policy: " + CSP.encode() in head


def test_names_with_markup_never_appear_as_markup_in_any_answer(web: Web) -> None:
    page = web.json("/api/matches?limit=1000")
    hostile = [m for m in page["matches"] if m["source"] == "hostile"]
    assert hostile and hostile[0]["players"][0]["name"] == HOSTILE_NAME
    quoted = urllib.parse.quote("<script>alert(1)</script>", safe="")
    for path in (
        "/api/matches?limit=1000",
        f"/api/matches/{quoted}",
        f"/api/matches/{quoted}/replay",
    ):
        status, headers, body = web.get(path)
        assert status == 200
        assert body.isascii()
        assert b"<" not in body and b">" not in body and b"\xe2\x80\xae" not in body
        assert headers["Content-Type"].startswith("application/json")
    assert web.json(f"/api/matches/{quoted}")["players"][0]["name"] == HOSTILE_NAME
    _, headers, _ = web.get(f"/api/matches/{quoted}?format=krec")
    assert headers["Content-Disposition"] == 'attachment; filename="_script_alert_1___script_.krec"'


def test_a_body_over_the_limit_is_refused_with_413(web: Web) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", web.port, timeout=30)
    connection.putrequest("POST", "/api/validate")
    connection.putheader("Content-Length", str(MAX_BODY_BYTES + 1))
    connection.endheaders()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # it may answer first
        connection.send(b"\0" * (MAX_BODY_BYTES + 1))
    response = connection.getresponse()
    assert response.status == 413
    assert _error(response.read())["code"] == "BODY_TOO_LARGE"
    connection.close()


# -- stored matches -------------------------------------------------------------------------------


def _summaries(response: svc.ListMatchesResponse) -> list[dict[str, Any]]:
    return [
        json_format.MessageToDict(
            m, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
        )
        for m in response.matches
    ]


@pytest.mark.parametrize(
    ("query", "request_"),
    [
        ("", svc.ListMatchesRequest()),
        ("?preset=classic", svc.ListMatchesRequest(preset="classic")),
        ("?valid=false", svc.ListMatchesRequest(valid=False)),
        ("?status=abandoned", svc.ListMatchesRequest(status=pb.MATCH_STATUS_ABANDONED)),
        ("?player=Ay%C5%9Fe&limit=3", svc.ListMatchesRequest(player="Ayşe", limit=3)),
    ],
    ids=["all", "preset", "invalid", "status", "player"],
)
def test_the_matches_list_is_list_matches_with_the_same_filters(
    web: Web, query: str, request_: svc.ListMatchesRequest
) -> None:
    page = web.json("/api/matches" + query)
    expected = web.stub.ListMatches(request_)
    assert page["matches"] == _summaries(expected)
    assert page["next_page_token"] == expected.next_page_token
    assert page["matches"], "the filter should find something in the samples"


def test_the_matches_list_pages_through_every_match_once(web: Web) -> None:
    seen: list[str] = []
    token = ""
    for _ in range(100):
        page = web.json(f"/api/matches?limit=4&page_token={token}")
        assert len(page["matches"]) <= 4
        seen += [m["match_id"] for m in page["matches"]]
        token = page["next_page_token"]
        if not token:
            break
    everything = web.json("/api/matches?limit=1000")["matches"]
    assert seen == [m["match_id"] for m in everything]
    assert len(seen) > 8
    status, _, body = web.get("/api/matches?page_token=abc")
    assert (status, _error(body)["code"]) == (400, "BAD_REQUEST")


def test_a_match_as_json_is_the_line_kingrec_convert_writes(web: Web, tmp_path: Path) -> None:
    out = tmp_path / "classic.jsonl"
    subprocess.run([str(KINGREC), "convert", str(CLASSIC), str(out)], check=True, timeout=60)
    for line in out.read_text(encoding="utf-8").splitlines():
        converted = json.loads(line)
        assert web.json(f"/api/matches/{converted['match_id']}") == converted


def test_a_match_as_krec_is_a_file_of_the_stored_frame_byte_for_byte(
    web: Web, tmp_path: Path
) -> None:
    assert web.copy is not None
    with Store.open(str(web.copy), read_only=True) as store:
        stored = store.get_match("classic-1")
    assert stored is not None
    for path, headers in (
        ("/api/matches/classic-1?format=krec", {}),
        ("/api/matches/classic-1", {"Accept": "application/octet-stream"}),
    ):
        status, got, body = web.get(path, headers)
        assert status == 200
        assert got["Content-Type"] == "application/octet-stream"
        assert got["Content-Disposition"] == 'attachment; filename="classic-1.krec"'
        (tmp_path / "one.krec").write_bytes(body)
        assert _matches(tmp_path / "one.krec") == [pb.Match.FromString(stored)]
        assert body.endswith(stored)
    # one record of a file holding only it: the very bytes of that file
    single = SAMPLES / "valid" / "abandoned.krec"
    (match,) = _matches(single)
    status, _, body = web.get(f"/api/matches/{match.match_id}?format=krec")
    assert body == single.read_bytes()


def test_a_match_report_is_the_object_validate_json_prints_for_it(web: Web) -> None:
    sample = SAMPLES / "invalid" / "must-follow-suit.krec"
    result = subprocess.run(
        [str(KINGREC), "validate", "--json", "--all", str(sample)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    printed = json.loads(result.stdout.splitlines()[0])
    report = web.json(f"/api/matches/{urllib.parse.quote(printed['match_id'])}/report")
    assert report["file"] == printed["match_id"]
    assert {**report, "file": None} == {**printed, "file": None}
    assert report["valid"] is False and report["findings"][0]["code"] == "MUST_FOLLOW_SUIT"


# -- replays --------------------------------------------------------------------------------------

CARD_BYTES = {("card_played", "legal"), ("trick_won", "cards")}


def _as_api(event: svc.MatchEvent) -> dict[str, Any]:
    """A Replay RPC event as the API promises to write it: protobuf's JSON mapping, the card
    bytes as arrays of codes (made here from base64, independently of the server's code)."""
    out = json_format.MessageToDict(
        event, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )
    kind = event.WhichOneof("event") or ""
    body = out[kind]
    for owner, field in CARD_BYTES:
        if kind == owner:
            body[field] = list(base64.b64decode(body[field]))
    if kind == "deal_started":
        for hand in body["hands"]:
            hand["cards"] = list(base64.b64decode(hand["cards"]))
    return out


def _sse(body: bytes) -> list[tuple[str | None, str, str]]:
    """(id, event, data) of each message of an SSE body."""
    out = []
    for block in body.decode("utf-8").replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            if line and not line.startswith(":"):
                key, _, value = line.partition(": ")
                fields[key] = value
        if "data" in fields:
            out.append((fields.get("id"), fields.get("event", "message"), fields["data"]))
    return out


@pytest.mark.parametrize(
    ("query", "request_"),
    [
        ("", svc.ReplayRequest(match_id="classic-0")),
        (
            "?from_deal=3&from_trick=5",
            svc.ReplayRequest(match_id="classic-0", start_deal=3, start_trick=5),
        ),
        ("?seat=2", svc.ReplayRequest(match_id="classic-0", seat=2)),
    ],
    ids=["whole", "from-deal-trick", "one-seat"],
)
def test_replay_events_are_the_replay_rpc_events_as_json_ndjson_and_sse(
    web: Web, query: str, request_: svc.ReplayRequest
) -> None:
    expected = [_as_api(e) for response in web.stub.Replay(request_) for e in response.events]
    path = "/api/matches/classic-0/replay" + query
    assert web.json(path) == expected
    _, headers, body = web.get(path, {"Accept": "application/x-ndjson"})
    assert headers["Content-Type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in body.splitlines()]
    assert lines[:-1] == expected
    assert lines[-1]["end"]["code"] == "OK"
    _, headers, body = web.get(path, {"Accept": "text/event-stream"})
    assert headers["Content-Type"] == "text/event-stream"
    messages = _sse(body)
    assert [json.loads(data) for _, kind, data in messages if kind == "message"] == expected
    assert [int(i or 0) for i, kind, _ in messages if kind == "message"] == [
        e["seq"] for e in expected
    ]
    assert messages[-1][1] == "end" and json.loads(messages[-1][2])["code"] == "OK"


def test_a_replay_marks_the_illegal_card_as_the_rpc_does(web: Web) -> None:
    (match,) = _matches(SAMPLES / "invalid" / "must-follow-suit.krec")
    events = web.json(f"/api/matches/{urllib.parse.quote(match.match_id)}/replay")
    broke = [e["card_played"] for e in events if e.get("card_played", {}).get("broke")]
    assert broke and broke[0]["broke"] == "MUST_FOLLOW_SUIT" and broke[0]["legal"]


def test_a_paced_replay_waits_between_cards(web: Web) -> None:
    started = time.monotonic()
    status, _, body = web.get(
        "/api/matches/classic-0/replay?from_deal=20&from_trick=13&pace_ms=50",
        {"Accept": "application/x-ndjson"},
    )
    cards = sum(1 for line in body.splitlines() if b'"card_played"' in line)
    assert status == 200 and cards == 4
    assert time.monotonic() - started >= 4 * 0.05
    status, _, body = web.get("/api/matches/classic-0/replay?pace_ms=50")
    assert (status, _error(body)["code"]) == (400, "BAD_REQUEST")


# -- live -----------------------------------------------------------------------------------------


class SseReader:
    """An SSE connection read message by message, on a raw socket (as a browser keeps it)."""

    def __init__(self, port: int, path: str, headers: dict[str, str] | None = None) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.connection.request(
            "GET", path, headers={"Accept": "text/event-stream", **(headers or {})}
        )
        self.response = self.connection.getresponse()
        self.status = self.response.status

    def messages(self) -> Iterator[tuple[str | None, str, str]]:
        fields: dict[str, str] = {}
        while True:
            line = self.response.readline()
            if not line:
                return
            text = line.decode("utf-8").rstrip("\r\n")
            if text == "":
                if "data" in fields:
                    yield fields.get("id"), fields.get("event", "message"), fields["data"]
                fields = {}
            elif not text.startswith(":"):
                key, _, value = text.partition(": ")
                fields[key] = value

    def close(self) -> None:
        self.connection.close()


def _publish(web: Web, requests: list[svc.PublishRequest]) -> None:
    web.stub.Publish(iter(requests))


def test_live_matches_are_listed_and_watched_to_the_end_over_sse_and_ndjson(web: Web) -> None:
    match = _matches(CLASSIC)[1]
    requests = list(live_requests(match, svc.Pace(), "live-full"))
    publisher = threading.Thread(target=_publish, args=(web, requests[:5]))
    publisher.start()
    publisher.join()
    listed = web.json("/api/live")["matches"]
    assert [m["match_id"] for m in listed if m["match_id"] == "live-full"] == ["live-full"]
    sse = SseReader(web.port, "/api/live/live-full")
    ndjson = http.client.HTTPConnection("127.0.0.1", web.port, timeout=30)
    ndjson.request("GET", "/api/live/live-full", headers={"Accept": "application/x-ndjson"})
    lines = ndjson.getresponse()
    _publish(web, [svc.PublishRequest(resume="live-full"), *requests[5:]])
    got = list(sse.messages())
    sse.close()
    seqs = [int(i or 0) for i, kind, _ in got if kind == "message"]
    assert seqs == list(range(1, len(seqs) + 1))
    assert got[-1][1] == "end" and json.loads(got[-1][2])["code"] == "OK"
    replayed = [
        _as_api(e)
        for r in web.stub.Replay(svc.ReplayRequest(record=svc.Record(match=match)))
        for e in r.events
    ]
    events = [json.loads(data) for _, kind, data in got if kind == "message"]
    assert len(events) == len(replayed)
    for event, expected in zip(events, replayed, strict=True):
        kind = next(k for k in expected if k != "seq")
        if kind != "match_started":  # the live one has its own id and status
            assert event == expected
    streamed = [json.loads(line) for line in lines.read().splitlines()]
    ndjson.close()
    assert [e for e in streamed if "end" not in e and "publisher" not in e] == events
    assert streamed[-1]["end"]["code"] == "OK"
    # the viewer came while no publisher was there, and was told so, as Watch tells it
    notes = [json.loads(data) for _, kind, data in got if kind == "publisher"]
    assert notes and notes[0]["publisher"] == "PUBLISHER_GONE"
    assert notes[0]["abandon_in_ms"] > 0
    assert {"publisher": "PUBLISHER_GONE"} in [
        {"publisher": e["publisher"]["publisher"]} for e in streamed if "publisher" in e
    ]


def test_a_browser_reconnecting_with_last_event_id_resumes_without_gaps_or_repeats(
    web: Web,
) -> None:
    match = _matches(CLASSIC)[0]
    requests = list(live_requests(match, svc.Pace(), "live-resume"))
    _publish(web, requests[:40])
    first = SseReader(web.port, "/api/live/live-resume")
    seen: list[int] = []
    for event_id, kind, _ in first.messages():
        if kind == "publisher":  # news of the publisher, no event of the match
            continue
        assert kind == "message"
        seen.append(int(event_id or 0))
        if len(seen) == 25:
            break
    first.close()  # the connection drops mid-match
    _publish(web, [svc.PublishRequest(resume="live-resume"), *requests[40:200]])
    again = SseReader(web.port, "/api/live/live-resume", {"Last-Event-ID": str(seen[-1])})
    assert again.status == 200
    done = threading.Event()

    def finish() -> None:
        _publish(web, [svc.PublishRequest(resume="live-resume"), *requests[200:]])
        done.set()

    publisher = threading.Thread(target=finish)
    publisher.start()
    ended = None
    for event_id, kind, data in again.messages():
        if kind == "end":
            ended = json.loads(data)
            break
        if kind == "message":
            seen.append(int(event_id or 0))
    again.close()
    publisher.join()
    assert done.is_set() and ended is not None and ended["code"] == "OK"
    assert seen == list(range(1, len(seen) + 1))
    replay = web.json("/api/matches/classic-0/replay")
    assert len(seen) == len(replay)
    # ?resume_from works where no header can be set; past the end is a coded 400
    status, _, body = web.get("/api/live/live-resume?resume_from=100000")
    assert (status, _error(body)["code"]) == (400, "BAD_REQUEST")
    status, _, body = web.get("/api/live/live-resume", {"Last-Event-ID": "seven"})
    assert (status, _error(body)["code"]) == (400, "BAD_REQUEST")
    status, _, body = web.get("/api/live/no-such-live-match")
    assert (status, _error(body)["code"]) == (404, "MATCH_NOT_FOUND")


def test_delay_ms_holds_each_event_back_that_long(web: Web) -> None:
    match = _matches(CLASSIC)[0]
    requests = list(live_requests(match, svc.Pace(), "live-delay"))
    _publish(web, requests[:2])  # the match's start, the deal's start and contract
    reader = SseReader(web.port, "/api/live/live-delay?delay_ms=400&resume_from=3")
    before = time.monotonic()
    _publish(web, [svc.PublishRequest(resume="live-delay"), requests[2]])  # the first card
    messages = (m for m in reader.messages() if m[1] != "publisher")
    event_id, kind, _ = next(messages)
    waited = time.monotonic() - before
    reader.close()
    assert (event_id, kind) == ("4", "message")
    assert waited >= 0.4  # published after `before`, shown 400 ms after it was published


def test_a_viewer_that_never_reads_slows_neither_the_publisher_nor_other_viewers(
    web: Web,
) -> None:
    match = _matches(CLASSIC)[0]
    requests = list(live_requests(match, svc.Pace(), "live-stalled"))
    _publish(web, requests[:1])
    stalled = socket.create_connection(("127.0.0.1", web.port))
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.sendall(
        b"GET /api/live/live-stalled HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n"
    )
    reader = SseReader(web.port, "/api/live/live-stalled")
    started = time.monotonic()
    _publish(web, [svc.PublishRequest(resume="live-stalled"), *requests[1:]])
    published = time.monotonic() - started
    got = [int(i or 0) for i, kind, _ in reader.messages() if kind == "message"]
    reader.close()
    stalled.close()
    assert got == list(range(1, len(got) + 1))
    assert got[-1] == len(web.json("/api/matches/classic-0/replay"))
    assert published < 20


# -- validate and stats ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sample",
    [
        "valid/classic.krec",
        "invalid/must-follow-suit.krec",
        "damaged/" + next(p.name for p in sorted((SAMPLES / "damaged").iterdir()) if p.is_file()),
        "manifest.json",
    ],
)
@pytest.mark.parametrize("show_all", [False, True], ids=["findings", "all"])
def test_validate_answers_the_lines_validate_json_writes_for_the_same_file(
    web: Web, tmp_path: Path, sample: str, show_all: bool
) -> None:
    upload = tmp_path / "upload"
    upload.write_bytes((SAMPLES / sample).read_bytes())
    args = [str(KINGREC), "validate", "--json", *(["--all"] if show_all else []), "upload"]
    result = subprocess.run(args, capture_output=True, cwd=tmp_path, timeout=60, check=False)
    status, headers, body = web.post(
        "/api/validate" + ("?all=1" if show_all else ""), upload.read_bytes()
    )
    assert status == 200
    assert headers["Content-Type"].startswith("application/x-ndjson")
    assert [json.loads(line) for line in body.splitlines()] == [
        json.loads(line) for line in result.stdout.splitlines()
    ]


def test_validate_reads_json_lines_too(web: Web, tmp_path: Path) -> None:
    out = tmp_path / "classic.jsonl"
    subprocess.run([str(KINGREC), "convert", str(CLASSIC), str(out)], check=True, timeout=60)
    _, _, body = web.post("/api/validate?all=1&name=classic.jsonl", out.read_bytes())
    lines = [json.loads(line) for line in body.splitlines()]
    assert [line["type"] for line in lines] == ["match", "match", "summary"]
    assert lines[0]["line"] == 1 and lines[0]["file"] == "classic.jsonl"


def test_the_stats_questions_answer_the_rows_kingrec_stats_json_prints(tmp_path: Path) -> None:
    db = tmp_path / "stats.duckdb"
    with Store.open(str(db)) as store:
        for path in sorted((SAMPLES / "valid").glob("*.krec")):
            store.ingest_file(str(path))
    copy = tmp_path / "copy.duckdb"  # the server owns its store: the CLI reads the same copy
    shutil.copy(db, copy)
    with running_server(ServiceConfig(db=str(db), http_host="127.0.0.1")) as (server, port):
        assert server.http_port is not None
        web = Web(port, server.http_port, db)
        _stats_are_the_cli_rows(web, copy)
        web.channel.close()


def _stats_are_the_cli_rows(web: Web, copy: Path) -> None:
    questions = web.json("/api/stats")["questions"]
    listed = subprocess.run(
        [str(KINGREC), "stats", "--list", "--db", str(copy)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert questions and all(q["name"] in listed.stdout for q in questions)
    for question in questions:
        answer = web.json(f"/api/stats/{question['name']}")
        assert answer["sql"] == question["sql"]
        printed = subprocess.run(
            [str(KINGREC), "stats", "-f", "json", "--db", str(copy), question["name"]],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        names = [name for name, _ in answer["columns"]]
        rows = [json.loads(line) for line in printed.stdout.splitlines()]
        assert [[row[name] for name in names] for row in rows] == answer["rows"]
        assert all(row["stat"] == question["name"] for row in rows)


# -- the command ----------------------------------------------------------------------------------


def test_serve_http_prints_the_viewer_url_and_serves_the_app_and_api(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    with subprocess.Popen(
        [str(KINGREC), "serve", "--port", "0", "--db", str(db), "--http", ":0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            assert process.stdout is not None
            grpc_line = process.stdout.readline()
            http_line = process.stdout.readline()
            assert "serving on 127.0.0.1:" in grpc_line
            assert http_line.startswith("kingrec: web viewer on http://127.0.0.1:"), http_line
            url = http_line.split(" on ", 1)[1].strip()
            with urllib.request.urlopen(url, timeout=10) as response:
                assert response.status == 200 and b"<html" in response.read()
            with urllib.request.urlopen(url + "api/matches", timeout=10) as response:
                assert json.loads(response.read()) == {"matches": [], "next_page_token": ""}
        finally:
            process.terminate()
            process.wait(timeout=30)
    assert process.returncode == 0


def test_serve_http_refuses_a_bad_address_and_a_port_in_use(tmp_path: Path) -> None:
    bad = subprocess.run(
        [str(KINGREC), "serve", "--port", "0", "--http", "localhost:http"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "HOST:PORT" in bad.stderr and "Traceback" not in bad.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = subprocess.run(
            [
                str(KINGREC),
                "serve",
                "--port",
                "0",
                "--db",
                str(tmp_path / "b.duckdb"),
                "--http",
                f":{port}",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert busy.returncode == 2 and "for HTTP" in busy.stderr and "Traceback" not in busy.stderr


def test_view_serves_a_record_file_in_the_viewer_and_cleans_up(tmp_path: Path) -> None:
    sample = tmp_path / "one.krec"
    sample.write_bytes((SAMPLES / "valid" / "abandoned.krec").read_bytes())
    with subprocess.Popen(
        [str(KINGREC), "view", str(sample)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    ) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            assert line.startswith(f"kingrec: viewing {sample} (1 match(es)) at http://127.0.0.1:")
            url = line.rsplit(" at ", 1)[1].strip()
            assert url.endswith("/#/match/abandoned-0")
            base = url.split("#", 1)[0]
            with urllib.request.urlopen(base, timeout=10) as response:
                assert b"<html" in response.read()
            with urllib.request.urlopen(base + "api/matches", timeout=10) as response:
                page = json.loads(response.read())
            assert [m["match_id"] for m in page["matches"]] == ["abandoned-0"]
            with urllib.request.urlopen(base + "api/matches/abandoned-0/replay", timeout=10) as r:
                assert json.loads(r.read())[-1]["match_ended"]["deals"] == 13
        finally:
            process.terminate()
            process.wait(timeout=30)
    assert process.returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.krec"]  # the store is gone


def test_view_of_a_file_without_records_says_so(tmp_path: Path) -> None:
    junk = tmp_path / "junk.krec"
    junk.write_bytes(b"not a record file at all")
    result = subprocess.run(
        [str(KINGREC), "view", str(junk)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "kingrec: error:" in result.stderr and "Traceback" not in result.stderr
    result = subprocess.run(
        [str(KINGREC), "view", str(tmp_path / "missing.krec")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "missing.krec" in result.stderr


def test_a_stopping_server_ends_its_sse_viewers_with_the_abandoned_match() -> None:
    match = _matches(CLASSIC)[0]
    requests = list(live_requests(match, svc.Pace(), "live-stopping"))
    got: list[tuple[str | None, str, str]] = []
    config = ServiceConfig(http_host="127.0.0.1", grace=5)
    with running_server(config) as (server, port):
        assert server.http_port is not None
        web = Web(port, server.http_port, None)
        _publish(web, requests[:10])
        reader = SseReader(web.port, "/api/live/live-stopping")
        messages = reader.messages()
        got.append(next(messages))  # the snapshot is in: the viewer is watching

        def read_rest() -> None:
            got.extend(messages)

        rest = threading.Thread(target=read_rest)
        rest.start()
        web.channel.close()
    rest.join(timeout=30)
    reader.close()
    assert not rest.is_alive()
    seqs = [int(i or 0) for i, kind, _ in got if kind == "message"]
    assert seqs == list(range(1, len(seqs) + 1))
    last = json.loads([data for _, kind, data in got if kind == "message"][-1])
    assert last["match_ended"]["status"] == "MATCH_STATUS_ABANDONED"
    assert got[-1][1] == "end" and json.loads(got[-1][2])["code"] == "OK"


@pytest.mark.parametrize(
    "request_line",
    [b"GARBAGE\r\n\r\n", b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", b"\x00\xff" * 100],
    ids=["no-method", "line-over-64k", "binary"],
)
def test_a_request_the_parser_refuses_is_a_400_one_log_line_and_the_server_goes_on(
    web: Web, request_line: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.create_connection(("127.0.0.1", web.port), timeout=10) as sock:
        sock.sendall(request_line)
        reply = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                reply += chunk
    assert reply.startswith(b"HTTP/1.0 400") or reply.startswith(b"HTTP/1.1 400") or not reply
    assert b"Traceback" not in reply
    assert web.json("/api/live")["next_page_token"] == ""
    assert not [r for r in caplog.records if r.exc_info and r.name.startswith("aiohttp")]


def test_view_open_hands_the_url_to_the_browser(tmp_path: Path) -> None:
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser"  # what $BROWSER names is what webbrowser runs
    browser.write_text(f'#!/bin/sh\nprintf %s "$1" > {opened}\n')
    browser.chmod(0o755)
    with subprocess.Popen(
        [str(KINGREC), "view", "--open", str(SAMPLES / "valid" / "abandoned.krec")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "BROWSER": str(browser)},
    ) as process:
        try:
            assert process.stdout is not None
            url = process.stdout.readline().rsplit(" at ", 1)[1].strip()
            for _ in range(100):  # the browser runs after the line is printed
                if opened.exists() and opened.read_text():
                    break
                time.sleep(0.1)
            assert opened.read_text() == url
        finally:
            process.terminate()
            process.wait(timeout=30)


def test_a_paced_replay_cut_by_a_stopping_server_ends_saying_where_to_resume(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.duckdb"
    with Store.open(str(db)) as store:
        store.ingest_file(str(CLASSIC))
    got: list[tuple[str | None, str, str]] = []
    with running_server(ServiceConfig(db=str(db), http_host="127.0.0.1", grace=5)) as (
        server,
        _,
    ):
        assert server.http_port is not None
        reader = SseReader(server.http_port, "/api/matches/classic-0/replay?pace_ms=500")
        messages = reader.messages()
        got.append(next(messages))  # the match's start, then a wait before each card

        def read_rest() -> None:
            got.extend(messages)

        rest = threading.Thread(target=read_rest)
        rest.start()
    rest.join(timeout=30)
    reader.close()
    assert not rest.is_alive()
    assert got[-1][1] == "end"
    end = json.loads(got[-1][2])
    shown = [int(i or 0) for i, kind, _ in got if kind == "message"]
    assert end["code"] == "SHUTTING_DOWN" and end["resume_from"] == shown[-1]
    assert shown == list(range(1, len(shown) + 1))
