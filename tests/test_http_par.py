"""``GET /api/matches/{id}/par``: a stored match's par analysis over HTTP, from a real server
on a free port, the same answer as the Analyse RPC's and within the same bounds."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.protobuf import json_format

from kingrec.rules import preset
from kingrec.simulate import simulate_match
from kingrec.store import Store
from kingrec.v1 import service_pb2 as svc
from kingrec_service import ServiceConfig, running_server
from kingrec_service._pb.service_pb2_grpc import KingrecServiceStub

MATCH = simulate_match(preset("classic"), 7)


class Served:
    def __init__(self, grpc_port: int, http_port: int) -> None:
        self.base = f"http://127.0.0.1:{http_port}"
        self.channel = grpc.insecure_channel(f"127.0.0.1:{grpc_port}")
        self.stub = KingrecServiceStub(self.channel)

    def get(self, path: str) -> tuple[int, Any]:
        try:
            with urllib.request.urlopen(self.base + path, timeout=60) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    db = tmp_path_factory.mktemp("par") / "kingrec.duckdb"
    with Store.open(str(db)) as store:
        store.ingest_matches([MATCH], source="sim")
    with running_server(ServiceConfig(db=str(db), http_host="127.0.0.1")) as (server, port):
        assert server.http_port is not None
        served = Served(port, server.http_port)
        yield served
        served.channel.close()


def test_the_par_route_gives_the_analyse_rpcs_answer_as_json(served: Served) -> None:
    status, body = served.get(
        f"/api/matches/{MATCH.match_id}/par?deal=2&from_trick=10&budget_ms=10000"
    )
    assert status == 200, body
    rpc = served.stub.Analyse(
        svc.AnalyseRequest(match_id=MATCH.match_id, deals=[2], from_trick=10, budget_ms=10_000)
    )
    ours = json_format.ParseDict(body, svc.AnalyseResponse())
    for deal in (*ours.deals, *rpc.deals):
        deal.search_ms = 0
    assert ours == rpc
    (deal,) = body["deals"]
    assert deal["deal"] == 2 and deal["solved"] is True and len(deal["seats"]) == 4
    assert {"par", "actual", "par_points"} <= set(deal["seats"][0])


def test_the_par_route_says_unsolved_and_refuses_too_much_work_or_bad_parameters(
    served: Served,
) -> None:
    path = f"/api/matches/{MATCH.match_id}/par"
    status, body = served.get(f"{path}?deal=1&seat=1&budget_nodes=1")
    assert status == 200
    (deal,) = body["deals"]
    assert deal["solved"] is False and "par" not in deal["seats"][0]
    status, body = served.get(f"{path}?budget_ms=5000")  # 20 deals of 5 s
    assert status == 429 and body["error"]["code"] == "LIMIT_EXCEEDED"
    for query, words in (("?deal=0", "deal"), ("?seat=4", "seat"), ("?from_trick=14", "trick")):
        status, body = served.get(path + query)
        assert status == 400 and words in body["error"]["message"], query
    status, body = served.get("/api/matches/nope/par?deal=1")
    assert status == 404 and body["error"]["code"] == "MATCH_NOT_FOUND"
