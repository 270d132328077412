"""The service's own failures, and the ONE table that turns errors into gRPC status codes.

Servicers decide nothing about errors: they let the library's ``KingrecError`` subclasses
(and the service's own ones below, which subclass it too) propagate, and
``kingrec_service.methods.guard`` (every method wrapped once) ends the call with the status
this table gives, the error's message as the details and its stable code in the trailing
metadata ``kingrec-code``. Anything not in the table is a bug: INTERNAL, one log line.
"""

from __future__ import annotations

import grpc

from kingrec.cards import card_name
from kingrec.errors import (
    CardError,
    ContractError,
    IllegalPlayError,
    JsonRecordError,
    KingrecError,
    LimitError,
    QueryError,
    QueryLimitError,
    QueryRefusedError,
    RecordBuildError,
    RecordFileError,
    RulesetError,
    StoreError,
)
from kingrec.findings import Finding

from .convert import finding_to_proto

__all__ = [
    "CODE_KEY",
    "FINDING_KEY",
    "LEGAL_KEY",
    "RESUME_KEY",
    "STATUS",
    "AnalysisBusyError",
    "AnalysisTooBigError",
    "BadRequestError",
    "FellBehindError",
    "InvalidMatchError",
    "MatchExistsError",
    "MatchNotFoundError",
    "NoStoreError",
    "OutOfOrderError",
    "PublisherBusyError",
    "QueryBusyError",
    "QueryDeadlineError",
    "RefusedError",
    "ResumeMismatchError",
    "ShuttingDownError",
    "TooManyMatchesError",
    "UnauthenticatedError",
    "UnreadableRecordError",
    "status_of",
    "trailing_metadata",
]

# Trailing metadata keys (lower case, as HTTP/2 wants them).
CODE_KEY = "kingrec-code"  # the error's stable code
FINDING_KEY = "kingrec-finding-bin"  # a refused live event: a serialized kingrec.v1.Finding
LEGAL_KEY = "kingrec-legal"  # a refused card: the legal cards by name, space-separated
RESUME_KEY = "kingrec-resume-from"  # a stream that ended early: where to resume


class BadRequestError(KingrecError):
    """A request that does not say what it means: a missing field, a seat that does not exist."""

    code = "BAD_REQUEST"


class UnreadableRecordError(KingrecError):
    """A record that is not one: undecodable bytes, a damaged frame, JSON that is no match.

    ``code`` is the finding code of the damage (FRAME_UNDECODABLE, JSON_INVALID, …).
    """

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class RefusedError(KingrecError):
    """A live event the rules do not allow now; ``finding`` says which rule and why."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding
        self.code = finding.code


class InvalidMatchError(RefusedError):
    """A live match whose start the validator refuses (players, ruleset): bad input, whatever
    the state."""


class TooManyMatchesError(KingrecError):
    """The server holds as many live matches as it may."""

    code = "TOO_MANY_MATCHES"


class OutOfOrderError(KingrecError):
    """A live event that cannot come now: a card before any deal, a deal before the last ended."""

    code = "OUT_OF_ORDER"


class ResumeMismatchError(OutOfOrderError):
    """A publisher resumed a live match from an event that is not its last;
    ``resume_from`` is the last."""

    def __init__(self, message: str, resume_from: int) -> None:
        super().__init__(message)
        self.resume_from = resume_from


class MatchNotFoundError(KingrecError):
    code = "MATCH_NOT_FOUND"


class MatchExistsError(KingrecError):
    code = "MATCH_EXISTS"


class PublisherBusyError(KingrecError):
    """Another stream is publishing the match."""

    code = "PUBLISHER_BUSY"


class FellBehindError(KingrecError):
    """A viewer that fell too far behind a live match; it may resume after ``resume_from``."""

    code = "FELL_BEHIND"

    def __init__(self, message: str, resume_from: int) -> None:
        super().__init__(message)
        self.resume_from = resume_from


class ShuttingDownError(KingrecError):
    """The server is shutting down; ``resume`` says how to go on elsewhere or later."""

    code = "SHUTTING_DOWN"

    def __init__(self, message: str, resume_from: int | None = None) -> None:
        super().__init__(message)
        self.resume_from = resume_from


class QueryBusyError(KingrecError):
    """The server runs as many queries as it admits at once."""

    code = "QUERIES_BUSY"


class QueryDeadlineError(QueryLimitError):
    """A query still running (or still waiting for a thread) at its caller's deadline."""

    code = "QUERY_DEADLINE"


class AnalysisTooBigError(LimitError):
    """An Analyse call asking for more search than one call may do (deals, budget)."""

    code = "LIMIT_EXCEEDED"


class AnalysisBusyError(KingrecError):
    """The server searches and keeps waiting as many Analyse calls as it may."""

    code = "ANALYSES_BUSY"


class UnauthenticatedError(KingrecError):
    code = "UNAUTHENTICATED"


class NoStoreError(KingrecError):
    """A request that needs the store, to a server started without one."""

    code = "NO_STORE"


# THE table: error class -> status code. The most specific class listed wins (by MRO).
STATUS: dict[type[Exception], grpc.StatusCode] = {
    # the library: the client's input
    KingrecError: grpc.StatusCode.INVALID_ARGUMENT,
    RecordFileError: grpc.StatusCode.INVALID_ARGUMENT,
    JsonRecordError: grpc.StatusCode.INVALID_ARGUMENT,
    LimitError: grpc.StatusCode.INVALID_ARGUMENT,
    RulesetError: grpc.StatusCode.INVALID_ARGUMENT,
    CardError: grpc.StatusCode.INVALID_ARGUMENT,
    ContractError: grpc.StatusCode.INVALID_ARGUMENT,
    RecordBuildError: grpc.StatusCode.INVALID_ARGUMENT,
    # the library: a card the rules do not allow now
    IllegalPlayError: grpc.StatusCode.FAILED_PRECONDITION,
    # the library: the store (a write that failed is rolled back: try again)
    StoreError: grpc.StatusCode.UNAVAILABLE,
    QueryError: grpc.StatusCode.INVALID_ARGUMENT,
    QueryRefusedError: grpc.StatusCode.PERMISSION_DENIED,
    QueryLimitError: grpc.StatusCode.RESOURCE_EXHAUSTED,
    # the service
    QueryBusyError: grpc.StatusCode.RESOURCE_EXHAUSTED,
    QueryDeadlineError: grpc.StatusCode.DEADLINE_EXCEEDED,
    AnalysisTooBigError: grpc.StatusCode.RESOURCE_EXHAUSTED,
    AnalysisBusyError: grpc.StatusCode.RESOURCE_EXHAUSTED,
    BadRequestError: grpc.StatusCode.INVALID_ARGUMENT,
    UnreadableRecordError: grpc.StatusCode.INVALID_ARGUMENT,
    RefusedError: grpc.StatusCode.FAILED_PRECONDITION,
    InvalidMatchError: grpc.StatusCode.INVALID_ARGUMENT,
    OutOfOrderError: grpc.StatusCode.FAILED_PRECONDITION,
    NoStoreError: grpc.StatusCode.FAILED_PRECONDITION,
    MatchNotFoundError: grpc.StatusCode.NOT_FOUND,
    MatchExistsError: grpc.StatusCode.ALREADY_EXISTS,
    PublisherBusyError: grpc.StatusCode.ABORTED,
    FellBehindError: grpc.StatusCode.RESOURCE_EXHAUSTED,
    TooManyMatchesError: grpc.StatusCode.RESOURCE_EXHAUSTED,
    ShuttingDownError: grpc.StatusCode.UNAVAILABLE,
    UnauthenticatedError: grpc.StatusCode.UNAUTHENTICATED,
}


def status_of(exc: BaseException) -> grpc.StatusCode | None:
    """The status code for an expected failure, or None for a bug."""
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return None


def trailing_metadata(exc: KingrecError) -> tuple[tuple[str, str | bytes], ...]:
    """What the call's trailers carry besides the status: the code, and for a refused live
    event the finding itself and the legal cards; where to resume a stream."""
    code = exc.code
    if isinstance(exc, IllegalPlayError) and exc.verdict:
        code = exc.verdict
    out: list[tuple[str, str | bytes]] = [(CODE_KEY, code)]
    legal: tuple[int, ...] | None = None
    if isinstance(exc, RefusedError):
        out.append((FINDING_KEY, finding_to_proto(exc.finding).SerializeToString()))
        legal = exc.finding.legal
    elif isinstance(exc, IllegalPlayError):
        legal = exc.legal
    if legal is not None:
        out.append((LEGAL_KEY, " ".join(card_name(c) for c in legal)))
    resume = getattr(exc, "resume_from", None)
    if resume is not None:
        out.append((RESUME_KEY, str(resume)))
    return tuple(out)
