"""The method table (``kingrec_service.methods``): every method of every service guarded once
when the server is built, with what the interceptors it replaced gave clients: the token on
Upload and Publish only, undecodable requests refused by name, errors as statuses with their
trailers, a bug answered INTERNAL in one log line."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from kingrec.v1 import service_pb2 as svc
from kingrec_service import ServiceConfig, running_server
from kingrec_service._pb.service_pb2_grpc import KingrecServiceStub
from kingrec_service.methods import NO_TOKEN, WRONG_TOKEN, MethodTable
from kingrec_service.server import GUARDED, SERVICE_NAME

TOKEN = "s3cret-token-17"


@pytest.fixture(scope="module")
def address() -> Iterator[str]:
    with running_server(ServiceConfig(token=TOKEN)) as (_, port):
        yield f"127.0.0.1:{port}"


def _failure(call: Any) -> grpc.Call:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    assert isinstance(caught.value, grpc.Call)
    return caught.value


def _code_trailer(error: grpc.Call) -> str | bytes | None:
    return dict(error.trailing_metadata() or ()).get("kingrec-code")


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ((), NO_TOKEN),
        ((("authorization", "Bearer not-it"),), WRONG_TOKEN),
        ((("authorization", f"Basic {TOKEN}"),), WRONG_TOKEN),
        ((("authorization", TOKEN),), WRONG_TOKEN),
    ],
)
def test_upload_and_publish_without_the_token_are_refused_with_the_code_in_the_trailers(
    address: str, metadata: tuple[tuple[str, str], ...], message: str
) -> None:
    with grpc.insecure_channel(address) as channel:
        stub = KingrecServiceStub(channel)
        request = svc.PublishRequest(resume="nothing")
        publish = _failure(lambda: stub.Publish(iter([request]), metadata=metadata))
        upload = _failure(lambda: list(stub.Upload(iter([]), metadata=metadata)))
    for error in (publish, upload):
        assert error.code() == grpc.StatusCode.UNAUTHENTICATED
        assert error.details() == message
        assert _code_trailer(error) == "UNAUTHENTICATED"


def test_the_token_lets_publish_through_in_either_case_of_bearer(address: str) -> None:
    with grpc.insecure_channel(address) as channel:
        stub = KingrecServiceStub(channel)
        for scheme in ("Bearer", "bearer"):
            metadata = (("authorization", f"{scheme} {TOKEN}"),)
            request = svc.PublishRequest(resume="no-such-match")
            error = _failure(lambda m=metadata, r=request: stub.Publish(iter([r]), metadata=m))
            assert error.code() == grpc.StatusCode.NOT_FOUND  # past the token
            assert _code_trailer(error) == "MATCH_NOT_FOUND"


def test_methods_that_need_no_token_do_not_ask_for_it(address: str) -> None:
    with grpc.insecure_channel(address) as channel:
        stub = KingrecServiceStub(channel)
        error = _failure(lambda: stub.Validate(svc.ValidateRequest(record=svc.Record())))
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT  # judged, not refused
        assert _code_trailer(error) == "BAD_REQUEST"
        health: Any = health_pb2_grpc.HealthStub(channel)
        answer = health.Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME))
        assert answer.status == health_pb2.HealthCheckResponse.SERVING


def test_bytes_that_are_no_request_are_refused_naming_the_method(address: str) -> None:
    method = f"/{SERVICE_NAME}/Validate"
    with grpc.insecure_channel(address) as channel:
        validate: grpc.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(method)
        error = _failure(lambda: validate(b"\xff\xff\xff"))
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert (error.details() or "").startswith(f"the request to {method} is not a valid")
        assert _code_trailer(error) == "BAD_REQUEST"
        # a client stream too: the bad message ends the call, the server goes on
        stream: grpc.StreamStreamMultiCallable[bytes, bytes] = channel.stream_stream(
            f"/{SERVICE_NAME}/ValidateStream"
        )
        error = _failure(lambda: list(stream(iter([b"\xff\xff\xff"]))))
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert _code_trailer(error) == "BAD_REQUEST"
        record = svc.Record(krec=b"\x0a\x01x")
        assert KingrecServiceStub(channel).Validate(svc.ValidateRequest(record=record)).verdicts


def test_a_method_no_service_has_is_unimplemented(address: str) -> None:
    with grpc.insecure_channel(address) as channel:
        nothing: grpc.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
            f"/{SERVICE_NAME}/Nothing"
        )
        error = _failure(lambda: nothing(b""))
    assert error.code() == grpc.StatusCode.UNIMPLEMENTED


def test_a_bug_in_a_method_is_internal_in_one_log_line_and_the_server_goes_on(
    address: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(record: svc.Record) -> bytes | None:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr("kingrec_service.servicers.match_response", broken)
    record = svc.Record(krec=b"\x0a\x01x")
    with caplog.at_level(logging.ERROR, "kingrec_service"), grpc.insecure_channel(address) as ch:
        stub = KingrecServiceStub(ch)
        error = _failure(lambda: stub.Validate(svc.ValidateRequest(record=record)))
        monkeypatch.undo()
        assert stub.Validate(svc.ValidateRequest(record=record)).verdicts  # goes on
    assert error.code() == grpc.StatusCode.INTERNAL
    assert error.details() == f"internal error in kingrec (/{SERVICE_NAME}/Validate)"
    lines = [r.getMessage() for r in caplog.records if r.name == "kingrec_service"]
    assert len(lines) == 1 and "ZeroDivisionError: a bug" in lines[0]


def test_every_method_of_the_three_services_is_in_the_table() -> None:
    """The server serves the table only: a method missing from it would be unimplemented."""
    from kingrec_service._pb import service_pb2_grpc

    table = MethodTable(TOKEN, GUARDED)
    servicer = service_pb2_grpc.KingrecServiceServicer()
    service_pb2_grpc.add_KingrecServiceServicer_to_server(servicer, table.as_server())
    names = {m.name for m in svc.DESCRIPTOR.services_by_name["KingrecService"].methods}
    assert table.methods == {f"/{SERVICE_NAME}/{n}" for n in names}
    assert table.methods >= GUARDED


def test_a_service_registered_around_the_table_stops_the_server_being_built() -> None:
    """Nothing may be served unguarded: a generic handler whose methods the table did not
    get, or a method to guard that no service has, is a mistake found at once."""
    table = MethodTable(TOKEN, frozenset())
    handler = grpc.method_handlers_generic_handler(
        "other.Service", {"M": grpc.unary_unary_rpc_method_handler(lambda r, c: r)}
    )
    table.add_generic_rpc_handlers((handler,))
    server: Any = None  # never reached: the table refuses first
    with pytest.raises(TypeError, match="without its method table"):
        table.install(server)
    typo = MethodTable(TOKEN, frozenset({f"/{SERVICE_NAME}/Uplaod"}))
    with pytest.raises(ValueError, match="Uplaod"):
        typo.install(server)
