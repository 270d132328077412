"""``kingrec``: validate, show, convert and simulate King match records."""

from __future__ import annotations

import click

from kingrec import __version__

from .convert import convert
from .show import show
from .simulate import simulate
from .validate import validate

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kingrec")
def main() -> None:
    """Records, validation and replays for King (Rıfkı), the Turkish trick-taking game.

    Records are .krec files (many matches, checksummed frames) or JSON Lines (one match
    per line). Every record carries the ruleset it was played under and is judged by it.
    """


main.add_command(validate)
main.add_command(show)
main.add_command(convert)
main.add_command(simulate)
