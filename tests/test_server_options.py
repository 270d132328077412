"""``--server``: what an address without a port, or a wrong one, means to the client commands."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kingrec_cli.server_options import server_address

KINGREC = str(Path(sys.executable).parent / "kingrec")
CLASSIC = Path(__file__).resolve().parent.parent / "samples" / "valid" / "classic.krec"


@pytest.mark.parametrize(
    ("given", "meant"),
    [
        ("127.0.0.1", "127.0.0.1:50051"),  # gRPC alone would call port 443
        ("example.org", "example.org:50051"),
        (" host:7000 ", "host:7000"),
        ("[::1]", "[::1]:50051"),
        ("[::1]:7000", "[::1]:7000"),
        ("::1", "[::1]:50051"),
        ("dns:///host:7000", "dns:///host:7000"),
        ("unix:/run/kingrec.sock", "unix:/run/kingrec.sock"),
    ],
)
def test_an_address_without_a_port_gets_the_port_kingrec_serve_listens_on(
    given: str, meant: str
) -> None:
    assert server_address(given) == meant


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("", "an empty address"),
        (":7000", "names no host"),
        ("host:", "the port must be a number from 1 to 65535"),
        ("host:0", "the port must be a number from 1 to 65535"),
        ("host:65536", "the port must be a number from 1 to 65535"),
        ("host:٣", "the port must be a number from 1 to 65535"),  # a digit, but not ASCII
        ("[::1", "an IPv6 one is written [::1]:PORT"),
        ("[::1]7000", "an IPv6 one is written [::1]:PORT"),
    ],
)
def test_a_wrong_address_is_refused_with_what_is_wrong(given: str, said: str) -> None:
    with pytest.raises(ValueError, match=said.replace("[", r"\[").replace("]", r"\]")):
        server_address(given)


def test_the_commands_call_the_default_port_and_refuse_a_bad_address() -> None:
    # 127.0.0.2: kingrec serve listens on 127.0.0.1 by default, so no test server answers
    calls = (["replay", "classic-0", "--fast"], ["query", "SELECT 1"], ["upload", str(CLASSIC)])
    for args in calls:
        result = subprocess.run(
            [KINGREC, *args, "--server", "127.0.0.2"], capture_output=True, text=True,
            input="", check=False, timeout=60,
        )  # fmt: skip
        assert result.returncode == 2, (args, result.stderr)
        assert "127.0.0.2:50051" in result.stderr and ":443" not in result.stderr, result.stderr
        bad = subprocess.run(
            [KINGREC, *args, "--server", "host:http"], capture_output=True, text=True,
            input="", check=False, timeout=60,
        )  # fmt: skip
        assert bad.returncode == 2 and "Traceback" not in bad.stderr
        assert "Invalid value for '--server': 'host:http': the port must be" in bad.stderr


def test_query_refuses_a_db_and_a_server_together_instead_of_ignoring_the_db(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "k.duckdb")
    for extra, env, said in (
        (["--server", "127.0.0.2:7"], {}, "--db and --server each name the store to ask: give one"),
        ([], {"KINGREC_SERVER": "127.0.0.2:7"}, "--db asks a store file, but $KINGREC_SERVER "
         "asks a server's store: give one (unset KINGREC_SERVER to query the file)"),
    ):  # fmt: skip
        result = subprocess.run(
            [KINGREC, "query", "SELECT 1", "--db", db, *extra], capture_output=True, text=True,
            check=False, timeout=60, env={**os.environ, **env},
        )  # fmt: skip
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr.splitlines()[0] == f"kingrec: error: {said}"
    assert list(tmp_path.iterdir()) == []


def test_an_upload_from_standard_input_that_cannot_reach_the_server_exits_2_not_134() -> None:
    """gRPC reads the requests in a thread of its own; when the call failed at once, Python
    exited while that thread read sys.stdin and aborted ("could not acquire lock for
    <stdin> at interpreter shutdown"): 6 runs in 10 here. Ten runs, each must exit 2."""
    for _ in range(10):
        with CLASSIC.open("rb") as records:
            result = subprocess.run(
                [KINGREC, "upload", "-", "--server", "127.0.0.2"], stdin=records,
                capture_output=True, text=True, check=False, timeout=60,
            )  # fmt: skip
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith("kingrec: error: cannot reach a kingrec server at ")
        assert "Fatal Python error" not in result.stderr


@pytest.mark.parametrize("command", ["upload", "publish"])
def test_an_empty_client_token_is_a_usage_error_not_a_call_without_one(command: str) -> None:
    result = subprocess.run(
        [KINGREC, command, str(CLASSIC), "--server", "127.0.0.2:1", "--token", ""],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "KINGREC_TOKEN"},
    )
    assert result.returncode == 2, result.stderr
    assert "the token is empty" in result.stderr and "Traceback" not in result.stderr
