"""The commands that call a server close their channel, and let gRPC's own threads end,
before they return: a thread left running at interpreter exit can be frozen holding the
channel's lock, and the process then never exits (seen as a refused ``kingrec upload``
that printed its error and hung)."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from click.testing import CliRunner

from kingrec_cli.main import main

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
CLASSIC = SAMPLES / "valid" / "classic.krec"
KINGREC = Path(sys.executable).parent / "kingrec"
TOKEN = "teardown-token"


@pytest.fixture(scope="module")
def address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("teardown") / "kingrec.duckdb"
    process = subprocess.Popen(
        [str(KINGREC), "serve", "--port", "0", "--db", str(db), "--token", TOKEN],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert "serving on 127.0.0.1:" in line, line
    try:
        yield "127.0.0.1:" + line.split("127.0.0.1:")[1].split()[0]
    finally:
        process.terminate()
        process.communicate(timeout=30)


@pytest.fixture
def channels(monkeypatch: pytest.MonkeyPatch) -> list[grpc.Channel]:
    """Every channel the command opens."""
    opened: list[grpc.Channel] = []
    real = grpc.insecure_channel

    def recorded(target: str, *args: Any, **kwargs: Any) -> grpc.Channel:
        channel = real(target, *args, **kwargs)
        opened.append(channel)
        return channel

    monkeypatch.setattr(grpc, "insecure_channel", recorded)
    return opened


def _closed(channel: grpc.Channel) -> bool:
    """A closed channel refuses a call before sending it; an open one sends it."""
    call: Any = channel.unary_unary("/kingrec.v1.KingrecService/NoSuchMethod")
    try:
        call(b"", timeout=10)
    except ValueError:  # "Cannot invoke RPC on closed channel!"
        return True
    except grpc.RpcError:
        return False
    return False


def _command(*args: str) -> tuple[int, set[threading.Thread]]:
    """Run a kingrec command in this process; its exit status and the threads it left."""
    before = set(threading.enumerate())
    result = CliRunner().invoke(main, list(args))
    left = {t for t in set(threading.enumerate()) - before if t.is_alive()}
    return result.exit_code, left


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("upload", str(CLASSIC)), id="upload-refused-without-token"),
        pytest.param(("upload", str(CLASSIC), "--token", TOKEN), id="upload"),
        pytest.param(("query", "SELECT count(*) FROM matches"), id="query"),
        pytest.param(("replay", "no-such-match", "--fast"), id="replay-not-found"),
        pytest.param(("watch", "no-such-match"), id="watch-not-found"),
        pytest.param(("publish", str(CLASSIC), "--fast"), id="publish-refused-without-token"),
    ],
)
def test_a_client_command_closes_its_channel_and_leaves_no_grpc_thread_running(
    address: str, channels: list[grpc.Channel], args: tuple[str, ...]
) -> None:
    status, left = _command(*args, "--server", address)
    assert status in (0, 1, 2)
    assert channels, "the command opened no channel"
    assert all(_closed(channel) for channel in channels)
    assert not left, f"threads still running after the command: {left}"
