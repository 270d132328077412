"""``kingrec simulate``: bots play whole matches and the matches are written as records."""

from __future__ import annotations

import os
import sys

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
)

from kingrec.rules import PRESETS
from kingrec.simrun import Format, simulate_to_file, simulate_to_stream

from .errors import Failed

__all__ = ["simulate"]


@click.command()
@click.option(
    "--preset",
    type=click.Choice(sorted(PRESETS), case_sensitive=False),
    default="classic",
    show_default=True,
    help="Ruleset the matches are played under.",
)
@click.option(
    "--matches",
    "count",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="How many matches to simulate.",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the run; match i is played from a seed derived from it and i.",
)
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(allow_dash=True, dir_okay=False),
    help="Output file: .krec for a container, anything else for JSON Lines; "
    "- writes JSON Lines to standard output.",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Worker processes (0: one per CPU). The output does not depend on it.",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Show a progress bar (default: when standard error is a terminal).",
)
def simulate(
    preset: str, count: int, seed: int, output: str, jobs: int, progress: bool | None
) -> None:
    """Simulate matches played by bots and write them as records to OUTPUT.

    The bots choose contracts, trumps and cards; every match is complete and valid under
    the preset's rules. Runs are reproducible: the same preset, seed and number of matches
    give byte-identical output whatever --jobs is, and match i of a run carries its own
    seed, so it can be replayed alone. The output is written to a temporary file and moved
    into place only when complete.

    Exit status: 0 done, 2 bad usage or the output could not be written.
    """
    preset = preset.lower()
    fmt: Format = "krec" if output.endswith(".krec") else "jsonl"
    jobs = jobs or os.cpu_count() or 1
    if output != "-" and os.path.isdir(output):
        raise Failed(f"{output}: is a directory")
    err_console = Console(stderr=True)
    show_progress = err_console.is_terminal if progress is None else progress
    bar = Progress(
        TextColumn("simulating"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("matches"),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
        disable=not show_progress,
    )
    try:
        with bar:
            task = bar.add_task("simulate", total=count)

            def advance(done: int) -> None:
                bar.update(task, completed=done)

            if output == "-":
                summary = simulate_to_stream(
                    sys.stdout.buffer, preset, count, seed, fmt=fmt, jobs=jobs, progress=advance
                )
            else:
                summary = simulate_to_file(
                    output, preset, count, seed, fmt=fmt, jobs=jobs, progress=advance
                )
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise Failed(f"cannot write {output}: {exc.strerror or exc}") from None
    click.echo(
        f"simulated {summary.matches} matches ({summary.deals} deals) in "
        f"{summary.seconds:.2f} s, {summary.deals_per_second:.0f} deals/s",
        err=True,
    )
