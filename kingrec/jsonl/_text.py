"""JSON text as the JSON forms take it: strict decoding, the bounds, the wording of messages.

Shared by the reader of one record (``read``) and of a stream (``stream``).
"""

from __future__ import annotations

import json
import re
from typing import Any, NoReturn, cast

from ..errors import JsonRecordError, LimitError
from ..limits import MAX_JSON_DEPTH, MAX_JSON_LINE_BYTES

__all__ = [
    "JsonLimitError",
    "after_blanks",
    "decode_json",
    "kind_of",
    "printable",
    "show",
    "syntax_error",
    "too_deep",
    "too_long",
    "utf8_size",
]


class JsonLimitError(JsonRecordError, LimitError):
    """A JSON record over one of kingrec's bounds (its size or its nesting)."""

    code = "LIMIT_EXCEEDED"


class _NotJson(ValueError):
    """Text the json module would accept but JSON (and ProtoJSON) does not."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _NotJson(f"the key {show(key)} appears twice in one object")
            seen.add(key)
    return obj


def _no_constants(name: str) -> NoReturn:
    raise _NotJson(f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicates, parse_constant=_no_constants)


def decode_json(text: str, start: int) -> tuple[object, int]:
    """The JSON value at ``text[start]`` and where it ends; JSONDecodeError (with a position)
    for broken syntax, JsonRecordError or JsonLimitError for anything else."""
    try:
        return cast(tuple[object, int], _DECODER.raw_decode(text, start))
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise JsonLimitError(too_deep()) from None
    except _NotJson as exc:
        raise JsonRecordError(printable(f"invalid JSON: {exc}")) from None
    except ValueError as exc:  # an integer past Python's digit limit
        message = f"invalid JSON: a number that cannot be read ({exc})"
        raise JsonRecordError(printable(message)) from None


def syntax_error(what: str, line: int, column: int) -> str:
    """The message of broken JSON syntax at ``line``, ``column`` (from 1)."""
    return f"invalid JSON: {what} (line {line}, column {column})"


def too_long() -> str:
    """The message of a record over ``MAX_JSON_LINE_BYTES``."""
    return (
        f"the record is longer than {MAX_JSON_LINE_BYTES} bytes ({MAX_JSON_LINE_BYTES >> 20} "
        "MiB), kingrec's limit for one JSON record (kingrec.limits.MAX_JSON_LINE_BYTES)"
    )


def too_deep() -> str:
    """The message of a record nested deeper than ``MAX_JSON_DEPTH``."""
    return (
        f"nested deeper than {MAX_JSON_DEPTH} levels, kingrec's limit for a JSON record "
        "(kingrec.limits.MAX_JSON_DEPTH)"
    )


def utf8_size(text: str) -> int:
    """Bytes of ``text`` as UTF-8 (a lone surrogate counts as the 3 bytes it would take)."""
    return len(text.encode("utf-8", "surrogatepass"))


_BLANKS = re.compile(r"[ \t\r\n]*")


def after_blanks(text: str, pos: int) -> int:
    """The index of the first character at or after ``pos`` that is not JSON whitespace."""
    found = _BLANKS.match(text, pos)
    assert found is not None  # the pattern matches the empty string
    return found.end()


_KINDS = {
    type(None): "null",
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "a list",
    dict: "an object",
}


def kind_of(value: object) -> str:
    """What a decoded JSON value is, for messages ("an integer", "a list", ...)."""
    return _KINDS.get(type(value), type(value).__name__)


_SHOWN = 40  # characters of a bad value quoted in a message


def show(value: object) -> str:
    """A short, printable quote of a JSON value, for messages (never the whole 4 MiB)."""
    if isinstance(value, str):
        text = repr(value[:_SHOWN])  # repr escapes lone surrogates and control characters
        return text if len(value) <= _SHOWN else text[:-1] + "…" + text[-1]
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"a {value.bit_length()}-bit integer"
    if isinstance(value, bool | int | float | None):
        return repr(value)
    return kind_of(value)


_MESSAGE_CHARS = 300


def printable(message: str) -> str:
    """``message`` as text any UTF-8 stream can write, and short enough for one line."""
    message = message.encode("utf-8", "backslashreplace").decode("utf-8")
    return message if len(message) <= _MESSAGE_CHARS else message[: _MESSAGE_CHARS - 1] + "…"
