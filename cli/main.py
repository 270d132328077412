"""``kingrec``: validate, show, convert and simulate King match records."""

from __future__ import annotations

import importlib
import os
import signal
import sys
from types import FrameType

import click

from kingrec import __version__

from .errors import EXIT_INTERNAL

__all__ = ["main", "run"]

# Each command lives in its own module, imported only when it runs (or help lists it), so a
# command pays the start-up time of what it uses and no more.
COMMANDS = {
    "validate": "kingrec_cli.validate",
    "show": "kingrec_cli.show",
    "convert": "kingrec_cli.convert",
    "simulate": "kingrec_cli.simulate",
    "serve": "kingrec_cli.serve",
    "replay": "kingrec_cli.replay",
    "watch": "kingrec_cli.watch",
    "publish": "kingrec_cli.publish",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), *COMMANDS]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS:
            command = getattr(importlib.import_module(COMMANDS[cmd_name]), cmd_name)
            assert isinstance(command, click.Command)
            return command
        return super().get_command(ctx, cmd_name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kingrec")
def main() -> None:
    """Records, validation and replays for King (Rıfkı), the Turkish trick-taking game.

    Records are .krec files (many matches, checksummed frames) or JSON Lines (one match
    per line). Every record carries the ruleset it was played under and is judged by it.
    """


def _terminated(signum: int, frame: FrameType | None) -> None:
    # Unwind like Ctrl-C does, so partial output is removed and worker processes stopped.
    raise SystemExit(128 + signum)


def run() -> None:
    """The console script: ``main`` without tracebacks for the user."""
    signal.signal(signal.SIGTERM, _terminated)
    try:
        main()
    except BrokenPipeError:
        # The reader of our output went away (``kingrec validate --json big | head``).
        # Point stdout at /dev/null so the interpreter's final flush stays quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except Exception as exc:  # a bug in kingrec: say so in one line, keep the trace for debugging
        if os.environ.get("KINGREC_DEBUG"):
            raise
        click.echo(
            f"kingrec: internal error: {type(exc).__name__}: {exc} "
            "(please report it; KINGREC_DEBUG=1 shows the traceback)",
            err=True,
        )
        sys.exit(EXIT_INTERNAL)
