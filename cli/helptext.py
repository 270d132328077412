"""The parts of the help texts that every command shares: examples and exit statuses."""

from __future__ import annotations

import sys

import click

from .errors import EXIT_STATUSES
from .streams import fit

__all__ = ["Command", "epilog"]


class Command(click.Command):
    """A command whose help is written as standard output can hold it (click itself writes
    UTF-8 to a stream that says it is ASCII)."""

    def get_help(self, ctx: click.Context) -> str:
        return fit(super().get_help(ctx), sys.stdout)


def epilog(
    examples: list[tuple[str, str]], statuses: tuple[int | tuple[int, str], ...], *extra: str
) -> str:
    """A command's epilog: its examples (command, what it does) and the exit statuses it uses
    (a status, or a status with what it means for this command).

    Lines are kept as written (click's ``\\b`` marks a paragraph it must not rewrap).
    """
    width = max(len(command) for command, _ in examples)
    lines = ["\b", "Examples:"]
    for command, what in examples:
        lines.append(f"  {command.ljust(width)}  # {what}")
    lines += ["", "\b", "Exit status:"]
    for status in statuses:
        code, what = status if isinstance(status, tuple) else (status, EXIT_STATUSES[status])
        lines.append(f"  {code:>3}  {what}")
    for paragraph in extra:
        lines += ["", "\b", *paragraph.splitlines()]
    return "\n".join(lines)
