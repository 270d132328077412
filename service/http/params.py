"""Query parameters read strictly: a number that is not one, or out of its range, is a
``BadRequestError`` naming the parameter, never a traceback or a silent default."""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import BadRequestError
from ..replaying import check_seat

__all__ = ["flag", "number", "seat_of"]


def number(query: Mapping[str, str], name: str, low: int, high: int, default: int) -> int:
    text = query.get(name, "")
    if text == "":
        return default
    if not (text.isascii() and text.isdigit()) or len(text) > 9:
        raise BadRequestError(f"{name} must be a whole number from {low} to {high}")
    value = int(text)
    if not low <= value <= high:
        raise BadRequestError(f"{name} must be a whole number from {low} to {high}, not {value}")
    return value


def flag(query: Mapping[str, str], name: str) -> bool | None:
    text = query.get(name, "").lower()
    if text == "":
        return None
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise BadRequestError(f"{name} must be true or false")


def seat_of(query: Mapping[str, str]) -> int | None:
    """The ``seat`` asked for (None: everything shown)."""
    if query.get("seat", "") == "":
        return None
    return check_seat(number(query, "seat", 0, 1 << 16, 0))
