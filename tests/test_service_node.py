"""A second, independent client: Node's @grpc/grpc-js with @grpc/proto-loader, built from the
.proto files alone (tests/node_client/client.mjs), gets what the Python stubs get: the
contract is the .proto files, in any language."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from kingrec.protos import PROTO_DIR
from kingrec.v1 import service_pb2 as svc
from kingrec_service import ServiceConfig, running_server
from kingrec_service._pb.service_pb2_grpc import KingrecServiceStub

HERE = Path(__file__).resolve().parent / "node_client"
SAMPLES = Path(__file__).resolve().parent.parent / "samples"
KREC = SAMPLES / "invalid" / "must-follow-suit.krec"
JSONL = SAMPLES / "valid" / "classic.jsonl"


@pytest.fixture(scope="module")
def node() -> str:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are not installed: the Node client cannot run")
    if not (HERE / "node_modules" / "@grpc" / "grpc-js").is_dir():
        result = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"],
            cwd=HERE,
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
        assert result.returncode == 0, result.stdout + result.stderr
    return node


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    db = tmp_path_factory.mktemp("node") / "node.duckdb"
    with running_server(ServiceConfig(db=str(db))) as (_, bound):
        yield bound


def test_the_node_client_validates_replays_uploads_and_queries_like_the_python_one(
    node: str, port: int
) -> None:
    result = subprocess.run(
        [node, "client.mjs", f"127.0.0.1:{port}", str(PROTO_DIR), str(KREC), str(JSONL)],
        cwd=HERE,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = KingrecServiceStub(channel)
        record = svc.Record(krec=KREC.read_bytes(), name="node.krec")
        python = stub.Validate(svc.ValidateRequest(record=record))
        events = [
            e for r in stub.Replay(svc.ReplayRequest(record=record, seat=0)) for e in r.events
        ]

    validated = got["validate_krec"]
    assert validated["report_json"] == python.report_json
    assert validated["codes"] == [f.code for f in python.report.findings]
    assert validated["severities"] == ["SEVERITY_ERROR"] * len(python.report.findings)
    assert validated["legal"][0] == list(python.report.findings[0].legal)
    assert got["validate_json"]["valid"] is True and got["validate_json"]["deals"] == 20
    garbage = got["validate_garbage"]
    assert garbage["error"] == "INVALID_ARGUMENT" and garbage["kingrec_code"] == "FRAME_UNDECODABLE"

    replay = got["replay"]
    assert replay["count"] == len(events) and replay["seqs_in_order"]
    kinds: dict[str, int] = {}
    for event in events:
        kind = event.WhichOneof("event") or ""
        kinds[kind] = kinds.get(kind, 0) + 1
    assert replay["kinds"] == kinds
    assert replay["hidden_first_deal"] == [[13, 0], [0, 13], [0, 13], [0, 13]]
    assert replay["last_status"] == "MATCH_STATUS_COMPLETE"
    assert replay["totals"] == list(events[-1].match_ended.totals)
    assert replay["broke"] == [e.card_played.broke for e in events if e.card_played.broke]

    first, second = got["upload"]["verdicts"]
    assert first == [["STATUS_STORED_INVALID", "invalid-must-follow-suit", False]]
    assert second == [["STATUS_STORED", "classic-json", True]]
    assert got["upload"]["summary"] == {
        "records": "2",
        "stored": "1",
        "stored_invalid": "1",
        "duplicates": "0",
    }  # fmt: skip  (uint64 comes as a string in JavaScript)
    assert got["upload_again"]["summary"]["duplicates"] == "2"
    assert got["query"]["columns"] == [
        ["match_id", "VARCHAR"], ["valid", "BOOLEAN"], ["deals", "USMALLINT"],
    ]  # fmt: skip
    assert got["query"]["rows"] == [
        {"match_id": "invalid-must-follow-suit", "valid": False, "deals": 20},
        {"match_id": "classic-json", "valid": True, "deals": 20},
    ]
    assert got["query"]["truncated"] is False
    assert got["query_refused"] == {"error": "PERMISSION_DENIED", "kingrec_code": "QUERY_REFUSED"}
