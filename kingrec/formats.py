"""The two record file formats and which one a file name asks for.

Apart from ``kingrec.convert`` so that a command that only writes (``kingrec simulate``)
need not import the readers and validators to pick its format.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["Format", "format_for"]

Format = Literal["krec", "jsonl"]


def format_for(target: str) -> Format:
    """The output format a target name asks for: .krec, else JSON Lines (``-`` too)."""
    return "krec" if target.endswith(".krec") else "jsonl"
