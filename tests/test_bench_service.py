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


def test_the_stream_figure_is_the_median_of_rounds_each_a_stream_beside_the_fast_path() -> None:
    """``--only stream``: every round streams the same matches to a real ``kingrec serve``
    (every verdict clean, else the bench fails) and runs the checker alone on them; the
    verdict is the median of the rounds' ratios, printed with their spread."""
    pytest.importorskip("kingrec._fastcheck_c")
    command = [sys.executable, str(BENCH), "--only", "stream", "--upload", "40"]
    out = subprocess.run(
        [*command, "--stream-rounds", "3"], capture_output=True, text=True, check=True, timeout=300
    ).stdout
    assert "ValidateStream: " in out and "(40 matches, 800 a message" in out
    assert "medians of 3 rounds" in out
    assert "the compiled checker alone on the same frames: " in out
    ratio = next(line for line in out.splitlines() if "ValidateStream / fast path: " in line)
    assert "ValidateStream / fast path: " in ratio and "(median of 3 rounds; middle half " in ratio
    assert ratio.endswith(("target median >= 0.5: ok", "target median >= 0.5: BELOW TARGET"))
