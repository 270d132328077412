"""The README's tour is real output: every ``console`` block's ``$ kingrec`` commands are run,
through a pipe and on a terminal, and must print what the README shows.

Timing figures (``in 2.92 s, 68421 deals/s``, ``0.49 s CPU in all``, ``81633 deals per CPU
second``) may differ. Each block runs in a fresh folder that holds the samples (so
``convert`` and ``simulate`` write there), its commands in order.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pty_screen import on_terminal

ROOT = Path(__file__).resolve().parent.parent
BIN = str(Path(sys.executable).parent)
_TIMING = re.compile(
    r"in \d+\.\d+ s, \d+ deals/s"
    r"; \d+\.\d+ s CPU in all, start-up included: \d+ deals per CPU second"
)


def console_blocks(text: str) -> list[list[tuple[str, list[str]]]]:
    """Each ``console`` block as (command, output lines) for its ``$ kingrec`` lines."""
    blocks = []
    for body in re.findall(r"^```console\n(.*?)^```", text, flags=re.M | re.S):
        commands: list[tuple[str, list[str]]] = []
        for line in body.splitlines():
            if line.startswith("$ "):
                commands.append((line[2:], []))
            elif commands:
                commands[-1][1].append(line)
        for _, output in commands:
            while output and not output[-1]:
                output.pop()
        if any(command.startswith("kingrec ") for command, _ in commands):
            blocks.append(commands)
    return blocks


BLOCKS = console_blocks((ROOT / "README.md").read_text(encoding="utf-8"))


def _normal(lines: list[str]) -> list[str]:
    return [_TIMING.sub("in <t> s, <n> deals/s; <c> s CPU ...", line) for line in lines]


def _folder(tmp_path: Path) -> Path:
    (tmp_path / "samples").symlink_to(ROOT / "samples")
    return tmp_path


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    return env


def test_the_readme_has_a_tour_of_every_command() -> None:
    commands = [command.split()[1] for block in BLOCKS for command, _ in block]
    assert {"validate", "show", "convert", "simulate", "ingest", "query", "stats"} <= set(commands)


@pytest.mark.parametrize("block", BLOCKS, ids=[b[0][0] for b in BLOCKS])
def test_each_example_prints_what_the_readme_shows_through_a_pipe(
    block: list[tuple[str, list[str]]], tmp_path: Path
) -> None:
    folder = _folder(tmp_path)
    for command, shown in block:
        result = subprocess.run(
            ["bash", "-c", command], cwd=folder, env=_env(), stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, check=False,
        )  # fmt: skip
        assert _normal(result.stdout.splitlines()) == _normal(shown), command


@pytest.mark.parametrize("block", BLOCKS, ids=[b[0][0] for b in BLOCKS])
def test_each_example_shows_what_the_readme_shows_on_a_terminal(
    block: list[tuple[str, list[str]]], tmp_path: Path
) -> None:
    folder = _folder(tmp_path)
    for command, shown in block:
        result = on_terminal(["bash", "-c", command], cwd=str(folder), env=_env(), columns=300)
        assert _normal(result.lines) == _normal(shown), command
