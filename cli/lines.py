"""Report lines that more than one command prints: a finding, a stretch of damage."""

from __future__ import annotations

from kingrec.findings import Finding, Severity
from kingrec.records import Damage

from .places import damage_sentence, place
from .terminal import Terminal, escape

__all__ = ["damage_line", "damage_text", "finding_line"]


def finding_line(term: Terminal, finding: Finding) -> str:
    """``error MUST_RUFF Deal 4 (Koz), trick 9: ...`` in rich markup."""
    colour = "red" if finding.severity is Severity.ERROR else "yellow"
    return (
        f"[{colour}]{finding.severity}[/] [bold]{finding.code}[/] "
        f"{escape(term.sentence(finding.message))}"
    )


def damage_line(term: Terminal, damage: Damage) -> str:
    """``DAMAGED file, frame 2, byte 4935: FRAME_CORRUPT: ...`` in rich markup."""
    message = damage_sentence(damage.location, damage.message)
    return (
        f"[bold red]DAMAGED[/] {escape(place(damage.location))}: {damage.code}: "
        f"{escape(term.sentence(message))}"
    )


def damage_text(damage: Damage) -> str:
    """The same as plain text, for a message on standard error."""
    message = damage_sentence(damage.location, damage.message)
    return f"{place(damage.location)}: {damage.code}: {message}"
