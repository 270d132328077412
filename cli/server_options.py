"""``--server`` and its company, for every command that may call a kingrec server; without
grpc, so a command that only may call one starts as fast as one that never does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = ["DEFAULT_PORT", "DEFAULT_SERVER", "server_address", "server_options"]

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_PORT = 50051  # kingrec serve's
DEFAULT_SERVER = f"localhost:{DEFAULT_PORT}"


def server_address(value: str) -> str:
    """``HOST[:PORT]`` as gRPC's target, ``HOST:PORT``: without a port gRPC would call 443,
    where no kingrec server listens by default, so the port ``kingrec serve`` takes is
    added. A bracketed or bare IPv6 address works (``[::1]``, ``::1``); a gRPC target with
    a scheme (``dns:///host:port``, ``unix:/path``) passes as it is. A ``ValueError`` says
    what is wrong with anything else."""
    text = value.strip()
    if not text:
        raise ValueError("an empty address; give HOST or HOST:PORT")
    if "://" in text or text.startswith(("unix:", "unix-abstract:", "vsock:", "ipv4:", "ipv6:")):
        return text
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket or not host or (rest and not rest.startswith(":")):
            raise ValueError(f"{value!r} is no address; an IPv6 one is written [::1]:PORT")
        return f"[{host}]:{_port(value, rest[1:]) if rest else DEFAULT_PORT}"
    if text.count(":") > 1:  # a bare IPv6 address: it has no room for a port
        return f"[{text}]:{DEFAULT_PORT}"
    host, colon, port = text.partition(":")
    if not host:
        raise ValueError(f"{value!r} names no host; give HOST or HOST:PORT")
    return f"{host}:{_port(value, port) if colon else DEFAULT_PORT}"


def _port(value: str, port: str) -> int:
    if not port.isascii() or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"{value!r}: the port must be a number from 1 to 65535")
    return int(port)


def _server(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return server_address(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


def _client_token(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--token as given: an empty one is a mistake (it would call without a token, as if
    none were given), so it is a usage error, as it is for ``kingrec serve``."""
    if value is not None and not value.strip():
        raise click.BadParameter(
            "the token is empty; give the server's token, or leave --token out", ctx, param
        )
    return value


def server_options(*, token: bool = False, optional: bool = False) -> Callable[[F], F]:
    """``--server``, ``--tls-ca`` (and ``--token``) for a command that calls a server;
    ``optional``: no default server, for a command that works on a local store without one."""

    def decorate(command: F) -> F:
        if token:
            command = click.option(
                "--token",
                envvar="KINGREC_TOKEN",
                metavar="TOKEN",
                callback=_client_token,
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
                callback=_server,
                help="Ask this kingrec server instead, which keeps its own limits "
                f"(default: $KINGREC_SERVER, when set; port {DEFAULT_PORT} unless given).",
            )(command)
        return click.option(
            "--server",
            envvar="KINGREC_SERVER",
            default=DEFAULT_SERVER,
            show_default=True,
            metavar="HOST:PORT",
            callback=_server,
            help=f"The kingrec server (default also from $KINGREC_SERVER; port {DEFAULT_PORT} "
            "unless given).",
        )(command)

    return decorate
