"""Exit statuses and the one table that turns library errors into messages and statuses."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import click

from kingrec.errors import KingrecError

from .streams import write_error

EXIT_OK = 0
EXIT_INVALID = 1  # some record is not a valid match
EXIT_UNREADABLE = 2  # a file could not be read, is damaged, or the usage was wrong
EXIT_INTERNAL = 3  # a bug in kingrec
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT); SIGTERM gives 143 (128 + SIGTERM)
EXIT_CLOSED_PIPE = 141  # the reader of our output went away (128 + SIGPIPE), as ``| head``

# What each status means, for the help texts and the README (one table, kept in step).
EXIT_STATUSES = {
    EXIT_OK: "every record valid (warnings allowed); the work done",
    EXIT_INVALID: "some record invalid",
    EXIT_UNREADABLE: "a file unreadable or damaged, or bad usage",
    EXIT_INTERNAL: "a bug in kingrec (one line on standard error; KINGREC_DEBUG=1 for the "
    "traceback)",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C; SIGTERM gives 143)",
    EXIT_CLOSED_PIPE: "the reader of the output went away (a closed pipe, as with | head)",
}

# Library error classes -> exit status. Every KingrecError is the user's input or
# environment, never a bug; the most specific class listed wins.
EXIT_STATUS: dict[type[Exception], int] = {
    KingrecError: EXIT_UNREADABLE,
    OSError: EXIT_UNREADABLE,
}


def exit_status(exc: Exception) -> int | None:
    """The exit status for an expected failure, or None for a bug."""
    for cls in type(exc).__mro__:
        if cls in EXIT_STATUS:
            return EXIT_STATUS[cls]
    return None


class Failed(click.ClickException):
    """An error already explained to the user, with our exit code."""

    exit_code = EXIT_UNREADABLE

    def __init__(self, message: str, code: str = "UNREADABLE") -> None:
        super().__init__(message)
        self.code = code

    def show(self, file: object = None) -> None:
        write_error(f"kingrec: error: {self.format_message()}")


def _message(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn the library's expected failures into one clear line and their exit status."""
    try:
        yield
    except BrokenPipeError:
        raise  # the reader went away (``| head``): not an error to explain, see main.run
    except Exception as exc:
        if exit_status(exc) is None:
            raise  # a bug: main.run reports it
        code = getattr(exc, "code", "UNREADABLE")
        raise Failed(_message(exc), code if isinstance(code, str) else "UNREADABLE") from None
