"""Every failure kingrec raises on purpose: one ``KingrecError`` base, one class per failure.

Each class carries a stable ``code`` (the same names the validator's findings use where the
two meet), so the CLI and the gRPC service each map errors to exit statuses or status codes
in one table, by class. Findings about a record (an illegal play inside a match that was
read fine) are not errors: the validator reports them, see ``kingrec.findings``.
"""

from __future__ import annotations

__all__ = [
    "CardError",
    "ContractError",
    "DamagedFileError",
    "IllegalPlayError",
    "JsonRecordError",
    "KingrecError",
    "LimitError",
    "NotRecordFileError",
    "QueryError",
    "QueryLimitError",
    "QueryRefusedError",
    "QueryRowError",
    "RecordBuildError",
    "RecordFileError",
    "RulesetError",
    "StoreError",
    "StoreLockedError",
    "StoreVersionError",
    "StoreWriteAbortedError",
    "UnreadableFileError",
    "UnsupportedVersionError",
]


class KingrecError(Exception):
    """Base of every error kingrec raises on purpose; ``code`` names the failure."""

    code = "KINGREC_ERROR"


# -- files ----------------------------------------------------------------------------


class RecordFileError(KingrecError):
    """A file (or stream) that cannot be read as records at all.

    ``offset`` is the byte where the problem was found, when that is known.
    """

    code = "UNREADABLE"

    def __init__(self, message: str, offset: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset

    def __str__(self) -> str:
        return self.message


class NotRecordFileError(RecordFileError):
    """Neither a .krec container nor JSON records (the message says what it looks like)."""

    code = "NOT_KREC"


class UnsupportedVersionError(RecordFileError):
    """A .krec container from a newer kingrec (format version or header flags unknown)."""

    code = "UNSUPPORTED_VERSION"


class DamagedFileError(RecordFileError):
    """A file with damaged frames or lines where the caller asked for all records or none.

    ``damage`` lists the damaged stretches (``kingrec.records.Damage``)."""

    code = "DAMAGED"

    def __init__(self, message: str, damage: tuple[object, ...] = ()) -> None:
        super().__init__(message)
        self.damage = damage


class UnreadableFileError(RecordFileError):
    """A file that cannot be opened or read: missing, a directory, no permission, cut short."""

    code = "UNREADABLE"


# -- values ---------------------------------------------------------------------------


class RulesetError(KingrecError, ValueError):
    """A ruleset that cannot be resolved or applied (unknown preset with options missing, …)."""

    code = "RULESET_INVALID"


class CardError(KingrecError, ValueError):
    """Text or a code that does not name a card."""

    code = "NOT_A_CARD"


class ContractError(KingrecError, ValueError):
    """Text or a number that does not name one of the seven contracts."""

    code = "CONTRACT_UNKNOWN"


class JsonRecordError(KingrecError, ValueError):
    """A JSON record that does not map onto the schema; the message names the path."""

    code = "JSON_INVALID"


class LimitError(KingrecError, ValueError):
    """A record over one of kingrec's bounds (``kingrec.limits``); the message names it."""

    code = "LIMIT_EXCEEDED"


class RecordBuildError(KingrecError, ValueError):
    """A game handed to the record builder that cannot make a record (wrong hands, …)."""

    code = "RECORD_INVALID"


# -- the store ------------------------------------------------------------------------


class StoreError(KingrecError):
    """A store (DuckDB file) that cannot be opened or written: missing, locked, not a store."""

    code = "STORE_ERROR"


class StoreWriteAbortedError(StoreError):
    """A batch rolled back unwritten because a batch submitted before it failed to commit
    (it was prepared counting that one's records as stored)."""


class StoreLockedError(StoreError):
    """A store another process has open for writing (DuckDB allows one writer per file)."""

    code = "STORE_LOCKED"


class StoreVersionError(StoreError):
    """A store written by a newer kingrec (its schema version is unknown here)."""

    code = "STORE_VERSION"


class QueryError(StoreError):
    """A query that is not one valid read-only SQL statement (the message says why)."""

    code = "QUERY_INVALID"


class QueryRefusedError(QueryError):
    """A query that tries what the store does not allow: files, extensions, settings, writes."""

    code = "QUERY_REFUSED"


class QueryLimitError(QueryError):
    """A query past one of its limits: its time, or the size of a row."""

    code = "QUERY_LIMIT"


class QueryRowError(QueryLimitError):
    """A row of a query's result larger than one row may be (refused before it is read)."""

    code = "QUERY_ROW_TOO_LARGE"


# -- play -----------------------------------------------------------------------------


class IllegalPlayError(KingrecError, ValueError):
    """A card that may not be played now.

    ``verdict`` is the finding code of the rule it breaks (``MUST_FOLLOW_SUIT``, …, or
    ``DEAL_OVER``) and ``legal`` the cards that were legal, as card codes.
    """

    code = "ILLEGAL_PLAY"

    def __init__(self, message: str, verdict: str = "", legal: tuple[int, ...] = ()) -> None:
        super().__init__(message)
        self.verdict = verdict
        self.legal = legal
