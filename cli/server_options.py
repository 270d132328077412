"""``--server`` and its company, for every command that may call a kingrec server; without
grpc, so a command that only may call one starts as fast as one that never does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = ["DEFAULT_SERVER", "server_options"]

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_SERVER = "localhost:50051"


def server_options(*, token: bool = False, optional: bool = False) -> Callable[[F], F]:
    """``--server``, ``--tls-ca`` (and ``--token``) for a command that calls a server;
    ``optional``: no default server, for a command that works on a local store without one."""

    def decorate(command: F) -> F:
        if token:
            command = click.option(
                "--token",
                envvar="KINGREC_TOKEN",
                metavar="TOKEN",
                help="The server's token, when it has one (default: $KINGREC_TOKEN).",
            )(command)
        command = click.option(
            "--tls-ca",
            type=click.Path(exists=True, dir_okay=False),
            metavar="PEM",
            help="Talk TLS, trusting this CA certificate (the server's own, if self-signed).",
        )(command)
        if optional:
            return click.option(
                "--server",
                envvar="KINGREC_SERVER",
                metavar="HOST:PORT",
                help="Ask this kingrec server instead, which keeps its own limits "
                "(default: $KINGREC_SERVER, when set).",
            )(command)
        return click.option(
            "--server",
            envvar="KINGREC_SERVER",
            default=DEFAULT_SERVER,
            show_default=True,
            metavar="HOST:PORT",
            help="The kingrec server (default also from $KINGREC_SERVER).",
        )(command)

    return decorate
