"""Exit codes and the one place library errors become messages."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import click

from kingrec.cards import CardError
from kingrec.errors import LimitError
from kingrec.records import RecordFileError
from kingrec.rules import RulesetError

EXIT_OK = 0
EXIT_INVALID = 1  # some record is not a valid match
EXIT_UNREADABLE = 2  # a file could not be read, is damaged, or the usage was wrong
EXIT_INTERNAL = 3  # a bug in kingrec

# LimitError: a record over a bound, e.g. a JSON record too large for a .krec frame.
USER_ERRORS = (RecordFileError, RulesetError, CardError, LimitError, OSError)


class Failed(click.ClickException):
    """An error already explained to the user, with our exit code."""

    exit_code = EXIT_UNREADABLE

    def __init__(self, message: str, code: str = "UNREADABLE") -> None:
        super().__init__(message)
        self.code = code

    def show(self, file: object = None) -> None:
        click.echo(f"kingrec: error: {self.format_message()}", err=True)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn the library's expected failures into one clear line and exit code 2."""
    try:
        yield
    except BrokenPipeError:
        raise  # the reader went away (``| head``): not an error to explain, see main.run
    except RecordFileError as exc:
        raise Failed(str(exc), exc.code) from None
    except USER_ERRORS as exc:
        message = (
            f"{exc.filename}: {exc.strerror}"
            if isinstance(exc, OSError) and exc.filename
            else str(exc)
        )
        raise Failed(message) from None
