"""``kingrec simulate``: bots play whole matches and the matches are written as records."""

from __future__ import annotations

import os

import click

from kingrec.formats import format_for
from kingrec.rules import PRESETS
from kingrec.simrun import cpu_seconds, simulate_to_file, simulate_to_stream

from . import teardown
from .bars import match_columns
from .errors import (
    EXIT_CLOSED_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_UNREADABLE,
    Failed,
)
from .helptext import Command, epilog
from .terminal import Terminal, counted

__all__ = ["simulate"]

EXAMPLES = [
    ("kingrec simulate -o sim.krec", "one classic match"),
    ("kingrec simulate --preset short --matches 1000 --jobs 0 -o s.krec", "on every CPU"),
    ("kingrec simulate --matches 5 --seed 7 -o -", "JSON Lines on standard output"),
]


@click.command(
    cls=Command,
    epilog=epilog(
        EXAMPLES,
        (
            (EXIT_OK, "simulated and written"),
            (EXIT_UNREADABLE, "OUTPUT not written, or bad usage"),
            EXIT_INTERNAL,
            EXIT_INTERRUPTED,
            EXIT_CLOSED_PIPE,
        ),
    ),
)
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
    help="Show a progress bar on standard error (default: when it is a terminal, unless the "
    "records go to that terminal).",
)
@click.option("-q", "--quiet", is_flag=True, help="No summary line; errors only.")
def simulate(
    preset: str,
    count: int,
    seed: int,
    output: str,
    jobs: int,
    progress: bool | None,
    quiet: bool,
) -> None:
    """Simulate matches played by bots and write them as records to OUTPUT.

    The bots choose contracts, trumps and cards; every match is complete and valid under
    the preset's rules. Runs are reproducible: the same preset, seed and number of matches
    give byte-identical output whatever --jobs is, and match i of a run carries its own
    seed, so it can be replayed alone; its id is sim-PRESET-SEED. The output is written to
    a temporary file and moved into place only when complete.

    The summary line gives the run's time and deals per second (wall), then the CPU time
    of the whole command, start-up and workers included, and deals per CPU second by it.
    """
    preset = preset.lower()
    fmt = format_for(output)
    jobs = jobs or os.cpu_count() or 1
    if output != "-" and os.path.isdir(output):
        raise Failed(f"{output}: is a directory")
    term = Terminal()
    show = term.wants_bar(progress, records_to_stdout=output == "-")
    try:
        with term.progress(match_columns, show=show) as bar:
            task = bar.add_task("simulate", total=count)

            def advance(done: int) -> None:
                bar.update(task, completed=done)

            if output == "-":
                stream = term.records_stream() if fmt == "jsonl" else term.stdout.buffer
                summary = simulate_to_stream(
                    stream, preset, count, seed, fmt=fmt, jobs=jobs, progress=advance
                )
            else:
                summary = simulate_to_file(
                    output, preset, count, seed, fmt=fmt, jobs=jobs, progress=advance
                )
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise Failed(f"cannot write {output}: {exc.strerror or exc}") from None
    if not quiet:
        # The run's wall rate, then what the whole command cost: its CPU time from the
        # interpreter's start to here, with its workers' (the run's rate alone would hide
        # the start-up, a fifth of a short run).
        cpu = cpu_seconds()
        term.tell(
            f"simulated {counted(summary.matches, 'match', 'matches')} "
            f"({counted(summary.deals, 'deal')}) in "
            f"{summary.seconds:.2f} s, {summary.deals_per_second:.0f} deals/s; "
            f"{cpu:.2f} s CPU in all, start-up included: "
            f"{summary.deals / cpu if cpu > 0 else 0.0:.0f} deals per CPU second"
        )
    # All written and the output closed: the teardown would only free what the process
    # held (tens of milliseconds).
    teardown.needless(teardown.ON_SUCCESS)
