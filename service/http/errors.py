"""Errors over HTTP: the gRPC status of ``kingrec_service.errors.STATUS`` (the one table of
error class -> status) mapped to an HTTP status, and the JSON body every error has.

Nothing here decides which status an error deserves; it only says how each gRPC status is
spelled in HTTP, plus the failures only HTTP has (no such path, a method not allowed, a body
over the limit).
"""

from __future__ import annotations

import grpc

from kingrec.errors import IllegalPlayError, KingrecError

from ..errors import status_of

__all__ = [
    "HTTP_STATUS",
    "BodyTooLargeError",
    "MethodNotAllowedError",
    "PathNotFoundError",
    "error_object",
    "http_status",
]

# gRPC status -> HTTP status (after google.rpc.Code's own mapping; FAILED_PRECONDITION is a
# conflict with the server's state here: a store missing, a live event out of turn).
HTTP_STATUS: dict[grpc.StatusCode, int] = {
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.FAILED_PRECONDITION: 409,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.ABORTED: 409,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
    grpc.StatusCode.UNIMPLEMENTED: 501,
}


class PathNotFoundError(KingrecError):
    """No such path (or no such stats question)."""

    code = "NOT_FOUND"


class MethodNotAllowedError(KingrecError):
    code = "METHOD_NOT_ALLOWED"


class BodyTooLargeError(KingrecError):
    code = "BODY_TOO_LARGE"


_OWN: dict[type[BaseException], int] = {
    PathNotFoundError: 404,
    MethodNotAllowedError: 405,
    BodyTooLargeError: 413,
}


def http_status(exc: BaseException) -> int | None:
    """The HTTP status for an expected failure, or None for a bug."""
    own = _OWN.get(type(exc))
    if own is not None:
        return own
    status = status_of(exc)
    return None if status is None else HTTP_STATUS.get(status, 500)


def error_object(exc: KingrecError) -> dict[str, object]:
    """``{"code", "message"}`` of an expected failure (the code the gRPC trailers carry),
    with where to resume a stream that ended early."""
    code = exc.code
    if isinstance(exc, IllegalPlayError) and exc.verdict:
        code = exc.verdict
    out: dict[str, object] = {"code": code, "message": str(exc)}
    resume = getattr(exc, "resume_from", None)
    if resume is not None:
        out["resume_from"] = resume
    return out
