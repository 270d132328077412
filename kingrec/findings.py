"""Validation findings: stable codes, severities, locations and readable sentences.

The codes are part of the format (RULES.md): other implementations rely on them, so a
code is never renamed or reused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

from .cards import card_name, card_symbol, cards_in

__all__ = [
    "CODES",
    "CleanMatches",
    "Finding",
    "Location",
    "MatchReport",
    "Severity",
    "limit_report",
]


class Severity(StrEnum):
    ERROR = "error"  # the record is not a legal, consistent King match
    WARNING = "warning"  # worth a look; the record is still valid


# Every code the validator can report, with what it means.
CODES: dict[str, str] = {
    # a play breaks a rule (RULES.md "Which rule a bad card breaks")
    "NOT_IN_HAND": "a card the player does not hold",
    "TRUMP_LEAD_BANNED": "trumps led before they were broken",
    "HEART_LEAD_BANNED": "hearts led before they were broken",
    "MUST_FOLLOW_SUIT": "did not follow the led suit",
    "MUST_RAISE_TRUMP": "did not play a higher trump on a trump lead",
    "MUST_GIVE_PENALTY_CARD": "saved a penalty card already covered on the trick",
    "MUST_RUFF": "did not trump when void",
    "MUST_OVERTRUMP": "did not overtrump",
    "MUST_DISCARD_PENALTY_CARD": "did not discard a penalty card when void",
    "NOT_A_CARD": "a play byte that is no card",
    # the shape of a deal
    "PLAY_AFTER_DEAL_END": "cards played after the deal ended",
    "DEAL_INCOMPLETE": "a deal stops too soon",
    "DEAL_END_MISMATCH": "the recorded end of a deal differs from the replay",
    "BAD_DECK": "hands do not partition the deck",
    "BAD_PLAY_METADATA": "think times, auto-play or revoke marks do not fit the plays",
    "REVOKE_NOT_ALLOWED": "a revoke mark under a ruleset that rejects revokes",
    "REVOKE_MARK_ON_LEGAL_PLAY": "a play marked as revoke was legal",
    "OVER_TIME": "a move took longer than the clock allows",
    # the match
    "WRONG_DECLARER": "the declarer is not the one the rotation gives",
    "WRONG_DEALER": "the dealer is not the one the ruleset gives",
    "CONTRACT_UNKNOWN": "no valid contract",
    "CONTRACT_QUOTA": "a contract the player's quota does not allow",
    "PENALTY_CONTRACT_LIMIT": "a penalty contract chosen more often than allowed",
    "CONTRACT_NOT_SCHEDULED": "a contract other than the fixed order gives",
    "TRUMP_MISSING": "koz without a trump suit",
    "TRUMP_NOT_ALLOWED": "a trump suit named outside koz",
    "DEAL_NUMBER": "deals out of sequence",
    "MATCH_INCOMPLETE": "a complete match with too few deals",
    "TOO_MANY_DEALS": "more deals than the ruleset has",
    "BAD_PLAYERS": "players do not fill the four seats",
    "RULESET_INVALID": "the ruleset cannot be resolved",
    "LIMIT_EXCEEDED": "a record over one of kingrec's bounds (kingrec.limits); not checked",
    "STATUS_MISSING": "the match status is not set",
    "DUPLICATE_RECORD": "the same match (same id, same content) appears again (a warning)",
    "UNKNOWN_JSON_KEY": "a JSON key the schema does not know, dropped (a warning)",
    "MATCH_ID_REUSED": "the store holds another record, other content, under this id (a warning)",
    "FORMAT_VERSION": "a record format version this validator does not know",
    "SCORE_MISMATCH": "claimed deal scores differ from the computed ones",
    "TOTALS_MISMATCH": "claimed match totals differ from the computed ones",
    "ZERO_SUM": "claimed totals of a complete match do not add up to 0",
    # the file
    "FRAME_CORRUPT": "a damaged frame in a .krec file",
    "FRAME_TRUNCATED": "the file ends inside a frame",
    "FRAME_UNDECODABLE": "a frame that is not a Match message",
    "JSON_INVALID": "a JSON line that is not a valid match",
    "NOT_KREC": "a file that is neither a .krec container nor JSON Lines",
    "UNSUPPORTED_VERSION": "a .krec container from a newer kingrec",
    "UNREADABLE": "a file that cannot be opened or read",
}


@dataclass(frozen=True, slots=True)
class Location:
    """Where a record came from: file, frame (or JSON line) and byte offset."""

    file: str = ""
    frame: int | None = None  # frame index in a .krec, or None
    offset: int | None = None  # byte offset of the frame
    line: int | None = None  # line number in a JSON Lines file

    def __str__(self) -> str:
        parts = [self.file or "<record>"]
        if self.line is not None:
            parts.append(f"line {self.line}")
        if self.frame is not None:
            parts.append(f"frame {self.frame}")
        if self.offset is not None:
            parts.append(f"byte {self.offset}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Finding:
    """One thing wrong with a record, or worth a warning, and where in the match it is."""

    code: str
    severity: Severity
    message: str
    deal: int | None = None  # deal number (1-based)
    trick: int | None = None  # trick number in the deal (1-based)
    seat: int | None = None
    card: int | None = None
    play: int | None = None  # index into the deal's plays
    legal: tuple[int, ...] | None = None  # for an illegal play: the cards that were legal
    caused_by: int | None = None  # index in the report of the finding this one follows from

    def where(self) -> str:
        parts = []
        if self.deal is not None:
            parts.append(f"deal {self.deal}")
        if self.trick is not None:
            parts.append(f"trick {self.trick}")
        if self.seat is not None:
            parts.append(f"seat {self.seat}")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "severity": str(self.severity),
            "message": self.message,
        }
        for key in ("deal", "trick", "seat", "play"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.card is not None:
            out["card"] = card_name(self.card) if 0 <= self.card < 52 else self.card
        if self.legal is not None:
            out["legal"] = [card_name(c) for c in self.legal]
        if self.caused_by is not None:
            out["caused_by"] = self.caused_by
        return out


@dataclass
class MatchReport:
    """All findings for one record."""

    match_id: str
    location: Location
    findings: list[Finding] = field(default_factory=list)
    deals: int = 0

    @property
    def valid(self) -> bool:
        return not any(f.severity is Severity.ERROR for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        loc = self.location
        out: dict[str, Any] = {"match_id": self.match_id, "file": loc.file}
        for key in ("frame", "offset", "line"):
            value = getattr(loc, key)
            if value is not None:
                out[key] = value
        out["valid"] = self.valid
        out["deals"] = self.deals
        out["findings"] = [f.to_dict() for f in self.findings]
        return out


def symbols(mask: int) -> str:
    """Cards of a mask for a sentence: ``♥3 ♥9``."""
    return " ".join(card_symbol(c) for c in cards_in(mask)) or "none"


class CleanMatches(NamedTuple):  # not a frozen slotted dataclass: 3 M instructions less to load
    """Records the compiled checker vouched for, counted rather than reported one by one."""

    count: int  # type: ignore[assignment]  # it hides tuple.count
    deals: int


def limit_report(match_id: str, location: Location, problem: str) -> MatchReport:
    """The report of a record over one of the bounds of ``kingrec.limits``: not checked."""
    finding = Finding(
        "LIMIT_EXCEEDED",
        Severity.ERROR,
        f"The record is over one of kingrec's bounds: {problem}; it was not checked.",
    )
    return MatchReport(match_id, location, [finding])
