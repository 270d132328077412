"""bench/bench_service.py's servers as commands (``--serve floor|kingrec``), which its
instructions figure runs under valgrind: each serves on a free loopback port, answers, and
exits normally on SIGTERM (valgrind writes its counts only then)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from kingrec.rules import preset
from kingrec.simulate import derive_seed, simulate_match
from kingrec.v1 import service_pb2 as svc

BENCH = Path(__file__).resolve().parent.parent / "bench" / "bench_service.py"
METHODS = {"floor": "/kingrec.bench.Floor/Empty", "kingrec": "/kingrec.v1.KingrecService/Validate"}


@pytest.mark.parametrize("which", sorted(METHODS))
def test_a_bench_server_answers_on_a_free_port_and_exits_cleanly_on_sigterm(which: str) -> None:
    match = simulate_match(preset("classic"), derive_seed(7, 0))
    request = svc.ValidateRequest(record=svc.Record(krec=match.SerializeToString()))
    command = [sys.executable, str(BENCH), "--serve", which]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
        _answers_then_stops(process, which, request)


def _answers_then_stops(
    process: subprocess.Popen[str], which: str, request: svc.ValidateRequest
) -> None:
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("serving on 127.0.0.1:"), line
        address = line.split("serving on ")[1].strip()
        with grpc.insecure_channel(address) as channel:
            call: grpc.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(METHODS[which])
            answer = call(request.SerializeToString(), timeout=30)
        if which == "floor":
            assert answer == b""
        else:
            assert svc.ValidateResponse.FromString(answer).report.valid
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
