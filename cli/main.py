"""``kingrec``: validate, show, convert and simulate King match records."""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import signal
import sys
from collections.abc import Sequence
from types import FrameType
from typing import Any

import click

from kingrec import __version__

from . import startup, teardown
from .errors import (
    EXIT_CLOSED_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_STATUSES,
    EXIT_UNREADABLE,
)
from .helptext import epilog
from .streams import fit, prepare_streams, write_error

__all__ = ["Terminated", "main", "run"]

# Each command lives in its own module, imported only when it runs, so a command pays the
# start-up time of what it uses and no more.
COMMANDS = {
    "validate": "kingrec_cli.validate",
    "show": "kingrec_cli.show",
    "convert": "kingrec_cli.convert",
    "simulate": "kingrec_cli.simulate",
    "serve": "kingrec_cli.serve",
    "replay": "kingrec_cli.replay",
    "watch": "kingrec_cli.watch",
    "publish": "kingrec_cli.publish",
    "upload": "kingrec_cli.upload",
    "export": "kingrec_cli.export",
    "ingest": "kingrec_cli.ingest",
    "query": "kingrec_cli.query",
    "stats": "kingrec_cli.stats",
    "analyse": "kingrec_cli.analyse",
    "view": "kingrec_cli.view",
}

# What ``kingrec --help`` lists for each command: the start of its help, shortened as click
# shortens it. Here so that the list imports no command (all of them cost about a CPU-second:
# gRPC, DuckDB, aiohttp); tests/test_startup.py holds each to its command's own help.
SUMMARIES = {
    "validate": "Check that every record in FILES is a legal, complete King match.",
    "show": "Show one match of FILE: contracts, every trick and its winner, scores and running "
    "totals, and what is wrong with it.",
    "convert": "Convert SOURCE into TARGET: .krec to JSON Lines (one match per line) or back.",
    "simulate": "Simulate matches played by bots and write them as records to OUTPUT.",
    "serve": "Serve kingrec over gRPC: validate, store and query records, replay them, "
    "publish and watch live matches.",
    "replay": "Replay a match card by card, as the server streams it.",
    "watch": "Follow a live match as it is played: a table of hands, the trick and the scores.",
    "publish": "Play a recorded match into a server as a live match, card by card.",
    "upload": "Store the records of FILE... (.krec or JSON Lines; - for standard input) on a "
    "server.",
    "export": "Write every table of a store as hive-partitioned Parquet under DIR.",
    "ingest": "Store every record of FILES in a DuckDB store, to ask it anything in SQL.",
    "query": "Run one read-only SQL statement (a SELECT) over the store and write its rows.",
    "stats": "Answer the common questions from the store: each NAME is a documented SQL query.",
    "analyse": "Find each deal's par in FILES: the units (tricks, hearts, queens, ...) each seat "
    "could have made sure of with every hand known and the other three playing against it; and "
    "for every card, what it cost its player against that guarantee.",
    "view": "Open the records of FILE (.krec or JSON Lines; - for standard input) in the web "
    "viewer.",
}

COMPLETION = """Shell completion (bash; zsh_source and fish_source for the others):
  eval "$(_KINGREC_COMPLETE=bash_source kingrec)"    # in ~/.bashrc"""


def _show_usage_error(exc: click.UsageError) -> None:
    lines = [f"kingrec: error: {exc.format_message()}"]
    ctx = exc.ctx
    if ctx is not None:
        lines.append(ctx.get_usage())
        lines.append(f"Try '{ctx.command_path} {ctx.help_option_names[-1]}' for help.")
    write_error("\n".join(lines))


def _closed_pipe() -> None:
    """The reader of our output went away (``kingrec validate --json big | head``): end as a
    process killed by SIGPIPE would, without a word and without the final flush failing."""
    with contextlib.suppress(OSError, ValueError, AttributeError):  # no real stdout
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(EXIT_CLOSED_PIPE)


class Terminated(SystemExit, KeyboardInterrupt):
    """SIGTERM, raised in the main thread so that the run unwinds like Ctrl-C: partial output
    is removed and worker processes are stopped; the exit status is 128 + the signal number.

    A SystemExit, so nothing reports it, and also a KeyboardInterrupt, because CPython lets no
    C code swallow one: it clears other errors in places (a plain SystemExit raised while a
    module was being compiled, by its constant folding, was lost and the run went on).
    """


class _KingrecGroup(click.Group):
    """Commands imported when used; every error the user sees in one style, ``kingrec:
    error: ...``; the exit statuses of ``EXIT_STATUSES``."""

    def get_help(self, ctx: click.Context) -> str:
        return fit(super().get_help(ctx), sys.stdout)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), *COMMANDS]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS:
            command = getattr(importlib.import_module(COMMANDS[cmd_name]), cmd_name)
            assert isinstance(command, click.Command)
            startup.command_loaded()
            return command
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The list of commands as click writes it, from ``SUMMARIES``: none is imported."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names), default=0)
        rows = []
        for name in names:
            summary = SUMMARIES.get(name)
            command = click.Command(name, help=summary) if summary else self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:  # before click's own handling, which exits 1 ("invalid")
            _closed_pipe()
        except Terminated as exc:
            # click would take it for Ctrl-C ("Aborted!", exit 1): exit as SIGTERM asks.
            raise SystemExit(exc.code) from None

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        prepare_streams()
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        status: Any = 0
        try:
            status = super().main(args, prog_name, complete_var, False, **extra)
        except SystemExit as exc:
            status = exc.code
        except click.UsageError as exc:
            _show_usage_error(exc)
            status = EXIT_UNREADABLE
        except click.ClickException as exc:
            exc.show()
            status = exc.exit_code
        except (click.Abort, KeyboardInterrupt):
            write_error("kingrec: interrupted")
            status = EXIT_INTERRUPTED
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise
            _closed_pipe()
        try:  # what is still buffered, now, while a closed pipe can still be told apart
            sys.stdout.flush()
        except BrokenPipeError:
            _closed_pipe()
        sys.exit(status if isinstance(status, int) or status is None else 1)


@click.group(
    cls=_KingrecGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=epilog(
        [
            ("kingrec validate matches/", "check every record file under matches/"),
            ("kingrec show games.krec --index 2 --deal 5", "deal 5 of the file's 2nd record"),
            ("kingrec convert games.krec games.jsonl", ".krec to JSON Lines"),
            ("kingrec simulate --matches 100 -o sim.krec", "100 matches played by bots"),
            ("kingrec ingest matches/", "store every record in kingrec.duckdb"),
            ("kingrec stats rifki-end", "a ready answer from the store"),
        ],
        tuple(EXIT_STATUSES),
        COMPLETION,
    ),
)
@click.version_option(__version__, prog_name="kingrec")
def main() -> None:
    """Records, validation and replays for King (Rıfkı), the Turkish trick-taking game.

    Records are .krec files (many matches, checksummed frames) or JSON Lines (one match
    per line). Every record carries the ruleset it was played under and is judged by it.
    Records and frames are numbered from 1 in everything kingrec prints for people (the
    JSON reports keep the format's frame index, from 0).
    """


def _terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated(128 + signum)


def _exit_at_once(code: object) -> None:
    """End a command once its output is out, skipping the interpreter's teardown (the
    command said it may: ``kingrec_cli.teardown``)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    os._exit(code if isinstance(code, int) else (0 if code is None else 1))


def run() -> None:
    """The console script: ``main`` without tracebacks for the user."""
    signal.signal(signal.SIGTERM, _terminated)
    try:
        main()
    except SystemExit as exc:
        if teardown.skip(ended_well=exc.code in (0, None)):
            _exit_at_once(exc.code)
        raise
    except BrokenPipeError:  # pragma: no cover - main handles it; a last line of defence
        _closed_pipe()
    except Exception as exc:  # a bug in kingrec: say so in one line, keep the trace for debugging
        if os.environ.get("KINGREC_DEBUG"):
            raise
        write_error(
            f"kingrec: internal error: {type(exc).__name__}: {exc} "
            "(please report it; KINGREC_DEBUG=1 shows the traceback)"
        )
        sys.exit(EXIT_INTERNAL)
