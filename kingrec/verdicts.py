"""The machine report of a validation run, as ``kingrec validate --json`` writes it: one
JSON object per record listed (``match``), per damaged frame or line (``damage``) and per
file that cannot be read (``error``), then the ``summary`` of the ``Tally``.

One place for it, so that every face that validates (the CLI, the HTTP API's POST
/api/validate) writes the very same objects for the same input.
"""

from __future__ import annotations

from typing import Any

from .findings import CleanMatches, MatchReport, Severity
from .records import Damage

__all__ = [
    "Tally",
    "damage_object",
    "error_object",
    "listed",
    "match_object",
    "skipped_object",
    "summary_object",
]


class Tally:
    """What a run has seen so far (a plain class: a dataclass cost 2 M instructions to load)."""

    def __init__(self) -> None:
        self.files = 0
        self.matches = 0
        self.deals = 0
        self.invalid = 0
        self.warnings = 0
        self.damaged = 0
        self.unreadable = 0
        self.skipped = 0  # files of a directory that hold no records (a manifest beside them)

    def to_dict(self) -> dict[str, int]:
        return dict(self.__dict__)

    def count(self, item: MatchReport | Damage | CleanMatches) -> None:
        """Count one item of ``validate_records``."""
        if isinstance(item, CleanMatches):
            self.matches += item.count
            self.deals += item.deals
        elif isinstance(item, Damage):
            self.damaged += 1
        else:
            self.matches += 1
            self.deals += item.deals
            self.warnings += sum(1 for f in item.findings if f.severity is Severity.WARNING)
            if not item.valid:
                self.invalid += 1


def listed(report: MatchReport, show_all: bool, quiet: bool = False) -> bool:
    """Whether a record's report is listed: with findings (or all, or only the invalid)."""
    if quiet:
        return not report.valid
    return bool(report.findings) or show_all


def skipped_object(path: str, message: str) -> dict[str, Any]:
    """A file of a directory that holds no records (a manifest beside them)."""
    return {"type": "skipped", "file": path, "message": message}


def match_object(report: MatchReport) -> dict[str, Any]:
    from .jsonl.write import report_object  # here: only JSON reports need kingrec.jsonl

    return report_object(report)


def damage_object(item: Damage) -> dict[str, Any]:
    loc = item.location
    return {
        "type": "damage",
        "file": loc.file,
        "frame": loc.frame,
        "offset": loc.offset,
        "line": loc.line,
        "code": item.code,
        "message": item.message,
    }


def error_object(path: str, code: str, message: str) -> dict[str, Any]:
    return {"type": "error", "file": path, "code": code, "message": message}


def summary_object(tally: Tally) -> dict[str, Any]:
    return {"type": "summary", **tally.to_dict()}
