"""``kingrec serve`` as people run it: a process on a free port, with a token, called by
generic gRPC tools (health, reflection), by the kingrec commands, and stopped with SIGTERM
while streams are open. Also TLS."""

from __future__ import annotations

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
    def __init__(self, process: subprocess.Popen[str], port: int) -> None:
        self.process = process
        self.port = port
        self.address = f"127.0.0.1:{port}"


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    process = subprocess.Popen(
        [str(KINGREC), "serve", "--port", "0", "--token", TOKEN, "--grace", "5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert "serving on 127.0.0.1:" in line, line + (process.stderr.read() if process.stderr else "")
    port = int(line.split("127.0.0.1:")[1].split()[0])
    try:
        yield Served(process, port)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


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
    assert "replay again from start_deal=" in str(outcome["replay"].details())  # type: ignore[attr-defined]


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
