"""ValidateStream's requests read from their bytes (``kingrec_service.stream_request``): a
request of frames' bytes is read as protobuf reads it and answered byte for byte as before;
anything else (other forms, fields not ours, a field twice, hostile bytes) is protobuf's to
decode or refuse, and the server answers it as it always did. Both scans are held to it:
the compiled one (``kingrec._fastcheck_c.request_frames``) and its Python twin."""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable, Iterator

import grpc
import pytest
from google.protobuf.message import DecodeError

from kingrec.container import MAGIC
from kingrec.limits import MAX_FRAME_BYTES
from kingrec.rules import preset
from kingrec.simulate import derive_seed, simulate_match
from kingrec.v1 import service_pb2 as svc
from kingrec_service import ServiceConfig, running_server
from kingrec_service.server import SERVICE_NAME
from kingrec_service.stream_request import Frames, read_frames, read_frames_py, stream_request
from kingrec_service.validating import stream_responses

MATCHES = [simulate_match(preset("classic"), derive_seed(17, i)) for i in range(3)]
CLEAN = [m.SerializeToString() for m in MATCHES]
DIRTY = CLEAN[0].replace(MATCHES[0].match_id.encode(), b"X" * len(MATCHES[0].match_id), 1)[:-7]


def _request(*records: svc.Record) -> bytes:
    return svc.ValidateStreamRequest(records=records).SerializeToString()


def _as_protobuf_reads_it(data: bytes) -> tuple[list[bytes], list[str]]:
    records = svc.ValidateStreamRequest.FromString(data).records
    assert all(r.WhichOneof("form") == "krec" for r in records)
    return [r.krec for r in records], [r.name for r in records]


Read = Callable[[bytes], tuple[list[memoryview], list[str]] | None]


def _compiled(data: bytes) -> tuple[list[memoryview], list[str]] | None:
    scan = importlib.import_module("kingrec._fastcheck_c").request_frames
    found: tuple[list[memoryview], list[str]] | None = scan(data, MAX_FRAME_BYTES, MAGIC)
    return found


SCANS: dict[str, Read] = {"compiled": _compiled, "python": read_frames_py}


def _read(data: bytes, scan: Read = read_frames) -> tuple[list[bytes], list[str]] | None:
    frames = scan(data)
    if frames is None:
        return None
    payloads, names = frames
    assert all(type(p) is memoryview for p in payloads)  # no copy of a record
    return [bytes(p) for p in payloads], names


def _varint(n: int, width: int = 0) -> bytes:
    out = bytearray()
    while n >= 0x80 or width > 1:
        out.append(n & 0x7F | 0x80)
        n >>= 7
        width -= 1
    out.append(n)
    return bytes(out)


def _field(key: int, payload: bytes, width: int = 0) -> bytes:
    return bytes([key]) + _varint(len(payload), width) + payload


PLAIN = [
    _request(*(svc.Record(krec=p) for p in CLEAN)),
    _request(svc.Record(krec=CLEAN[0], name="a.krec"), svc.Record(krec=DIRTY, name="é ∅")),
    _request(svc.Record(krec=b"", name="empty bytes"), svc.Record(krec=b"\x00\xffjunk")),
    b"",  # no record at all
    # names alike, and one as long but not alike (the compiled scan decodes a name once)
    _request(
        *(
            svc.Record(krec=CLEAN[i % 3], name=name)
            for i, name in enumerate(("a.krec", "a.krec", "b.krec", "", "a.krec", "é"))
        )
    ),
    # the name before the bytes; lengths as varints longer than they need be
    _field(0x0A, _field(0x22, b"n") + _field(0x12, CLEAN[1])),
    _field(0x0A, _field(0x12, CLEAN[2], width=3), width=4),
]


@pytest.mark.parametrize("scan", SCANS.values(), ids=SCANS.keys())
@pytest.mark.parametrize("data", PLAIN)
def test_a_request_of_frames_is_read_from_its_bytes_as_protobuf_reads_it(
    data: bytes, scan: Read
) -> None:
    assert _read(data, scan) == _as_protobuf_reads_it(data)
    frames = stream_request(data)
    assert isinstance(frames, Frames)
    assert all(type(p) is memoryview for p in frames.payloads)  # no copy of a record


@pytest.mark.parametrize("data", PLAIN)
def test_a_request_read_from_its_bytes_gets_the_responses_of_one_protobuf_decoded(
    data: bytes,
) -> None:
    frames = stream_request(data)
    assert isinstance(frames, Frames)
    decoded = svc.ValidateStreamRequest.FromString(data).records
    for index in (0, 3):
        assert list(stream_responses(index, frames)) == list(stream_responses(index, decoded))


UNUSUAL = {
    "a match as a message": _request(svc.Record(match=MATCHES[0])),
    "json text": _request(svc.Record(krec=CLEAN[0]), svc.Record(json="{}")),
    "a whole .krec file": _request(svc.Record(krec=MAGIC + b"\x00" * 8)),
    "an empty record": _request(svc.Record(krec=CLEAN[0]), svc.Record(name="nothing")),
    "a frame over the bound": _request(svc.Record(krec=b"\x00" * (MAX_FRAME_BYTES + 1))),
    "a field of the request not ours": _request(svc.Record(krec=CLEAN[0])) + b"\x10\x01",
    "a field of a record not ours": _field(0x0A, _field(0x12, CLEAN[0]) + b"\x28\x05"),
    "the bytes twice": _field(0x0A, _field(0x12, CLEAN[0]) + _field(0x12, CLEAN[1])),
    "the name twice": _field(0x0A, _field(0x12, CLEAN[0]) + _field(0x22, b"a") * 2),
    "a name of no UTF-8": _field(0x0A, _field(0x12, CLEAN[0]) + _field(0x22, b"\xc3(")),
    "a surrogate in the name": _field(0x0A, _field(0x12, CLEAN[0]) + _field(0x22, b"\xed\xa0\x80")),
    "records given as a varint": b"\x08\x05",
    "a record of the wrong wire type": b"\x0d\x00\x00\x00\x00",
    "a length of eleven bytes": b"\x0a" + b"\x80" * 10 + b"\x00",
    "a huge length": b"\x0a\xff\xff\xff\xff\x0f" + _field(0x12, CLEAN[0]),
    "a length past the end": _field(0x0A, _field(0x12, CLEAN[0]))[:-1],
    "a field past its record": b"\x0a\x03\x12\x05abcde",
    "a truncated varint": b"\x0a\x80",
    "a truncated key": _field(0x0A, _field(0x12, b"x")) + b"\x0a",
    "a group": b"\x0b\x0c",
}


@pytest.mark.parametrize("scan", SCANS.values(), ids=SCANS.keys())
@pytest.mark.parametrize("data", UNUSUAL.values(), ids=UNUSUAL.keys())
def test_anything_but_plain_frames_is_left_to_protobuf(data: bytes, scan: Read) -> None:
    assert scan(data) is None
    try:
        decoded = svc.ValidateStreamRequest.FromString(data)
    except DecodeError:
        with pytest.raises(DecodeError):
            stream_request(data)
    else:
        assert stream_request(data) == decoded


def test_mangled_requests_are_read_as_protobuf_reads_them_or_left_to_it() -> None:
    """Bytes flipped, cut and spliced in a request of frames, thousands of times: whatever
    either scan reads, protobuf reads the same, and the two scans agree; nothing raises."""
    shuffle = random.Random(17)
    base = PLAIN[1]
    read = 0
    for _ in range(3000):
        data = bytearray(
            base[: shuffle.randrange(len(base) + 1)] if shuffle.random() < 0.2 else base
        )
        for _ in range(shuffle.randrange(1, 4)):
            if data:
                at = shuffle.randrange(min(len(data), 40)) if shuffle.random() < 0.7 else 0
                data[at if shuffle.random() < 0.5 else shuffle.randrange(len(data))] = (
                    shuffle.choice([0x00, 0x0A, 0x12, 0x22, 0x80, 0xFF, shuffle.randrange(256)])
                )
        got = _read(bytes(data), _compiled)
        assert got == _read(bytes(data), read_frames_py)
        if got is not None:
            read += 1
            assert got == _as_protobuf_reads_it(bytes(data))
    assert read  # some mangled requests are still plain frames


@pytest.fixture(scope="module")
def address() -> Iterator[str]:
    with running_server(ServiceConfig()) as (_, port):
        yield f"127.0.0.1:{port}"


def test_hostile_stream_requests_get_a_clear_error_and_the_server_goes_on(address: str) -> None:
    method = f"/{SERVICE_NAME}/ValidateStream"
    with grpc.insecure_channel(address) as channel:
        stream: grpc.StreamStreamMultiCallable[bytes, bytes] = channel.stream_stream(method)
        for name in (
            "a huge length",
            "a truncated varint",
            "a field past its record",
            "a name of no UTF-8",
        ):
            with pytest.raises(grpc.RpcError) as caught:
                list(stream(iter([PLAIN[0], UNUSUAL[name]]), timeout=30))
            error = caught.value
            assert isinstance(error, grpc.Call)
            assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, name
            assert (error.details() or "").startswith(f"the request to {method} is not a valid")
        # unknown fields are no error: protobuf skips them, and so the answer is as without
        plain = _request(svc.Record(krec=CLEAN[0], name="a"))
        odd = plain + b"\x10\x01"
        answers = [list(stream(iter([data]), timeout=30)) for data in (plain, odd)]
        assert answers[0] == answers[1]
        assert svc.ValidateStreamResponse.FromString(answers[0][0]).verdicts[0].report.valid
